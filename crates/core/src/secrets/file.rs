//! The file store, where there is no OS keychain: one JSON object of name → value in a file
//! created 0600 in a directory created 0700 (`private`), rewritten atomically under a lock
//! file beside it, so the app and `lifeline secrets set` never lose each other's writes. The
//! values are not encrypted: the file is as private as the user's home directory, which is
//! why `SecretStore::backend` says so wherever this store is in use.

use crate::private;
use serde_json::{Map, Value};
use std::io;
use std::path::PathBuf;

pub(super) struct FileStore {
    path: PathBuf,
}

impl FileStore {
    pub fn new(path: PathBuf) -> FileStore {
        FileStore { path }
    }

    pub fn get(&self, name: &str) -> Result<Option<String>, String> {
        let map = self.read()?;
        Ok(map.get(name).and_then(Value::as_str).map(str::to_owned))
    }

    pub fn set(&self, name: &str, value: &str) -> Result<(), String> {
        let _lock = self.lock()?;
        let mut map = self.read()?;
        map.insert(name.to_owned(), Value::String(value.to_owned()));
        self.write(&map)
    }

    pub fn delete(&self, name: &str) -> Result<bool, String> {
        let _lock = self.lock()?;
        let mut map = self.read()?;
        if map.remove(name).is_none() {
            return Ok(false);
        }
        self.write(&map).map(|()| true)
    }

    pub fn list(&self) -> Result<Vec<String>, String> {
        Ok(self.read()?.keys().cloned().collect())
    }

    fn read(&self) -> Result<Map<String, Value>, String> {
        // A secret planted by another user would be sent to a server as this user's.
        private::check_trusted(
            &self.path,
            "set LIFELINE_SECRETS_FILE to a file in a directory of your own",
        )
        .map_err(|e| e.to_string())?;
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(format!("cannot read it: {e}")),
        };
        // A file left readable by others (copied in by hand) is tightened on first read.
        private::restrict(&self.path, 0o600).map_err(|e| format!("cannot make it private: {e}"))?;
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(top)) => match top.get("secrets") {
                Some(Value::Object(m)) => Ok(m.clone()),
                None => Ok(Map::new()),
                Some(_) => Err("its `secrets` is not an object; fix or remove the file".into()),
            },
            // serde_json's message names a position, never the text around it.
            Ok(_) => Err("it does not hold a JSON object; fix or remove the file".into()),
            Err(e) => Err(format!(
                "it is not valid JSON ({e}); fix or remove the file"
            )),
        }
    }

    fn write(&self, map: &Map<String, Value>) -> Result<(), String> {
        let mut top = Map::new();
        top.insert(
            "note".into(),
            Value::String(
                "Lifeline's secrets, kept in this file instead of the OS keychain (docs/secrets.md); \
                 change them with `lifeline secrets`"
                    .into(),
            ),
        );
        top.insert("secrets".into(), Value::Object(map.clone()));
        let mut bytes = serde_json::to_vec_pretty(&Value::Object(top)).expect("a map serializes");
        bytes.push(b'\n');
        private::write_atomic(&self.path, &bytes, private::Mode::Private)
            .map_err(|e| format!("cannot write it: {e}"))
    }

    fn lock(&self) -> Result<private::StoreLock, String> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            private::create_dir(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        private::lock_beside(&self.path).map_err(|e| e.to_string())
    }
}
