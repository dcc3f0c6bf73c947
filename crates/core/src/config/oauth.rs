//! A server's `oauth` block (docs/config.md): `clientId`, `clientSecret`, `scopes` and
//! `callbackPort`, all optional, read into `auth::OAuthSettings` for an http or sse
//! server. Other keys are kept as written and ignored (other clients' blocks may have
//! them); a known key of the wrong type is a problem. The client secret is a `Secret`.

use super::error::Problem;
use super::validate::{self, Bound, join};
use crate::auth::OAuthSettings;
use crate::redact::Secret;
use serde_json::{Map, Value};

/// The settings of `o["oauth"]`, `None` when there is no block (or it has problems, all
/// recorded).
pub(crate) fn read(
    o: &Map<String, Value>,
    path: &str,
    problems: &mut Vec<Problem>,
) -> Option<OAuthSettings> {
    let path = join(path, "oauth");
    let block = validate::object(o.get("oauth")?, &path, problems)?;
    let before = problems.len();
    let mut text = |key: &str| -> Option<String> {
        let v = block.get(key)?;
        validate::string(v, &join(&path, key), problems)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let client_id = text("clientId");
    let client_secret = text("clientSecret").map(Secret::new);
    let scopes = match block.get("scopes") {
        None => Vec::new(),
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(v) => {
            let field = join(&path, "scopes");
            let items = validate::array(v, &field, problems).unwrap_or_default();
            items
                .iter()
                .enumerate()
                .filter_map(|(i, s)| validate::string(s, &join(&field, &i.to_string()), problems))
                .flat_map(str::split_whitespace)
                .map(str::to_owned)
                .collect()
        }
    };
    let callback_port = block.get("callbackPort").and_then(|v| {
        let field = join(&path, "callbackPort");
        validate::integer(v, &field, Bound::count(1, 65_535), problems).map(|p| p as u16)
    });
    if client_secret.is_some() && client_id.is_none() {
        problems.push(Problem::new(
            join(&path, "clientSecret"),
            "a client secret needs its `clientId`",
        ));
    }
    (problems.len() == before).then_some(OAuthSettings {
        client_id,
        client_secret,
        scopes,
        callback_port,
        client_metadata_url: None,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::tests::{check, loaded};
    use serde_json::json;

    #[test]
    fn the_block_is_read_for_http_servers() {
        let c = loaded(json!({ "mcpServers": {
            "h": { "url": "https://h.example/mcp", "oauth": {
                "clientId": "id", "clientSecret": "CANARY-cs-9911",
                "scopes": ["a b", "c"], "callbackPort": 8765, "x-other": 1 } },
            "t": { "url": "https://h.example/mcp", "oauth": { "scopes": "read write" } },
            "n": { "url": "https://h.example/mcp" },
            "a": { "url": "https://h.example/mcp", "headers": { "authorization": "Bearer x" },
                   "oauth": { "clientId": "id" } },
            "s": { "command": "a", "oauth": { "clientId": 5 } }
        }}));
        let h = c.server("h").expect("h");
        let o = h.oauth.as_ref().expect("oauth");
        assert_eq!(o.client_id.as_deref(), Some("id"));
        assert_eq!(o.scopes, ["a", "b", "c"]);
        assert_eq!(o.callback_port, Some(8765));
        assert_eq!(format!("{o:?}").matches("CANARY").count(), 0);
        assert!(c.secrets().contains(&"CANARY-cs-9911".to_owned()));
        assert!(h.http_config().expect("http").auth.is_some());
        let t = c.server("t").expect("t").oauth.clone().expect("oauth");
        assert_eq!(t.scopes, ["read", "write"]);
        // Without a block, a server with no static Authorization header still gets OAuth
        // (a 401 starts discovery); a static header always wins.
        assert!(c.server("n").expect("n").oauth.is_none());
        let n = c.server("n").expect("n").http_config().expect("http");
        assert!(n.auth.is_some());
        let a = c.server("a").expect("a").http_config().expect("http");
        assert!(a.auth.is_none());
        // A stdio server's block is kept as written and not read.
        assert!(c.server("s").expect("s").oauth.is_none());
    }

    #[test]
    fn wrong_types_and_bounds_are_problems() {
        let server =
            |oauth| json!({ "mcpServers": { "h": { "url": "https://h/mcp", "oauth": oauth } } });
        check(
            server(json!({ "clientId": 5, "callbackPort": 70000, "scopes": [1] })),
            &[
                "mcpServers.h.oauth.clientId: expected a string, found a number (write it in quotes)",
                "mcpServers.h.oauth.scopes.0: expected a string, found a number (write it in quotes)",
                "mcpServers.h.oauth.callbackPort = 70000: must be between 1 and 65535",
            ],
        );
        check(
            server(json!({ "clientSecret": "s" })),
            &["mcpServers.h.oauth.clientSecret: a client secret needs its `clientId`"],
        );
        check(
            server(json!("x")),
            &["mcpServers.h.oauth: expected an object, found a string"],
        );
    }
}
