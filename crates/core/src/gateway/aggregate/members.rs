//! An aggregated session's servers and profile following the config: where the servers
//! live on (the app's fleet), a session is given `Members`, and when the config changes the
//! session's servers become the profile's servers again, and its profile the config's. A
//! server added to the config joins the session (its host link attached with the host's
//! capabilities, its tasks started); one removed, or replaced by a new supervisor (its entry
//! changed), leaves it; a tool the profile turns on or off appears or goes. The tool list
//! follows (`changes.rs`: one `list_changed` for the change).

use crate::config::Profile;
use crate::gateway::{GatewayOptions, Shared, Upstream, host_requests};
use crate::supervisor::Supervisor;
use futures_util::future::BoxFuture;
use std::sync::Arc;
use tokio::sync::watch;

/// A profile as the config has it now.
pub struct Now {
    /// Its servers, as `serve_profile` gives them.
    pub servers: Vec<(Arc<Supervisor>, GatewayOptions)>,
    /// The profile itself; `None` when it is gone from the config (the session keeps the
    /// one it had, and its servers go).
    pub profile: Option<Profile>,
}

/// The profile now.
pub type Current = Arc<dyn Fn() -> BoxFuture<'static, Now> + Send + Sync>;

/// Where an aggregated session's servers come from once it runs.
#[derive(Clone)]
pub struct Members {
    /// Changes (to any value) when the servers may have changed.
    pub changed: watch::Receiver<u64>,
    /// The profile's servers now.
    pub current: Current,
}

impl std::fmt::Debug for Members {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Members").finish_non_exhaustive()
    }
}

/// Follows the session's `Members`, if it has any, until the session ends (the session
/// loop aborts it) or they stop changing.
pub(crate) async fn follow(shared: Arc<Shared>) {
    let crate::gateway::View::Aggregate(agg) = &shared.view else {
        return;
    };
    let Some(members) = agg.options.members.clone() else {
        return;
    };
    let mut changed = members.changed;
    while changed.changed().await.is_ok() {
        let now = (members.current)().await;
        let profile_changed = now.profile.is_some_and(|p| {
            let mut mine = agg.profile.lock().expect("profile lock");
            let changed = *mine != p;
            *mine = p;
            changed
        });
        if !apply(&shared, now.servers).await && profile_changed {
            // The same servers, other tools shown: the tools watcher looks again.
            shared.membership.send_modify(|n| *n += 1);
        }
    }
}

/// Makes `now` the session's servers: the ones still there (the same supervisor) kept, the
/// others gone (tasks ended, host link detached), the new ones joined. Whether they changed.
async fn apply(shared: &Arc<Shared>, now: Vec<(Arc<Supervisor>, GatewayOptions)>) -> bool {
    let before = shared.upstreams();
    let stays = |up: &Upstream| {
        now.iter()
            .any(|(s, _)| s.name() == up.supervisor.name() && s.same_as(&up.supervisor))
    };
    let mut next: Vec<Arc<Upstream>> = Vec::new();
    let mut joined = Vec::new();
    for (supervisor, options) in now.iter().cloned() {
        match before
            .iter()
            .find(|up| up.supervisor.name() == supervisor.name() && stays(up))
        {
            Some(up) => next.push(up.clone()),
            None => {
                let up = Arc::new(Upstream::new(
                    supervisor,
                    options,
                    &shared.out,
                    &shared.asked,
                ));
                next.push(up.clone());
                joined.push(up);
            }
        }
    }
    let left: Vec<Arc<Upstream>> = before.iter().filter(|up| !stays(up)).cloned().collect();
    if joined.is_empty() && left.is_empty() {
        return false;
    }
    tracing::info!(
        "gateway: the aggregated session's servers changed: {} joined, {} left",
        joined.len(),
        left.len()
    );
    for up in &left {
        up.stop_tasks().await;
        host_requests::detach_one(up);
    }
    for up in &joined {
        host_requests::attach_one(shared, up);
        up.spawn_tasks(shared);
    }
    shared.set_upstreams(next);
    true
}
