//! The words search mode ranks by: runs of ASCII letters and digits, split again where the
//! case changes (`entityNames` → entity, names), lowercased, cut to `MAX_TOKEN` bytes, with a
//! small stop list and a light plural strip (`directories` → directory, `branches` → branch).
//! The same function reads the tools and the query, so both sides agree.
//!
//! It works on bytes: anything that is not an ASCII letter or digit — punctuation, `_`, `-`,
//! every byte of a non-ASCII character — separates words, so no input can split a character
//! or make a token longer than the cap.

/// A word longer than this is cut to it (a base64 blob is one word, not a megabyte).
pub(super) const MAX_TOKEN: usize = 32;

/// Words that say nothing about which tool is meant. Small on purpose: a word a tool could
/// be named after (`show`, `list`, `all`…) stays.
const STOP: &[&str] = &[
    "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "please", "so", "that", "the",
    "this", "to", "was", "we", "what", "when", "where", "which", "who", "with", "you", "your",
];

/// Words a developer types for what tools call otherwise, each with the tools' words a query
/// also looks for (at `ALTERNATIVE` weight): shell commands, everyday synonyms, and a
/// knowledge graph's terms. Query side only; a tool's own words are never rewritten.
const ALTERNATIVES: &[(&str, &[&str])] = &[
    ("big", &["size"]),
    ("biggest", &["size"]),
    ("cat", &["read"]),
    ("cp", &["copy"]),
    ("dir", &["directory"]),
    ("erase", &["delete"]),
    ("fact", &["observation"]),
    ("folder", &["directory"]),
    ("forget", &["delete"]),
    ("large", &["size"]),
    ("largest", &["size"]),
    ("link", &["relation"]),
    ("ls", &["list"]),
    ("make", &["create"]),
    ("mkdir", &["create", "directory"]),
    ("mv", &["move"]),
    ("people", &["entity"]),
    ("person", &["entity"]),
    ("remember", &["memory", "create"]),
    ("remove", &["delete"]),
    ("rm", &["delete"]),
    ("stage", &["staging"]),
    ("store", &["create", "write"]),
];

/// How much a word found through `ALTERNATIVES` counts, against one the query holds.
pub(super) const ALTERNATIVE: f64 = 0.5;

/// The words a query also looks for when it holds `word` (sorted table, binary search).
pub(super) fn alternatives(word: &str) -> &'static [&'static str] {
    ALTERNATIVES
        .binary_search_by(|(w, _)| (*w).cmp(word))
        .map_or(&[], |i| ALTERNATIVES[i].1)
}

/// Calls `each` with every word of `text`'s first `cap` bytes, in order.
pub(super) fn words(text: &str, cap: usize, mut each: impl FnMut(String)) {
    let bytes = &text.as_bytes()[..text.len().min(cap)];
    for run in bytes.split(|b| !b.is_ascii_alphanumeric()) {
        let mut start = 0;
        for i in 1..run.len() {
            if case_boundary(run, i) {
                emit(&run[start..i], &mut each);
                start = i;
            }
        }
        emit(&run[start..], &mut each);
    }
}

/// Whether a new word starts at `i`: `aB` (camelCase), or `ABc` (the `c` of `HTTPClient`
/// starts `Client`).
fn case_boundary(run: &[u8], i: usize) -> bool {
    let (before, here) = (run[i - 1], run[i]);
    let next_lower = run.get(i + 1).is_some_and(u8::is_ascii_lowercase);
    (before.is_ascii_lowercase() && here.is_ascii_uppercase())
        || (before.is_ascii_uppercase() && here.is_ascii_uppercase() && next_lower)
}

fn emit(piece: &[u8], each: &mut impl FnMut(String)) {
    if piece.len() < 2 {
        return; // `a`, `b`, a stray letter: noise in a tool's text and in a query
    }
    let cut = &piece[..piece.len().min(MAX_TOKEN)];
    // Only ASCII letters and digits are here, so this is always valid UTF-8.
    let word: String = cut.iter().map(|b| b.to_ascii_lowercase() as char).collect();
    if !STOP.contains(&word.as_str()) {
        each(singular(word));
    }
}

/// The light plural strip: `ies` → `y`, `sses`/`ches`/`shes`/`xes` lose `es`, and a final
/// `s` goes unless the word ends `ss`, `us` or `is` or is three letters or fewer.
fn singular(mut word: String) -> String {
    let n = word.len();
    if n <= 3 || !word.ends_with('s') {
        return word;
    }
    if word.ends_with("ies") && n > 4 {
        word.truncate(n - 3);
        word.push('y');
    } else if ["sses", "ches", "shes", "xes"]
        .iter()
        .any(|e| word.ends_with(e))
    {
        word.truncate(n - 2);
    } else if !["ss", "us", "is"].iter().any(|e| word.ends_with(e)) {
        word.truncate(n - 1);
    }
    word
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expect: &[&str]) {
        let mut got = Vec::new();
        words(text, usize::MAX, |w| got.push(w));
        assert_eq!(got, expect, "words of {text:?}");
    }

    #[test]
    fn splits_names_and_prose() {
        check(
            "filesystem__read_text_file",
            &["filesystem", "read", "text", "file"],
        );
        check(
            "everything__get-tiny-image",
            &["everything", "get", "tiny", "image"],
        );
        check("entityNames", &["entity", "name"]);
        check("readHTTPClient v2", &["read", "http", "client", "v2"]);
        check(
            "Shows the working tree status",
            &["show", "working", "tree", "status"],
        );
        check(
            "directories, branches & boxes",
            &["directory", "branch", "box"],
        );
        check("processes vs. class", &["process", "vs", "class"]);
        check("a b c", &[]);
        check("", &[]);
    }

    #[test]
    fn non_ascii_separates_and_never_splits_a_character() {
        check("café東京timezone", &["caf", "timezone"]);
        let mut got = Vec::new();
        // The cap falls inside the two-byte `é`: the bytes before it are read, nothing more.
        words("read é file", 6, |w| got.push(w));
        assert_eq!(got, ["read"]);
    }

    #[test]
    fn the_alternatives_are_sorted_and_in_their_own_form() {
        assert!(
            ALTERNATIVES.windows(2).all(|p| p[0].0 < p[1].0),
            "keep the table sorted"
        );
        for (word, also) in ALTERNATIVES
            .iter()
            .flat_map(|(w, a)| a.iter().map(move |x| (w, x)))
        {
            for w in [word, also] {
                let mut got = Vec::new();
                words(w, usize::MAX, |x| got.push(x));
                assert_eq!(got, [*w], "{w:?} must be a word as `words` makes it");
            }
        }
        assert_eq!(alternatives("folder"), ["directory"]);
        assert_eq!(alternatives("directory"), [] as [&str; 0]);
    }

    #[test]
    fn a_long_word_is_cut() {
        let mut got = Vec::new();
        words(&"x".repeat(10_000), usize::MAX, |w| got.push(w));
        assert_eq!(got, ["x".repeat(MAX_TOKEN)]);
    }
}
