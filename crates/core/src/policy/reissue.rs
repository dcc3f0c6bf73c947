//! Whether a stateless-revision request that failed is asked again (`after_failure`): once
//! when the server refused the revision it lists as supported, once after listing the tools
//! again when the mirrored headers did not match, and — the stateless revision cannot
//! resume a stream — after a lost response stream only when asking twice cannot do twice
//! what asking once did (`after_lost_stream`): the method only reads
//! (`stateless::is_idempotent`), or the called tool declares `readOnlyHint` or
//! `idempotentHint`, and at most `MAX_REISSUES` times. The session performs what this
//! decides, or fails `stream_lost` with the reason it gives; it decides nothing itself.

use crate::error::ErrorKind;
use crate::protocol::stateless;

/// What the session knows of one failed attempt of a stateless-revision request.
#[derive(Debug, Clone, Copy)]
pub struct Failure<'a> {
    pub method: &'a str,
    pub kind: ErrorKind,
    /// The JSON-RPC error code of the server's answer, if it answered with one.
    pub rpc_code: Option<i64>,
    /// The server's refusal lists the revision we sent among those it supports.
    pub lists_ours: bool,
    /// The session has not ended (a lost stream of an ended session is not asked again).
    pub session_open: bool,
}

/// What was already done for one request.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tried {
    /// Asked again after the server refused the revision it lists.
    pub version_retried: bool,
    /// Listed the tools again after a header mismatch.
    pub relisted: bool,
}

/// What follows a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// The server refused the revision it lists as supported (a server switching versions,
    /// say): the spec's answer is to ask again with a listed one, which is ours. Once.
    AskAgain,
    /// The server says the mirrored headers do not match the body: the tool's definition
    /// may have changed. The spec's answer: list the tools (which updates the headers),
    /// then ask once more.
    RelistThenAskAgain,
    /// The response stream broke before the answer: `after_lost_stream` decides, once the
    /// session knows whether the tool declared itself repeatable.
    StreamLost,
    /// Nothing to ask again: the failure is the answer.
    Fail,
}

/// The decision after `failure`, given what was `tried` for this request already.
pub fn after_failure(failure: Failure<'_>, tried: Tried) -> AfterFailure {
    let code = failure.rpc_code;
    if !tried.version_retried
        && code == Some(stateless::UNSUPPORTED_PROTOCOL_VERSION)
        && failure.lists_ours
    {
        return AfterFailure::AskAgain;
    }
    if failure.method == "tools/call" && !tried.relisted && code == Some(stateless::HEADER_MISMATCH)
    {
        return AfterFailure::RelistThenAskAgain;
    }
    if failure.kind == ErrorKind::StreamLost && failure.session_open {
        return AfterFailure::StreamLost;
    }
    AfterFailure::Fail
}

/// How many times a request whose response stream broke is asked again: enough for a blip,
/// bounded so that a stream that keeps breaking fails instead of looping.
pub const MAX_REISSUES: u32 = 2;

/// What follows a lost response stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reissue {
    /// Ask again with a new id.
    Again,
    /// Safe to repeat, but already asked again `MAX_REISSUES` times: give up.
    Exhausted,
    /// The method is not one that only reads: it may have run on the server.
    NotARead,
    /// A `tools/call` whose tool does not declare that repeating it is safe.
    ToolNotRepeatable,
}

/// The decision for `method` after its stream broke, when it was already asked again
/// `reissued` times. `tool_repeatable` says, for `tools/call`, whether the tool declared
/// `readOnlyHint` or `idempotentHint` (true); other methods ignore it. Safety is decided
/// before the count, so an unsafe request says why it was not repeated even the first time.
pub fn after_lost_stream(method: &str, tool_repeatable: bool, reissued: u32) -> Reissue {
    let safe = if stateless::is_idempotent(method) {
        true
    } else if method == "tools/call" {
        tool_repeatable
    } else {
        return Reissue::NotARead;
    };
    match (safe, reissued < MAX_REISSUES) {
        (false, _) => Reissue::ToolNotRepeatable,
        (true, true) => Reissue::Again,
        (true, false) => Reissue::Exhausted,
    }
}

