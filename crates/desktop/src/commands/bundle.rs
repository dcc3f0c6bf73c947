//! The diagnostic bundle's commands (docs/bundle.md): preview it, then export exactly what
//! was previewed. The bundle itself is `bundle.rs`.

use crate::bundle::{BundlePreview, Exported};
use crate::error::ErrorView;
use crate::state::AppState;

type Result<T> = std::result::Result<T, ErrorView>;

/// Builds the diagnostic bundle and returns every file with its exact content; kept for
/// `bundle_export`.
pub async fn bundle_preview(state: &AppState) -> Result<BundlePreview> {
    state.bundle_preview().await
}

/// Writes the previewed bundle to `path` (absolute).
pub async fn bundle_export(state: &AppState, path: String) -> Result<Exported> {
    state.bundle_export(&path).await
}
