//! What the host is told when the supervised server cannot answer: the state-to-error
//! mapping of docs/gateway.md, as pure functions of the supervisor's `StateInfo` and the
//! classified cause. Messages name the server, the state and what to do; `data` carries the
//! cause as events carry it (`FailureInfo`, allow-listed fields, a scrubbed message), so a
//! host or its user sees the same words as the dashboard and no secret.

use crate::error::Error;
use crate::events::{CallOutcome, FailureInfo, Generation, StateInfo, StateName};
use crate::protocol::RpcError;
use crate::redact::Redactor;
use serde_json::{Value, json};
use std::time::Duration;

/// The server was not ready within the request's wait (connecting, retrying,
/// reconnecting): the request was never sent.
pub const NOT_READY: i64 = -32050;
/// The connection was lost while the request was in flight, and the request is not one
/// that may be sent twice: it may or may not have run.
pub const UPSTREAM_LOST: i64 = -32051;
/// The server is not trying to connect on its own (quarantined, gave_up, retired,
/// disabled, stopping): the request was never sent; a person must act.
pub const HALTED: i64 = -32052;

/// The tool's definition is held out of the hosts' lists until the user reviews it
/// (docs/trust.md): the call was never sent.
pub const TOOL_HELD: i64 = -32053;

/// The error for a call of a tool the pins hold: names the server, the tool, why, and
/// how to review it.
pub fn held(server: &str, tool: &str, why: crate::supervisor::Held) -> RpcError {
    use crate::supervisor::Held;
    let (word, said) = match why {
        Held::Changed => ("changed", "changed since it was approved"),
        Held::New => ("new", "is new since the server's tools were approved"),
        Held::Rejected => ("rejected", "serves a definition that was rejected"),
    };
    let review = format!("lifeline tools review {server}");
    RpcError {
        code: TOOL_HELD,
        message: format!(
            "`{server}`'s tool `{tool}` {said}, so Lifeline holds it until you review it: run \
             `{review}` (or open the server in Lifeline); the call was not sent"
        ),
        data: Some(json!({
            "server": server,
            "tool": tool,
            "held": word,
            "review": review,
        })),
    }
}

/// True for the states that do not end on their own soon: a request is answered at once.
pub fn is_halted(state: Option<StateName>) -> bool {
    matches!(
        state,
        Some(
            StateName::Quarantined
                | StateName::GaveUp
                | StateName::Retired
                | StateName::Disabled
                | StateName::Stopping
        )
    )
}

fn state_str(info: &StateInfo) -> &'static str {
    info.state.map(StateName::as_str).unwrap_or("connecting")
}

/// `data` of every gateway error: the server, its state, and the classified cause.
fn data(server: &str, info: &StateInfo, cause: Option<&FailureInfo>, redactor: &Redactor) -> Value {
    let cause = cause.or(info.cause.as_ref()).map(|c| {
        let mut c = c.clone();
        c.message = redactor.scrub(&c.message);
        c.reason = c.reason.map(|r| redactor.scrub(&r));
        c
    });
    json!({
        "server": server,
        "state": state_str(info),
        "kind": cause.as_ref().map(|c| c.kind.clone()),
        "status": cause.as_ref().and_then(|c| c.status),
        "retry_after_ms": cause.as_ref().and_then(|c| c.retry_after_ms).or(info.delay_ms),
        "next_attempt_at": info.next_attempt_at,
        "attempt": info.attempt,
        "max_attempts": info.max_attempts,
        "reason": info.reason,
        "cause": cause,
    })
}

/// The last failure in words, for a message: `: <kind>: <message>` or nothing.
fn because(info: &StateInfo, cause: Option<&FailureInfo>, redactor: &Redactor) -> String {
    match cause.or(info.cause.as_ref()) {
        Some(c) => format!(
            "; last failure ({}): {}",
            c.kind,
            redactor.scrub(&c.message)
        ),
        None => String::new(),
    }
}

