//! A pure Server-Sent Events decoder that follows the WHATWG HTML "event stream
//! interpretation" rules exactly: CR, LF and CRLF line ends (also split across chunks), one
//! leading BOM, comments, `id` containing NUL ignored, `retry` only when all ASCII digits,
//! and the last event id updated even by events that carry no data.
//!
//! No crate was used: the candidates either accept `retry: 500ms`-style values, skip the
//! id update on empty events, or buffer unboundedly; the rules fit in this file.

/// One dispatched event. `id` is the stream's last event id at dispatch time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub event: String,
    pub data: String,
    pub id: String,
}

/// Why the decoder refused the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// One line, or one event's data, grew past the cap.
    TooLarge { limit: usize },
}

#[derive(Debug)]
pub struct Decoder {
    line: Vec<u8>,
    data: String,
    event: String,
    last_event_id: String,
    /// The id buffer; becomes `last_event_id` at dispatch (WHATWG keeps them apart).
    id_buffer: String,
    retry_ms: Option<u64>,
    seen_first_byte: bool,
    /// The first bytes of a stream while they may still be a BOM.
    bom_prefix: Vec<u8>,
    /// The previous chunk ended in CR, so a leading LF in this chunk belongs to it.
    after_cr: bool,
    limit: usize,
}

impl Decoder {
    /// `limit` bounds one line and one event's accumulated data, in bytes.
    pub fn new(limit: usize) -> Self {
        Decoder {
            line: Vec::new(),
            data: String::new(),
            event: String::new(),
            last_event_id: String::new(),
            id_buffer: String::new(),
            retry_ms: None,
            seen_first_byte: false,
            bom_prefix: Vec::new(),
            after_cr: false,
            limit,
        }
    }

    /// The id a resumption sends as `Last-Event-ID`; empty until the server set one.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time the server asked for with a valid `retry:` field.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Starts reading a new stream (a resumption): buffers are cleared, the last event id
    /// and the reconnection time carry over, as WHATWG's reconnection does.
    pub fn new_stream(&mut self) {
        self.line.clear();
        self.data.clear();
        self.event.clear();
        self.id_buffer = self.last_event_id.clone();
        self.seen_first_byte = false;
        self.bom_prefix.clear();
        self.after_cr = false;
    }

