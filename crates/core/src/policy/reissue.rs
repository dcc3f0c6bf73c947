//! Whether a request whose response stream broke before its answer may be asked again with a
//! new id (the stateless revision cannot resume a stream): only when asking twice cannot do
//! twice what asking once did — the method only reads (`modern::is_idempotent`), or the
//! called tool declares `readOnlyHint` or `idempotentHint` — and at most `MAX_REISSUES`
//! times. The session asks again or fails `stream_lost` with the reason this gives.

use crate::protocol::modern;

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
    let safe = if modern::is_idempotent(method) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use Reissue::*;

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
}
