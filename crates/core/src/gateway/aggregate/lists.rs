//! The aggregated endpoint's requests other than tools: prompts and resources gathered from
//! every server (each bounded by the list wait, every page fetched, a server that cannot
//! answer left out and never waited on past the bound), and the requests that name a
//! prompt or a resource routed back to its server, its own name or URI put back.

use super::{Aggregate, unknown, upstream};
use crate::gateway::names::{Names, store, uris};
use crate::gateway::{Shared, Upstream, errors, forward, subs};
use crate::protocol::{Request, RequestId, RpcError};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::watch;

/// The most pages taken from one server for one list.
const MAX_PAGES: usize = 100;

/// Whether `up` said it serves `capability` (`prompts`, `resources`, `logging`,
/// `completions`); a server not connected yet is asked anyway.
fn serves(up: &Upstream, capability: &str) -> bool {
    up.supervisor
        .server_info()
        .is_none_or(|(_, info)| info.capabilities.get(capability).is_some())
}

/// Every page of `method`'s `key` items from `up`, or why not.
async fn all_pages(
    shared: &Shared,
    up: &Upstream,
    id: &RequestId,
    method: &str,
    key: &str,
) -> Result<Vec<Value>, RpcError> {
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor.take().map(|c| json!({ "cursor": c }));
        let page = forward::forward(shared, up, id, method, params).await?;
        if let Some(list) = page.get(key).and_then(Value::as_array) {
            items.extend(list.iter().cloned());
        }
        match page.get("nextCursor") {
            Some(c) if !c.is_null() => cursor = Some(c.clone()),
            _ => return Ok(items),
        }
    }
    tracing::warn!(server = %up.supervisor.name(), "{method}: stopped after {MAX_PAGES} pages");
    Ok(items)
}

/// `method`'s `key` items from every listed server that serves `capability`, in the
/// session's order; each server bounded by the list wait.
async fn gather(
    shared: &Shared,
    agg: &Aggregate,
    id: &RequestId,
    method: &str,
    key: &str,
    capability: &str,
) -> Vec<(Arc<Upstream>, Vec<Value>)> {
    let wait = agg.options.list_wait;
    let upstreams = shared.upstreams();
    let asked = upstreams.iter().filter(|up| {
        agg.profile().serves(up.supervisor.name())
            && super::catalog::listed(up)
            && !errors::is_halted(up.supervisor.snapshot().state.state)
            && serves(up, capability)
    });
    let answers = futures_util::future::join_all(asked.map(|up| async move {
        let got = tokio::time::timeout(wait, all_pages(shared, up, id, method, key)).await;
        match got {
            Ok(Ok(items)) => Some((up.clone(), items)),
            Ok(Err(e)) => {
                tracing::info!(server = %up.supervisor.name(), "{method} left out: {}", e.message);
                None
            }
            Err(_) => {
                tracing::info!(server = %up.supervisor.name(), "{method} left out: no answer within the list wait");
                None
            }
        }
    }))
    .await;
    answers.into_iter().flatten().collect()
}

/// The prompts' host names for `gathered`, kept as tools' are: a name given once (in this
/// session, or before in the names file) stays.
async fn prompt_names(agg: &Aggregate, gathered: &[(Arc<Upstream>, Vec<Value>)]) -> Names {
    let pairs: Vec<(String, String)> = gathered
        .iter()
        .flat_map(|(up, items)| {
            items
                .iter()
                .filter_map(|p| p.get("name").and_then(Value::as_str))
                .map(|n| (up.supervisor.name().to_owned(), n.to_owned()))
        })
        .collect();
    assign_kept(agg, store::List::Prompts, &pairs).await
}

/// Names `pairs` (server, own name) at the host's budget, the names of `list` given
/// before kept.
pub(super) async fn assign_kept(
    agg: &Aggregate,
    list: store::List,
    pairs: &[(String, String)],
) -> Names {
    let budget = agg.budget();
    let remembered = super::catalog::remembered(agg, list, budget).await;
    let pairs = pairs.iter().map(|(s, n)| (s.as_str(), n.as_str()));
    let names = Names::assign(pairs, budget, &agg.options.separator, &remembered);
    super::catalog::keep(agg, list, &names).await;
    names
}

