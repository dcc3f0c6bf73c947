//! Trust (docs/trust.md): with the process's pins (`SupervisorConfig::pins`), every list the
//! actor takes is judged against them off the runtime's threads before anyone sees it, and
//! hosts are shown only the tools that stand approved or were pinned on first sight. A
//! change to the pins anywhere (an approval here, or another process's read from the file)
//! moves the book's revision: the actor judges its list again. Each judgment tells the bus
//! what was held, approved or rejected since this actor's last one (`tool_changed`,
//! `tool_approved`, `tool_rejected`: transitions, so a held change is told once however
//! often the server flips, and each process tells its own bus once) and publishes the new
//! list, which the gateways turn into `list_changed`.

use super::{Actor, Internal};
use crate::events::{EventBody, MAX_TOOL_NAMES};
use crate::pins::Standing;
use crate::pins::book::{Book, Judged};
use crate::protocol::mcp::Tool;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One listed tool and where it stands against the pins, for the dashboard and the review.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewedTool {
    /// The definition the server serves now.
    pub tool: Tool,
    pub standing: Standing,
    /// A held definition the user rejected: it stays out of the hosts' lists.
    pub rejected: bool,
}

/// Why a tool a host asked for is not shown: held for review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Its definition changed since it was approved.
    Changed,
    /// The server did not have it when it was pinned.
    New,
    /// The user rejected its current definition.
    Rejected,
}

enum TrustChange {
    Changed,
    Approved,
    Rejected,
}

/// A judgment and the book's revision it was made at.
pub(super) struct Verdict {
    pub judged: Judged,
    pub revision: u64,
}

/// Judges `tools` of `server` with `book`, off the runtime's threads when it reads and
/// writes a file (in memory nothing blocks, and a paused test clock must not run ahead of
/// a blocking task). A judgment that cannot be made (it panicked) holds every tool as new:
/// nothing unapproved is shown.
pub(super) async fn judge(book: &Arc<Book>, server: &str, tools: &[Tool]) -> Verdict {
    let revision = book.revision();
    let raw: Vec<Arc<Value>> = tools.iter().map(Tool::shared_json).collect();
    if book.in_memory() {
        let judged = book.judge(server, &raw, unix_now());
        return Verdict { judged, revision };
    }
    let (book, name) = (book.clone(), server.to_owned());
    let judged = tokio::task::spawn_blocking(move || book.judge(&name, &raw, unix_now()))
        .await
        .unwrap_or_else(|e| {
            tracing::error!("pins: judging `{server}`'s tools failed ({e}); holding every tool");
            Judged {
                tools: (tools.iter())
                    .map(|t| (t.name.clone(), Standing::New))
                    .collect(),
                newly_held: Vec::new(),
                held: BTreeMap::new(),
            }
        });
    Verdict { judged, revision }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The standing of each of `tools` in `judged`: by position when the names line up (they
/// do: every parsed tool has a name), else by name; a tool missing from it is held as new.
fn standings<'a>(tools: &[Tool], judged: &'a Judged) -> Vec<&'a Standing> {
    const HELD: &Standing = &Standing::New;
    let aligned = tools.len() == judged.tools.len()
        && tools
            .iter()
            .zip(&judged.tools)
            .all(|(t, (n, _))| t.name == *n);
    if aligned {
        return judged.tools.iter().map(|(_, s)| s).collect();
    }
    let by_name: BTreeMap<&str, &Standing> =
        judged.tools.iter().map(|(n, s)| (n.as_str(), s)).collect();
    (tools.iter())
        .map(|t| by_name.get(t.name.as_str()).copied().unwrap_or(HELD))
        .collect()
}

/// What changed between two judgments' held changes (name → rejected): newly held (or
/// held again after a rejection), approved (no longer held), rejected. Without an earlier
/// judgment in this process, what this one held anew. Only the held sets are compared once
/// there is one: a judgment made before another but taken after it still tells nothing twice.
fn transitions(
    before: Option<&BTreeMap<String, bool>>,
    judged: &Judged,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let now = &judged.held;
    let mut changed: Vec<String> = Vec::new();
    let (mut approved, mut rejected) = (Vec::new(), Vec::new());
    if before.is_none() {
        changed.clone_from(&judged.newly_held);
    }
    if let Some(before) = before {
        for (name, rejected_now) in now {
            match before.get(name) {
                None | Some(true) if !rejected_now => changed.push(name.clone()),
                Some(false) if *rejected_now => rejected.push(name.clone()),
                _ => {}
            }
        }
        approved.extend(before.keys().filter(|n| !now.contains_key(*n)).cloned());
    }
    changed.sort();
    changed.dedup();
    (changed, approved, rejected)
}

