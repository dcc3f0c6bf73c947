//! What the stateless revision (2026-07-28) adds to a session: `server/discover` instead
//! of the handshake (`connect_stateless`, whose `Refusal` says whether the server answered
//! like one that speaks only `initialize` revisions), `_meta` on every request, input the server asks for
//! inside a result (multi round-trip requests), and — since its streams cannot be resumed
//! — a request whose response stream broke asked again with a new id when
//! `policy::reissue` says that is safe, else failed `stream_lost` saying why.

use super::{RequestOptions, Session, SessionOptions, in_handshake, listen, server_requests};
use crate::error::{Error, Stage};
use crate::policy::reissue::{self, AfterFailure, Failure, Reissue, Tried};
use crate::protocol::mcp::InitializeResult;
use crate::protocol::revision::Revision;
use crate::protocol::stateless::{self, DiscoverResult};
use crate::redact::cap;
use crate::transport::Connection;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a stateless-revision session adds.
pub(super) struct Stateless {
    /// Sent in every request's `params._meta`.
    pub(super) meta: serde_json::Map<String, Value>,
    /// Tools whose call may be asked again after a lost response stream.
    pub(super) repeatable: Mutex<HashSet<String>>,
    /// Whether the tools were ever listed (their annotations and headers known).
    pub(super) listed: AtomicBool,
}

/// Why `connect_stateless` did not produce a session, and whether the answer showed the
/// server to speak `initialize` revisions (so that `auto` may fall back to it).
#[derive(Debug)]
pub struct Refusal {
    pub error: Error,
    pub speaks_initialize: bool,
}

/// How many rounds of input a server may ask for in one request (multi round-trip).
const MAX_INPUT_ROUNDS: u32 = 8;

impl Session {
    /// Starts a stateless-revision session without discovery (see `connect_stateless`).
    pub fn start_stateless(conn: Connection, options: SessionOptions) -> Session {
        conn.transport.set_stateless();
        let parts = Stateless {
            meta: stateless::request_meta(Revision::STATELESS, &options.capabilities()),
            repeatable: Mutex::new(HashSet::new()),
            listed: AtomicBool::new(false),
        };
        Session::start_with(conn, options, Some(parts))
    }

    /// Starts a stateless-revision (2026-07-28) session: `server/discover` instead of the
    /// handshake. A refusal says whether the server answered like one that speaks only
    /// `initialize` revisions (`Refusal::speaks_initialize`), the only evidence `auto` falls
    /// back on.
    pub async fn connect_stateless(
        conn: Connection,
        options: SessionOptions,
    ) -> Result<Session, Refusal> {
        let session = Session::start_stateless(conn, options);
        match session.discover().await {
            Ok(()) => Ok(session),
            Err(r) => {
                session.close().await;
                Err(r)
            }
        }
    }

