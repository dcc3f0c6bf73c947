//! The tool registry: the live generation's tool list as the actor keeps it. Listed at
//! establishment and swapped in whole; listed again after `notifications/tools/list_changed`
//! (paced by `relist.rs`); marked stale, not dropped, when the connection is lost, and
//! dropped when the server is disabled or stops trying. Each list is judged against the
//! pins first (`trust.rs`). Every change is a `tools` event (at most `MAX_TOOL_NAMES` names
//! of the tools hosts are shown, and their full count) and the full definitions shared for
//! `Supervisor::tools`.

use super::trust::{Verdict, judge};
use super::{Actor, Internal, Live};
use crate::error::Error;
use crate::events::{EventBody, Generation, MAX_TOOL_NAMES};
use crate::protocol::mcp::Tool;
use crate::session::{RequestOptions, ServerNotification};
use crate::supervisor::relist::Relist;
use tokio::time::Instant;

impl Actor {
    /// Takes the list a fresh generation was established with, as judged; its re-list
    /// pacing starts afresh.
    pub(super) fn take_tools(
        &mut self,
        generation: Generation,
        tools: Vec<Tool>,
        verdict: Option<Verdict>,
    ) {
        self.tools_generation = generation;
        self.take_listed(tools, verdict);
        self.tools_stale = false;
        self.relist = Relist::default();
    }

    /// Watches `live` for `list_changed` (and for lags that may have hidden one), and
    /// passes its other notifications but progress on to `Supervisor::notifications`.
    pub(super) fn watch_list_changed(&self, live: &mut Live) {
        let generation = live.generation;
        let mut notes = live.session.subscribe();
        let tx = self.internal_tx.clone();
        let pass = self.notes.clone();
        live.tasks.push(tokio::spawn(async move {
            loop {
                match notes.recv().await {
                    // A lag may have skipped a `list_changed`: re-sync to be sure (re-syncs
                    // are serialized, so a burst costs at most one more).
                    Ok(ServerNotification::ToolsListChanged)
                    | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        let _ = tx.send(Internal::ListChanged { generation });
                    }
                    Ok(ServerNotification::Progress { .. }) => {}
                    Ok(note) => {
                        let _ = pass.send(note);
                    }
                    Err(_) => return,
                }
            }
        }));
    }

    /// A `list_changed` of `generation`: re-list now if it is live and the pacing allows.
    pub(super) fn list_changed(&mut self, generation: Generation) {
        if self.live.as_ref().map(|l| l.generation) == Some(generation)
            && self.relist.changed(Instant::now())
        {
            self.sync_tools();
        }
    }

    /// A re-list of `generation` finished: swap the tools in, and start the coalesced one.
    pub(super) fn synced(
        &mut self,
        generation: Generation,
        result: Result<(Vec<Tool>, Option<Verdict>), Error>,
    ) {
        // A stale generation's re-list: the live one's pacing started afresh.
        if self.live.as_ref().map(|l| l.generation) != Some(generation) {
            return;
        }
        let again = self.relist.finished(Instant::now());
        if let Ok((tools, verdict)) = result {
            self.take_listed(tools, verdict);
            self.tools_stale = false;
            self.emit_tools();
            self.publish_snapshot();
        }
        if again {
            self.sync_tools();
        }
    }

    /// The pacing timer fired: start the pending re-list if it may start now.
    pub(super) fn relist_due(&mut self) {
        if self.relist.start(Instant::now()) {
            self.sync_tools();
        }
    }

    /// Lists the live generation's tools again, as `relist` decided (one at a time, at
    /// most one a second, notifications in between coalesced).
    fn sync_tools(&mut self) {
        let Some(live) = self.live.as_ref() else {
            return;
        };
        let generation = live.generation;
        let session = live.session.clone();
        let tx = self.internal_tx.clone();
        let timeout = self.cfg.request_timeout;
        let (pins, name) = (self.cfg.pins.clone(), self.cfg.name.clone());
        tokio::spawn(async move {
            let listed = session
                .list_tools_with(RequestOptions {
                    timeout: Some(timeout),
                    ..Default::default()
                })
                .await;
            let result = match (listed, pins) {
                (Ok(tools), Some(book)) => {
                    let verdict = judge(&book, &name, &tools).await;
                    Ok((tools, Some(verdict)))
                }
                (listed, _) => listed.map(|tools| (tools, None)),
            };
            let _ = tx.send(Internal::Synced { generation, result });
        });
    }

    /// The connection was lost: keep the list, marked stale.
    pub(super) fn mark_tools_stale(&mut self) {
        self.tools_stale = true;
        self.emit_tools();
    }

    /// The server is disabled or stopped trying: no list to show.
    pub(super) fn drop_tools(&mut self) {
        if !self.listed.is_empty() || !self.tools.is_empty() {
            self.take_listed(Vec::new(), None);
            self.tools_stale = false;
            self.emit_tools();
        }
    }

    pub(super) fn emit_tools(&self) {
        self.details.lock().expect("details lock").tools = self.tools.clone();
        // Capped: an event goes to every subscriber and into the history on every change.
        let names: Vec<String> = (self.tools.iter())
            .take(MAX_TOOL_NAMES)
            .map(|t| t.name.clone())
            .collect();
        let body = EventBody::Tools {
            count: self.tools.len(),
            stale: self.tools_stale,
            names,
            held: self.tools_held,
            new: self.tools_new,
        };
        self.bus.emit(&self.cfg.name, self.tools_generation, body);
    }
}
