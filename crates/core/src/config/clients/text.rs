//! Text edits to a client's file in the file's own style: a new entry is written with the
//! file's indent (spaces or tabs) and line ending at the depth of the entry it replaces;
//! edits are byte ranges replaced, so everything outside them stays byte for byte; and a
//! unified diff of the edits for a preview. Members are added to an object and taken out
//! of it with their commas, leaving valid JSON(C).

use super::spans;
use serde::Serialize;
use serde_json::{Value, json};
use std::ops::Range;

/// How the file is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Style {
    /// One level of indent ("  ", "    ", "\t"); `None` for a file on one line.
    pub indent: Option<String>,
    pub newline: &'static str,
}

/// The style of `text`: the indent of its first indented line, CRLF if it has any.
pub(crate) fn style(text: &str) -> Style {
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let indent = text.lines().skip(1).find_map(|line| {
        let ws: String = line
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        let rest = line[ws.len()..].trim();
        (!ws.is_empty() && !rest.is_empty()).then(|| {
            if ws.starts_with('\t') {
                "\t".to_owned()
            } else {
                ws
            }
        })
    });
    Style { indent, newline }
}

/// `value` as JSON in `style`, its lines after the first indented like the line that
/// `at` (a byte offset in `text`) is on.
pub(crate) fn render(value: &Value, style: &Style, text: &str, at: usize) -> String {
    let Some(indent) = &style.indent else {
        return serde_json::to_string(value).expect("a JSON value always serializes");
    };
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value
        .serialize(&mut ser)
        .expect("a JSON value always serializes");
    let pretty = String::from_utf8(out).expect("serde_json writes UTF-8");
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let base: String = text[line_start..at]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    pretty.replace('\n', &format!("{}{base}", style.newline))
}

/// One replacement: the bytes in `range` become `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub range: Range<usize>,
    pub with: String,
}