/// True when a request's failure says the connection went away under it (so it may have
/// been lost, or may have run): not an answer of the server (`rpc_code`), not a timeout,
/// not a refusal of what was asked. A request failing this way is one `after_lost_stream`
/// decides about.
pub fn lost_connection(kind: ErrorKind, rpc_code: Option<i64>) -> bool {
    rpc_code.is_none()
        && matches!(
            kind,
            ErrorKind::Transport
                | ErrorKind::ProcessExit
                | ErrorKind::StreamLost
                | ErrorKind::SessionExpired
                | ErrorKind::Cancelled
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use Reissue::*;

    #[test]
    fn a_refusal_the_spec_answers_is_asked_again_once() {
        use AfterFailure::*;
        use stateless::{HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION};
        fn failure(
            method: &str,
            kind: ErrorKind,
            rpc_code: Option<i64>,
            lists_ours: bool,
            session_open: bool,
        ) -> Failure<'_> {
            Failure {
                method,
                kind,
                rpc_code,
                lists_ours,
                session_open,
            }
        }
        // The server refused the revision we sent, listing it among its own or not.
        let refused = |method, lists_ours| {
            let code = Some(UNSUPPORTED_PROTOCOL_VERSION);
            failure(method, ErrorKind::Protocol, code, lists_ours, true)
        };
        let mismatch = |method| {
            let code = Some(HEADER_MISMATCH);
            failure(method, ErrorKind::Protocol, code, false, true)
        };
        let lost = |method, session_open| {
            failure(method, ErrorKind::StreamLost, None, false, session_open)
        };
        let fresh = Tried::default();
        let version_retried = Tried {
            version_retried: true,
            ..fresh
        };
        let relisted = Tried {
            relisted: true,
            ..fresh
        };
        let timeout = failure("tools/list", ErrorKind::Timeout, None, false, true);
        let server_error = failure("tools/call", ErrorKind::Server, Some(-1), true, true);
        for (failure, tried, expect) in [
            // Refused the revision it lists: once, for any method.
            (refused("tools/list", true), fresh, AskAgain),
            (refused("tools/call", true), relisted, AskAgain),
            (refused("tools/list", true), version_retried, Fail),
            (refused("tools/list", false), fresh, Fail),
            // Header mismatch: only a tool call, once.
            (mismatch("tools/call"), fresh, RelistThenAskAgain),
            (mismatch("tools/call"), version_retried, RelistThenAskAgain),
            (mismatch("tools/call"), relisted, Fail),
            (mismatch("prompts/get"), fresh, Fail),
            // A lost stream goes on to `after_lost_stream`, unless the session ended.
            (lost("tools/call", true), fresh, StreamLost),
            (lost("tools/list", true), version_retried, StreamLost),
            (lost("tools/list", false), fresh, Fail),
            // Anything else is the answer.
            (timeout, fresh, Fail),
            (server_error, fresh, Fail),
        ] {
            assert_eq!(
                after_failure(failure, tried),
                expect,
                "{failure:?} {tried:?}"
            );
        }
    }

    #[test]
    fn only_reads_and_declared_tools_are_asked_again_at_most_twice() {
        let check = |method: &str, tool_repeatable: bool, reissued: u32, expect: Reissue| {
            assert_eq!(
                after_lost_stream(method, tool_repeatable, reissued),
                expect,
                "{method} (tool repeatable: {tool_repeatable}) after {reissued}"
            );
        };
        // Requests that only read.
        check("tools/list", false, 0, Again);
        check("tools/list", false, 1, Again);
        check("tools/list", false, 2, Exhausted);
        check("tools/list", false, u32::MAX, Exhausted);
        check("server/discover", false, 0, Again);
        check("resources/read", false, 0, Again);
        check("resources/templates/list", false, 0, Again);
        check("prompts/get", false, 1, Again);
        check("completion/complete", false, 0, Again);
        // A tool call: only when its tool says so.
        check("tools/call", true, 0, Again);
        check("tools/call", true, 1, Again);
        check("tools/call", true, 2, Exhausted);
        check("tools/call", false, 0, ToolNotRepeatable);
        check("tools/call", false, 2, ToolNotRepeatable);
        // Anything else may have an effect; the tool flag is not its to use.
        check("subscriptions/listen", true, 0, NotARead);
        check("logging/setLevel", false, 0, NotARead);
        check("resources/subscribe", true, 5, NotARead);
        check("", false, 0, NotARead);
    }

    #[test]
    fn a_gateway_request_lost_with_its_connection_is_repeated_only_when_safe() {
        use ErrorKind::*;
        // Which failures are a lost connection at all.
        for (kind, code, lost) in [
            (ProcessExit, None, true),
            (Transport, None, true),
            (StreamLost, None, true),
            (SessionExpired, None, true),
            (Cancelled, None, true),
            (Timeout, None, false),
            (Server, Some(-32000), false),
            (Protocol, Some(-32602), false),
            (Transport, Some(-32603), false),
            (Auth, None, false),
        ] {
            assert_eq!(lost_connection(kind, code), lost, "{kind:?} {code:?}");
        }
        // What a host sends through the gateway, first loss.
        for (method, repeatable, want) in [
            ("tools/list", false, Again),
            ("resources/list", false, Again),
            ("resources/read", false, Again),
            ("prompts/list", false, Again),
            ("prompts/get", false, Again),
            ("tools/call", true, Again),
            ("tools/call", false, ToolNotRepeatable),
            ("logging/setLevel", false, NotARead),
            ("resources/subscribe", false, NotARead),
        ] {
            assert_eq!(after_lost_stream(method, repeatable, 0), want, "{method}");
        }
    }
}
