//! The command table: a command's name and JSON arguments to the function that answers it
//! (`commands/`, one file per group), in the core process (`Core`), reached from the window
//! process over the local socket (`ipc.rs`), or from tests in the same process. One macro
//! makes both the list of names (`COMMANDS`) and the `match` that runs them, so the two
//! cannot drift; a test checks the list against every command `ui/src/host/tauri.ts`
//! invokes.
//!
//! Arguments are read as tauri's own commands read them: the UI's camelCase keys (`callId`),
//! a missing key as `null` (so `Option`s may be left out). A Channel argument (the UI's
//! `new Channel()`) arrives as a `Sink` in `Call::channels`, under its key.

use crate::Core;
use crate::commands::{
    app, auth, bundle, clients, config, detail, history, profiles, secrets, serve, servers,
};
use crate::error::ErrorView;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use ts_rs::TS;

/// A command's answer: its value, or what it failed with (an `ErrorView`, or a string for
/// arguments it could not read, as tauri's commands reject them).
pub type Reply = Result<Value, Value>;

/// Where the messages of one Channel argument go; false once nobody receives them.
pub type Sink = Box<dyn FnMut(Value) -> bool + Send>;

/// One command to run.
pub struct Call {
    pub command: String,
    /// The arguments object, as the UI passed it.
    pub args: Value,
    /// The Channel arguments, by key.
    pub channels: HashMap<String, Sink>,
    /// Who calls (the webview's label): a second `subscribe` from the same caller replaces
    /// the first (a reloaded page).
    pub caller: String,
}

/// The commands that run in the window process, where the window is: native dialogs.
pub const WINDOW_COMMANDS: &[&str] = &["choose_save_path"];

/// Commands in `COMMANDS` that the window process sends on its own behalf and a webview may
/// never invoke: a replace the save dialog confirmed, Quit from the macOS app menu.
pub const INTERNAL: &[&str] = &["bundle_confirm_replace", "quit"];

macro_rules! table {
    (|$app:ident, $call:ident| { $($name:literal => $body:expr,)* }) => {
        /// Every command the core answers, by name.
        pub const COMMANDS: &[&str] = &[$($name),*];

        /// Runs `call` against the app's state.
        pub async fn run($app: &Arc<Core>, mut $call: Call) -> Reply {
            let $call = &mut $call;
            match $call.command.as_str() {
                $($name => $body,)*
                other => Err(unknown(other)),
            }
        }
    };
}

