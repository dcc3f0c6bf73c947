//! Which scopes to ask for (MCP authorization 2025-11-25, "Scope Selection Strategy"): the
//! challenge's `scope`, else the configured scopes, else everything the protected resource
//! metadata lists in `scopes_supported`, else none (the parameter is left out). On a step-up
//! (403 `insufficient_scope`) the new scopes are added to what was already asked for, so a
//! re-authorization never loses a grant. `offline_access` is added where the authorization
//! server offers it, so that the sign-in yields a refresh token.

use super::challenge::split_scopes;

pub const OFFLINE_ACCESS: &str = "offline_access";

/// The scopes of a first authorization, in the spec's order of sources.
pub fn initial_scopes(
    challenged: &[String],
    configured: &[String],
    resource_supported: Option<&[String]>,
) -> Vec<String> {
    if !challenged.is_empty() {
        return challenged.to_vec();
    }
    if !configured.is_empty() {
        return configured.to_vec();
    }
    resource_supported
        .map(<[String]>::to_vec)
        .unwrap_or_default()
}

/// What to ask for after `insufficient_scope`: the scopes asked for before, then the new
/// challenged ones, without duplicates.
pub fn step_up_scopes(previous: &[String], challenged: &[String]) -> Vec<String> {
    let mut all = previous.to_vec();
    for s in challenged {
        if !all.contains(s) {
            all.push(s.clone());
        }
    }
    all
}

/// `scopes` with `offline_access` added when the authorization server lists it among its
/// scopes and does not exclude the refresh grant; unchanged otherwise. An empty request
/// stays empty: leaving the parameter out asks for the server's default grant.
pub fn with_offline_access(
    scopes: Vec<String>,
    server_scopes: Option<&[String]>,
    grant_types: Option<&[String]>,
) -> Vec<String> {
    let offered = server_scopes.is_some_and(|s| s.iter().any(|x| x == OFFLINE_ACCESS));
    let refreshable = grant_types.is_none_or(|g| g.iter().any(|x| x == "refresh_token"));
    if scopes.is_empty() || !offered || !refreshable || scopes.iter().any(|s| s == OFFLINE_ACCESS) {
        return scopes;
    }
    let mut scopes = scopes;
    scopes.push(OFFLINE_ACCESS.to_owned());
    scopes
}

/// The `scope` parameter value, or `None` to leave it out.
pub fn scope_param(scopes: &[String]) -> Option<String> {
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// Scopes from a space-separated string (a token response's `scope`).
pub fn parse(scope: Option<&str>) -> Vec<String> {
    split_scopes(scope.unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        split_scopes(s)
    }

    #[test]
    fn initial_order() {
        let check = |challenged: &str, configured: &str, supported: Option<&str>, want: &str| {
            let supported = supported.map(v);
            assert_eq!(
                initial_scopes(&v(challenged), &v(configured), supported.as_deref()),
                v(want),
                "{challenged:?} {configured:?} {supported:?}"
            );
        };
        check("mcp:basic", "c", Some("a b"), "mcp:basic");
        check("", "c d", Some("a b"), "c d");
        check("", "", Some("a b c"), "a b c");
        check("", "", None, "");
        check("", "", Some(""), "");
    }

    #[test]
    fn step_up_accumulates() {
        assert_eq!(step_up_scopes(&v("a b"), &v("b c")), v("a b c"));
        assert_eq!(step_up_scopes(&v(""), &v("c")), v("c"));
        assert_eq!(step_up_scopes(&v("a"), &v("a")), v("a"));
    }

    #[test]
    fn offline_access_where_offered() {
        let check = |scopes: &str, server: Option<&str>, grants: Option<&str>, want: &str| {
            let server = server.map(v);
            let grants = grants.map(v);
            assert_eq!(
                with_offline_access(v(scopes), server.as_deref(), grants.as_deref()),
                v(want),
                "{scopes:?} {server:?} {grants:?}"
            );
        };
        check("a", Some("a offline_access"), None, "a offline_access");
        check(
            "a",
            Some("a offline_access"),
            Some("authorization_code refresh_token"),
            "a offline_access",
        );
        check(
            "a",
            Some("a offline_access"),
            Some("authorization_code"),
            "a",
        );
        check("a", Some("a"), None, "a");
        check("a", None, None, "a");
        check("", Some("offline_access"), None, "");
        check(
            "a offline_access",
            Some("offline_access"),
            None,
            "a offline_access",
        );
    }

    #[test]
    fn parameter() {
        assert_eq!(scope_param(&v("a b")).as_deref(), Some("a b"));
        assert_eq!(scope_param(&[]), None);
    }
}
