//! Newline-delimited framing with a cap: the one line reader for every stream whose lines
//! come from someone else (a stdio server's stdout, a host's stdin, the app's endpoint).
//! `AsyncBufReadExt::read_until` buffers a line whole before its length can be checked, so
//! an endless line is unbounded memory; this reader stops at the cap without reading past
//! it.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What one read gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    /// A line is in the buffer, without its `\n` (the last line of a stream may have none).
    Line,
    /// The stream ended with nothing buffered.
    Eof,
    /// The line is longer than the cap. The stream cannot be framed past this point: the
    /// caller closes it. Nothing past the cap was consumed.
    TooLong,
}

/// Appends to `buf` up to, and without, the next `\n`, refusing to hold more than `max`
/// bytes in `buf`.
///
/// Cancel-safe like `read_until`: what was consumed is in `buf`, so a call cancelled by
/// `select!` and made again with the same `buf` continues the same line.
pub async fn read_line_capped<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            return Ok(if buf.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (take, found) = match avail.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (avail.len(), false),
        };
        if buf.len() + take > max {
            return Ok(LineRead::TooLong);
        }
        buf.extend_from_slice(&avail[..take]);
        r.consume(if found { take + 1 } else { take });
        if found {
            return Ok(LineRead::Line);
        }
    }
}

/// A byte count as a cap is usually written: "16 MiB", "64 KiB", "1000 bytes".
pub fn fmt_bytes(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
#[path = "lines_tests.rs"]
mod tests;
