//! Listing the server's tools: every page of `tools/list` under one overall deadline and a
//! page cap, and what the stateless revision learns from the list (which tools may be
//! asked again, which arguments go into headers).

use super::{RequestOptions, Session};
use crate::error::Error;
use crate::protocol::mcp::{ListToolsPage, Tool};
use crate::protocol::stateless;
use crate::redact::cap;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The most pages one listing reads. A hundred pages is thousands of tools at any page
/// size a server uses; a listing longer than that is a loop the cursor check missed (a
/// fresh cursor every time) or a server that lists forever.
pub(super) const MAX_PAGES: usize = 100;

impl Session {
    /// `list_tools` with request options. `opts.timeout` (else the session's request
    /// timeout) bounds the whole listing, every page together, and at most `MAX_PAGES`
    /// pages are read: a cursor that loops or a listing that never ends is a failure,
    /// never a hang.
    pub async fn list_tools_with(&self, opts: RequestOptions) -> Result<Vec<Tool>, Error> {
        let limit = opts.timeout.unwrap_or(self.shared.options.request_timeout);
        let pages = self.list_pages(opts.timeout);
        match tokio::time::timeout(limit, pages).await {
            Ok(listed) => listed.map(|tools| self.took_tools(tools)),
            Err(_) => Err(Error::timeout(format!(
                "the server's tools/list did not finish within {} (every page together)",
                crate::fmt_duration(limit)
            ))
            .with(|c| c.method = Some("tools/list".into()))),
        }
    }

    async fn list_pages(&self, timeout: Option<Duration>) -> Result<Vec<Tool>, Error> {
        let mut tools = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let page_opts = RequestOptions {
                timeout,
                progress: None,
            };
            let value = self.request("tools/list", params, page_opts).await?;
            let page: ListToolsPage = serde_json::from_value(value).map_err(|e| {
                Error::protocol(format!("the server's tools/list result is malformed ({e})"))
            })?;
            tools.extend(page.tools);
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(Error::protocol(
                        "the server's tools/list pagination repeats a cursor; stopped instead of looping forever",
                    ).with(|c| c.method = Some("tools/list".into())));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(Error::protocol(format!(
            "the server's tools/list did not end after {MAX_PAGES} pages; stopped instead of \
             listing forever"
        ))
        .with(|c| c.method = Some("tools/list".into())))
    }

    /// Stateless revision: learns which tools may be asked again after a lost stream and,
    /// over HTTP, which arguments go into headers; a tool whose `x-mcp-header` annotations
    /// are invalid is left out, as the revision requires, with a warning naming it.
    fn took_tools(&self, tools: Vec<Tool>) -> Vec<Tool> {
        let Some(m) = &self.shared.stateless else {
            return tools;
        };
        let transport = &self.shared.transport;
        let mut headers = HashMap::new();
        let mut kept = Vec::with_capacity(tools.len());
        for tool in tools {
            if transport.mirrors_headers() {
                match stateless::param_headers(&tool.input_schema) {
                    Ok(h) if h.is_empty() => {}
                    Ok(h) => {
                        headers.insert(tool.name.clone(), h);
                    }
                    Err(why) => {
                        tracing::warn!(tool = %cap(&self.shared.redactor.scrub(&tool.name), 100), %why, "left out a tool whose x-mcp-header annotation is invalid");
                        continue;
                    }
                }
            }
            kept.push(tool);
        }
        m.listed.store(true, Ordering::Relaxed);
        *m.repeatable.lock().expect("lock") = kept
            .iter()
            .filter(|t| stateless::tool_is_repeatable(t.annotations.as_ref()))
            .map(|t| t.name.clone())
            .collect();
        transport.set_tool_headers(headers);
        kept
    }
}

#[cfg(test)]
#[path = "tools_tests.rs"]
mod tests;
