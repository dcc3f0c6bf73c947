//! `lifeline login NAME` and `lifeline logout NAME`: OAuth sign-in for a configured remote
//! server, kept in the secret store (docs/auth.md) where the app, `lifeline connect` bridges
//! and every later run find it. `login` opens the system browser at the authorization
//! server (or, with `--no-browser`, only prints the URL) and waits for the redirect back to
//! Lifeline's loopback listener. Neither prints a token.

use crate::fleet;
use crate::output::{EXIT_OK, Out};
use lifeline_core::auth::{Authorizer, OpenUrl, SignIn};
use lifeline_core::redact::Redactor;
use lifeline_core::{Error, ErrorKind};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long `login` waits for the person to finish in the browser.
const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

fn out(json: bool, redactor: Redactor) -> Out {
    Out { json, redactor }
}

/// NAME's authorizer from the config, or the error that says why it has none.
fn authorizer(config: Option<&Path>, name: &str) -> Result<(Arc<Authorizer>, Redactor), Error> {
    let config = fleet::load(config)?;
    let Some(server) = config.server(name) else {
        return Err(fleet::unknown_server(&config, name));
    };
    let redactor = Redactor::new(server.secrets());
    let auth = server.http_config().and_then(|c| c.auth).ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            format!(
                "`{name}` does not sign in with OAuth: only an http server without a static \
                 Authorization header does (a stdio server takes its credentials in env)"
            ),
        )
    })?;
    Ok((auth, redactor))
}

pub async fn login(name: &str, config: Option<&Path>, no_browser: bool, json: bool) -> i32 {
    let (auth, redactor) = match authorizer(config, name) {
        Ok(a) => a,
        Err(e) => return out(json, Redactor::default()).error(&e),
    };
    let out = out(json, redactor);
    let open: OpenUrl = Arc::new(move |url: &str| {
        // On stderr, so `--json`'s stdout stays one object; a person needs it either way
        // when no browser comes up.
        eprintln!("Sign in at this address (it is only good for this sign-in):\n  {url}");
        if !no_browser && let Err(e) = lifeline_core::auth::browser::open(url) {
            eprintln!("({e})");
        }
        Ok(())
    });
    let mode = SignIn::Open {
        open,
        wait: SIGN_IN_WAIT,
    };
    match auth.sign_in_now(&mode).await {
        Ok(status) => {
            if out.json {
                out.json_line(&json!({ "ok": true, "result": status }));
            } else {
                let server = status.issuer.as_deref().unwrap_or("?");
                out.line(&format!("signed in to {name} at {server}"));
                if !status.scopes.is_empty() {
                    out.line(&format!("  scopes: {}", status.scopes.join(" ")));
                }
                if let Some(at) = &status.expires_at {
                    out.line(&format!(
                        "  access token expires {at} (refreshed as needed)"
                    ));
                }
                out.note(
                    "the app, `lifeline connect` and every run use this sign-in from now on; \
                     in a running app, press Reconnect on this server",
                );
            }
            EXIT_OK
        }
        Err(e) => out.error(&e),
    }
}

pub async fn logout(name: &str, config: Option<&Path>, json: bool) -> i32 {
    let (auth, redactor) = match authorizer(config, name) {
        Ok(a) => a,
        Err(e) => return out(json, Redactor::default()).error(&e),
    };
    let out = out(json, redactor);
    match auth.sign_out().await {
        Ok(had) => {
            if out.json {
                out.json_line(&json!({ "ok": true, "result": { "signedOut": had } }));
            } else if had {
                out.line(&format!(
                    "signed out of {name}: its tokens are revoked where the server allows and \
                     removed from the store"
                ));
            } else {
                out.line(&format!("{name} was not signed in"));
            }
            EXIT_OK
        }
        Err(e) => out.error(&e),
    }
}
