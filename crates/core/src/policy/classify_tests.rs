//! The classification table (DESIGN.md), row by row, in both phases; nested chains in both
//! orders; chains through `io::Error`; and the cases that must not be read from messages.

use super::*;
use crate::error::IoKind;
use Action::*;
use ErrorKind as K;

const S: fn(u64) -> Duration = Duration::from_secs;

/// An HTTP status error as the HTTP transport builds it (transport/http/errors.rs).
fn http(status: u16, retry_after: Option<u64>) -> Error {
    let kind = match status {
        401 => K::Auth,
        403 => K::Permission,
        429 => K::RateLimited,
        500..=599 => K::Server,
        _ => K::Protocol,
    };
    Error::new(kind, format!("POST /mcp answered {status}")).with(|c| {
        c.status = Some(status);
        c.retry_after = retry_after.map(S);
    })
}

fn of(kind: ErrorKind) -> Error {
    Error::new(kind, "failed")
}

fn rpc(kind: ErrorKind, code: i64) -> Error {
    of(kind).with(|c| c.rpc_code = Some(code))
}

fn check(err: &(dyn StdError + 'static), connect: Action, call: Action, kind: ErrorKind) {
    check_session(err, false, connect, call, kind);
}

fn check_session(
    err: &(dyn StdError + 'static),
    sent_session: bool,
    connect: Action,
    call: Action,
    kind: ErrorKind,
) {
    for (phase, action) in [(Phase::Connect, connect), (Phase::Call, call)] {
        let v = classify(err, phase, sent_session);
        assert_eq!((v.action, v.kind), (action, kind), "{phase:?}: {err:?}");
    }
}

const RETIRE_AUTH: Action = Retire(RetireReason::Auth);
const RETIRE_PERMISSION: Action = Retire(RetireReason::Permission);
const RETIRE_CONFIG: Action = Retire(RetireReason::Config);

#[test]
fn sign_in_needed_retires_with_its_own_reason_even_with_a_401() {
    let sign_in = Retire(RetireReason::SignIn);
    check(&of(K::SignIn), sign_in, sign_in, K::SignIn);
    let after_401 = of(K::SignIn).with(|c| c.status = Some(401));
    check(&after_401, sign_in, sign_in, K::SignIn);
}

#[test]
fn unauthorized_retires_in_both_phases() {
    check(&http(401, None), RETIRE_AUTH, RETIRE_AUTH, K::Auth);
    check(&http(401, Some(5)), RETIRE_AUTH, RETIRE_AUTH, K::Auth);
    check(&of(K::Auth), RETIRE_AUTH, RETIRE_AUTH, K::Auth);
}

#[test]
fn forbidden_retires_on_connect_and_returns_on_call() {
    check(
        &http(403, None),
        RETIRE_PERMISSION,
        ReturnToCaller,
        K::Permission,
    );
    check(
        &of(K::Permission),
        RETIRE_PERMISSION,
        ReturnToCaller,
        K::Permission,
    );
}

#[test]
fn other_client_errors_and_rpc_errors_retry_on_connect_and_return_on_call() {
    for status in [400, 404, 405, 406, 409, 415, 422] {
        check(&http(status, None), Retry, ReturnToCaller, K::Protocol);
    }
    check(&rpc(K::Server, -32603), Retry, ReturnToCaller, K::Server);
    check(
        &rpc(K::Protocol, -32601),
        Retry,
        ReturnToCaller,
        K::Protocol,
    );
    check(&of(K::Protocol), Retry, ReturnToCaller, K::Protocol);
    // A 429 without Retry-After uses the normal curve.
    check(&http(429, None), Retry, ReturnToCaller, K::RateLimited);
}

#[test]
fn an_expired_session_starts_a_new_one_and_is_never_replayed() {
    let expired = of(K::SessionExpired).with(|c| c.status = Some(404));
    check(&expired, NewSession, ReturnAndReconnect, K::SessionExpired);
    check_session(
        &expired,
        true,
        NewSession,
        ReturnAndReconnect,
        K::SessionExpired,
    );
    // A 404 the transport did not mark, to a request the caller says carried a session.
    let plain = http(404, None);
    check_session(
        &plain,
        true,
        NewSession,
        ReturnAndReconnect,
        K::SessionExpired,
    );
    check_session(&plain, false, Retry, ReturnToCaller, K::Protocol);
}

#[test]
fn retry_after_is_honoured_exactly_on_connect_and_passed_back_on_call() {
    let check_wait = |err: &Error, kind: ErrorKind, secs: u64| {
        check(err, RetryAfter(S(secs)), ReturnToCaller, kind);
        for phase in [Phase::Connect, Phase::Call] {
            assert_eq!(classify(err, phase, false).retry_after, Some(S(secs)));
        }
    };
    check_wait(&http(429, Some(7)), K::RateLimited, 7);
    check_wait(&http(429, Some(0)), K::RateLimited, 0);
    check_wait(&http(503, Some(120)), K::RateLimited, 120);
    check_wait(
        &of(K::RateLimited).with(|c| c.retry_after = Some(S(3))),
        K::RateLimited,
        3,
    );
    // Beyond the policy's bound (1 d), from wherever the error was built: clamped.
    check_wait(&http(429, Some(u64::MAX)), K::RateLimited, 86_400);
    check_wait(
        &of(K::RateLimited).with(|c| c.retry_after = Some(Duration::MAX)),
        K::RateLimited,
        86_400,
    );
}

#[test]
fn server_timeout_and_transport_failures_back_off_or_reconnect() {
    let dns = Error::transport("could not resolve").with(|c| c.io = Some(IoKind::Dns));
    let tls = Error::transport("TLS failed").caused_by(rustls::Error::General("x".into()));
    let cases: [(Error, ErrorKind); 11] = [
        (http(500, None), K::Server),
        (http(502, None), K::Server),
        (http(503, None), K::Server),
        (http(504, None), K::Server),
        (of(K::Server), K::Server),
        (Error::timeout("no answer within 60 s"), K::Timeout),
        (Error::transport("refused"), K::Transport),
        (dns, K::Transport),
        (tls, K::Transport),
        (of(K::StreamLost), K::StreamLost),
        (of(K::ProcessExit), K::ProcessExit),
    ];
    for (err, kind) in &cases {
        check(err, Retry, ReturnAndReconnect, *kind);
    }
    let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
    check(&refused, Retry, ReturnAndReconnect, K::Transport);
    let timed_out = io::Error::from(io::ErrorKind::TimedOut);
    check(&timed_out, Retry, ReturnAndReconnect, K::Timeout);
    let tls = rustls::Error::General("bad record".into());
    check(&tls, Retry, ReturnAndReconnect, K::Transport);
}

#[test]
fn spawn_and_config_failures_retire_on_connect() {
    for io_kind in [io::ErrorKind::NotFound, io::ErrorKind::PermissionDenied] {
        let spawn = of(K::Spawn).caused_by(io::Error::from(io_kind));
        check(&spawn, RETIRE_CONFIG, ReturnToCaller, K::Spawn);
    }
    check(
        &Error::config("invalid URL"),
        RETIRE_CONFIG,
        ReturnToCaller,
        K::Config,
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().build().expect("a client");
    let invalid_url = client
        .get("not a url")
        .build()
        .expect_err("a builder error");
    check(&invalid_url, RETIRE_CONFIG, ReturnToCaller, K::Config);
}

#[test]
fn cancellation_is_returned_and_never_retires() {
    let cancelled = Error::cancelled("the connection was closed by Lifeline");
    check(&cancelled, ReturnToCaller, ReturnToCaller, K::Cancelled);
    let closed = Error::closed_because(&cancelled);
    check(&closed, ReturnToCaller, ReturnToCaller, K::Cancelled);
    // A cancellation that wraps a cause is classified by the cause.
    let lost = Error::cancelled("the session ended").caused_by(of(K::StreamLost));
    check(&lost, Retry, ReturnAndReconnect, K::StreamLost);
}

#[test]
fn the_most_specific_finding_wins_in_either_order() {
    let auth_in_transport = Error::transport("reset").caused_by(http(401, None));
    check(&auth_in_transport, RETIRE_AUTH, RETIRE_AUTH, K::Auth);
    let transport_in_auth = http(401, None).caused_by(Error::transport("reset"));
    check(&transport_in_auth, RETIRE_AUTH, RETIRE_AUTH, K::Auth);
    let forbidden_in_server = http(500, None).caused_by(http(403, None));
    check(
        &forbidden_in_server,
        RETIRE_PERMISSION,
        ReturnToCaller,
        K::Permission,
    );
    let limit_in_timeout = Error::timeout("slow").caused_by(http(503, Some(9)));
    check(
        &limit_in_timeout,
        RetryAfter(S(9)),
        ReturnToCaller,
        K::RateLimited,
    );
    let server_in_timeout = Error::timeout("slow").caused_by(http(502, None));
    check(&server_in_timeout, Retry, ReturnAndReconnect, K::Server);
    let deep = of(K::StreamLost)
        .caused_by(Error::transport("a").caused_by(Error::timeout("b").caused_by(http(401, None))));
    check(&deep, RETIRE_AUTH, RETIRE_AUTH, K::Auth);
}

#[test]
fn chains_are_walked_through_wrapped_io_errors() {
    let auth_in_io = io::Error::other(http(401, None));
    check(&auth_in_io, RETIRE_AUTH, RETIRE_AUTH, K::Auth);
    let twice = io::Error::new(
        io::ErrorKind::BrokenPipe,
        io::Error::new(io::ErrorKind::InvalidData, http(429, Some(4))),
    );
    check(&twice, RetryAfter(S(4)), ReturnToCaller, K::RateLimited);
    let io_in_ours = Error::transport("read failed").caused_by(io::Error::other(io::Error::new(
        io::ErrorKind::TimedOut,
        "idle",
    )));
    check(&io_in_ours, Retry, ReturnAndReconnect, K::Timeout);
    let spawn_in_io = io::Error::other(of(K::Spawn));
    check(&spawn_in_io, RETIRE_CONFIG, ReturnToCaller, K::Spawn);
}

#[test]
fn a_closed_connection_is_never_left_standing() {
    let garbage = Error::closed_because(&Error::protocol("not JSON"));
    check(&garbage, Retry, ReturnAndReconnect, K::Protocol);
    let rejected = Error::closed_because(&rpc(K::Server, -32603));
    check(&rejected, Retry, ReturnAndReconnect, K::Server);
    let in_io = io::Error::other(Error::closed_because(&of(K::StreamLost)));
    check(&in_io, Retry, ReturnAndReconnect, K::StreamLost);
}

#[test]
fn messages_are_never_parsed() {
    #[derive(Debug)]
    struct Opaque;
    impl std::fmt::Display for Opaque {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("HTTP 401 Unauthorized")
        }
    }
    impl StdError for Opaque {}
    check(&Opaque, Retry, ReturnAndReconnect, K::Transport);
    let in_io = io::Error::other("403 Forbidden: Bearer secret");
    check(&in_io, Retry, ReturnAndReconnect, K::Transport);
    check(
        &Error::transport("401 403 429"),
        Retry,
        ReturnAndReconnect,
        K::Transport,
    );
}

#[test]
fn a_server_requested_wait_travels_with_any_verdict() {
    // An SSE `retry:` on a lost stream: back off, but never below what the server asked.
    let lost = of(K::StreamLost).with(|c| c.retry_after = Some(S(3)));
    let v = classify(&lost, Phase::Connect, false);
    assert_eq!((v.action, v.retry_after), (Retry, Some(S(3))));
    let nested = Error::transport("x").caused_by(lost);
    assert_eq!(
        classify(&nested, Phase::Call, false).retry_after,
        Some(S(3))
    );
    assert_eq!(
        classify(&http(500, None), Phase::Connect, false).retry_after,
        None
    );
}

#[test]
fn the_deadline_error_is_a_timeout() {
    let deadline = crate::policy::Deadline::starting_at(S(0), S(60));
    let err = Error::from(deadline.stage_limit(S(10), S(60)).unwrap_err());
    check(&err, Retry, ReturnAndReconnect, K::Timeout);
}

#[test]
fn retire_reasons_are_spelled_as_the_states_show_them() {
    let check = |r: RetireReason, s: &str| assert_eq!(r.as_str(), s);
    check(RetireReason::Auth, "auth");
    check(RetireReason::SignIn, "sign_in");
    check(RetireReason::Permission, "permission");
    check(RetireReason::Config, "config");
}
