//! The desktop's own dialogs, opened from Rust so the UI needs no plugin permissions: the
//! save dialog of "Export diagnostics". They run in the window process, beside the window
//! (`dispatch::WINDOW_COMMANDS`).

#[cfg(test)]
use lifeline_desktop::Core;
use lifeline_desktop::dispatch::Call;
use lifeline_desktop::error::ErrorView;
use lifeline_desktop::ipc::Remote;
use std::path::Path;
#[cfg(test)]
use std::sync::Arc;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_dialog::DialogExt;
use tokio::sync::oneshot;

/// The platform's save dialog, starting at `suggested` (its folder and file name), for a
/// zip. The chosen path, or `None` when the person cancelled.
#[tauri::command]
pub async fn choose_save_path<R: Runtime>(
    app: AppHandle<R>,
    suggested: String,
) -> Result<Option<String>, ErrorView> {
    let suggested = Path::new(&suggested);
    let mut dialog = app
        .dialog()
        .file()
        .set_title("Save the diagnostic bundle")
        .add_filter("Zip archive", &["zip"]);
    if let Some(dir) = suggested.parent().filter(|d| d.is_dir()) {
        dialog = dialog.set_directory(dir);
    }
    if let Some(name) = suggested.file_name() {
        dialog = dialog.set_file_name(name.to_string_lossy());
    }
    let (tx, rx) = oneshot::channel();
    dialog.save_file(move |chosen| {
        let _ = tx.send(chosen);
    });
    let chosen = rx.await.map_err(|_| {
        ErrorView::new(
            "cancelled",
            "the save dialog closed without an answer; type the path instead",
        )
    })?;
    let chosen = chosen.and_then(|p| p.into_path().ok());
    // The dialog asked the person before returning an existing file, so that file may be
    // replaced; a path typed in the window never replaces one. The bundle is the core
    // process's: it is told over the socket (an internal command no webview may invoke).
    if let Some(path) = chosen.as_ref().filter(|p| p.exists()) {
        #[cfg(test)]
        if let Some(core) = app.try_state::<Arc<Core>>() {
            core.state.bundle_confirm_replace(path.clone());
        }
        if let Some(remote) = app.try_state::<Remote>().map(|r| r.inner().clone()) {
            let call = Call {
                command: "bundle_confirm_replace".into(),
                args: serde_json::json!({ "path": path }),
                channels: Default::default(),
                caller: String::new(),
            };
            if let Err(e) = remote.call(call).await {
                tracing::warn!("the core was not told the bundle may replace the file: {e}");
            }
        }
    }
    Ok(chosen.map(|p| p.display().to_string()))
}