pub(super) async fn prompts(
    shared: &Shared,
    agg: &Aggregate,
    id: &RequestId,
) -> Result<Value, RpcError> {
    let gathered = gather(shared, agg, id, "prompts/list", "prompts", "prompts").await;
    let names = prompt_names(agg, &gathered).await;
    let mut prompts = Vec::new();
    for (up, items) in gathered {
        for mut p in items {
            let own = p.get("name").and_then(Value::as_str).unwrap_or_default();
            if let Some(name) = names.host_name(up.supervisor.name(), own) {
                p["name"] = Value::from(name);
                prompts.push(p);
            }
        }
    }
    Ok(json!({ "prompts": prompts }))
}

pub(super) async fn resources(
    shared: &Shared,
    agg: &Aggregate,
    id: &RequestId,
) -> Result<Value, RpcError> {
    let gathered = gather(shared, agg, id, "resources/list", "resources", "resources").await;
    Ok(json!({ "resources": mapped(gathered, "uri") }))
}

pub(super) async fn templates(
    shared: &Shared,
    agg: &Aggregate,
    id: &RequestId,
) -> Result<Value, RpcError> {
    let method = "resources/templates/list";
    let gathered = gather(shared, agg, id, method, "resourceTemplates", "resources").await;
    Ok(json!({ "resourceTemplates": mapped(gathered, "uriTemplate") }))
}

/// Every item with its `key` (a URI or a URI template) under `lifeline://server/`.
fn mapped(gathered: Vec<(Arc<Upstream>, Vec<Value>)>, key: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for (up, items) in gathered {
        for mut item in items {
            if let Some(own) = item.get(key).and_then(Value::as_str) {
                item[key] = Value::from(uris::to_host(up.supervisor.name(), own));
                out.push(item);
            }
        }
    }
    out
}

/// A tool's or a read's result with each resource URI in it under `lifeline://server/`.
pub(super) fn uris_to_host(server: &str, mut result: Value) -> Value {
    let map = |v: &mut Value| {
        if let Some(own) = v.as_str() {
            *v = Value::from(uris::to_host(server, own));
        }
    };
    if let Some(content) = result.get_mut("content").and_then(Value::as_array_mut) {
        for item in content {
            let uri = match item.get("type").and_then(Value::as_str) {
                Some("resource_link") => item.get_mut("uri"),
                Some("resource") => item.get_mut("resource").and_then(|r| r.get_mut("uri")),
                _ => None,
            };
            if let Some(uri) = uri {
                map(uri);
            }
        }
    }
    if let Some(contents) = result.get_mut("contents").and_then(Value::as_array_mut) {
        for uri in contents.iter_mut().filter_map(|item| item.get_mut("uri")) {
            map(uri);
        }
    }
    result
}

/// Forwards `method` with `params` to `up`, unless the host cancels it first.
async fn forwarded(
    shared: &Shared,
    up: &Upstream,
    r: &Request,
    params: Value,
    cancel: watch::Receiver<bool>,
) -> Option<Result<Value, RpcError>> {
    let sent = forward::forward(shared, up, &r.id, &r.method, Some(params));
    tokio::select! {
        outcome = sent => Some(outcome),
        () = forward::cancelled(cancel) => None,
    }
}

/// The server and its own URI for the host's `uri`, or the error the host is told.
fn route_uri(shared: &Shared, uri: &str) -> Result<(Arc<Upstream>, String), RpcError> {
    let upstreams = shared.upstreams();
    let names = upstreams.iter().map(|u| u.supervisor.name());
    let (server, own) = uris::route(uri, names).ok_or_else(|| unknown("resource", uri))?;
    let up = upstream(shared, server).ok_or_else(|| unknown("resource", uri))?;
    Ok((up, own.to_owned()))
}

