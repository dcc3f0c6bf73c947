//! `notifications/tools/list_changed` on the aggregated endpoint: every server's state and
//! tool changes are one stream; after a burst of them is quiet for the debounce (or has
//! gone on for eight of them), the host's list is built again and the host is told once if
//! what it would be given differs from what it was given. A server that gives up or is
//! disabled leaves the list with one notification, and comes back with one; so does a
//! server the config adds to or removes from the session.

use super::Aggregate;
use crate::gateway::{Shared, View, tell_if_changed};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// Runs for the session's life (the session loop aborts it). A change of the session's
/// servers (`members.rs`) is a change too, and the new servers' changes are followed.
pub(crate) async fn watch_tools(shared: Arc<Shared>) {
    let View::Aggregate(agg) = &shared.view else {
        return;
    };
    // Holds one sender itself, so the channel never ends while servers come and go.
    let (tx, mut changes) = mpsc::unbounded_channel::<()>();
    let mut membership = shared.membership.subscribe();
    let mut _forwarders = forward_changes(&shared, &tx);
    loop {
        tokio::select! {
            Some(()) = changes.recv() => {}
            Ok(()) = membership.changed() => {
                _forwarders = forward_changes(&shared, &tx);
            }
            else => return,
        }
        quiet(agg, &mut changes).await;
        let catalog = super::current(&shared, agg).await;
        tell_if_changed(&shared, catalog.fingerprint.clone());
        // In search mode the host's list never changes; what it finds and calls is the
        // catalog now.
        if agg.profile().search() {
            *agg.given.lock().expect("given lock") = Some(catalog);
        }
    }
}

/// One task per server of the session passing its state changes on as `()`; dropping the
/// set ends them.
fn forward_changes(shared: &Shared, tx: &mpsc::UnboundedSender<()>) -> JoinSet<()> {
    let mut forwarders = JoinSet::new();
    for up in shared.upstreams().iter() {
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
    forwarders
}

/// Waits until no change came for the debounce, or the burst lasted eight of them.
async fn quiet(agg: &Aggregate, changes: &mut mpsc::UnboundedReceiver<()>) {
    let debounce = agg.options.debounce;
    let until = Instant::now() + debounce * 8;
    while let Ok(Some(())) = tokio::time::timeout(debounce, changes.recv()).await {
        if Instant::now() >= until {
            return;
        }
    }
}
