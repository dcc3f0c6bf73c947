//! The webview's `invoke`: one handler for every command, which reads the command's name and
//! JSON arguments, turns its Channel arguments (`new Channel()` in the UI) into sinks, and
//! hands it on over the local socket to the core process (`ipc::Remote`, managed in the
//! window process). The core process never has a webview; tests on tauri's mock runtime hold
//! a `Core` in this process, and their commands go to `dispatch::run` here. The commands that need the window (`WINDOW_COMMANDS`:
//! the save dialog) run here, as plain tauri commands.

#[cfg(test)]
use lifeline_desktop::Core;
use lifeline_desktop::dispatch::{self, COMMANDS, Call, INTERNAL, Sink, WINDOW_COMMANDS};
use lifeline_desktop::ipc::Remote;
use serde_json::Value;
use std::collections::HashMap;
use std::str::FromStr;
#[cfg(test)]
use std::sync::Arc;
use tauri::ipc::{Channel, Invoke, InvokeBody, InvokeError, JavaScriptChannelId};
use tauri::{Manager, Runtime};

/// The app's commands, on any runtime (the real one, or `tauri::test`'s mock).
pub fn with_commands<R: Runtime>(builder: tauri::Builder<R>) -> tauri::Builder<R> {
    let local: Box<dyn Fn(Invoke<R>) -> bool + Send + Sync> =
        Box::new(tauri::generate_handler![crate::dialogs::choose_save_path]);
    builder.invoke_handler(move |invoke: Invoke<R>| {
        let command = invoke.message.command().to_owned();
        if WINDOW_COMMANDS.contains(&command.as_str()) {
            return local(invoke);
        }
        if !COMMANDS.contains(&command.as_str()) || INTERNAL.contains(&command.as_str()) {
            invoke.resolver.reject(dispatch::unknown(&command));
            return true;
        }
        let args = match invoke.message.payload() {
            InvokeBody::Json(args) => args.clone(),
            InvokeBody::Raw(_) => {
                invoke
                    .resolver
                    .reject(format!("`{command}` takes JSON arguments, not raw bytes"));
                return true;
            }
        };
        let webview = invoke.message.webview();
        let mut channels: HashMap<String, Sink> = HashMap::new();
        if let Value::Object(map) = &args {
            for (key, value) in map {
                let Some(id) = value
                    .as_str()
                    .and_then(|s| JavaScriptChannelId::from_str(s).ok())
                else {
                    continue;
                };
                let channel: Channel<Value> = id.channel_on(webview.clone());
                channels.insert(key.clone(), Box::new(move |v| channel.send(v).is_ok()));
            }
        }
        let call = Call {
            command,
            args,
            channels,
            caller: webview.label().to_owned(),
        };
        let app = webview.app_handle();
        let remote = app.try_state::<Remote>().map(|r| r.inner().clone());
        #[cfg(test)]
        let core = app.try_state::<Arc<Core>>().map(|c| c.inner().clone());
        invoke.resolver.respond_async(async move {
            let reply = match remote {
                Some(remote) => remote.call(call).await,
                #[cfg(test)]
                None if core.is_some() => dispatch::run(core.as_ref().unwrap(), call).await,
                None => Err(unreachable_core(&call.command)),
            };
            reply.map_err(InvokeError)
        });
        true
    })
}

/// A webview with no core to send its commands to: only a window process has one.
fn unreachable_core(command: &str) -> serde_json::Value {
    serde_json::Value::String(format!(
        "`{command}`: this process has no Lifeline core to ask (not a window process)"
    ))
}