    /// Feeds bytes and returns the events they complete.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, DecodeError> {
        const BOM: &[u8] = b"\xEF\xBB\xBF";
        let mut out = Vec::new();
        if !self.seen_first_byte {
            // The BOM may arrive split across chunks: hold its prefix until it is decided.
            self.bom_prefix.extend_from_slice(chunk);
            if BOM.starts_with(&self.bom_prefix) && self.bom_prefix.len() < BOM.len() {
                return Ok(out);
            }
            self.seen_first_byte = true;
            let mut head = std::mem::take(&mut self.bom_prefix);
            if head.starts_with(BOM) {
                head.drain(..BOM.len());
            }
            self.feed_bytes(&head, &mut out)?;
            return Ok(out);
        }
        self.feed_bytes(chunk, &mut out)?;
        Ok(out)
    }

    fn feed_bytes(&mut self, chunk: &[u8], out: &mut Vec<Event>) -> Result<(), DecodeError> {
        for &b in chunk {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(out)?;
                }
                b'\n' => self.end_line(out)?,
                _ => {
                    if self.line.len() >= self.limit {
                        return Err(DecodeError::TooLarge { limit: self.limit });
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let line = std::mem::take(&mut self.line);
        let line = String::from_utf8_lossy(&line);
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&line[..], ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.data.len() + value.len() + 1 > self.limit {
                    return Err(DecodeError::TooLarge { limit: self.limit });
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" if !value.contains('\0') => self.id_buffer = value.to_owned(),
            // All digits but too long for u64 is still a valid field: saturate.
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry_ms = Some(value.parse().unwrap_or(u64::MAX));
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) {
        self.last_event_id = self.id_buffer.clone();
        if self.data.is_empty() {
            self.event.clear();
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        let event = std::mem::take(&mut self.event);
        out.push(Event {
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data,
            id: self.last_event_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 1024;

    fn ev(data: &str, id: &str) -> Event {
        Event {
            event: "message".into(),
            data: data.into(),
            id: id.into(),
        }
    }

    /// Feeds `chunks` and compares events, the final last-event-id and the retry value.
    fn check(chunks: &[&[u8]], events: Vec<Event>, last_id: &str, retry: Option<u64>) {
        let mut d = Decoder::new(LIMIT);
        let mut got = Vec::new();
        for c in chunks {
            got.extend(d.feed(c).unwrap());
        }
        assert_eq!(got, events, "chunks {chunks:?}");
        assert_eq!(d.last_event_id(), last_id, "chunks {chunks:?}");
        assert_eq!(d.retry_ms(), retry, "chunks {chunks:?}");
    }

    #[test]
    fn line_endings_cr_lf_crlf_and_split_crlf() {
        check(&[b"data: a\n\n"], vec![ev("a", "")], "", None);
        check(&[b"data: a\r\n\r\n"], vec![ev("a", "")], "", None);
        check(&[b"data: a\r\r"], vec![ev("a", "")], "", None);
        check(&[b"data: a\r", b"\n\r", b"\n"], vec![ev("a", "")], "", None);
        check(
            &[b"data: a\n", b"data: b\n\n"],
            vec![ev("a\nb", "")],
            "",
            None,
        );
    }

    #[test]
    fn retry_only_as_ascii_digits() {
        check(&[b"retry: 500\n\n"], vec![], "", Some(500));
        check(&[b"retry: 0\n\n"], vec![], "", Some(0));
        check(&[b"retry: 500ms\n\n"], vec![], "", None);
        check(&[b"retry: -5\n\n"], vec![], "", None);
        check(&[b"retry: 1.5\n\n"], vec![], "", None);
        check(&[b"retry:\n\n"], vec![], "", None);
        check(&[b"retry:  500\n\n"], vec![], "", None);
        check(&[b"retry: 86400000\n"], vec![], "", Some(86_400_000));
        check(
            &[b"retry: 99999999999999999999999\n"],
            vec![],
            "",
            Some(u64::MAX),
        );
        check(&[b"retry: 300\nretry: x\n"], vec![], "", Some(300));
    }

    #[test]
    fn comments_bom_and_fields_without_colon() {
        check(
            &[b": keepalive\n\n: ping\ndata: x\n\n"],
            vec![ev("x", "")],
            "",
            None,
        );
        check(&[b"\xEF\xBB\xBFdata: x\n\n"], vec![ev("x", "")], "", None);
        check(
            &[b"\xEF\xBB", b"\xBFdata: x\n\n"],
            vec![ev("x", "")],
            "",
            None,
        );
        check(&[b"data\n\n"], vec![ev("", "")], "", None);
        check(&[b"data:no-space\n\n"], vec![ev("no-space", "")], "", None);
        check(&[b"data:  two\n\n"], vec![ev(" two", "")], "", None);
    }

    #[test]
    fn ids_update_even_without_data_and_ignore_nul() {
        // A priming event: id plus empty data is still dispatched, with empty data.
        check(&[b"id: e1\ndata: \n\n"], vec![ev("", "e1")], "e1", None);
        check(&[b"id: e1\n\n"], vec![], "e1", None);
        check(
            &[b"id: e1\n\nid: a\0b\ndata: x\n\n"],
            vec![ev("x", "e1")],
            "e1",
            None,
        );
        check(&[b"id: e1\n\nid\ndata: x\n\n"], vec![ev("x", "")], "", None);
        // An id without a blank line after it is not yet the last event id.
        check(&[b"id: e1\n\nid: e2\n"], vec![], "e1", None);
    }

    #[test]
    fn event_type_resets_after_dispatch() {
        let mut d = Decoder::new(LIMIT);
        let got = d.feed(b"event: endpoint\ndata: /m\n\ndata: y\n\n").unwrap();
        assert_eq!(got[0].event, "endpoint");
        assert_eq!(got[1].event, "message");
    }

    #[test]
    fn oversized_lines_and_events_are_refused() {
        let mut d = Decoder::new(8);
        assert_eq!(
            d.feed(b"data: 0123456789"),
            Err(DecodeError::TooLarge { limit: 8 })
        );
        let mut d = Decoder::new(8);
        assert_eq!(
            d.feed(b"data:1234\ndata:5678\n"),
            Err(DecodeError::TooLarge { limit: 8 })
        );
    }
}
