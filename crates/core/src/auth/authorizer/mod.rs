//! The `Authorizer` of one remote server: holds its discovery, client and tokens, hands
//! the HTTP transport the bearer token for each request, and answers the transport's
//! 401s (another server's newer sign-in, else refresh once, else sign in) and 403
//! `insufficient_scope`s (sign in again with the challenged scopes added, bounded).
//!
//! With a `TokenStore` (`with_store`), sign-ins are kept between runs and shared: the first
//! request of a run uses the kept tokens, a sign-in or refresh is saved, and a refresh runs
//! once per authorization server and resource across every server and every Lifeline
//! process (`store::Lock`, taken after the in-process `refresh_lock`); whoever waited finds
//! the new tokens in the store instead of refreshing again. What changes is told to the
//! observer (`observe`) as an `AuthChange`, for the supervisor to turn into events.

use super::challenge::Challenge;
use super::flow::{self, SignIn, sign_in_needed};
use super::metadata::{self, Discovered};
use super::register::Client;
use super::store::{TokenStore, record_key};
use kept::blocking;

mod kept;
use super::token::{self, Grant, Tokens};
use super::{Http, OAuthSettings, Secret, scope};
use crate::error::{Error, ErrorKind};
use crate::events::{AuthChange, AuthStatus, rfc3339};
use reqwest::Url;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The most re-authorizations for more scope one authorizer makes (the initial sign-in
/// not counted): a server that keeps answering `insufficient_scope` must not loop.
pub const MAX_STEP_UPS: u32 = 2;

/// An access token expiring within this is refreshed before it is used.
const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// Told what changed, with the error of a failed refresh.
pub type Observer = Arc<dyn Fn(AuthChange, Option<&Error>) + Send + Sync>;

/// Who grants the tokens: from a discovery or a kept record.
#[derive(Clone)]
struct Grantor {
    issuer: String,
    token_endpoint: String,
    revocation_endpoint: Option<String>,
    resource: String,
}

impl Grantor {
    fn of(found: &Discovered) -> Grantor {
        Grantor {
            issuer: found.server.issuer.clone(),
            token_endpoint: found.server.token_endpoint.clone(),
            revocation_endpoint: found.server.revocation_endpoint.clone(),
            resource: found.resource.resource.clone(),
        }
    }

    fn key(&self) -> String {
        record_key(&self.issuer, &self.resource)
    }
}

#[derive(Default)]
struct State {
    found: Option<Discovered>,
    grantor: Option<Grantor>,
    client: Option<Client>,
    tokens: Option<Tokens>,
    /// The scopes of the last authorization request.
    requested: Vec<String>,
    step_ups: u32,
    /// The kept sign-in was looked for (once per authorizer).
    loaded: bool,
    signed_in_at: Option<SystemTime>,
    last_refresh: Option<(SystemTime, bool)>,
    needs_sign_in: bool,
}

pub struct Authorizer {
    server: Url,
    settings: OAuthSettings,
    mode: SignIn,
    http: Http,
    store: Option<Arc<TokenStore>>,
    state: tokio::sync::Mutex<State>,
    /// The current access token, readable without waiting for a sign-in in progress.
    bearer: Mutex<Option<Secret>>,
    /// What the UI shows, readable without waiting either.
    status: Mutex<AuthStatus>,
    observer: Mutex<Option<Observer>>,
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
            store: None,
            state: tokio::sync::Mutex::new(State::default()),
            bearer: Mutex::new(None),
            status: Mutex::new(AuthStatus::default()),
            observer: Mutex::new(None),
        })
    }

    /// Keeps and shares sign-ins in `store` (see the module doc).
    pub fn with_store(mut self, store: Arc<TokenStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Tells `observer` of every change from now on (one observer: the supervisor's).
    pub fn observe(&self, observer: Observer) {
        *self.observer.lock().expect("lock") = Some(observer);
    }

    /// The server's URL as configured.
    pub fn server_url(&self) -> &str {
        self.server.as_str()
    }

    /// The sign-in as the UI shows it.
    pub fn status(&self) -> AuthStatus {
        self.status.lock().expect("lock").clone()
    }

    /// The values no event, log or bundle may show: the tokens and client secret held now.
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self.bearer().into_iter().collect();
        out.extend(
            self.settings
                .client_secret
                .as_ref()
                .map(|s| s.expose().to_owned()),
        );
        if let Ok(state) = self.state.try_lock() {
            out.extend(
                state
                    .tokens
                    .as_ref()
                    .and_then(|t| t.refresh.as_ref())
                    .map(|s| s.expose().to_owned()),
            );
            out.extend(
                state
                    .client
                    .as_ref()
                    .and_then(|c| c.secret.as_ref())
                    .map(|s| s.expose().to_owned()),
            );
        }
        out
    }

    /// The access token to send now, if there is one.
    pub fn bearer(&self) -> Option<String> {
        self.bearer
            .lock()
            .expect("lock")
            .as_ref()
            .map(|s| s.expose().to_owned())
    }

    /// The token to send: the kept sign-in on the first call, refreshed first when it is
    /// about to expire. A refresh that fails leaves the old token: the server's 401 decides.
    pub async fn fresh_bearer(&self) -> Option<String> {
        let near = {
            let mut state = self.state.lock().await;
            if !state.loaded {
                state.loaded = true;
                self.load_kept(&mut state).await;
            }
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

    /// The server refused a request sent with `used` with `status` and `challenge` (its
    /// `WWW-Authenticate`). A 401 or a 403 `insufficient_scope` is this authorizer's to
    /// answer, unless another task or server has put a newer token in place meanwhile:
    /// `Ok(true)`, send the request again. `Ok(false)`: the answer stands as it came (any
    /// other status, or a server that publishes no OAuth metadata).
    pub async fn refused(
        &self,
        status: u16,
        used: Option<&str>,
        challenge: &Challenge,
    ) -> Result<bool, Error> {
        let scope = match status {
            401 => false,
            403 if challenge.is_insufficient_scope() => true,
            _ => return Ok(false),
        };
        let mut state = self.state.lock().await;
        if self.replaced(used) {
            return Ok(true);
        }
        if scope {
            self.insufficient_scope(&mut state, challenge).await
        } else {
            self.unauthorized(&mut state, used, challenge).await
        }
    }

    /// A 401 to a request sent with `used`: gets a usable token (a refreshed one, another
    /// server's sign-in, or a new sign-in) or says why there is none. `Ok(false)`: the
    /// server publishes no OAuth metadata, so its 401 stands as it came (a wrong or missing
    /// static credential).
    async fn unauthorized(
        &self,
        state: &mut State,
        used: Option<&str>,
        challenge: &Challenge,
    ) -> Result<bool, Error> {
        if state.tokens.as_ref().is_some_and(|t| t.refresh.is_some()) {
            match self.refresh(state).await {
                Ok(()) => return Ok(true),
                // Revoked or expired refresh token: a new sign-in is the way.
                Err(e) if e.kind() == ErrorKind::Auth => {}
                Err(e) => return Err(e),
            }
        }
        self.set_tokens(state, None);
        let found = metadata::discover(
            &self.http,
            &self.server,
            challenge.resource_metadata.as_deref(),
        )
        .await?;
        let Some(found) = found else {
            return Ok(false);
        };
        // Another server behind the same authorization server may have signed in already.
        if self.adopt_kept(state, &Grantor::of(&found), used).await {
            state.found = Some(found);
            return Ok(true);
        }
        let scopes = self.first_scopes(&challenge.scopes(), &found);
        self.sign_in(state, found, scopes, &self.mode)
            .await
            .map(|()| true)
    }

    /// A 403 `insufficient_scope`: signs in again asking for the challenged scopes on top
    /// of the earlier ones, unless that asks for nothing new or the step-ups are used up.
    /// `Ok(false)` as for `unauthorized`.
    async fn insufficient_scope(
        &self,
        state: &mut State,
        challenge: &Challenge,
    ) -> Result<bool, Error> {
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
        self.sign_in(state, found, scopes, &self.mode)
            .await
            .map(|()| true)
    }

    /// Signs in now, the way `mode` says (`lifeline login`, the app's Sign in): discovers
    /// the server's authorization server from its well-known metadata, then runs the
    /// sign-in and keeps it. The scopes are the configured ones, else all the server lists.
    pub async fn sign_in_now(&self, mode: &SignIn) -> Result<AuthStatus, Error> {
        let mut state = self.state.lock().await;
        state.loaded = true;
        let found = match state.found.clone() {
            Some(found) => found,
            None => metadata::discover(&self.http, &self.server, None)
                .await?
                .ok_or_else(|| {
                    super::auth_error(
                        "the server publishes no OAuth metadata (RFC 9728): it takes a static \
                         token in headers.Authorization, not a sign-in",
                    )
                })?,
        };
        let scopes = self.first_scopes(&[], &found);
        state.step_ups = 0;
        self.sign_in(&mut state, found, scopes, mode).await?;
        Ok(self.status())
    }

    /// Forgets the sign-in: tells the authorization server to revoke the tokens where it
    /// offers that (RFC 7009, best effort), removes them from the store, and says that a
    /// sign-in is needed. True if there was one to forget.
    pub async fn sign_out(&self) -> Result<bool, Error> {
        let mut state = self.state.lock().await;
        state.loaded = true;
        if state.grantor.is_none() {
            self.load_kept(&mut state).await;
        }
        let had = state.tokens.is_some();
        if let (Some(grantor), Some(client), Some(tokens)) =
            (&state.grantor, &state.client, &state.tokens)
            && let Some(endpoint) = &grantor.revocation_endpoint
        {
            let token = tokens.refresh.as_ref().unwrap_or(&tokens.access);
            if let Err(e) = token::revoke(&self.http, endpoint, client, token).await {
                tracing::info!("the authorization server did not revoke the token: {e}");
            }
        }
        let forgotten = match (&self.store, &state.grantor) {
            (Some(store), Some(grantor)) => {
                let (store, key, url) =
                    (store.clone(), grantor.key(), self.server_url().to_owned());
                blocking(move || store.forget(&key, &url)).await?
            }
            _ => false,
        };
        self.set_tokens(&mut state, None);
        state.client = None;
        state.signed_in_at = None;
        state.last_refresh = None;
        state.needs_sign_in = true;
        self.publish(&state);
        self.tell(AuthChange::SignedOut, None);
        Ok(had || forgotten)
    }

    fn first_scopes(&self, challenged: &[String], found: &Discovered) -> Vec<String> {
        let scopes = scope::initial_scopes(
            challenged,
            &self.settings.scopes,
            found.resource.scopes_supported.as_deref(),
        );
        scope::with_offline_access(
            scopes,
            found.server.scopes_supported.as_deref(),
            found.server.grant_types_supported.as_deref(),
        )
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
        mode: &SignIn,
    ) -> Result<(), Error> {
        state.requested = scopes.clone();
        let signed = flow::sign_in(&self.http, &self.settings, &found, &scopes, mode).await;
        let (client, tokens) = match signed {
            Ok(signed) => signed,
            Err(e) => {
                if e.kind() == ErrorKind::SignIn && !state.needs_sign_in {
                    state.needs_sign_in = true;
                    state.grantor.get_or_insert_with(|| Grantor::of(&found));
                    self.publish(state);
                    self.tell(AuthChange::SignInNeeded, None);
                }
                return Err(e);
            }
        };
        state.grantor = Some(Grantor::of(&found));
        state.found = Some(found);
        state.client = Some(client);
        state.signed_in_at = Some(SystemTime::now());
        state.last_refresh = None;
        state.needs_sign_in = false;
        self.set_tokens(state, Some(tokens));
        self.keep(state, None).await;
        self.publish(state);
        self.tell(AuthChange::SignedIn, None);
        Ok(())
    }

    /// Trades the refresh token for new tokens, once per authorization server and resource
    /// across servers and processes: under both locks, a record another holder refreshed
    /// meanwhile is used instead.
    async fn refresh(&self, state: &mut State) -> Result<(), Error> {
        let (Some(grantor), Some(client), Some(refresh)) = (
            state.grantor.clone(),
            state.client.clone(),
            state.tokens.as_ref().and_then(|t| t.refresh.clone()),
        ) else {
            return Err(sign_in_needed());
        };
        let key = grantor.key();
        let lock = refresh_lock(&key);
        let _one = lock.lock().await;
        let _file = match &self.store {
            Some(store) => {
                let (store, k) = (store.clone(), key.clone());
                blocking(move || store.lock(&k))
                    .await
                    .inspect_err(|e| tracing::warn!("refreshing without the shared lock: {e}"))
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let used = self.bearer();
        if self.adopt_kept(state, &grantor, used.as_deref()).await {
            return Ok(());
        }
        let grant = Grant::Refresh {
            refresh_token: refresh.expose(),
        };
        let asked = state.requested.clone();
        let answer = token::request(
            &self.http,
            &grantor.token_endpoint,
            &client,
            grant,
            &grantor.resource,
            &asked,
        )
        .await;
        let now = SystemTime::now();
        match answer {
            Ok(tokens) => {
                state.last_refresh = Some((now, true));
                self.set_tokens(state, Some(tokens));
                self.keep(state, Some(now)).await;
                self.publish(state);
                self.tell(AuthChange::Refreshed, None);
                Ok(())
            }
            Err(e) => {
                state.last_refresh = Some((now, false));
                // A refused refresh token is dead for every server sharing it: forget it, so
                // none of them spends a request on it again.
                if e.kind() == ErrorKind::Auth
                    && let Some(store) = self.store.clone()
                {
                    let url = self.server_url().to_owned();
                    if let Err(e) = blocking(move || store.forget(&key, &url)).await {
                        tracing::warn!("the refused sign-in could not be removed: {e}");
                    }
                }
                self.publish(state);
                self.tell(AuthChange::RefreshFailed, Some(&e));
                Err(e)
            }
        }
    }

    fn publish(&self, state: &State) {
        let tokens = state.tokens.as_ref();
        *self.status.lock().expect("lock") = AuthStatus {
            signed_in: tokens.is_some(),
            needs_sign_in: state.needs_sign_in && tokens.is_none(),
            issuer: state.grantor.as_ref().map(|g| g.issuer.clone()),
            scopes: tokens.map(|t| t.scopes.clone()).unwrap_or_default(),
            expires_at: tokens.and_then(|t| t.expires_at).map(rfc3339),
            signed_in_at: state.signed_in_at.map(rfc3339),
            last_refresh_at: state.last_refresh.map(|(at, _)| rfc3339(at)),
            last_refresh_ok: state.last_refresh.map(|(_, ok)| ok),
        };
    }

    fn tell(&self, change: AuthChange, error: Option<&Error>) {
        let observer = self.observer.lock().expect("lock").clone();
        if let Some(observer) = observer {
            observer(change, error);
        }
    }
}

/// The lock held while refreshing the record named `key`, shared by the process.
fn refresh_lock(key: &str) -> Arc<tokio::sync::Mutex<()>> {
    type Locks = HashMap<String, Arc<tokio::sync::Mutex<()>>>;
    static LOCKS: Mutex<Option<Locks>> = Mutex::new(None);
    let mut locks = LOCKS.lock().expect("lock");
    locks
        .get_or_insert_with(HashMap::new)
        .entry(key.to_owned())
        .or_default()
        .clone()
}
