//! The character-level part of the flags (`flags.rs` says what each flags), and what the
//! flags share (`FlagKind`, `runs`, quoting): which characters hide text (`class`), which
//! variation selectors and joiners are only part of an emoji (`hidden_at`), which letters
//! pass for ASCII ones (`lookalike`), and the `invisible`, `bidi`, `tag` and `confusable`
//! flags they make. A few ranges of code points, not the Unicode database: no crate.

use serde::Serialize;

/// Direction-changing characters, as pairs of first and last code point.
const BIDI: [u32; 8] = [0x61C, 0x61C, 0x200E, 0x200F, 0x202A, 0x202E, 0x2066, 0x2069];

/// The default-ignorable characters that are not bidi, tag or whitespace, as pairs of first
/// and last code point: soft hyphen, grapheme joiner, Hangul and Khmer fillers, Mongolian
/// selectors, zero-width space and joiners, word joiner and invisible operators, deprecated
/// format characters, variation selectors, the byte-order mark, unassigned specials,
/// shorthand and musical format controls, and the rest of plane 14.
const INVISIBLE: [u32; 32] = [
    0xAD, 0xAD, 0x34F, 0x34F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0x3164, 0xFFA0, 0xFFA0,
    0x180B, 0x180F, 0x200B, 0x200D, 0x2060, 0x2064, 0x206A, 0x206F, 0xFE00, 0xFE0F, 0xFEFF, 0xFEFF,
    0xFFF0, 0xFFFB, 0x1BCA0, 0x1BCA3, 0x1D173, 0x1D17A, 0xE0080, 0xE0FFF,
];

/// The symbols that can show as emoji, as pairs of first and last code point: ©, ®, ‼, ⁉, ™,
/// ℹ, arrows through miscellaneous symbols and arrows (U+2190–U+2BFF: technical symbols,
/// enclosed alphanumerics, shapes, dingbats), 〰, 〽, ㊗, ㊙, and the emoji blocks of plane 1
/// (U+1F000–U+1FAFF, skin-tone modifiers and regional indicators among them).
const EMOJI: [u32; 24] = [
    0xA9, 0xA9, 0xAE, 0xAE, 0x203C, 0x203C, 0x2049, 0x2049, 0x2122, 0x2122, 0x2139, 0x2139, 0x2190,
    0x2BFF, 0x3030, 0x3030, 0x303D, 0x303D, 0x3297, 0x3297, 0x3299, 0x3299, 0x1F000, 0x1FAFF,
];

const VS15: char = '\u{FE0E}';
const VS16: char = '\u{FE0F}';
const ZWJ: char = '\u{200D}';
const KEYCAP: char = '\u{20E3}';

fn within(pairs: &[u32], c: char) -> bool {
    pairs.chunks(2).any(|p| (p[0]..=p[1]).contains(&(c as u32)))
}

/// The kind of a hidden character (`Tag`, `Bidi` or `Invisible`); `None` for any other.
pub(super) fn class(c: char) -> Option<FlagKind> {
    let control = c.is_control() && !matches!(c, '\t' | '\n' | '\r');
    if ('\u{E0000}'..='\u{E007F}').contains(&c) {
        Some(FlagKind::Tag)
    } else if !c.is_ascii() && within(&BIDI, c) {
        Some(FlagKind::Bidi)
    } else if control || (!c.is_ascii() && within(&INVISIBLE, c)) {
        Some(FlagKind::Invisible)
    } else {
        None
    }
}

/// The `class` of `chars[i]`, but `None` for a selector or joiner inside an emoji: U+FE0E or
/// U+FE0F right after an emoji symbol, U+FE0F between `0`–`9`, `#` or `*` and U+20E3 (a
/// keycap), and U+200D between two emoji (the first maybe with its U+FE0F).
fn hidden_at(chars: &[char], i: usize) -> Option<FlagKind> {
    let in_emoji = match chars[i] {
        VS15 | VS16 => selects(chars, i),
        ZWJ => joins(chars, i),
        _ => false,
    };
    if in_emoji { None } else { class(chars[i]) }
}

fn emoji(c: char) -> bool {
    within(&EMOJI, c)
}

/// Whether the variation selector at `i` selects an emoji's or a keycap's presentation.
fn selects(chars: &[char], i: usize) -> bool {
    let Some(&before) = i.checked_sub(1).and_then(|j| chars.get(j)) else {
        return false;
    };
    let keycap = chars[i] == VS16
        && matches!(before, '0'..='9' | '#' | '*')
        && chars.get(i + 1) == Some(&KEYCAP);
    emoji(before) || keycap
}

/// Whether the joiner at `i` joins two emoji.
fn joins(chars: &[char], i: usize) -> bool {
    let before = match i.checked_sub(1) {
        Some(j) if chars[j] == VS16 => selects(chars, j),
        Some(j) => emoji(chars[j]),
        None => false,
    };
    before && chars.get(i + 1).copied().is_some_and(emoji)
}

/// Common lookalikes of ASCII letters by script: each character of the first string passes
/// for the one at its place in the second (fullwidth forms are computed in `lookalike`).
pub(super) const LOOKALIKES: [(&str, &str); 5] = [
    ("аеорсухіјѕԁһԛԝӏ", "aeopcyxijsdhqwl"), // Cyrillic
    ("АВЕКМНОРСТХІЈЅ", "ABEKMHOPCTXIJS"),
    ("οανικρ", "oavikp"), // Greek
    ("ΑΒΕΖΗΙΚΜΝΟΡΤΧ", "ABEZHIKMNOPTX"),
    ("ɡıȷ", "gij"), // Latin
];

