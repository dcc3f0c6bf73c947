//! The commands the UI invokes (`invoke("snapshot")`, …), one file per thing a person does:
//! the server list (`servers.rs`), a server's detail panel and its tool calls (`detail.rs`),
//! the history panel (`history.rs`), signing in (`auth.rs`), the config editor and importer
//! (`config.rs`), the secret store (`secrets.rs`), "Connect a client" (`clients.rs`), "Serve
//! over HTTP" (`serve.rs`), the Profiles view (`profiles.rs`), the diagnostic bundle
//! (`bundle.rs`) and the app itself (`app.rs`). Each command is one line that hands over to
//! `AppState` (or the `Core`); every failure is an `ErrorView` (`{kind, message}`). The
//! shapes are listed in
//! src-tauri/README.md; `dispatch.rs` is the table that maps a command's name and JSON
//! arguments to these functions, in the core process.

pub mod app;
pub mod auth;
pub mod bundle;
pub mod clients;
pub mod config;
pub mod detail;
pub mod history;
pub mod profiles;
pub mod secrets;
pub mod serve;
pub mod servers;
