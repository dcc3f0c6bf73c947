//! The `Authorizer`'s side of the kept sign-ins (`auth::store`): reading the record a server
//! last used, taking the record another server or process keeps for the same authorization
//! server and resource, and saving what this one signed in or refreshed. Store calls run on
//! the blocking pool; a store that fails is logged, and the sign-in still works this run.

use super::{AuthChange, Authorizer, Grantor, State};
use crate::auth::store::Record;
use crate::error::Error;
use std::time::SystemTime;

impl Authorizer {
    /// Reads the sign-in this server last used from the store, if there is a store.
    pub(super) async fn load_kept(&self, state: &mut State) {
        let Some(store) = self.store.clone() else {
            return;
        };
        let url = self.server_url().to_owned();
        match blocking(move || store.load_for(&url)).await {
            Ok(Some(record)) if self.usable(&record) => {
                self.adopt(state, record);
                self.publish(state);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("the kept sign-in could not be read: {e}"),
        }
    }

    /// Takes the kept record of `grantor` when it holds a token other than `used` (another
    /// server or process signed in or refreshed since). True if it did.
    pub(super) async fn adopt_kept(
        &self,
        state: &mut State,
        grantor: &Grantor,
        used: Option<&str>,
    ) -> bool {
        let Some(store) = self.store.clone() else {
            return false;
        };
        let (key, url) = (grantor.key(), self.server_url().to_owned());
        let loaded = {
            let store = store.clone();
            blocking(move || store.load(&key)).await
        };
        let record = match loaded {
            Ok(Some(r)) if Some(r.access_token.as_str()) != used && self.usable(&r) => r,
            Ok(_) => return false,
            Err(e) => {
                tracing::warn!("the kept sign-in could not be read: {e}");
                return false;
            }
        };
        let key = record.key();
        let _ = blocking(move || store.point(&url, &key)).await;
        let refreshed = state.signed_in_at.is_some();
        self.adopt(state, record);
        self.publish(state);
        self.tell(
            if refreshed {
                AuthChange::Refreshed
            } else {
                AuthChange::SignedIn
            },
            None,
        );
        true
    }

    /// A record this server may use: its client is the configured one, if one is.
    fn usable(&self, record: &Record) -> bool {
        self.settings
            .client_id
            .as_ref()
            .is_none_or(|id| *id == record.client_id)
    }

    fn adopt(&self, state: &mut State, record: Record) {
        state.grantor = Some(Grantor {
            issuer: record.issuer.clone(),
            token_endpoint: record.token_endpoint.clone(),
            revocation_endpoint: record.revocation_endpoint.clone(),
            resource: record.resource.clone(),
        });
        state.client = Some(record.client());
        state.requested = record.requested.clone();
        state.signed_in_at = Some(crate::auth::store::from_unix(record.signed_in_at));
        if let Some(at) = record.refreshed_at {
            state.last_refresh = Some((crate::auth::store::from_unix(at), true));
        }
        state.needs_sign_in = false;
        self.set_tokens(state, Some(record.tokens()));
    }

    /// Saves the sign-in held now; a store that fails is logged (it still works this run).
    pub(super) async fn keep(&self, state: &State, refreshed_at: Option<SystemTime>) {
        let (Some(store), Some(grantor), Some(client), Some(tokens)) = (
            self.store.clone(),
            &state.grantor,
            &state.client,
            &state.tokens,
        ) else {
            return;
        };
        let mut record = Record::new(
            &grantor.issuer,
            &grantor.resource,
            &grantor.token_endpoint,
            grantor.revocation_endpoint.as_deref(),
            client,
            tokens,
            &state.requested,
        );
        if let Some(at) = state.signed_in_at {
            record.signed_in_at = crate::auth::store::unix(at);
        }
        record.refreshed_at = refreshed_at.map(crate::auth::store::unix);
        let url = self.server_url().to_owned();
        if let Err(e) = blocking(move || store.save(&record, &url)).await {
            tracing::warn!("the sign-in works but could not be kept for the next run: {e}");
        }
    }
}

/// Runs a store call on the blocking pool (the keychain is a D-Bus round trip).
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|_| {
        Err(crate::auth::auth_error(
            "the sign-in store call was interrupted",
        ))
    })
}
