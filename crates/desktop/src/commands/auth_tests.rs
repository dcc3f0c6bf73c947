//! `auth_sign_in` / `auth_sign_out` through the command table, as the window process sends them: the errors a person sees
//! for a server that does not exist and for one that does not sign in with OAuth. Neither
//! case reaches a browser or the secret store.

use crate::test_support::{core, invoke};
use serde_json::json;

#[test]
fn an_unknown_server_is_named_with_the_configured_ones() {
    let core = core();
    for command in ["auth_sign_in", "auth_sign_out"] {
        let e = invoke(&core, command, json!({"server": "nope"})).unwrap_err();
        assert_eq!(
            e,
            json!({"kind": "unknown_server", "message": "there is no server named `nope` (configured: notes, web)"}),
            "{command}"
        );
    }
}

#[test]
fn a_stdio_server_does_not_sign_in_with_oauth() {
    let core = core();
    for command in ["auth_sign_in", "auth_sign_out"] {
        let e = invoke(&core, command, json!({"server": "notes"})).unwrap_err();
        assert_eq!(e["kind"], "config", "{command}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("does not sign in with OAuth"),
            "{command}: {message}"
        );
    }
}

#[test]
fn the_server_argument_is_required() {
    let core = core();
    for command in ["auth_sign_in", "auth_sign_out"] {
        let e = invoke(&core, command, json!({})).unwrap_err();
        assert!(e.as_str().unwrap().contains("server"), "{command}: {e}");
    }
}