table!(|app, call| {
    "snapshot" => reply(servers::snapshot(&app.state).await),
    "subscribe" => {
        let mut sink = channel(call, "channel")?.ok_or_else(|| not_a_channel(call, "channel"))?;
        let events = move |event| serde_json::to_value(event).map_or(true, &mut sink);
        reply(servers::subscribe(&app.state, &call.caller, events).await)
    },
    "auth_sign_in" => reply(auth::auth_sign_in(&app.state, arg(call, "server")?).await),
    "auth_sign_out" => reply(auth::auth_sign_out(&app.state, arg(call, "server")?).await),
    "reconnect" => reply(servers::reconnect(&app.state, arg(call, "server")?).await),
    "reset" => reply(servers::reset(&app.state, arg(call, "server")?).await),
    "disable" => reply(servers::disable(&app.state, arg(call, "server")?).await),
    "enable" => reply(servers::enable(&app.state, arg(call, "server")?).await),
    "reconnect_all_failed" => reply(servers::reconnect_all_failed(&app.state).await),
    "call_tool" => {
        let mut sink = channel(call, "progress")?;
        let progress = move |p| {
            if let (Some(sink), Ok(p)) = (sink.as_mut(), serde_json::to_value(p)) {
                sink(p);
            }
        };
        let (server, tool) = (arg(call, "server")?, arg(call, "tool")?);
        let (args, call_id) = (arg(call, "args")?, arg(call, "callId")?);
        passthrough(detail::call_tool(&app.state, server, tool, args, call_id, progress).await)
    },
    "app_info" => reply(app::app_info(&app.state).await),
    "ui_painted" => {
        app::ui_painted();
        Ok(Value::Null)
    },
    "tool_list" => passthrough(detail::tool_list(&app.state, arg(call, "server")?).await),
    "cancel_call" => reply(detail::cancel_call(&app.state, arg(call, "callId")?).await),
    "server_stderr" => reply(detail::server_stderr(&app.state, arg(call, "server")?).await),
    "server_command" => {
        reply(detail::server_command(&app.state, arg(call, "server")?).await)
    },
    "server_config" => passthrough(detail::server_config(&app.state, arg(call, "server")?).await),
    "server_policy" => reply(detail::server_policy(&app.state, arg(call, "server")?).await),
    "server_hosts" => reply(detail::server_hosts(&app.state, arg(call, "server")?).await),
    "tool_review" => reply(detail::tool_review(&app.state, arg(call, "server")?).await),
    "tool_decide" => {
        let (server, decision) = (arg(call, "server")?, arg(call, "decision")?);
        reply(detail::tool_decide(&app.state, server, decision, arg(call, "tools")?).await)
    },
    "history_events" => {
        let (server, before, limit) = (arg(call, "server")?, arg(call, "before")?, arg(call, "limit")?);
        reply(history::history_events(&app.state, server, before, limit).await)
    },
    "history_failures" => {
        let (server, limit) = (arg(call, "server")?, arg(call, "limit")?);
        reply(history::history_failures(&app.state, server, limit).await)
    },
    "history_calls" => {
        let (server, limit) = (arg(call, "server")?, arg(call, "limit")?);
        reply(history::history_calls(&app.state, server, limit).await)
    },
    "bundle_preview" => reply(bundle::bundle_preview(&app.state).await),
    "bundle_export" => reply(bundle::bundle_export(&app.state, arg(call, "path")?).await),
    "bundle_confirm_replace" => {
        app.state.bundle_confirm_replace(arg(call, "path")?);
        Ok(Value::Null)
    },
    "config_get" => reply(config::config_get(&app.state).await),
    "server_add" => reply(config::server_add(&app.state, arg(call, "server")?).await),
    "server_edit" => {
        let (name, server) = (arg(call, "name")?, arg(call, "server")?);
        reply(config::server_edit(&app.state, name, server).await)
    },
    "server_remove" => reply(config::server_remove(&app.state, arg(call, "name")?).await),
    "import_detect" => reply(config::import_detect(&app.state).await),
    "import_apply" => reply(config::import_apply(&app.state, arg(call, "sources")?).await),
    "clients_list" => reply(clients::clients_list(&app.state).await),
    "clients_preview" => {
        let (client, servers) = (arg(call, "client")?, arg(call, "servers")?);
        reply(clients::clients_preview(&app.state, client, servers).await)
    },
    "clients_connect" => {
        let (client, servers) = (arg(call, "client")?, arg(call, "servers")?);
        reply(clients::clients_connect(&app.state, client, servers).await)
    },
    "clients_restore" => {
        let (client, force) = (arg(call, "client")?, arg(call, "force")?);
        reply(clients::clients_restore(&app.state, client, force).await)
    },
    "secret_store" => reply(secrets::secret_store().await),
    "secret_set" => {
        let (name, value) = (arg(call, "name")?, arg(call, "value")?);
        reply(secrets::secret_set(name, value).await)
    },
    "gateway_endpoint" => reply(Ok(serve::gateway_endpoint(&app.served))),
    "gateway_set" => {
        let (enabled, port) = (arg(call, "enabled")?, arg(call, "port")?);
        reply(serve::gateway_set(app, enabled, port).await)
    },
    "gateway_tokens" => reply(serve::gateway_tokens(&app.served)),
    "gateway_token_add" => reply(serve::gateway_token_add(&app.served, arg(call, "client")?)),
    "gateway_token_remove" => {
        reply(serve::gateway_token_remove(&app.served, arg(call, "client")?))
    },
    "profiles_get" => reply(profiles::profiles_get(app).await),
    "profile_tool_set" => {
        let (profile, server) = (arg(call, "profile")?, arg(call, "server")?);
        let (tool, shown) = (arg(call, "tool")?, arg(call, "shown")?);
        reply(profiles::profile_tool_set(app, profile, server, tool, shown).await)
    },
    "quit" => {
        tracing::info!("Quit from the window's app menu");
        app.quit();
        Ok(Value::Null)
    },
});

fn json(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A command's typed answer. `T: TS` holds every answer to a type that derives its
/// TypeScript (crates/desktop/src/wire.rs lists them into `ui/src/host/generated.ts`), so no
/// command can return a shape the UI has to mirror by hand.
fn reply<T: Serialize + TS>(answer: Result<T, ErrorView>) -> Reply {
    answer.map(json).map_err(json)
}

/// An answer that is a server's MCP JSON, passed through as it came (`tool_list`'s tools,
/// `call_tool`'s result, `server_config`'s masked entry): the UI types these itself.
fn passthrough<T: Serialize>(answer: Result<T, ErrorView>) -> Reply {
    answer.map(json).map_err(json)
}

/// The argument under `key` (a missing one reads as `null`).
fn arg<T: DeserializeOwned>(call: &Call, key: &str) -> Result<T, Value> {
    let value = call.args.get(key).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|e| {
        Value::String(format!(
            "invalid args `{key}` for command `{}`: {e}",
            call.command
        ))
    })
}

/// The Channel argument under `key`: `None` when the caller left it out, an error when it
/// passed something else.
fn channel(call: &mut Call, key: &str) -> Result<Option<Sink>, Value> {
    match call.channels.remove(key) {
        Some(sink) => Ok(Some(sink)),
        None if call.args.get(key).is_none_or(Value::is_null) => Ok(None),
        None => Err(not_a_channel(call, key)),
    }
}

fn not_a_channel(call: &Call, key: &str) -> Value {
    Value::String(format!(
        "`{}`: `{key}` is not a Channel; pass a `new Channel()` from @tauri-apps/api/core",
        call.command
    ))
}

pub fn unknown(command: &str) -> Value {
    Value::String(format!(
        "there is no command `{command}` in this lifeline-app {}; the UI and the app must \
         come from the same build",
        env!("CARGO_PKG_VERSION")
    ))
}

#[cfg(test)]
#[path = "dispatch_tests.rs"]
mod tests;
