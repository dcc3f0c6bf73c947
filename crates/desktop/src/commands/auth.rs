//! OAuth sign-in from the app (docs/auth.md): `auth_sign_in` opens the system browser at the
//! server's authorization server and waits for the person to finish; `auth_sign_out`
//! forgets the sign-in. The sign-in is kept in the secret store, where `lifeline connect`
//! bridges and the CLI find it too. What changed reaches the UI as `auth` events and in the
//! snapshot's `auth`; no command returns a token.

use crate::error::ErrorView;
use crate::state::AppState;
use lifeline_core::auth::{OpenUrl, SignIn};
use lifeline_core::events::AuthStatus;
use lifeline_core::redact::Redactor;
use std::sync::Arc;
use std::time::Duration;

type Result<T> = std::result::Result<T, ErrorView>;

/// How long a sign-in waits for the person in the browser.
const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// Signs `server` in through the system browser; once signed in it reconnects.
pub async fn auth_sign_in(state: &AppState, server: String) -> Result<AuthStatus> {
    let supervisor = state.shared(&server).await?;
    let open: OpenUrl = Arc::new(|url: &str| lifeline_core::auth::browser::open(url));
    let mode = SignIn::Open {
        open,
        wait: SIGN_IN_WAIT,
    };
    supervisor
        .sign_in(&mode)
        .await
        .map_err(|e| ErrorView::from_core(&e, &Redactor::default()))
}

/// Forgets `server`'s sign-in (revoked where the authorization server allows) and
/// reconnects, which then needs a new sign-in. True if there was one.
pub async fn auth_sign_out(state: &AppState, server: String) -> Result<bool> {
    let supervisor = state.shared(&server).await?;
    supervisor
        .sign_out()
        .await
        .map_err(|e| ErrorView::from_core(&e, &Redactor::default()))
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