    pub(super) async fn discover(&self) -> Result<(), Refusal> {
        let stage = |e: Error| in_handshake(e, Stage::Discover);
        let refuse = |error: Error, speaks_initialize: bool| Refusal {
            error: stage(error),
            speaks_initialize,
        };
        let ours = Revision::STATELESS.as_str();
        let value = match self
            .request("server/discover", None, RequestOptions::default())
            .await
        {
            Ok(v) => v,
            // A stateless-revision server without `server/discover` (it must have it, but the
            // revision lets a client go on without): speak it anyway.
            Err(e)
                if e.context().status == Some(404)
                    && e.context().rpc_code
                        == Some(crate::protocol::RpcError::METHOD_NOT_FOUND) =>
            {
                json!({ "supportedVersions": [ours] })
            }
            Err(e) => {
                let listed = e.context().supported_versions.clone();
                let speaks_initialize = match &listed {
                    // A stateless-revision refusal of ours: fall back only when what the server
                    // speaks instead is one of the `initialize` revisions we speak.
                    Some(list) => list.iter().any(|v| Revision::parse_initialize(v).is_some()),
                    None => crate::policy::fallback::is_initialize_answer_to_stateless(&e),
                };
                let error = match listed {
                    Some(list) => Error::protocol(format!(
                        "the server does not speak MCP {ours} (it lists {}); Lifeline speaks {ours} \
                         and {}",
                        if list.is_empty() { "no revision".to_owned() } else { list.join(", ") },
                        Revision::list(&Revision::INITIALIZE)
                    ))
                    .with(|c| *c = e.context().clone())
                    .caused_by(e),
                    None => e,
                };
                return Err(refuse(error, speaks_initialize));
            }
        };
        let result: DiscoverResult = serde_json::from_value(value).map_err(|_| {
            refuse(
                Error::protocol(
                    "the server answered server/discover with something that is not a discovery \
                     result (no supportedVersions), so it does not speak the stateless revision \
                     (2026-07-28)",
                )
                .with(|c| c.method = Some("server/discover".into())),
                true,
            )
        })?;
        let versions = stateless::clean_versions(&json!(result.supported_versions));
        if !versions.iter().any(|v| v == ours) {
            let speaks_initialize = versions
                .iter()
                .any(|v| Revision::parse_initialize(v).is_some());
            return Err(refuse(
                Error::protocol(format!(
                    "the server's server/discover lists {} but not {ours}; Lifeline speaks {ours} \
                     and {}",
                    if versions.is_empty() {
                        "no revision".to_owned()
                    } else {
                        versions.join(", ")
                    },
                    Revision::list(&Revision::INITIALIZE)
                ))
                .with(|c| {
                    c.method = Some("server/discover".into());
                    c.supported_versions = Some(versions.clone());
                }),
                speaks_initialize,
            ));
        }
        let _ = self.shared.server.set(InitializeResult {
            protocol_version: ours.to_owned(),
            capabilities: result.capabilities.clone(),
            server_info: result.server_info(),
            instructions: result.instructions.clone(),
        });
        if listen::wants_listen(&result.capabilities) {
            let handle = tokio::spawn(listen::listen(self.shared.clone())).abort_handle();
            *self.shared.listener.lock().expect("lock") = Some(handle);
        }
        Ok(())
    }

