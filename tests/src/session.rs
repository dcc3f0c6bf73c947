//! Streamable HTTP sessions: issuing `Mcp-Session-Id`s, refusing requests that lack one or
//! quote one the fixture does not know, and expiring a session after a scripted request count.

use std::collections::HashMap;
use std::sync::Mutex;

/// Live session ids and how many JSON-RPC requests each has carried.
#[derive(Debug, Default)]
pub struct Sessions {
    live: Mutex<HashMap<String, u64>>,
    issued: Mutex<u64>,
}

/// Why a request's session is not acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 400: no `Mcp-Session-Id` header.
    Missing,
    /// 404: never issued, deleted, or expired.
    Unknown,
}

impl Sessions {
    pub fn open(&self) -> String {
        let n = {
            let mut issued = lock(&self.issued);
            *issued += 1;
            *issued
        };
        let id = format!("fixture-{}-{n}", std::process::id());
        lock(&self.live).insert(id.clone(), 0);
        id
    }

    /// The session a request may proceed in, given its `Mcp-Session-Id` header.
    pub fn check(&self, header: Option<&str>) -> Result<String, Refusal> {
        let id = header.ok_or(Refusal::Missing)?;
        if !lock(&self.live).contains_key(id) {
            return Err(Refusal::Unknown);
        }
        Ok(id.to_owned())
    }

    /// Counts one request; `true` when that was the session's last (`limit`) and it is now
    /// forgotten.
    pub fn count(&self, id: &str, limit: Option<u64>) -> bool {
        let mut live = lock(&self.live);
        let Some(count) = live.get_mut(id) else {
            return false;
        };
        *count += 1;
        let expired = limit.is_some_and(|limit| *count >= limit);
        if expired {
            live.remove(id);
        }
        expired
    }

    pub fn close(&self, id: &str) {
        lock(&self.live).remove(id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One request per step with the session from `open()` (or `quote`); expected outcome:
    /// `Ok(expired)` or the refusal.
    fn check(limit: Option<u64>, steps: &[Option<&str>], expect: &[Result<bool, Refusal>]) {
        let sessions = Sessions::default();
        let id = sessions.open();
        assert!(
            !sessions.count(&id, limit) || limit == Some(1),
            "initialize counts"
        );
        let got: Vec<Result<bool, Refusal>> = steps
            .iter()
            .map(|quote| {
                let quoted = quote.map(|q| if q == "$id" { id.as_str() } else { q });
                sessions.check(quoted).map(|s| sessions.count(&s, limit))
            })
            .collect();
        assert_eq!(got, expect, "limit {limit:?} steps {steps:?}");
    }

    #[test]
    fn sessions() {
        use Refusal::*;
        let id = Some("$id");
        check(
            None,
            &[id, id, None, Some("bogus")],
            &[Ok(false), Ok(false), Err(Missing), Err(Unknown)],
        );
        // Expires after two requests: initialize and one more.
        check(Some(2), &[id, id], &[Ok(true), Err(Unknown)]);
        check(Some(1), &[id], &[Err(Unknown)]);
    }
}
