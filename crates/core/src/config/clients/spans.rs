//! Where each member of a client's JSON (or JSONC: comments, trailing commas) file sits in
//! its text, as byte ranges, so an entry can be replaced without touching a byte around it.
//! Only objects are taken apart; other values are kept as their range.

use std::ops::Range;

/// A value and where it is in the text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub span: Range<usize>,
    /// The members, in file order, when the value is an object.
    pub members: Option<Vec<Member>>,
}

/// One `"key": value` of an object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Member {
    pub key: String,
    /// Where the key's opening quote is.
    pub key_start: usize,
    pub value: Node,
}

impl Node {
    /// The member named `key`, the first one if it repeats.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.members
            .as_ref()?
            .iter()
            .find(|m| m.key == key)
            .map(|m| &m.value)
    }
}

/// The tree of `text`, or the byte offset where it stops being JSON(C).
pub(crate) fn parse(text: &str) -> Result<Node, usize> {
    let mut p = Parser {
        b: text.as_bytes(),
        i: 0,
    };
    if text.starts_with('\u{feff}') {
        p.i = 3;
    }
    p.skip();
    let node = p.value(0)?;
    p.skip();
    if p.i != p.b.len() {
        return Err(p.i);
    }
    Ok(node)
}

/// Where the next token at or after `from` starts: whitespace and comments skipped.
pub(crate) fn next_token(text: &str, from: usize) -> usize {
    let mut p = Parser {
        b: text.as_bytes(),
        i: from,
    };
    p.skip();
    p.i
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

/// Nesting deeper than this is not a client config.
const MAX_DEPTH: usize = 128;

impl Parser<'_> {
    /// Skips whitespace and comments.
    fn skip(&mut self) {
        loop {
            while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
            match (self.b.get(self.i), self.b.get(self.i + 1)) {
                (Some(b'/'), Some(b'/')) => {
                    while self.i < self.b.len() && self.b[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                (Some(b'/'), Some(b'*')) => {
                    self.i += 2;
                    while self.i < self.b.len() && !self.b[self.i..].starts_with(b"*/") {
                        self.i += 1;
                    }
                    self.i = (self.i + 2).min(self.b.len());
                }
                _ => return,
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, usize> {
        if depth > MAX_DEPTH {
            return Err(self.i);
        }
        let start = self.i;
        match self.b.get(self.i) {
            Some(b'{') => self.object(depth),
            Some(b'[') => {
                self.i += 1;
                self.skip();
                while self.b.get(self.i) != Some(&b']') {
                    self.value(depth + 1)?;
                    self.skip();
                    match self.b.get(self.i) {
                        Some(b',') => {
                            self.i += 1;
                            self.skip();
                        }
                        Some(b']') => {}
                        _ => return Err(self.i),
                    }
                }
                self.i += 1;
                Ok(Node {
                    span: start..self.i,
                    members: None,
                })
            }
            Some(b'"') => {
                self.string()?;
                Ok(Node {
                    span: start..self.i,
                    members: None,
                })
            }
            Some(_) => {
                while self.i < self.b.len()
                    && (self.b[self.i].is_ascii_alphanumeric()
                        || matches!(self.b[self.i], b'-' | b'+' | b'.'))
                {
                    self.i += 1;
                }
                if self.i == start {
                    return Err(start);
                }
                Ok(Node {
                    span: start..self.i,
                    members: None,
                })
            }
            None => Err(self.i),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node, usize> {
        let start = self.i;
        self.i += 1;
        self.skip();
        let mut members = Vec::new();
        while self.b.get(self.i) != Some(&b'}') {
            let key_start = self.i;
            if self.b.get(self.i) != Some(&b'"') {
                return Err(self.i);
            }
            let key = self.string()?;
            self.skip();
            if self.b.get(self.i) != Some(&b':') {
                return Err(self.i);
            }
            self.i += 1;
            self.skip();
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_start,
                value,
            });
            self.skip();
            match self.b.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.skip();
                }
                Some(b'}') => {}
                _ => return Err(self.i),
            }
        }
        self.i += 1;
        Ok(Node {
            span: start..self.i,
            members: Some(members),
        })
    }

    /// A string at `self.i`, decoded.
    fn string(&mut self) -> Result<String, usize> {
        let start = self.i;
        self.i += 1;
        loop {
            match self.b.get(self.i) {
                Some(b'\\') => self.i += 2,
                Some(b'"') => break,
                Some(_) => self.i += 1,
                None => return Err(start),
            }
        }
        self.i += 1;
        let raw = std::str::from_utf8(&self.b[start..self.i]).map_err(|_| start)?;
        serde_json::from_str(raw).map_err(|_| start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_point_into_the_text() {
        let text =
            "{\n  // note\n  \"a\": {\"b\": [1, 2,], \"c\": \"x\\\"y\"},\n  \"d\": null,\n}\n";
        let root = parse(text).unwrap();
        let a = root.get("a").unwrap();
        assert_eq!(&text[a.span.clone()], "{\"b\": [1, 2,], \"c\": \"x\\\"y\"}");
        assert_eq!(&text[a.get("c").unwrap().span.clone()], "\"x\\\"y\"");
        assert_eq!(&text[root.get("d").unwrap().span.clone()], "null");
        let m = &root.members.as_ref().unwrap()[0];
        assert_eq!(&text[m.key_start..m.key_start + 3], "\"a\"");
    }

    #[test]
    fn the_next_token_skips_blanks_and_comments() {
        let text = "1 , // c\n /* d */ ,";
        assert_eq!(next_token(text, 1), 2);
        assert_eq!(next_token(text, 3), text.len() - 1);
        assert_eq!(next_token(text, text.len()), text.len());
    }

    #[test]
    fn broken_text_is_an_offset() {
        assert_eq!(parse("{\"a\" 1}"), Err(5));
        assert!(parse("{\"a\": 1} x").is_err());
        assert!(parse("{\"a\": \"open").is_err());
    }
}
