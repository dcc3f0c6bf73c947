//! JSON with comments, as VS Code and Cursor write their settings: `//` and `/* */`
//! comments and trailing commas are blanked out (replaced by spaces, so a syntax error's
//! line and column still point into the original text). Plain JSON passes unchanged.

pub(crate) fn to_json(text: &str) -> String {
    let no_comments = blank_comments(text);
    blank_trailing_commas(&no_comments)
}

fn blank_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                out.push(' ');
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                    out.push(' ');
                }
            }
            ('/', Some('*')) => {
                chars.next();
                out.push_str("  ");
                let mut prev = ' ';
                for c in chars.by_ref() {
                    out.push(if c == '\n' { '\n' } else { ' ' });
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn blank_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        let trailing = c == ','
            && chars[i + 1..]
                .iter()
                .find(|c| !c.is_whitespace())
                .is_some_and(|&c| c == '}' || c == ']');
        out.push(if trailing { ' ' } else { c });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expect: &str) {
        assert_eq!(to_json(input), expect, "{input}");
    }

    #[test]
    fn comments_and_trailing_commas_become_spaces() {
        check(r#"{"a": 1}"#, r#"{"a": 1}"#);
        check("{\"a\": 1 // one\n}", "{\"a\": 1       \n}");
        check(r#"{/* x */"a": 1}"#, r#"{       "a": 1}"#);
        check("{\"a\": [1, 2,],}", "{\"a\": [1, 2 ] }");
        check("{\"a\": 1,\n // end\n}", "{\"a\": 1 \n       \n}");
    }

    #[test]
    fn strings_are_left_alone() {
        check(
            r#"{"u": "http://x/*y*/", "c": ",}"}"#,
            r#"{"u": "http://x/*y*/", "c": ",}"}"#,
        );
        check(r#"{"q": "a\"//b"}"#, r#"{"q": "a\"//b"}"#);
        check(r#"{"q": "\\", "r": 1,}"#, r#"{"q": "\\", "r": 1 }"#);
    }
}