fn next_attempt(info: &StateInfo) -> String {
    match (info.attempt, info.max_attempts, info.delay_ms) {
        (Some(a), Some(m), Some(ms)) => format!(
            " (attempt {a}/{m}, next attempt in {})",
            crate::fmt_duration(Duration::from_millis(ms))
        ),
        (_, _, Some(ms)) => format!(
            " (next attempt in {})",
            crate::fmt_duration(Duration::from_millis(ms))
        ),
        (Some(a), Some(m), None) => format!(" (attempt {a}/{m})"),
        _ => String::new(),
    }
}

/// A request that waited `waited` for the server to be ready, in vain.
pub fn not_ready(
    server: &str,
    info: &StateInfo,
    waited: Duration,
    redactor: &Redactor,
) -> RpcError {
    RpcError {
        code: NOT_READY,
        message: format!(
            "`{server}` is {}{}; Lifeline waited {} for it and did not send the request{}. \
             It is reconnecting on its own: try again shortly",
            state_str(info),
            next_attempt(info),
            crate::fmt_duration(waited),
            because(info, None, redactor),
        ),
        data: Some(data(server, info, None, redactor)),
    }
}

/// A state a person must act on: what it is and what to do.
pub fn halted(server: &str, info: &StateInfo, redactor: &Redactor) -> RpcError {
    let state = state_str(info);
    let todo = match info.state {
        Some(StateName::Quarantined) => format!(
            "it failed repeatedly and Lifeline holds it back{}. Press Reconnect on `{server}` \
             in the Lifeline app (or run `lifeline check {server}` to see why), or restart this \
             server in your client",
            next_attempt(info)
        ),
        Some(StateName::GaveUp) => format!(
            "Lifeline stopped retrying after its attempts ran out. Fix the cause, then press \
             Reconnect on `{server}` in the Lifeline app or restart this server in your client"
        ),
        Some(StateName::Retired) => format!(
            "retrying cannot fix it ({}). Fix `{server}` in Lifeline's config (credentials, \
             command, URL), then press Reconnect in the Lifeline app or restart this server in \
             your client",
            info.reason.as_deref().unwrap_or("a permanent failure")
        ),
        Some(StateName::Disabled) => format!(
            "it is turned off in Lifeline's config. Enable `{server}` (remove \"disabled\": true) \
             and restart this server in your client"
        ),
        _ => "Lifeline is shutting it down".to_owned(),
    };
    RpcError {
        code: HALTED,
        message: format!(
            "`{server}` is {state}: {todo}{}. The request was not sent",
            because(info, None, redactor)
        ),
        data: Some(data(server, info, None, redactor)),
    }
}

/// A request in flight when the connection was lost, not sent again for `why`.
pub fn lost(
    server: &str,
    method: &str,
    info: &StateInfo,
    cause: &Error,
    generation: Generation,
    why: &str,
    redactor: &Redactor,
) -> RpcError {
    let failure = FailureInfo::from_error(cause, generation, None);
    RpcError {
        code: UPSTREAM_LOST,
        message: format!(
            "`{server}`'s connection was lost while {method} was in flight ({}: {}); it may or \
             may not have run, and it was not sent again because {why}. Lifeline is \
             reconnecting: check its effect before you try again",
            failure.kind,
            redactor.scrub(&failure.message),
        ),
        data: Some(data(server, info, Some(&failure), redactor)),
    }
}

/// A request that was in flight when the machine went to sleep (`Error::slept`): not the
/// connection's fault, and not sent again, since it may have run.
pub fn slept(server: &str, info: &StateInfo, e: &Error, generation: Generation) -> RpcError {
    let failure = FailureInfo::from_error(e, generation, None);
    RpcError {
        code: UPSTREAM_LOST,
        message: format!("`{server}`: {}", e.message()),
        data: Some(data(server, info, Some(&failure), &Redactor::default())),
    }
}

