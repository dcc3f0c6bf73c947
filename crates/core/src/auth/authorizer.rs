//! The `Authorizer` of one remote server: holds its discovery, client and tokens, hands
//! the HTTP transport the bearer token for each request, and answers the transport's
//! 401s (refresh once, else sign in) and 403 `insufficient_scope`s (sign in again with the
//! challenged scopes added, bounded). One refresh runs at a time per authorization server
//! and client id in the process (`refresh_lock`); a request that failed with a token
//! another task already replaced just retries with the new one.

use super::challenge::Challenge;
use super::flow::{self, SignIn, sign_in_needed};
use super::metadata::{self, Discovered};
use super::register::Client;
use super::token::{self, Grant, Tokens};
use super::{Http, OAuthSettings, scope};
use crate::error::{Error, ErrorKind};
use reqwest::Url;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The most re-authorizations for more scope one authorizer makes (the initial sign-in
/// not counted): a server that keeps answering `insufficient_scope` must not loop.
pub const MAX_STEP_UPS: u32 = 2;

/// An access token expiring within this is refreshed before it is used.
const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

#[derive(Default)]
struct State {
    found: Option<Discovered>,
    client: Option<Client>,
    tokens: Option<Tokens>,
    /// The scopes of the last authorization request.
    requested: Vec<String>,
    step_ups: u32,
}

pub struct Authorizer {
    server: Url,
    settings: OAuthSettings,
    mode: SignIn,
    http: Http,
    state: tokio::sync::Mutex<State>,
    /// The current access token, readable without waiting for a sign-in in progress.
    bearer: Mutex<Option<super::Secret>>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("server", &self.server.origin().ascii_serialization())
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    pub fn new(server_url: &str, settings: OAuthSettings, mode: SignIn) -> Result<Self, Error> {
        let server = Url::parse(server_url)
            .map_err(|_| Error::config("the server URL is not valid for OAuth sign-in"))?;
        Ok(Authorizer {
            server,
            settings,
            mode,
            http: Http::new()?,
            state: tokio::sync::Mutex::new(State::default()),
            bearer: Mutex::new(None),
        })
    }

    /// The access token to send now, if there is one.
    pub fn bearer(&self) -> Option<String> {
        self.bearer
            .lock()
            .expect("lock")
            .as_ref()
            .map(|s| s.expose().to_owned())
    }

    /// The token to send, refreshed first when it is about to expire. A refresh that fails
    /// leaves the old token: the server's 401 then decides.
    pub async fn fresh_bearer(&self) -> Option<String> {
        let near = {
            let state = self.state.lock().await;
            state.tokens.as_ref().is_some_and(|t| {
                t.refresh.is_some() && t.expires_within(EXPIRY_MARGIN, SystemTime::now())
            })
        };
        if near {
            let used = self.bearer();
            let mut state = self.state.lock().await;
            if self.bearer() == used {
                let _ = self.refresh(&mut state).await;
            }
        }
        self.bearer()
    }

    /// The server answered 401 to a request sent with `used`: gets a usable token (another
    /// task's newer one, a refreshed one, or a new sign-in) or says why there is none.
    /// `Ok(true)`: send the request again; `Ok(false)`: the server publishes no OAuth
    /// metadata, so its 401 stands as it came (a wrong or missing static credential).
    pub async fn unauthorized(
        &self,
        used: Option<&str>,
        challenge: &Challenge,
    ) -> Result<bool, Error> {
        let mut state = self.state.lock().await;
        if self.replaced(used) {
            return Ok(true);
        }
        if state.tokens.as_ref().is_some_and(|t| t.refresh.is_some()) {
            match self.refresh(&mut state).await {
                Ok(()) => return Ok(true),
                // Revoked or expired refresh token: a new sign-in is the way.
                Err(e) if e.kind() == ErrorKind::Auth => {}
                Err(e) => return Err(e),
            }
        }
        self.set_tokens(&mut state, None);
        let found = metadata::discover(
            &self.http,
            &self.server,
            challenge.resource_metadata.as_deref(),
        )
        .await?;
        let Some(found) = found else {
            return Ok(false);
        };
        let scopes = scope::initial_scopes(
            &challenge.scopes(),
            &self.settings.scopes,
            found.resource.scopes_supported.as_deref(),
        );
        let scopes = scope::with_offline_access(
            scopes,
            found.server.scopes_supported.as_deref(),
            found.server.grant_types_supported.as_deref(),
        );
        self.sign_in(&mut state, found, scopes).await.map(|()| true)
    }

    /// The server answered 403 `insufficient_scope` to a request sent with `used`: signs
    /// in again asking for the challenged scopes on top of the earlier ones, unless that
    /// asks for nothing new or the step-ups are used up. `Ok(false)` as for `unauthorized`.
    pub async fn insufficient_scope(
        &self,
        used: Option<&str>,
        challenge: &Challenge,
    ) -> Result<bool, Error> {
        let mut state = self.state.lock().await;
        if self.replaced(used) {
            return Ok(true);
        }
        let scopes = scope::step_up_scopes(&state.requested, &challenge.scopes());
        if scopes == state.requested || state.step_ups >= MAX_STEP_UPS {
            return Err(Error::new(
                ErrorKind::Permission,
                "the server wants more scope than the sign-in granted, and asking again did \
                 not help: check the account's access to this server",
            ));
        }
        state.step_ups += 1;
        let found = match (&challenge.resource_metadata, &state.found) {
            (None, Some(found)) => found.clone(),
            (from, _) => match metadata::discover(&self.http, &self.server, from.as_deref()).await?
            {
                Some(found) => found,
                None => return Ok(false),
            },
        };
        self.sign_in(&mut state, found, scopes).await.map(|()| true)
    }

    fn replaced(&self, used: Option<&str>) -> bool {
        let now = self.bearer();
        now.is_some() && now.as_deref() != used
    }

    fn set_tokens(&self, state: &mut State, tokens: Option<Tokens>) {
        *self.bearer.lock().expect("lock") = tokens.as_ref().map(|t| t.access.clone());
        state.tokens = tokens;
    }

    async fn sign_in(
        &self,
        state: &mut State,
        found: Discovered,
        scopes: Vec<String>,
    ) -> Result<(), Error> {
        state.requested = scopes.clone();
        let (client, tokens) =
            flow::sign_in(&self.http, &self.settings, &found, &scopes, &self.mode).await?;
        state.found = Some(found);
        state.client = Some(client);
        self.set_tokens(state, Some(tokens));
        Ok(())
    }

    /// Trades the refresh token for new tokens, one refresh at a time per authorization
    /// server and client in the process.
    async fn refresh(&self, state: &mut State) -> Result<(), Error> {
        let (Some(found), Some(client), Some(refresh)) = (
            state.found.clone(),
            state.client.clone(),
            state.tokens.as_ref().and_then(|t| t.refresh.clone()),
        ) else {
            return Err(sign_in_needed());
        };
        let lock = refresh_lock(&found.server.issuer, &client.id);
        let _one = lock.lock().await;
        let asked = state.requested.clone();
        let grant = Grant::Refresh {
            refresh_token: refresh.expose(),
        };
        let tokens = token::request(
            &self.http,
            &found.server.token_endpoint,
            &client,
            grant,
            &found.resource.resource,
            &asked,
        )
        .await?;
        self.set_tokens(state, Some(tokens));
        Ok(())
    }
}

/// The lock held while refreshing with (issuer, client id), shared by the process.
fn refresh_lock(issuer: &str, client_id: &str) -> Arc<tokio::sync::Mutex<()>> {
    type Locks = HashMap<(String, String), Arc<tokio::sync::Mutex<()>>>;
    static LOCKS: Mutex<Option<Locks>> = Mutex::new(None);
    let mut locks = LOCKS.lock().expect("lock");
    locks
        .get_or_insert_with(HashMap::new)
        .entry((issuer.to_owned(), client_id.to_owned()))
        .or_default()
        .clone()
}
