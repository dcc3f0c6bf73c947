//! The `WWW-Authenticate: Bearer …` challenge of a 401 or 403 (RFC 6750 §3, RFC 9728 §5.1):
//! the parameters MCP authorization reads from it — `resource_metadata`, `scope` and
//! `error` — parsed leniently (quoted or bare values, any order, other schemes skipped).

/// What a Bearer challenge says. Every field is optional: a 401 without the header, or
/// with one that has none of these, is still a reason to start discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// Where the protected resource metadata is (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// The scopes the request needs, space-separated as sent.
    pub scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`, …
    pub error: Option<String>,
}

impl Challenge {
    /// The Bearer challenge among the header values, or the default when there is none.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Challenge {
        values
            .into_iter()
            .find_map(bearer_params)
            .map(|params| {
                let get = |name: &str| {
                    params
                        .iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.clone())
                        .filter(|v| !v.is_empty())
                };
                Challenge {
                    resource_metadata: get("resource_metadata"),
                    scope: get("scope"),
                    error: get("error"),
                }
            })
            .unwrap_or_default()
    }

    /// The challenge of a response's `WWW-Authenticate` headers.
    pub fn of(headers: &reqwest::header::HeaderMap) -> Challenge {
        Challenge::parse(
            headers
                .get_all(reqwest::header::WWW_AUTHENTICATE)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        )
    }

    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// The challenged scopes, one per item.
    pub fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref().unwrap_or(""))
    }
}

/// Space-separated scopes as a list, empty items dropped.
pub fn split_scopes(scope: &str) -> Vec<String> {
    scope.split_whitespace().map(str::to_owned).collect()
}

/// The auth-params of the Bearer challenge in one header value, if it has one.
fn bearer_params(value: &str) -> Option<Vec<(String, String)>> {
    let start = find_scheme(value, "bearer")?;
    let mut rest = value[start + "bearer".len()..].trim_start();
    let mut params = Vec::new();
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains(' ') {
            // The next challenge's scheme: the Bearer parameters ended.
            break;
        }
        rest = rest[eq + 1..].trim_start();
        let value = if let Some(quoted) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            out.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => out.push(c),
                }
            }
            rest = &quoted[end.min(quoted.len())..];
            out
        } else {
            let end = rest.find([',', ' ']).unwrap_or(rest.len());
            let v = rest[..end].to_owned();
            rest = &rest[end..];
            v
        };
        params.push((name.to_owned(), value));
    }
    Some(params)
}

/// Where the `scheme` token starts in a challenge list: at the start or after a comma.
fn find_scheme(value: &str, scheme: &str) -> Option<usize> {
    let lower = value.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(scheme) {
        let at = from + i;
        let before = lower[..at].trim_end();
        let after = lower[at + scheme.len()..].chars().next();
        if (before.is_empty() || before.ends_with(','))
            && matches!(after, None | Some(' ') | Some('\t'))
        {
            return Some(at);
        }
        from = at + scheme.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(header: &str, metadata: Option<&str>, scope: Option<&str>, error: Option<&str>) {
        let c = Challenge::parse([header]);
        assert_eq!(
            (
                c.resource_metadata.as_deref(),
                c.scope.as_deref(),
                c.error.as_deref()
            ),
            (metadata, scope, error),
            "{header}"
        );
    }

    #[test]
    fn bearer_parameters() {
        check(
            r#"Bearer resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#,
            Some("http://h/.well-known/oauth-protected-resource/mcp"),
            None,
            None,
        );
        check(
            r#"Bearer scope="mcp:basic", resource_metadata="http://h/x""#,
            Some("http://h/x"),
            Some("mcp:basic"),
            None,
        );
        check(
            r#"Bearer error="insufficient_scope", scope="a b", error_description="no \"way\"""#,
            None,
            Some("a b"),
            Some("insufficient_scope"),
        );
        check(
            "Bearer error=invalid_token,scope=x",
            None,
            Some("x"),
            Some("invalid_token"),
        );
        check(
            r#"Basic realm="r", Bearer scope="s""#,
            None,
            Some("s"),
            None,
        );
        check(r#"bearer realm="r""#, None, None, None);
        check(r#"Basic realm="bearer""#, None, None, None);
        check("", None, None, None);
    }

    #[test]
    fn scopes_split() {
        assert_eq!(split_scopes(" a  b "), vec!["a", "b"]);
        assert!(split_scopes("").is_empty());
    }
}