/// The server answered with a JSON-RPC error, or the request failed in a way that says
/// nothing about the connection (a timeout): passed on with the server's code when it gave
/// one, else as an internal error carrying the classified cause.
pub fn answered(
    server: &str,
    info: &StateInfo,
    e: &Error,
    generation: Generation,
    redactor: &Redactor,
) -> RpcError {
    let message = redactor.scrub(e.message());
    match e.context().rpc_code {
        Some(code) => RpcError {
            code,
            message,
            data: e
                .context()
                .rpc_data
                .as_ref()
                .map(|d| redactor.scrub_value(&d.0)),
        },
        None => {
            let failure = FailureInfo::from_error(e, generation, None);
            RpcError {
                code: RpcError::INTERNAL_ERROR,
                message: format!("`{server}`: {message}"),
                data: Some(data(server, info, Some(&failure), redactor)),
            }
        }
    }
}

/// How a host's `tools/call` ended, for `host_call`: the outcome, and for an error the
/// gateway's word for it (`not_ready`, `upstream_lost`, the halted state, the cause's
/// kind) or `rpc_error` for the server's own JSON-RPC error. Only short snake_case words
/// are taken from `data`, so nothing the server wrote reaches an event.
pub fn call_outcome(answer: &Result<Value, RpcError>) -> (CallOutcome, Option<String>) {
    let e = match answer {
        Ok(v) if v.get("isError").and_then(Value::as_bool) == Some(true) => {
            return (CallOutcome::ToolError, None);
        }
        Ok(_) => return (CallOutcome::Ok, None),
        Err(e) => e,
    };
    let word = |key: &str| {
        e.data
            .as_ref()
            .and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .filter(|w| {
                !w.is_empty()
                    && w.len() <= 32
                    && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            })
            .map(str::to_owned)
    };
    let kind = match e.code {
        NOT_READY => "not_ready".to_owned(),
        UPSTREAM_LOST => "upstream_lost".to_owned(),
        HALTED => word("state").unwrap_or_else(|| "halted".to_owned()),
        RpcError::INTERNAL_ERROR => word("kind").unwrap_or_else(|| "rpc_error".to_owned()),
        _ => "rpc_error".to_owned(),
    };
    (CallOutcome::Error, Some(kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn info(state: StateName) -> StateInfo {
        StateInfo {
            state: Some(state),
            attempt: Some(2),
            max_attempts: Some(10),
            delay_ms: Some(3000),
            cause: Some(FailureInfo {
                kind: "process_exit".into(),
                message: "exited with code 1 token=hunter2".into(),
                ..FailureInfo::default()
            }),
            ..StateInfo::default()
        }
    }

    #[test]
    fn a_call_answer_names_its_outcome_in_a_word() {
        let err = |code, data: Value| {
            Err(RpcError {
                code,
                message: "m".into(),
                data: Some(data),
            })
        };
        let check = |answer: Result<Value, RpcError>, outcome, kind: Option<&str>| {
            assert_eq!(call_outcome(&answer), (outcome, kind.map(str::to_owned)));
        };
        check(Ok(json!({"content": []})), CallOutcome::Ok, None);
        check(Ok(json!({"isError": true})), CallOutcome::ToolError, None);
        check(
            err(NOT_READY, json!({})),
            CallOutcome::Error,
            Some("not_ready"),
        );
        check(
            err(UPSTREAM_LOST, json!({})),
            CallOutcome::Error,
            Some("upstream_lost"),
        );
        let quarantined = json!({"state": "quarantined"});
        check(
            err(HALTED, quarantined),
            CallOutcome::Error,
            Some("quarantined"),
        );
        let timeout = json!({"kind": "timeout"});
        check(
            err(RpcError::INTERNAL_ERROR, timeout),
            CallOutcome::Error,
            Some("timeout"),
        );
        // What a server wrote in its own data never becomes the word.
        let prose = json!({"kind": "token=hunter2 leaked"});
        check(
            err(RpcError::INTERNAL_ERROR, prose),
            CallOutcome::Error,
            Some("rpc_error"),
        );
        check(
            err(-32602, json!({"kind": "x"})),
            CallOutcome::Error,
            Some("rpc_error"),
        );
    }

    #[test]
    fn every_state_maps_to_its_code_and_names_itself() {
        let r = Redactor::new(["hunter2"]);
        let wait = Duration::from_secs(60);
        let cases = [
            (StateName::Connecting, NOT_READY, "connecting"),
            (StateName::Retrying, NOT_READY, "retrying"),
            (StateName::Reconnecting, NOT_READY, "reconnecting"),
            (StateName::Quarantined, HALTED, "Press Reconnect"),
            (StateName::GaveUp, HALTED, "stopped retrying"),
            (StateName::Retired, HALTED, "Lifeline's config"),
            (StateName::Disabled, HALTED, "Enable"),
        ];
        for (state, code, words) in cases {
            let i = info(state);
            let e = if is_halted(Some(state)) {
                halted("fx", &i, &r)
            } else {
                not_ready("fx", &i, wait, &r)
            };
            assert_eq!(e.code, code, "{state:?}");
            assert!(e.message.contains(state.as_str()), "{}", e.message);
            assert!(e.message.contains(words), "{}", e.message);
            assert!(!e.message.contains("hunter2"), "{}", e.message);
            let d = e.data.expect("data");
            assert_eq!(d["state"], state.as_str());
            assert_eq!(d["kind"], "process_exit");
            assert!(!d.to_string().contains("hunter2"), "{d}");
        }
    }

    #[test]
    fn a_lost_call_carries_its_cause_and_why_it_was_not_repeated() {
        let r = Redactor::new(["hunter2"]);
        let cause = Error::new(ErrorKind::ProcessExit, "the process exited (hunter2)")
            .with(|c| c.status = Some(503));
        let e = lost(
            "fx",
            "tools/call",
            &info(StateName::Reconnecting),
            &cause,
            Generation(3),
            "no hint",
            &r,
        );
        assert_eq!(e.code, UPSTREAM_LOST);
        assert!(e.message.contains("not sent again because no hint"));
        let d = e.data.unwrap();
        assert_eq!(d["kind"], "process_exit");
        assert_eq!(d["status"], 503);
        assert_eq!(d["cause"]["generation"], 3);
        assert!(!d.to_string().contains("hunter2"));
    }

    #[test]
    fn a_request_the_sleep_ended_says_so() {
        let e = slept(
            "fx",
            &info(StateName::Ready),
            &Error::slept("tools/call"),
            Generation(2),
        );
        assert_eq!(e.code, UPSTREAM_LOST);
        assert!(
            e.message
                .starts_with("`fx`: the machine went to sleep while tools/call was in flight"),
            "{}",
            e.message
        );
        assert_eq!(e.data.unwrap()["kind"], "cancelled");
    }

    #[test]
    fn a_server_error_keeps_its_code() {
        let r = Redactor::default();
        let e = Error::new(ErrorKind::Server, "boom").with(|c| c.rpc_code = Some(-32602));
        assert_eq!(
            answered("fx", &StateInfo::default(), &e, Generation(1), &r).code,
            -32602
        );
        let r = Redactor::new(["hunter2"]);
        let e = e.with(|c| {
            c.rpc_data = Some(crate::error::RpcData(
                json!({"field": "x", "why": ["hunter2"]}),
            ))
        });
        let a = answered("fx", &StateInfo::default(), &e, Generation(1), &r);
        assert_eq!(a.data.unwrap()["field"], "x", "the server's data is kept");
        let a = answered("fx", &StateInfo::default(), &e, Generation(1), &r);
        assert!(!a.data.unwrap().to_string().contains("hunter2"));
        let t = Error::timeout("no answer in 60 s");
        let a = answered("fx", &StateInfo::default(), &t, Generation(1), &r);
        assert_eq!(a.code, RpcError::INTERNAL_ERROR);
        assert_eq!(a.data.unwrap()["kind"], "timeout");
    }
}
