//! The app itself: what it runs (demo or config mode, paths, notices) and the UI's first
//! paint.

use crate::error::ErrorView;
use crate::source::AppInfo;
use crate::state::AppState;

type Result<T> = std::result::Result<T, ErrorView>;

/// Demo or config mode, the config path, the log directory, notices for a banner.
pub async fn app_info(state: &AppState) -> Result<AppInfo> {
    Ok(state.info())
}

/// The UI's first frame is on screen: logs, once, how long after the process started (the
/// benchmark's cold start to first paint, bench/METHOD.md).
pub fn ui_painted() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let ms = crate::STARTED.get().map_or(0, |t| t.elapsed().as_millis());
        tracing::info!("first paint {ms} ms after start");
    });
}
