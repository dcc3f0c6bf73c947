//! URLs and connection strings, wherever they are shown. An `http(s)` URL is re-rendered
//! allow-list first: scheme, host, port and path survive (a path segment shaped like a
//! credential is masked: hosted servers put keys there, `https://host/mcp/<key>/sse`),
//! query keys survive with their values masked, userinfo and fragment do not. A URL of any
//! other scheme (`postgresql://`, `mongodb+srv://`, `redis://`, `amqp://`) is a connection
//! string: it keeps its text, user name included, but loses its password, its query and
//! fragment values and any credential-shaped path segment.

use super::shapes::looks_like_credential;
use super::{MASK, Rule, is_secret_name};

/// See `Redactor::url`; `fired` hears each rule that masked something, and the value it
/// masked when that is a secret worth learning (else "").
pub(super) fn shown_url(url: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    if !is_http(url) {
        return match url.find("://") {
            Some(i) if i > 0 && is_scheme(&url[..i]) => shown_connection_string(url, fired),
            _ => "(not a valid URL)".to_owned(),
        };
    }
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return "(not a valid URL)".to_owned();
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        fired(
            Rule::UrlUserinfo,
            &percent_decoded(parsed.password().unwrap_or_default()),
        );
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
    }
    let path = mask_path(parsed.path(), fired);
    parsed.set_path(&path);
    if let Some(query) = parsed.query() {
        let masked = mask_params(query, fired);
        parsed.set_query(Some(&masked));
    }
    parsed.set_fragment(None);
    parsed.to_string()
}

fn is_http(url: &str) -> bool {
    let head: String = url.chars().take(8).collect::<String>().to_ascii_lowercase();
    head.starts_with("http://") || head.starts_with("https://")
}

fn is_scheme(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `scheme://user:PASSWORD@host/path?k=v#f` with the password, the parameter values and
/// credential-shaped path segments masked; everything else as written.
fn shown_connection_string(url: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let main_end = rest.find(['?', '#']).unwrap_or(rest.len());
    let (main, params) = rest.split_at(main_end);
    let mut out = format!("{scheme}://");
    // The last `@` ends the userinfo: an unescaped `@` in a password is still a password.
    // A `/` before the `@` means the `@` is in the path (`/@scope/pkg`).
    let host_and_path = match main.rfind('@').filter(|at| !main[..*at].contains('/')) {
        Some(at) => {
            out.push_str(&masked_userinfo(&main[..at], fired));
            out.push('@');
            &main[at + 1..]
        }
        None => main,
    };
    match host_and_path.find('/') {
        Some(slash) => {
            out.push_str(&host_and_path[..slash]);
            out.push_str(&mask_path(&host_and_path[slash..], fired));
        }
        None => out.push_str(host_and_path),
    }
    out.push_str(&mask_params(params, fired));
    out
}

fn masked_userinfo(userinfo: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    match userinfo.split_once(':') {
        Some((user, password)) if !password.is_empty() && password != MASK => {
            fired(Rule::UrlUserinfo, &percent_decoded(password));
            format!("{user}:{MASK}")
        }
        Some(_) => userinfo.to_owned(),
        None if looks_like_credential(userinfo) => {
            fired(Rule::UrlUserinfo, &percent_decoded(userinfo));
            MASK.to_owned()
        }
        None => userinfo.to_owned(),
    }
}

/// The userinfo password of a URL or connection string of any scheme, as written.
/// Found anywhere in the value (`--db=postgres://…`).
pub fn connection_password(value: &str) -> Option<&str> {
    let (_, after) = find_url(value)?;
    let rest = &value[after..];
    let rest = &rest[..rest.find(char::is_whitespace).unwrap_or(rest.len())];
    let main = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    let userinfo = &main[..main.rfind('@')?];
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty() && !userinfo.contains('/')).then_some(password)
}

