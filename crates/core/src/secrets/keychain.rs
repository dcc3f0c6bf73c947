//! The OS keychain through the `keyring` crate: the Secret Service (over D-Bus, pure Rust) on
//! Linux and the BSDs, the Keychain on macOS, the Credential Manager on Windows. Each secret
//! is one entry, service `lifeline`, account (user) the secret's name. Errors are the
//! keychain's own words: they name no value.

use super::SERVICE;
use std::collections::HashMap;

/// The keychain's name as people know it on this OS.
#[cfg(target_os = "macos")]
pub(super) const NAME: &str = "macOS Keychain";
#[cfg(windows)]
pub(super) const NAME: &str = "Windows Credential Manager";
#[cfg(not(any(target_os = "macos", windows)))]
pub(super) const NAME: &str = "Secret Service";

pub(super) struct Keychain(());

impl Keychain {
    /// The keychain, if it answers: the store initialises (on Linux, a session bus and a
    /// Secret Service on it) and a search of Lifeline's entries succeeds.
    pub fn open() -> Result<Keychain, String> {
        keyring::Entry::store_status().as_ref().map_err(describe)?;
        let k = Keychain(());
        k.list()?;
        Ok(k)
    }

    pub fn get(&self, name: &str) -> Result<Option<String>, String> {
        match entry(name)?.get_password() {
            Ok(v) => Ok(Some(v)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(describe(&e)),
        }
    }

    pub fn set(&self, name: &str, value: &str) -> Result<(), String> {
        entry(name)?.set_password(value).map_err(|e| describe(&e))
    }

    pub fn delete(&self, name: &str) -> Result<bool, String> {
        match entry(name)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(describe(&e)),
        }
    }

    pub fn list(&self) -> Result<Vec<String>, String> {
        let spec = HashMap::from([("service", SERVICE)]);
        let found = keyring_core::Entry::search(&spec).map_err(|e| describe(&e))?;
        Ok(found
            .iter()
            .filter_map(keyring_core::Entry::get_specifiers)
            .filter(|(service, _)| service == SERVICE)
            .map(|(_, user)| user)
            .collect())
    }
}

fn entry(name: &str) -> Result<keyring::Entry, String> {
    keyring::Entry::new(SERVICE, name).map_err(|e| describe(&e))
}

/// The keychain's error in one line. `BadEncoding` carries the stored bytes, so it is
/// described, never printed.
fn describe(e: &keyring::Error) -> String {
    match e {
        keyring::Error::BadEncoding(_) => "the stored value is not UTF-8 text".to_owned(),
        keyring::Error::BadDataFormat(..) => "the stored value is not in a known format".to_owned(),
        keyring::Error::NoDefaultStore => "no keychain could be opened".to_owned(),
        e => e.to_string().lines().next().unwrap_or_default().to_owned(),
    }
}
