//! Plain language beside a failure: what an exit code or a signal usually means, the name
//! of a signal, a short label for each kind of failure. The one source for the core's
//! messages, the CLI and the UI, which gets these as tables generated from this file
//! (`crates/desktop/src/wire.rs` writes them into `ui/src/host/generated.ts`, and its test fails
//! when the checked-in tables are stale).

use crate::error::{ErrorKind, ExitStatus};

/// The signals people meet with MCP servers: number, name and what it did to the process.
pub const SIGNALS: [(i32, &str, &str); 11] = [
    (1, "SIGHUP", "hung up"),
    (2, "SIGINT", "interrupted"),
    (3, "SIGQUIT", "quit"),
    (4, "SIGILL", "illegal instruction"),
    (6, "SIGABRT", "aborted"),
    (7, "SIGBUS", "bus error"),
    (8, "SIGFPE", "arithmetic error"),
    (9, "SIGKILL", "killed"),
    (11, "SIGSEGV", "segmentation fault"),
    (13, "SIGPIPE", "broken pipe"),
    (15, "SIGTERM", "terminated"),
];

/// Exit codes above this are how shells report death by signal `code - 128`.
const SIGNAL_EXIT_BASE: i32 = 128;

fn signal(number: i32) -> Option<(&'static str, &'static str)> {
    SIGNALS
        .iter()
        .find(|(n, _, _)| *n == number)
        .map(|(_, name, what)| (*name, *what))
}

/// `SIGKILL` for 9; `None` for a signal not in `SIGNALS`.
pub fn signal_name(number: i32) -> Option<&'static str> {
    signal(number).map(|(name, _)| name)
}

/// What an exit code or signal usually means: 127 command not found, 126 not executable,
/// 137 or SIGKILL killed (often out of memory), 143 or SIGTERM terminated. `None` when there
/// is nothing useful to say: exit code 1 means whatever the program meant by it.
pub fn exit_gloss(status: ExitStatus) -> Option<String> {
    let gloss = match status {
        ExitStatus::Signal(9) => "killed (often: out of memory)".to_owned(),
        ExitStatus::Signal(n) => signal(n)?.1.to_owned(),
        ExitStatus::Code(0) => "exited cleanly, but a server should keep running".to_owned(),
        ExitStatus::Code(126) => "not executable (permission denied)".to_owned(),
        ExitStatus::Code(127) => "command not found".to_owned(),
        ExitStatus::Code(137) => "killed by SIGKILL (often: out of memory)".to_owned(),
        ExitStatus::Code(143) => "terminated by SIGTERM".to_owned(),
        ExitStatus::Code(code) if code > SIGNAL_EXIT_BASE => {
            let (name, what) = signal(code - SIGNAL_EXIT_BASE)?;
            format!("{what} ({name})")
        }
        ExitStatus::Code(_) => return None,
    };
    Some(gloss)
}

/// What an exit status means on the platform Lifeline runs on: `exit_gloss` on Unix,
/// `windows_exit_gloss` on Windows, where there are no signals and a code above 128 is not
/// one (the UI has both tables, generated from this file, and picks by its platform).
pub fn exit_gloss_here(status: ExitStatus) -> Option<String> {
    if cfg!(windows) {
        windows_exit_gloss(status)
    } else {
        exit_gloss(status)
    }
}

/// The Windows exit codes worth a word: the NTSTATUS codes a crashed process ends with
/// (as the unsigned 32-bit values Windows documents), and cmd.exe's 9009 for a command it
/// could not find. `windows_exit_gloss` reads it; wire.rs generates the UI's table from it.
pub const WINDOWS_EXITS: [(u32, &str); 8] = [
    (0, "exited cleanly, but a server should keep running"),
    (9009, "command not found (cmd.exe)"),
    (0xC000_0005, "crashed: access violation"),
    (0xC000_00FD, "crashed: stack overflow"),
    (0xC000_0409, "aborted (fail fast)"),
    (0xC000_013A, "interrupted (Ctrl+C)"),
    (0xC000_0135, "a DLL it needs was not found"),
    (0xC000_0017, "out of memory"),
];