/// A path with each segment that looks like a credential replaced by `***`.
pub(super) fn mask_path(path: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    path.split('/')
        .map(|segment| {
            let decoded = percent_decoded(segment);
            if looks_like_credential(&decoded) {
                fired(Rule::UrlPathSegment, &decoded);
                MASK
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Decodes `%XX` escapes well enough to judge a segment's shape: a malformed escape is
/// kept as written, bytes that are not UTF-8 become U+FFFD, and `+` stays a plus (a path
/// or userinfo is not form-encoded).
pub(super) fn percent_decoded(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// `k=v&x=y` (a query or fragment, with or without its leading `?`/`#`) with every value
/// masked. A fragment that is not `k=v` pairs is kept unless it looks like a credential.
fn mask_params(params: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    let mut out = String::with_capacity(params.len());
    let mut rest = params;
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .skip(1)
            .find(|(_, c)| matches!(c, '?' | '#' | '&'))
            .map_or(rest.len(), |(i, _)| i);
        let (piece, next) = rest.split_at(end);
        rest = next;
        let (separator, pair) = match piece.strip_prefix(['?', '#', '&']) {
            Some(pair) => (&piece[..1], pair),
            None => ("", piece),
        };
        out.push_str(separator);
        match pair.split_once('=') {
            Some((key, value)) => {
                if !value.is_empty() && value != MASK {
                    // Only a key that says so makes its value a secret worth learning:
                    // `?page=12345678` is not one.
                    let learned = if is_secret_name(key) {
                        percent_decoded(value)
                    } else {
                        String::new()
                    };
                    fired(Rule::UrlQueryValue, &learned);
                }
                out.push_str(key);
                out.push('=');
                out.push_str(if value.is_empty() { "" } else { MASK });
            }
            None if looks_like_credential(pair) => {
                fired(Rule::UrlQueryValue, pair);
                out.push_str(MASK);
            }
            None => out.push_str(pair),
        }
    }
    out
}

/// Re-renders every URL and connection string in free text through `shown_url`. A URL
/// ends at whitespace or at a character that closes a quotation. An `http(s)` URL with
/// nothing to hide is left exactly as written.
pub(super) fn scrub_urls(text: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((start, after)) = find_url(rest) {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let end = rest
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(rest.len())
            .max(after - start);
        let (url, trailing) = split_trailing_punctuation(&rest[..end]);
        if !is_http(url) {
            out.push_str(&shown_connection_string(url, fired));
        } else if url.contains(['@', '?', '#']) || has_credential_segment(url) {
            let shown = shown_url(url, fired);
            out.push_str(if shown.starts_with('(') { MASK } else { &shown });
        } else {
            out.push_str(url);
        }
        out.push_str(trailing);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn has_credential_segment(url: &str) -> bool {
    let after_scheme = url.split_once("://").map_or(url, |(_, r)| r);
    after_scheme
        .split('/')
        .skip(1)
        .any(|s| looks_like_credential(&percent_decoded(s)))
}

/// Where the first URL (`scheme://…`, any scheme) starts, and where its `://` ends.
/// Found through `://`, so long text with many URLs is scanned once.
fn find_url(text: &str) -> Option<(usize, usize)> {
    text.match_indices("://").find_map(|(i, _)| {
        let before = &text[..i];
        let scheme_len = before
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .count();
        let mut start = i - scheme_len;
        // The scheme starts with a letter: `1http://` is `http://` after a `1`.
        while start < i && !text.as_bytes()[start].is_ascii_alphabetic() {
            start += 1;
        }
        let has_rest = text[i + 3..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace());
        (start < i && has_rest).then_some((start, i + 3))
    })
}

/// A sentence's closing punctuation is not part of the URL it ends with.
fn split_trailing_punctuation(url: &str) -> (&str, &str) {
    let cut = url.trim_end_matches(['.', ',', ';', ')', ']', '}']).len();
    url.split_at(cut)
}

/// Masks the values of query and fragment parameters outside a full URL:
/// `/callback#access_token=…&state=…`, `GET /mcp?api_key=…`. A word counts when a `?` or
/// `#` is followed by `name=`.
pub(super) fn scrub_bare_params(text: &str, fired: &mut dyn FnMut(Rule, &str)) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in text.split_inclusive(char::is_whitespace) {
        let word = piece.trim_end_matches(char::is_whitespace);
        let space = &piece[word.len()..];
        let start = word.find(['?', '#']);
        match start {
            Some(i) if !word.contains("://") && has_param(&word[i + 1..]) => {
                out.push_str(&word[..i]);
                let (params, trailing) = split_param_end(&word[i..]);
                out.push_str(&mask_params(params, fired));
                out.push_str(trailing);
            }
            _ => out.push_str(word),
        }
        out.push_str(space);
    }
    out
}

/// `name=` right at the start: a parameter, not prose that happens to hold `?` and `=`.
fn has_param(s: &str) -> bool {
    s.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']'))
    })
}

/// Parameters end where a quotation or a bracket closes.
fn split_param_end(s: &str) -> (&str, &str) {
    let end = s
        .find(['"', '\'', '`', '<', '>', ')', ']', '}', ','])
        .unwrap_or(s.len());
    s.split_at(end)
}