/// `text` with the edits (sorted, not overlapping) made.
pub(crate) fn apply(text: &str, edits: &[Edit]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for e in edits {
        out.push_str(&text[at..e.range.start]);
        out.push_str(&e.with);
        at = e.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// A unified diff of the edits, `old` and `new` naming the files in its header. Each edit
/// is widened to whole lines; edits sharing a line become one change.
pub(crate) fn unified(text: &str, edits: &[Edit], old: &str, new: &str) -> String {
    if edits.is_empty() {
        return String::new();
    }
    let starts = line_starts(text);
    let line_of = |offset: usize| starts.partition_point(|&s| s <= offset) - 1;
    // Changes: old lines [a, b) become `lines`.
    let mut changes: Vec<(usize, usize, Vec<Edit>)> = Vec::new();
    for e in edits {
        let a = line_of(e.range.start);
        let b = line_of(e.range.end.max(e.range.start + 1) - 1) + 1;
        match changes.last_mut() {
            Some(last) if a < last.1 => {
                last.1 = last.1.max(b);
                last.2.push(e.clone());
            }
            _ => changes.push((a, b, vec![e.clone()])),
        }
    }
    let old_lines: Vec<&str> = text.split_inclusive('\n').collect();
    let line_end = |i: usize| starts.get(i).copied().unwrap_or(text.len());
    let changes: Vec<(usize, usize, Vec<String>)> = changes
        .into_iter()
        .map(|(a, b, group)| {
            let region = line_start_of(&starts, a)..line_end(b);
            let shifted: Vec<Edit> = group
                .iter()
                .map(|e| Edit {
                    range: e.range.start - region.start..e.range.end - region.start,
                    with: e.with.clone(),
                })
                .collect();
            let replaced = apply(&text[region], &shifted);
            (
                a,
                b,
                replaced.split_inclusive('\n').map(str::to_owned).collect(),
            )
        })
        .collect();

    let mut out = format!("--- {old}\n+++ {new}\n");
    let mut delta: isize = 0;
    let mut i = 0;
    while i < changes.len() {
        // A hunk: changes whose context would touch, together.
        let mut j = i;
        while j + 1 < changes.len() && changes[j + 1].0 <= changes[j].1 + 2 * CONTEXT {
            j += 1;
        }
        let from = changes[i].0.saturating_sub(CONTEXT);
        let to = (changes[j].1 + CONTEXT).min(old_lines.len());
        let mut body = Vec::new();
        let mut at = from;
        let mut n_old = 0;
        let mut n_new = 0;
        for (a, b, lines) in &changes[i..=j] {
            for line in &old_lines[at..*a] {
                body.push(format!(" {}", trim_end(line)));
            }
            n_old += a - at;
            n_new += a - at;
            for line in &old_lines[*a..*b] {
                body.push(format!("-{}", trim_end(line)));
            }
            for line in lines {
                body.push(format!("+{}", trim_end(line)));
            }
            n_old += b - a;
            n_new += lines.len();
            at = *b;
        }
        for line in &old_lines[at..to] {
            body.push(format!(" {}", trim_end(line)));
        }
        n_old += to - at;
        n_new += to - at;
        let new_from = (from as isize + delta) as usize;
        out.push_str(&format!(
            "@@ -{},{n_old} +{},{n_new} @@\n",
            from + 1,
            new_from + 1
        ));
        for line in body {
            out.push_str(&line);
            out.push('\n');
        }
        delta += n_new as isize - n_old as isize;
        i = j + 1;
    }
    out
}

fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
    if starts.last() == Some(&text.len()) && !text.is_empty() {
        starts.pop();
    }
    starts
}

fn line_start_of(starts: &[usize], line: usize) -> usize {
    starts[line]
}

fn trim_end(line: &str) -> &str {
    line.trim_end_matches('\n').trim_end_matches('\r')
}

/// `"key": value` in the file's style, at the depth of the line `at` is on.
pub(crate) fn member(key: &str, value: &Value, style: &Style, text: &str, at: usize) -> String {
    let quoted = serde_json::to_string(key).expect("a string always serializes");
    format!("{quoted}: {}", render(value, style, text, at))
}

/// The member `"key": value` added to the object `node`: after its last member, on a line
/// of its own at that member's indent, or as the only one of an empty object.
pub(crate) fn add_member(
    text: &str,
    style: &Style,
    node: &spans::Node,
    key: &str,
    value: &Value,
) -> Edit {
    let Some(last) = node.members.as_deref().and_then(<[_]>::last) else {
        let object = json!({ key: value });
        return Edit {
            range: node.span.clone(),
            with: render(&object, style, text, node.span.start),
        };
    };
    let line = text[..last.key_start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line..last.key_start];
    let own_line = style.indent.is_some() && indent.chars().all(|c| c == ' ' || c == '\t');
    let gap = if own_line {
        format!("{}{indent}", style.newline)
    } else {
        " ".to_owned()
    };
    let end = last.value.span.end;
    Edit {
        range: end..end,
        with: format!(",{gap}{}", member(key, value, style, text, last.key_start)),
    }
}

/// The edits taking the members `taken` (indices, ascending) out of the object `node`, and
/// writing `replace` (an index and its new text) over that member: a member followed by one
/// that stays goes with its comma (and its lines when it had them to itself); the members
/// after the last that stays go together with the comma before them.
pub(crate) fn take_out(
    text: &str,
    node: &spans::Node,
    taken: &[usize],
    replace: Option<(usize, String)>,
) -> Vec<Edit> {
    let members = node.members.as_deref().unwrap_or_default();
    let stays = |i: usize| !taken.contains(&i);
    let last_kept = (0..members.len()).rev().find(|&i| stays(i));
    let mut edits = Vec::new();
    for (i, m) in members.iter().enumerate() {
        if let Some((at, with)) = &replace
            && *at == i
        {
            edits.push(Edit {
                range: m.key_start..m.value.span.end,
                with: with.clone(),
            });
        }
        if stays(i) || last_kept.is_none_or(|k| i > k) {
            continue;
        }
        let line = text[..m.key_start].rfind('\n').map_or(0, |n| n + 1);
        let blank = |s: &str| s.chars().all(|c| c == ' ' || c == '\t');
        let start = if blank(&text[line..m.key_start]) {
            line
        } else {
            m.key_start
        };
        let comma = spans::next_token(text, m.value.span.end);
        let mut end = comma + 1;
        end += text[end..].len() - text[end..].trim_start_matches([' ', '\t']).len();
        if text[end..].starts_with("\r\n") {
            end += 2;
        } else if text[end..].starts_with('\n') {
            end += 1;
        }
        edits.push(Edit {
            range: start..end,
            with: String::new(),
        });
    }
    let first = last_kept.map_or(0, |k| k + 1);
    if let Some(last) = members.get(first..).and_then(<[_]>::last) {
        let mut end = last.value.span.end;
        let after = spans::next_token(text, end);
        if text.as_bytes().get(after) == Some(&b',') {
            end = after + 1;
        }
        let start = match last_kept {
            Some(k) => {
                let comma = spans::next_token(text, members[k].value.span.end);
                edits.push(Edit {
                    range: comma..comma + 1,
                    with: String::new(),
                });
                let key = members[first].key_start;
                let mut start =
                    key - (text[..key].len() - text[..key].trim_end_matches([' ', '\t']).len());
                if text[..start].ends_with("\r\n") {
                    start -= 2;
                } else if text[..start].ends_with('\n') {
                    start -= 1;
                }
                start.max(comma + 1)
            }
            None => node.span.start + 1,
        };
        edits.push(Edit {
            range: start..end,
            with: String::new(),
        });
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn style_follows_the_file() {
        let check = |text: &str, indent: Option<&str>, newline: &str| {
            let s = style(text);
            assert_eq!(s.indent.as_deref(), indent, "{text:?}");
            assert_eq!(s.newline, newline, "{text:?}");
        };
        check("{\n  \"a\": 1\n}\n", Some("  "), "\n");
        check("{\r\n    \"a\": 1\r\n}", Some("    "), "\r\n");
        check("{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}", Some("\t"), "\n");
        check("{\"a\": 1}", None, "\n");
    }

    #[test]
    fn rendered_entries_sit_at_their_depth() {
        let text = "{\n    \"s\": {\n        \"x\": 1\n    }\n}";
        let at = text.find("1").unwrap();
        let v = json!({"command": "/l", "args": ["connect", "x"]});
        assert_eq!(
            render(&v, &style(text), text, at),
            "{\n            \"command\": \"/l\",\n            \"args\": [\n                \
             \"connect\",\n                \"x\"\n            ]\n        }"
        );
        assert_eq!(
            render(&v, &style("{}"), "{}", 1),
            "{\"command\":\"/l\",\"args\":[\"connect\",\"x\"]}"
        );
    }

    #[test]
    fn the_diff_shows_whole_lines_with_context() {
        let text = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let at = text.find('e').unwrap();
        let edits = [Edit {
            range: at..at + 1,
            with: "E1\nE2".to_owned(),
        }];
        assert_eq!(
            unified(text, &edits, "x", "y"),
            "--- x\n+++ y\n@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E1\n+E2\n f\n g\n h\n"
        );
        assert_eq!(
            apply(text, &edits),
            "a\nb\nc\nd\nE1\nE2\nf\ng\nh\ni\nj\nk\n"
        );
    }
}