/// An exit code as Windows reports it, a signed 32-bit value (`0xC0000005` is
/// -1073741819).
#[allow(clippy::cast_possible_wrap)]
pub const fn windows_code(code: u32) -> i32 {
    code as i32
}

/// What a Windows exit code usually means (`WINDOWS_EXITS`). Never a signal: a Windows
/// process has none, and one Lifeline killed exits with code 1.
pub fn windows_exit_gloss(status: ExitStatus) -> Option<String> {
    let ExitStatus::Code(code) = status else {
        return None;
    };
    WINDOWS_EXITS
        .iter()
        .find(|(c, _)| windows_code(*c) == code)
        .map(|(_, gloss)| (*gloss).to_owned())
}

/// Every kind of failure, in the order of `ErrorKind`. wire.rs checks it against the
/// enum's TypeScript type, so a kind added there and not here fails a test.
pub const KINDS: [ErrorKind; 14] = [
    ErrorKind::Auth,
    ErrorKind::SignIn,
    ErrorKind::Permission,
    ErrorKind::RateLimited,
    ErrorKind::Server,
    ErrorKind::Protocol,
    ErrorKind::Timeout,
    ErrorKind::Transport,
    ErrorKind::SessionExpired,
    ErrorKind::StreamLost,
    ErrorKind::ProcessExit,
    ErrorKind::Spawn,
    ErrorKind::Config,
    ErrorKind::Cancelled,
];

/// A short name for a kind of failure, as a person says it ("rate limited").
pub fn kind_label(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Auth => "unauthorized",
        ErrorKind::SignIn => "sign-in needed",
        ErrorKind::Permission => "forbidden",
        ErrorKind::RateLimited => "rate limited",
        ErrorKind::Server => "server error",
        ErrorKind::Protocol => "protocol error",
        ErrorKind::Timeout => "timed out",
        ErrorKind::Transport => "connection failed",
        ErrorKind::SessionExpired => "session expired",
        ErrorKind::StreamLost => "stream lost",
        ErrorKind::ProcessExit => "process exited",
        ErrorKind::Spawn => "could not start",
        ErrorKind::Config => "config error",
        ErrorKind::Cancelled => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_signals_are_glossed() {
        use ExitStatus::{Code, Signal};
        for (status, expect) in [
            (Code(127), Some("command not found")),
            (Code(126), Some("not executable (permission denied)")),
            (Code(137), Some("killed by SIGKILL (often: out of memory)")),
            (Code(143), Some("terminated by SIGTERM")),
            (Code(139), Some("segmentation fault (SIGSEGV)")),
            (Code(134), Some("aborted (SIGABRT)")),
            (
                Code(0),
                Some("exited cleanly, but a server should keep running"),
            ),
            (Signal(9), Some("killed (often: out of memory)")),
            (Signal(15), Some("terminated")),
            (Signal(11), Some("segmentation fault")),
            (Code(1), None),
            (Code(2), None),
            (Code(128 + 5), None),
            (Code(-1), None),
            (Signal(5), None),
        ] {
            assert_eq!(exit_gloss(status).as_deref(), expect, "{status}");
        }
    }

    #[test]
    fn windows_codes_are_glossed_without_signals() {
        use ExitStatus::Code;
        for (status, expect) in [
            (Code(-1_073_741_819), Some("crashed: access violation")),
            (Code(-1_073_741_510), Some("interrupted (Ctrl+C)")),
            (Code(9009), Some("command not found (cmd.exe)")),
            (Code(137), None),
            (Code(143), None),
            (Code(1), None),
        ] {
            assert_eq!(windows_exit_gloss(status).as_deref(), expect, "{status}");
        }
        assert_eq!(exit_gloss_here(Code(137)), {
            if cfg!(windows) {
                None
            } else {
                exit_gloss(Code(137))
            }
        });
    }

    #[test]
    fn signals_are_named_and_kinds_labelled_once_each() {
        assert_eq!(signal_name(9), Some("SIGKILL"));
        assert_eq!(signal_name(64), None);
        let mut kinds: Vec<&str> = KINDS.iter().map(|k| k.as_str()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), KINDS.len());
        assert_eq!(kind_label(ErrorKind::RateLimited), "rate limited");
    }
}