/// The ASCII character `c` passes for, if it is a common lookalike.
pub(super) fn lookalike(c: char) -> Option<char> {
    match c {
        // Fullwidth forms of ASCII `!`..`~`.
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFF01 + 0x21),
        '\u{2010}'..='\u{2013}' | '\u{2212}' => Some('-'),
        _ => LOOKALIKES.iter().find_map(|(from, to)| {
            let k = from.chars().position(|l| l == c)?;
            to.chars().nth(k)
        }),
    }
}

/// Runs of invisible, bidi and tag characters.
pub(super) fn hidden(chars: &[char], cap: usize) -> Vec<Hit> {
    let key = |i: usize| hidden_at(chars, i);
    let why = |kind, start, end| (kind, start, end, why_hidden(kind, &chars[start..end]));
    let found = runs(chars.len(), key).map(|(k, s, e)| why(k, s, e));
    found.take(cap).collect()
}

fn why_hidden(kind: FlagKind, run: &[char]) -> String {
    let (n, s) = (run.len(), if run.len() == 1 { "" } else { "s" });
    if kind == FlagKind::Tag {
        // A tag character is U+E0000 plus an ASCII code (below 0x80).
        let ascii = run.iter().map(|&c| char::from((c as u32 - 0xE0000) as u8));
        let spelled = quote(ascii.filter(|c| *c == ' ' || c.is_ascii_graphic()));
        let what = format!("{n} invisible Unicode tag character{s} (U+E0000–U+E007F)");
        return format!("{what}, hiding the text \"{spelled}\"");
    }
    let codes = listed(run.iter().map(|&c| format!("U+{:04X}", c as u32)));
    let (what, effect) = match kind {
        FlagKind::Bidi => (
            "direction-changing",
            "text may show out of the order it is read",
        ),
        _ => ("invisible", "a reader does not see what the model reads"),
    };
    format!("{n} {what} character{s} ({codes}): {effect}")
}

/// Runs of visible non-ASCII characters in a name.
pub(super) fn confusables(chars: &[char], cap: usize) -> Vec<Hit> {
    let visible_non_ascii = |c: char| !c.is_ascii() && !c.is_whitespace() && class(c).is_none();
    let key = |i: usize| visible_non_ascii(chars[i]).then_some(());
    let why = |run: &[char]| {
        let said = listed(run.iter().map(|&c| match lookalike(c) {
            Some(a) => format!("U+{:04X} '{c}' looks like '{a}'", c as u32),
            None => format!("U+{:04X} '{c}'", c as u32),
        }));
        format!("not ASCII in a tool name, where it can pass for another: {said}")
    };
    let found =
        runs(chars.len(), key).map(|(_, s, e)| (FlagKind::Confusable, s, e, why(&chars[s..e])));
    found.take(cap).collect()
}

/// Text quoted in a why or a path is cut at this many characters.
pub(super) const QUOTE_MAX: usize = 80;

/// What kind of flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    Invisible,
    Bidi,
    Tag,
    Confusable,
    Instruction,
    Long,
    Base64,
    Url,
    OtherTool,
}

/// A flag found in one field's text: its kind, character span and why.
pub(super) type Hit = (FlagKind, usize, usize, String);

/// The maximal runs of positions `0..n` for which `key` gives one `Some`: (key, start, end).
pub(super) fn runs<K: Copy + PartialEq>(
    n: usize,
    key: impl Fn(usize) -> Option<K>,
) -> impl Iterator<Item = (K, usize, usize)> {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < n {
            let start = i;
            i += 1;
            if let Some(k) = key(start) {
                while i < n && key(i) == Some(k) {
                    i += 1;
                }
                return Some((k, start, i));
            }
        }
        None
    })
}

/// The distinct `items`, the first five of them, joined with commas (`…` for the rest).
pub(super) fn listed(items: impl Iterator<Item = String>) -> String {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if out.contains(&item) {
            continue;
        } else if out.len() == 5 {
            out.push("…".to_owned());
            break;
        }
        out.push(item);
    }
    out.join(", ")
}

/// `text` with every hidden character (`class`, but the selectors and joiners inside emoji)
/// written as `\u{XXXX}`, so that a terminal or a page shows what a model would read (and
/// an escape sequence cannot rewrite the terminal). Tabs and line breaks stay.
pub fn visible(text: &str) -> String {
    if !text.chars().any(|c| class(c).is_some()) {
        return text.to_owned();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        match hidden_at(&chars, i) {
            Some(_) => out.push_str(&format!("\\u{{{:04X}}}", c as u32)),
            None => out.push(c),
        }
    }
    out
}

/// Up to `QUOTE_MAX` characters of `text`, with `"`, `\`, controls and hidden characters
/// escaped (`\u{200B}`), and `…` if cut.
pub(super) fn quote(text: impl Iterator<Item = char>) -> String {
    let mut out = String::new();
    for (n, c) in text.enumerate() {
        match c {
            _ if n == QUOTE_MAX => {
                out.push('…');
                break;
            }
            '"' | '\\' => out.extend(['\\', c]),
            c if c.is_control() || class(c).is_some() => {
                out.push_str(&format!("\\u{{{:04X}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}
