//! The commands for Lifeline's secret store (`lifeline_core::secrets`, docs/secrets.md):
//! `secret_store` says which store is in use and why (the UI shows a notice when it is the
//! plain-file fallback), `secret_set` stores a value so a config can say `${keyring:NAME}`
//! (the server editor's "move this value to the keychain"). No command ever returns a value.

use crate::error::ErrorView;
use lifeline_core::secrets::{Backend, SecretStore};
use serde::Serialize;

type Result<T> = std::result::Result<T, ErrorView>;

/// What the UI shows about the store (`secret_store`, `secret_set`; docs/secrets.md): the
/// backend, and the notice to show (only for the file).
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "SecretStoreView")]
pub struct StoreView {
    pub backend: Backend,
    /// A sentence for the UI when secrets are kept in a plain file; `None` for a keychain.
    pub notice: Option<String>,
}

/// Which store holds secrets, and the notice for the UI when it is the file.
pub async fn secret_store() -> Result<StoreView> {
    blocking(|store| Ok(view(store))).await
}

/// Stores `value` under `name` (replacing what was there). The reference to write in the
/// config is `${keyring:NAME}`.
pub async fn secret_set(name: String, value: String) -> Result<StoreView> {
    blocking(move |store| set(store, &name, &value)).await
}

pub fn view(store: &SecretStore) -> StoreView {
    let backend = store.backend().clone();
    let notice = backend.is_fallback().then(|| {
        format!(
            "Secrets are kept in {backend}. Install or unlock a keychain (a Secret Service such \
             as GNOME Keyring) to keep them encrypted."
        )
    });
    StoreView { backend, notice }
}

pub fn set(store: &SecretStore, name: &str, value: &str) -> Result<StoreView> {
    if value.is_empty() {
        return Err(ErrorView::new(
            "config",
            format!("the value for {name} is empty; nothing was stored"),
        ));
    }
    store
        .set(name, value)
        .map_err(|e| ErrorView::new("config", e.to_string()))?;
    Ok(view(store))
}

/// The store calls block (D-Bus on Linux): off the async runtime's threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce(&SecretStore) -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(move || f(&SecretStore::open()))
        .await
        .map_err(|e| ErrorView::new("internal", format!("the secret store task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "CANARY-app-secret-3e9d";

    #[test]
    fn set_stores_and_the_view_carries_the_fallback_notice_but_no_value() {
        let dir = tempfile::tempdir().unwrap();
        let store = SecretStore::file(&dir.path().join("s.json"), "no OS keychain is available");
        let shown = set(&store, "GH_TOKEN", CANARY).expect("stored");
        assert_eq!(store.get("GH_TOKEN").unwrap().as_deref(), Some(CANARY));
        let notice = shown.notice.clone().expect("a notice for the file");
        assert!(notice.contains("not encrypted"), "{notice}");
        let json = serde_json::to_string(&shown).unwrap();
        assert!(!json.contains(CANARY), "{json}");
        assert!(set(&store, "GH_TOKEN", "").is_err());
        let e = set(&store, "a b", CANARY).unwrap_err();
        assert!(!e.message.contains(CANARY), "{}", e.message);
    }
}
