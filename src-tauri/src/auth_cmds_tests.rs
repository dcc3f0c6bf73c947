//! `auth_sign_in` / `auth_sign_out` over real IPC (ipc_tests.rs): the errors a person sees
//! for a server that does not exist and for one that does not sign in with OAuth. Neither
//! case reaches a browser or the secret store.

use crate::ipc_tests::{app, invoke};
use serde_json::json;

#[test]
fn an_unknown_server_is_named_with_the_configured_ones() {
    let (_app, webview) = app();
    for command in ["auth_sign_in", "auth_sign_out"] {
        let e = invoke(&webview, command, json!({"server": "nope"})).unwrap_err();
        assert_eq!(
            e,
            json!({"kind": "unknown_server", "message": "there is no server named `nope` (configured: notes, web)"}),
            "{command}"
        );
    }
}

#[test]
fn a_stdio_server_does_not_sign_in_with_oauth() {
    let (_app, webview) = app();
    for command in ["auth_sign_in", "auth_sign_out"] {
        let e = invoke(&webview, command, json!({"server": "notes"})).unwrap_err();
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
    let (_app, webview) = app();
    for command in ["auth_sign_in", "auth_sign_out"] {
        let e = invoke(&webview, command, json!({})).unwrap_err();
        assert!(e.as_str().unwrap().contains("server"), "{command}: {e}");
    }
}
