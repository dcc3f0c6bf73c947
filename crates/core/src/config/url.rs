//! What of a URL is secret: its user name, password, query values and any path segment
//! shaped like a credential (`https://host/mcp/<key>/sse`). `shown_url` is the form that
//! may be printed (the rule lives in `redact`); `url_secrets` lists the parts
//! the redactor must scrub.

use crate::redact::looks_like_credential;

/// A URL as it may be shown: no userinfo, query values and credential-shaped path
/// segments masked (`redact` owns the rule).
pub fn shown_url(url: &str) -> String {
    crate::redact::Redactor::default().url(url)
}

/// User name, password, query values and credential-shaped path segments of a URL, both
/// as written (percent-encoded) and decoded, since either form may turn up in a message.
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Vec::new();
    };
    let mut written: Vec<&str> = vec![parsed.username()];
    written.extend(parsed.password());
    written.extend(
        parsed
            .query()
            .unwrap_or("")
            .split('&')
            .filter_map(|kv| kv.split_once('=').map(|(_, v)| v)),
    );
    written.extend(
        parsed
            .path()
            .split('/')
            .filter(|s| looks_like_credential(&percent_decode(s))),
    );
    let mut out: Vec<String> = Vec::new();
    for w in written {
        for s in [w.to_owned(), percent_decode(w)] {
            if !s.is_empty() && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// Decodes `%XX` escapes and `+` as a space, as in a query (`+` first, so that an escaped
/// `%2B` stays a plus). A malformed escape is kept as written, and bytes that are not UTF-8
/// become U+FFFD: either way the result is only compared with what a message may hold.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_url_has_no_credentials_or_query_values() {
        let check = |url: &str, expect: &str| assert_eq!(shown_url(url), expect, "{url}");
        check("https://h.example/mcp", "https://h.example/mcp");
        check(
            "https://u:p@h.example:8443/a/b?k=v&x=y#frag",
            "https://h.example:8443/a/b?k=***&x=***",
        );
        check("not a url", "(not a valid URL)");
    }

    #[test]
    fn url_secrets_are_listed_as_written_and_decoded() {
        let check = |url: &str, expect: &[&str]| assert_eq!(url_secrets(url), expect, "{url}");
        check("https://h.example/mcp", &[]);
        check("https://user:p%40ss@h/", &["user", "p%40ss", "p@ss"]);
        check("https://h/?key=a%2Bb+c&flag", &["a%2Bb+c", "a+b c"]);
        check("nope", &[]);
        check(
            "https://h/mcp/Zk3xQ9mB7vR2tW5yL8nP4cD6/sse",
            &["Zk3xQ9mB7vR2tW5yL8nP4cD6"],
        );
    }

    #[test]
    fn percent_decoding_keeps_malformed_escapes_and_reads_plus_as_space() {
        assert_eq!(percent_decode("a%2Bb+c"), "a+b c");
        assert_eq!(percent_decode("p%40ss"), "p@ss");
        // Malformed or cut-off escapes are kept as written.
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%+1"), "% 1");
        // Bytes that are not UTF-8 become U+FFFD; UTF-8 escapes decode.
        assert_eq!(percent_decode("a%FFb"), "a\u{FFFD}b");
        assert_eq!(percent_decode("caf%C3%A9"), "café");
    }
}