impl Actor {
    /// Takes `listed`, the server's list, as `verdict` judged it (`None`: no pins, every
    /// tool shown): what hosts are shown, what the dashboard reviews, and the events of
    /// what changed. Judges again when the pins moved since the judgment was made.
    pub(super) fn take_listed(&mut self, listed: Vec<Tool>, verdict: Option<Verdict>) {
        self.list_seq = self.list_seq.wrapping_add(1);
        let Some(verdict) = verdict else {
            self.tools = listed.clone();
            self.listed = listed;
            (self.tools_held, self.tools_new) = (0, 0);
            self.details.lock().expect("details lock").reviewed.clear();
            return;
        };
        let standings = standings(&listed, &verdict.judged);
        let reviewed: Vec<ReviewedTool> = (listed.iter().zip(standings))
            .map(|(tool, standing)| ReviewedTool {
                tool: tool.clone(),
                standing: standing.clone(),
                rejected: verdict.judged.held.get(&tool.name) == Some(&true),
            })
            .collect();
        self.tools = (reviewed.iter())
            .filter(|r| r.standing.shown())
            .map(|r| r.tool.clone())
            .collect();
        self.listed = listed;
        self.tools_held = (reviewed.iter())
            .filter(|r| !r.standing.shown() && !r.rejected)
            .count();
        self.tools_new = (reviewed.iter())
            .filter(|r| r.standing == Standing::FirstSight)
            .count();
        self.details.lock().expect("details lock").reviewed = reviewed;
        self.tell_transitions(&verdict.judged);
        if let Some(book) = &self.cfg.pins
            && book.revision() != verdict.revision
        {
            self.judge_again();
        }
    }

    fn tell_transitions(&mut self, judged: &Judged) {
        let (changed, approved, rejected) = transitions(self.held_before.as_ref(), judged);
        self.held_before = Some(judged.held.clone());
        let generation = self.tools_generation;
        let bodies = [
            (changed, TrustChange::Changed),
            (approved, TrustChange::Approved),
            (rejected, TrustChange::Rejected),
        ];
        for (tools, change) in bodies {
            if tools.is_empty() {
                continue;
            }
            let count = tools.len();
            let tools: Vec<String> = tools.into_iter().take(MAX_TOOL_NAMES).collect();
            let body = match change {
                TrustChange::Changed => EventBody::ToolChanged { tools, count },
                TrustChange::Approved => EventBody::ToolApproved { tools, count },
                TrustChange::Rejected => EventBody::ToolRejected { tools, count },
            };
            self.bus.emit(&self.cfg.name, generation, body);
        }
    }

    /// The pins moved: judge the list the server gave last again (one judgment at a time;
    /// a move during one is judged after it).
    pub(super) fn judge_again(&mut self) {
        let Some(book) = self.cfg.pins.clone() else {
            return;
        };
        if self.judging {
            self.judge_pending = true;
            return;
        }
        self.judging = true;
        let (seq, listed) = (self.list_seq, self.listed.clone());
        let (tx, name) = (self.internal_tx.clone(), self.cfg.name.clone());
        tokio::spawn(async move {
            let verdict = judge(&book, &name, &listed).await;
            let _ = tx.send(Internal::Judged { seq, verdict });
        });
    }

    /// A judgment `judge_again` started finished: taken unless a newer list came meanwhile
    /// (which was judged on its own).
    pub(super) fn judged(&mut self, seq: u64, verdict: Verdict) {
        self.judging = false;
        if seq == self.list_seq && !self.listed.is_empty() {
            let listed = std::mem::take(&mut self.listed);
            self.take_listed(listed, Some(verdict));
            self.emit_tools();
            self.publish_snapshot();
        }
        if std::mem::take(&mut self.judge_pending) {
            self.judge_again();
        }
    }
}

/// The pins' next move (`Some(())`); pending forever without pins or once the book is gone.
pub(super) async fn moved(pins: &mut Option<tokio::sync::watch::Receiver<u64>>) -> Option<()> {
    if let Some(rx) = pins
        && rx.changed().await.is_ok()
    {
        return Some(());
    }
    *pins = None;
    std::future::pending().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(held: &[(&str, bool)], newly: &[&str]) -> Judged {
        Judged {
            tools: Vec::new(),
            newly_held: newly.iter().map(|n| n.to_string()).collect(),
            held: held.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
        }
    }

    #[test]
    fn each_change_of_the_held_set_is_told_once() {
        let first = judged(&[("a", false)], &["a"]);
        assert_eq!(
            transitions(None, &first),
            (vec!["a".into()], vec![], vec![])
        );
        let before = first.held.clone();
        // Seen again (a flip, another judgment): nothing to tell.
        assert_eq!(
            transitions(Some(&before), &judged(&[("a", false)], &[])),
            (vec![], vec![], vec![])
        );
        // Held in another process (read from the file): told here too.
        assert_eq!(
            transitions(Some(&before), &judged(&[("a", false), ("b", false)], &[])),
            (vec!["b".into()], vec![], vec![])
        );
        assert_eq!(
            transitions(Some(&before), &judged(&[("a", true)], &[])),
            (vec![], vec![], vec!["a".into()])
        );
        assert_eq!(
            transitions(Some(&before), &judged(&[], &[])),
            (vec![], vec!["a".into()], vec![])
        );
        // A rejected definition replaced by another one is a new change.
        let rejected = judged(&[("a", true)], &[]).held;
        assert_eq!(
            transitions(Some(&rejected), &judged(&[("a", false)], &["a"])),
            (vec!["a".into()], vec![], vec![])
        );
        // A judgment made earlier but taken later: what it held anew was told already.
        assert_eq!(
            transitions(Some(&before), &judged(&[("a", false)], &["a"])),
            (vec![], vec![], vec![])
        );
    }
}
