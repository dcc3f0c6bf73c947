//! `${keyring:NAME}` in a config: values come from the secret store, count as secrets, and a
//! missing one is a problem that names the server, the field and the command that stores it.

use super::{Secret, from_value_with};
use crate::secrets::SecretStore;
use serde_json::json;

const CANARY: &str = "CANARY-keyring-conf-4d2e8b";

#[test]
fn keyring_references_resolve_from_the_store_and_are_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::file(&dir.path().join("secrets.json"), "test");
    store.set("GH_TOKEN", CANARY).unwrap();
    store.set("api.key", "CANARY-env-0f9a").unwrap();
    let raw = json!({ "mcpServers": {
        "gh": { "url": "https://api.example.com/mcp",
                "headers": { "Authorization": "Bearer ${keyring:GH_TOKEN}" } },
        "local": { "command": "run", "env": { "API_KEY": "${keyring:api.key}" } },
    }});
    let c = from_value_with(raw, None, &|_| None, &|n| store.lookup(n)).expect("valid");
    let gh = c.server("gh").unwrap();
    assert_eq!(
        gh.http_config().unwrap().headers,
        vec![("Authorization".to_owned(), format!("Bearer {CANARY}"))]
    );
    assert!(gh.secrets().contains(&CANARY.to_owned()));
    let secrets = c.secrets();
    assert!(
        secrets.contains(&"CANARY-env-0f9a".to_owned()),
        "{secrets:?}"
    );
    assert!(!format!("{c:?}").contains(CANARY));
    assert_eq!(format!("{:?}", Secret::new(CANARY)), "***");
}

#[test]
fn a_missing_secret_names_the_server_the_field_and_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::file(&dir.path().join("secrets.json"), "test");
    let raw = json!({ "mcpServers": {
        "gh": { "url": "https://api.example.com/mcp",
                "headers": { "Authorization": "Bearer ${keyring:GH_TOKEN}" } },
        "off": { "disabled": true, "command": "run", "env": { "K": "${keyring:LATER}" } },
    }});
    let e = from_value_with(raw, None, &|_| None, &|n| store.lookup(n)).unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.contains("mcpServers.gh.headers.Authorization")
            && shown
                .contains("`${keyring:GH_TOKEN}`: there is no secret GH_TOKEN in the secrets file")
            && shown.contains("store it with `lifeline secrets set GH_TOKEN`"),
        "{shown}"
    );
    // A disabled server's reference is left as written, like an unset variable's.
    assert!(!shown.contains("LATER"), "{shown}");
}
