//! The host's resource subscriptions, kept across the upstream's generations: a
//! `resources/subscribe` the host sent is remembered (and forgotten on its
//! `resources/unsubscribe`, or when the subscribe failed), and sent again to every new
//! generation once it is ready, so `notifications/resources/updated` keeps coming after a
//! reconnect. A re-subscription that fails is logged on stderr, not told to the host.

use super::Upstream;
use crate::events::Generation;
use crate::events::StateName;
use serde_json::{Value, json};
use std::sync::Arc;

/// The `uri` of a subscribe or unsubscribe request.
fn uri(params: Option<&Value>) -> Option<String> {
    params?.get("uri")?.as_str().map(str::to_owned)
}

/// Remembers the host's subscription before it is forwarded (a reconnect during the
/// request then subscribes it again); forgets it on unsubscribe.
pub(super) fn before(up: &Upstream, method: &str, params: Option<&Value>) {
    let Some(uri) = uri(params) else { return };
    let mut subs = up.subscriptions.lock().expect("subscriptions lock");
    match method {
        "resources/subscribe" => {
            subs.insert(uri);
        }
        "resources/unsubscribe" => {
            subs.remove(&uri);
        }
        _ => {}
    }
}

/// A subscribe that failed is not one the host holds.
pub(super) fn failed(up: &Upstream, method: &str, params: Option<&Value>) {
    if method == "resources/subscribe"
        && let Some(uri) = uri(params)
    {
        up.subscriptions
            .lock()
            .expect("subscriptions lock")
            .remove(&uri);
    }
}

/// Subscribes every remembered URI again on each generation that becomes ready after
/// the first one this session saw.
pub(super) async fn resubscribe(up: Arc<Upstream>) {
    let sup = up.supervisor.clone();
    let mut rx = sup.watch();
    let mut seen = Generation(0);
    loop {
        let (ready, generation) = {
            let snap = rx.borrow_and_update();
            (snap.state.state == Some(StateName::Ready), snap.generation)
        };
        if ready && generation > seen {
            let again = seen != Generation(0);
            seen = generation;
            let uris: Vec<String> = up
                .subscriptions
                .lock()
                .expect("subscriptions lock")
                .iter()
                .cloned()
                .collect();
            for uri in uris.into_iter().filter(|_| again) {
                let sent =
                    sup.send_request("resources/subscribe", Some(json!({ "uri": uri })), None);
                let name = sup.name().to_owned();
                tokio::spawn(async move {
                    if let Err(e) = sent.await.result {
                        tracing::warn!(server = %name, "subscribing again to a resource after a reconnect failed: {e}");
                    }
                });
            }
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}
