//! `notifications/tools/list_changed` on the aggregated endpoint: every server's state and
//! tool changes are one stream; after a burst of them is quiet for the debounce (or has
//! gone on for eight of them), the host's list is built again and the host is told once if
//! what it would be given differs from what it was given. A server that gives up or is
//! disabled leaves the list with one notification, and comes back with one.

use super::{Aggregate, Catalog};
use crate::gateway::{Shared, View, tell_if_changed};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Runs for the session's life (the session loop aborts it).
pub(crate) async fn watch_tools(shared: Arc<Shared>) {
    let View::Aggregate(agg) = &shared.view else {
        return;
    };
    let (tx, mut changes) = mpsc::unbounded_channel::<()>();
    let mut forwarders = JoinSet::new();
    for up in &shared.upstreams {
        let mut rx = up.supervisor.watch();
        let tx = tx.clone();
        forwarders.spawn(async move {
            while rx.changed().await.is_ok() {
                if tx.send(()).is_err() {
                    return;
                }
            }
        });
    }
    drop(tx);
    while changes.recv().await.is_some() {
        if !quiet(agg, &mut changes).await {
            return;
        }
        let catalog = Catalog::build(&shared, agg).await;
        tell_if_changed(&shared, catalog.fingerprint.clone());
        // In search mode the host's list never changes; what it finds and calls is the
        // catalog now.
        if agg.options.profile.search() {
            *agg.given.lock().expect("given lock") = Some(Arc::new(catalog));
        }
    }
}

/// Waits until no change came for the debounce, or the burst lasted eight of them; false
/// once every server's watch ended.
async fn quiet(agg: &Aggregate, changes: &mut mpsc::UnboundedReceiver<()>) -> bool {
    let debounce = agg.options.debounce;
    let until = Instant::now() + debounce * 8;
    loop {
        match tokio::time::timeout(debounce, changes.recv()).await {
            Ok(Some(())) if Instant::now() < until => {}
            Ok(Some(())) | Err(_) => return true,
            Ok(None) => return false,
        }
    }
}