    /// A request in the stateless revision: sent with `_meta`, asked again with a new id
    /// after a lost response stream when `policy::reissue` says so, asked again once after
    /// a refusal the spec answers that way, and given the input the server asks for
    /// (multi round-trip) until it answers.
    pub(super) async fn request_stateless(
        &self,
        m: &Stateless,
        method: &str,
        params: Option<Value>,
        opts: RequestOptions,
    ) -> Result<Value, Error> {
        // The params with the input the server asked for, once it asked (multi round-trip).
        let mut with_input: Option<Value> = None;
        let mut reissued = 0;
        let mut rounds = 0;
        let mut tried = Tried::default();
        // Over HTTP, a call mirrors arguments its tool annotates with `x-mcp-header`, so
        // the tool definitions must be known before the first call.
        if method == "tools/call"
            && self.shared.transport.mirrors_headers()
            && !m.listed.load(Ordering::Relaxed)
        {
            let _ = Box::pin(self.list_tools()).await;
        }
        loop {
            let base = with_input.clone().or_else(|| params.clone());
            let with_meta = Some(stateless::with_meta(base, &m.meta));
            let e = match self.request_once(method, with_meta, &opts).await {
                Ok(v) if stateless::is_input_required(&v) && takes_input(method) => {
                    rounds += 1;
                    if rounds > MAX_INPUT_ROUNDS {
                        return Err(Error::protocol(format!(
                            "{method}: the server asked for input {MAX_INPUT_ROUNDS} times without \
                             finishing; stopped instead of looping"
                        ))
                        .with(|c| c.method = Some(method.to_owned())));
                    }
                    with_input = Some(self.with_input(method, params.clone(), &v).await?);
                    continue;
                }
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let failure = Failure {
                method,
                kind: e.kind(),
                rpc_code: e.context().rpc_code,
                lists_ours: e
                    .context()
                    .supported_versions
                    .as_ref()
                    .is_some_and(|l| l.iter().any(|v| v == Revision::STATELESS.as_str())),
                session_open: self.closed().is_none(),
            };
            match reissue::after_failure(failure, tried) {
                AfterFailure::AskAgain => {
                    tried.version_retried = true;
                    tracing::info!(
                        method,
                        "the server refused the revision it lists as supported; asking once more"
                    );
                }
                AfterFailure::RelistThenAskAgain => {
                    tried.relisted = true;
                    tracing::info!(
                        "header mismatch on tools/call; listing the tools again before asking once more"
                    );
                    Box::pin(self.list_tools()).await?;
                }
                AfterFailure::StreamLost => {
                    self.after_lost_stream(m, method, params.as_ref(), e, &mut reissued)
                        .await?;
                }
                AfterFailure::Fail => return Err(e),
            }
        }
    }

    /// After `method`'s response stream broke (`e`): `Ok` to ask again with a new id (counted
    /// in `reissued`), or the error saying why it was not, as `policy::reissue` decides.
    async fn after_lost_stream(
        &self,
        m: &Stateless,
        method: &str,
        params: Option<&Value>,
        e: Error,
        reissued: &mut u32,
    ) -> Result<(), Error> {
        // A call to a tool whose annotations were never listed: learn them first (listing
        // only reads), so that the decision rests on what it declares.
        if method == "tools/call" && !m.listed.load(Ordering::Relaxed) {
            let _ = Box::pin(self.list_tools()).await;
        }
        let name = params.and_then(|p| p["name"].as_str()).unwrap_or("");
        let tool_repeatable = m.repeatable.lock().expect("lock").contains(name);
        let why = match reissue::after_lost_stream(method, tool_repeatable, *reissued) {
            Reissue::Again => {
                *reissued += 1;
                tracing::info!(
                    method,
                    reissued = *reissued,
                    "a response stream broke before the answer; asking again with a new id"
                );
                return Ok(());
            }
            Reissue::Exhausted => {
                return Err(e.restated(format!(
                    "{method}: the response stream broke before the answer again, after asking \
                     {reissued} more times with a new id; gave up"
                )));
            }
            Reissue::NotARead => format!("{method} is not a request that only reads"),
            Reissue::ToolNotRepeatable => {
                let shown = cap(&self.shared.redactor.scrub(name), 100);
                format!("the tool {shown:?} does not declare readOnlyHint or idempotentHint (true)")
            }
        };
        Err(e.restated(format!(
            "{method}: the response stream broke before the answer; it was not asked again \
             because {why}, so it may have run on the server"
        )))
    }

    /// The original request's params with the answers to what the server asked for
    /// (`inputResponses`) and its `requestState`, if it gave one.
    async fn with_input(
        &self,
        method: &str,
        params: Option<Value>,
        asked: &Value,
    ) -> Result<Value, Error> {
        let mut responses = serde_json::Map::new();
        if let Some(requests) = asked.get("inputRequests").and_then(Value::as_object) {
            for (key, req) in requests {
                let what = req["method"].as_str().unwrap_or("");
                let answer = server_requests::answer(&self.shared.options, what, req.get("params").cloned())
                    .await
                    .map_err(|e| {
                        Error::protocol(format!(
                            "{method}: the server asked for {} input, which this client cannot give ({})",
                            cap(what, 60),
                            cap(&self.shared.redactor.scrub(&e.message), 200)
                        ))
                        .with(|c| c.method = Some(method.to_owned()))
                    })?;
                responses.insert(key.clone(), answer);
            }
        }
        let mut params = match params {
            Some(Value::Object(o)) => o,
            _ => serde_json::Map::new(),
        };
        params.insert("inputResponses".into(), Value::Object(responses));
        if let Some(state) = asked.get("requestState").filter(|s| s.is_string()) {
            params.insert("requestState".into(), state.clone());
        }
        Ok(Value::Object(params))
    }
}

/// Requests a server may answer with "input required" (multi round-trip requests).
fn takes_input(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}