/// `resources/read`, `subscribe` and `unsubscribe`: routed by the URI's server, with the
/// server's own URI; subscriptions are kept per server across its generations.
pub(super) async fn by_uri(
    shared: &Shared,
    r: &Request,
    cancel: watch::Receiver<bool>,
) -> Option<Result<Value, RpcError>> {
    let uri = r
        .params
        .as_ref()
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str);
    let Some(uri) = uri else {
        return Some(Err(RpcError {
            code: RpcError::INVALID_PARAMS,
            message: format!("{} needs params.uri", r.method),
            data: None,
        }));
    };
    let (up, own) = match route_uri(shared, uri) {
        Ok(found) => found,
        Err(e) => return Some(Err(e)),
    };
    let mut params = r.params.clone().unwrap_or_else(|| json!({}));
    params["uri"] = Value::from(own);
    subs::before(&up, &r.method, Some(&params));
    let outcome = forwarded(shared, &up, r, params.clone(), cancel).await;
    if !matches!(outcome, Some(Ok(_))) {
        subs::failed(&up, &r.method, Some(&params));
    }
    outcome.map(|o| o.map(|v| uris_to_host(up.supervisor.name(), v)))
}

/// The prompts' names the host was given, gathered again (prompts are few and cheap).
async fn prompt_route(
    shared: &Shared,
    agg: &Aggregate,
    id: &RequestId,
    name: &str,
) -> Option<(Arc<Upstream>, String)> {
    let gathered = gather(shared, agg, id, "prompts/list", "prompts", "prompts").await;
    let names = prompt_names(agg, &gathered).await;
    let (server, own) = names.route(name)?;
    Some((upstream(shared, server)?, own.to_owned()))
}

pub(super) async fn prompt_get(
    shared: &Shared,
    agg: &Aggregate,
    r: &Request,
    cancel: watch::Receiver<bool>,
) -> Option<Result<Value, RpcError>> {
    let name = r
        .params
        .as_ref()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str);
    let Some(name) = name else {
        return Some(Err(RpcError {
            code: RpcError::INVALID_PARAMS,
            message: "prompts/get needs params.name".to_owned(),
            data: None,
        }));
    };
    let Some((up, own)) = prompt_route(shared, agg, &r.id, name).await else {
        return Some(Err(unknown("prompt", name)));
    };
    let mut params = r.params.clone().unwrap_or_else(|| json!({}));
    params["name"] = Value::from(own);
    forwarded(shared, &up, r, params, cancel).await
}

/// `completion/complete`: routed by its reference, a prompt's name or a resource's URI.
pub(super) async fn complete(
    shared: &Shared,
    agg: &Aggregate,
    r: &Request,
    cancel: watch::Receiver<bool>,
) -> Option<Result<Value, RpcError>> {
    let mut params = r.params.clone().unwrap_or_else(|| json!({}));
    let reference = params.get("ref").cloned().unwrap_or_default();
    let up = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = reference
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let Some((up, own)) = prompt_route(shared, agg, &r.id, name).await else {
                return Some(Err(unknown("prompt", name)));
            };
            params["ref"]["name"] = Value::from(own);
            up
        }
        Some("ref/resource") => {
            let uri = reference
                .get("uri")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match route_uri(shared, uri) {
                Ok((up, own)) => {
                    params["ref"]["uri"] = Value::from(own);
                    up
                }
                Err(e) => return Some(Err(e)),
            }
        }
        _ => {
            return Some(Err(RpcError {
                code: RpcError::INVALID_PARAMS,
                message: "completion/complete needs params.ref, a ref/prompt or ref/resource"
                    .to_owned(),
                data: None,
            }));
        }
    };
    forwarded(shared, &up, r, params, cancel).await
}

/// `logging/setLevel` to every listed server that does logging; answered once each did
/// (a server that is not ready is left at its level, and logged).
pub(super) async fn set_level(
    shared: &Shared,
    id: &RequestId,
    params: Option<&Value>,
) -> Result<Value, RpcError> {
    let upstreams = shared.upstreams();
    let asked = upstreams
        .iter()
        .filter(|up| super::catalog::listed(up) && serves(up, "logging"));
    let sent = asked.map(|up| async move {
        let outcome = forward::forward(shared, up, id, "logging/setLevel", params.cloned()).await;
        if let Err(e) = outcome {
            tracing::info!(server = %up.supervisor.name(), "logging/setLevel: {}", e.message);
        }
    });
    futures_util::future::join_all(sent).await;
    Ok(json!({}))
}
