//! Where sign-ins are kept between runs and shared between servers and processes: one
//! record per (authorization server, resource) in Lifeline's secret store (the OS keychain,
//! else a 0600 file; `secrets::SecretStore`), under the name `oauth.<hash>`, and a pointer
//! per server URL (`oauth.url.<hash>`) naming the record it last used, so a server is signed
//! in from the first request of a run without a 401 and a discovery first.
//!
//! Every server behind the same authorization server and resource shares one record: one
//! sign-in serves them all, and one refresh. A refresh is made under `Lock`, an exclusive
//! lock on a file of the record's own in `<data dir>/lifeline/locks/` that every Lifeline
//! process (the app, `lifeline connect` bridges, the CLI) takes, and the record is read
//! again under it: whoever comes second finds the new tokens and uses them instead of
//! spending the refresh token a second time.
//!
//! Calls block (the keychain is a D-Bus round trip on Linux); `Authorizer` makes them in
//! `spawn_blocking`.

use super::register::{Client, TokenAuth};
use super::token::Tokens;
use super::{Secret, auth_error};
use crate::error::Error;
use crate::secrets::SecretStore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The version of the record's layout; a record of another version is ignored (a sign-in
/// replaces it).
const VERSION: u32 = 1;

/// One sign-in as kept: who granted it, to which client, the tokens, and when.
#[derive(Clone, Serialize, Deserialize)]
pub struct Record {
    pub v: u32,
    pub issuer: String,
    pub resource: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    pub client_id: String,
    #[serde(default)]
    pub client_secret: Option<String>,
    /// `none`, `client_secret_basic` or `client_secret_post`.
    pub token_auth: String,
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// Unix seconds.
    #[serde(default)]
    pub expires_at: Option<u64>,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The scopes the authorization request asked for (what a refresh asks for again).
    #[serde(default)]
    pub requested: Vec<String>,
    pub signed_in_at: u64,
    #[serde(default)]
    pub refreshed_at: Option<u64>,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Record {
    /// The record of a fresh sign-in (or a refresh: `refreshed` keeps the sign-in's time).
    pub fn new(
        issuer: &str,
        resource: &str,
        token_endpoint: &str,
        revocation_endpoint: Option<&str>,
        client: &Client,
        tokens: &Tokens,
        requested: &[String],
    ) -> Record {
        Record {
            v: VERSION,
            issuer: issuer.to_owned(),
            resource: resource.to_owned(),
            token_endpoint: token_endpoint.to_owned(),
            revocation_endpoint: revocation_endpoint.map(str::to_owned),
            client_id: client.id.clone(),
            client_secret: client.secret.as_ref().map(|s| s.expose().to_owned()),
            token_auth: client.auth.as_str().to_owned(),
            access_token: tokens.access.expose().to_owned(),
            refresh_token: tokens.refresh.as_ref().map(|s| s.expose().to_owned()),
            expires_at: tokens.expires_at.map(unix),
            scopes: tokens.scopes.clone(),
            requested: requested.to_vec(),
            signed_in_at: unix(SystemTime::now()),
            refreshed_at: None,
        }
    }

    pub fn client(&self) -> Client {
        Client {
            id: self.client_id.clone(),
            secret: self.client_secret.clone().map(Secret::new),
            auth: TokenAuth::parse(&self.token_auth).unwrap_or(TokenAuth::None),
        }
    }

    pub fn tokens(&self) -> Tokens {
        Tokens {
            access: Secret::new(self.access_token.clone()),
            refresh: self.refresh_token.clone().map(Secret::new),
            expires_at: self.expires_at.map(from_unix),
            scopes: self.scopes.clone(),
        }
    }

    /// The name this record is stored under.
    pub fn key(&self) -> String {
        record_key(&self.issuer, &self.resource)
    }

    /// The values of this record no event, log or bundle may show.
    pub fn secrets(&self) -> Vec<String> {
        let mut out = vec![self.access_token.clone()];
        out.extend(self.refresh_token.clone());
        out.extend(self.client_secret.clone());
        out
    }
}

/// The name of the record of (issuer, resource).
pub fn record_key(issuer: &str, resource: &str) -> String {
    format!("oauth.{}", short_hash(&[issuer, resource]))
}

/// The name of the pointer of a server URL.
pub fn pointer_key(server_url: &str) -> String {
    format!("oauth.url.{}", short_hash(&[server_url]))
}

fn short_hash(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize()[..10]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

pub fn from_unix(s: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(s)
}

/// The secret store plus the directory of the refresh locks.
#[derive(Debug)]
pub struct TokenStore {
    /// Opened on first use (`SecretStore::open` asks the keychain, which blocks).
    secrets: OnceLock<SecretStore>,
    locks: Option<PathBuf>,
}

/// This process's store (`TokenStore::open`), shared by every server.
pub fn shared() -> Arc<TokenStore> {
    static SHARED: OnceLock<Arc<TokenStore>> = OnceLock::new();
    SHARED.get_or_init(|| Arc::new(TokenStore::open())).clone()
}

impl TokenStore {
    /// This user's store: `SecretStore::open()` and `<data dir>/lifeline/locks`.
    pub fn open() -> TokenStore {
        TokenStore {
            secrets: OnceLock::new(),
            locks: dirs::data_dir().map(|d| d.join("lifeline").join("locks")),
        }
    }

    /// A store of its own (tests), with its locks in `locks`.
    pub fn with(secrets: SecretStore, locks: &Path) -> TokenStore {
        TokenStore {
            secrets: OnceLock::from(secrets),
            locks: Some(locks.to_owned()),
        }
    }

    /// The secret store (opened now if it was not yet: call it where blocking is fine).
    pub fn secrets(&self) -> &SecretStore {
        self.secrets.get_or_init(SecretStore::open)
    }

    /// The record named `key`; `None` when there is none or it is not one this version reads.
    pub fn load(&self, key: &str) -> Result<Option<Record>, Error> {
        let Some(text) = self.secrets().get(key).map_err(store_error)? else {
            return Ok(None);
        };
        Ok(serde_json::from_str::<Record>(&text)
            .ok()
            .filter(|r| r.v == VERSION))
    }

    /// The record the server at `server_url` last used, if its pointer and the record exist.
    pub fn load_for(&self, server_url: &str) -> Result<Option<Record>, Error> {
        let Some(key) = self
            .secrets()
            .get(&pointer_key(server_url))
            .map_err(store_error)?
        else {
            return Ok(None);
        };
        self.load(&key)
    }

    /// Keeps `record`, and points `server_url` at it.
    pub fn save(&self, record: &Record, server_url: &str) -> Result<(), Error> {
        let text = serde_json::to_string(record).expect("a record serializes");
        self.secrets()
            .set(&record.key(), &text)
            .map_err(store_error)?;
        self.point(server_url, &record.key())
    }

    /// Points `server_url` at the record named `key` (unless it already does).
    pub fn point(&self, server_url: &str, key: &str) -> Result<(), Error> {
        let pointer = pointer_key(server_url);
        if self
            .secrets()
            .get(&pointer)
            .map_err(store_error)?
            .as_deref()
            == Some(key)
        {
            return Ok(());
        }
        self.secrets().set(&pointer, key).map_err(store_error)
    }

    /// Forgets the record named `key` and the pointer of `server_url`. True if the record
    /// was there.
    pub fn forget(&self, key: &str, server_url: &str) -> Result<bool, Error> {
        self.secrets()
            .delete(&pointer_key(server_url))
            .map_err(store_error)?;
        self.secrets().delete(key).map_err(store_error)
    }

    /// Takes the cross-process lock of the record named `key`, waiting for it. `None` when
    /// there is no data dir to keep locks in (then only the in-process lock applies).
    pub fn lock(&self, key: &str) -> Result<Option<Lock>, Error> {
        let Some(dir) = &self.locks else {
            return Ok(None);
        };
        let file = crate::private::create_dir(dir)
            .and_then(|()| crate::private::open_lock(&dir.join(format!("{key}.lock"))))
            .map_err(|e| {
                auth_error(format!(
                    "could not open the sign-in lock in {}: {e}",
                    dir.display()
                ))
            })?;
        file.lock()
            .map_err(|e| auth_error(format!("could not lock the sign-in: {e}")))?;
        Ok(Some(Lock { _file: file }))
    }
}

/// Held while a record is refreshed; the lock goes with the file when this drops.
pub struct Lock {
    _file: std::fs::File,
}

fn store_error(e: crate::secrets::SecretError) -> Error {
    auth_error(format!("the sign-in could not be kept or read: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path) -> TokenStore {
        TokenStore::with(
            SecretStore::file(&dir.join("s.json"), "test"),
            &dir.join("locks"),
        )
    }

    fn record(access: &str) -> Record {
        let client = Client {
            id: "cid".into(),
            secret: Some(Secret::new("CANARY-client-secret")),
            auth: TokenAuth::Basic,
        };
        let tokens = Tokens {
            access: Secret::new(access),
            refresh: Some(Secret::new("CANARY-refresh")),
            expires_at: Some(from_unix(2_000_000_000)),
            scopes: vec!["read".into()],
        };
        Record::new(
            "https://as.example",
            "https://mcp.example/",
            "https://as.example/token",
            None,
            &client,
            &tokens,
            &["read".into()],
        )
    }

    #[test]
    fn a_record_round_trips_and_servers_find_it_through_their_pointer() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let r = record("CANARY-access-1");
        s.save(&r, "https://mcp.example/a").unwrap();
        s.point("https://mcp.example/b", &r.key()).unwrap();
        for url in ["https://mcp.example/a", "https://mcp.example/b"] {
            let back = s.load_for(url).unwrap().expect("found");
            assert_eq!(back.access_token, "CANARY-access-1");
            assert_eq!(back.client().auth, TokenAuth::Basic);
            assert_eq!(back.tokens().expires_at, Some(from_unix(2_000_000_000)));
        }
        assert!(s.load_for("https://mcp.example/c").unwrap().is_none());
        assert!(s.forget(&r.key(), "https://mcp.example/a").unwrap());
        assert!(s.load_for("https://mcp.example/b").unwrap().is_none());
    }

    #[test]
    fn keys_are_valid_secret_names_and_one_per_issuer_and_resource() {
        let a = record_key("https://as.example", "https://mcp.example/");
        assert!(crate::secrets::check_name(&a).is_none(), "{a}");
        assert!(crate::secrets::check_name(&pointer_key("https://x/y?z")).is_none());
        assert_ne!(
            a,
            record_key("https://as.example", "https://other.example/")
        );
        assert_ne!(a, record_key("https://as2.example", "https://mcp.example/"));
        assert!(
            a.starts_with(crate::secrets::OAUTH_PREFIX),
            "not listed as a secret"
        );
    }

    #[test]
    fn debug_shows_no_token_and_secrets_lists_every_one() {
        let r = record("CANARY-access-2");
        let shown = format!("{r:?}");
        assert!(!shown.contains("CANARY"), "{shown}");
        assert_eq!(r.secrets().len(), 3);
    }

    #[test]
    fn a_record_of_another_version_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let mut r = record("CANARY-access-3");
        r.v = 99;
        s.save(&r, "https://mcp.example/a").unwrap();
        assert!(s.load_for("https://mcp.example/a").unwrap().is_none());
    }

    #[test]
    fn the_lock_excludes_a_second_holder_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let held = s.lock("oauth.k").unwrap().expect("a lock dir");
        let path = dir.path().join("locks").join("oauth.k.lock");
        let other = std::fs::File::open(&path).unwrap();
        assert!(other.try_lock().is_err(), "held");
        drop(held);
        other.try_lock().expect("free once dropped");
    }
}
