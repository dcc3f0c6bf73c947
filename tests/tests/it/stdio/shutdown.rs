//! The shutdown sequence, as a table: a row starts the fixture with a script (how it meets
//! stdin EOF and SIGTERM, whether it leaves a grandchild behind), ends the session one way
//! (`close`, or dropping it unclosed) and says what must follow: the exit status `close`
//! reports and what the fixture logged. The runner checks for every row that the fixture
//! and its grandchild ran until the end and are gone after it; every wait is bounded.

use std::time::Duration;

use lifeline_core::error::ExitStatus;
use serde_json::{Value, json};

use super::{config, connect, logged_pid, stdio_of, within};
use crate::support::{self, is_running, process_ended as died};

/// How a row ends the session.
enum End {
    /// `close`, which reports this exit status.
    Close(ExitStatus),
    /// Dropping the session without `close`.
    Drop,
}

struct Shutdown {
    script: Value,
    /// The shutdown grace, when not the default.
    grace: Option<Duration>,
    end: End,
    /// How many entries of each event the fixture logged.
    logged: &'static [(&'static str, usize)],
    /// Assertions particular to the row, on the fixture's log.
    then: fn(&[Value]),
}

/// `shutdowns! { name => row; ... }`: one `#[tokio::test]` per row, named by it.
macro_rules! shutdowns {
    ($($(#[$meta:meta])* $name:ident => $row:expr;)*) => {
        $(
            $(#[$meta])*
            #[tokio::test]
            async fn $name() {
                run($row).await;
            }
        )*
    };
}

async fn run(row: Shutdown) {
    let fixture = support::stdio_fixture(&row.script);
    let mut config = config(&fixture);
    if let Some(grace) = row.grace {
        config.shutdown_grace = grace;
    }
    let session = connect(&config).await;
    let pid = logged_pid(&fixture, "started").await;
    let grandchild = match row.script.get("grandchild_sleep_s") {
        Some(_) => Some(logged_pid(&fixture, "grandchild").await),
        None => None,
    };
    if let Some(grandchild) = grandchild {
        assert!(is_running(grandchild), "the grandchild runs until the end");
    }

    match row.end {
        End::Close(exit) => {
            within("close", session.close()).await;
            assert_eq!(stdio_of(&session).exit_status(), Some(exit));
            assert!(!is_running(pid), "the fixture (pid {pid}) is reaped");
        }
        End::Drop => {
            drop(session);
            died("the fixture's death", pid).await;
        }
    }
    if let Some(grandchild) = grandchild {
        died("the grandchild's death", grandchild).await;
    }
    let log = fixture.log_entries();
    for (event, n) in row.logged {
        assert_eq!(support::events(&log, event).len(), *n, "{event}: {log:?}");
    }
    (row.then)(&log);
}

/// A server that stays on stdin EOF, ignores SIGTERM and leaves a grandchild behind.
fn stubborn() -> Value {
    json!({"ignore_sigterm": true, "grandchild_sleep_s": 60, "on_stdin_eof": "stay"})
}

shutdowns! {
    /// Close returns as soon as the server exits; a grace far longer than `close` may take
    /// (`within`) proves no signal was needed.
    close_ends_a_server_that_exits_on_stdin_eof_without_any_signal => Shutdown {
        script: json!({}),
        grace: Some(Duration::from_secs(30)),
        end: End::Close(ExitStatus::Code(0)),
        logged: &[("stdin_closed", 1), ("sigterm_ignored", 0)],
        then: |log| assert_eq!(support::events(log, "exit")[0]["reason"], "stdin_closed"),
    };

    close_escalates_to_sigkill_and_ends_the_grandchild_of_a_server_that_ignores_sigterm
        => Shutdown {
        script: stubborn(),
        grace: Some(Duration::from_millis(500)),
        end: End::Close(ExitStatus::Signal(9)),
        logged: &[("stdin_closed", 1), ("sigterm_ignored", 1)],
        then: |_| {},
    };

    close_kills_what_a_cleanly_exiting_server_left_behind => Shutdown {
        script: json!({"grandchild_sleep_s": 60}),
        grace: None,
        end: End::Close(ExitStatus::Code(0)),
        logged: &[],
        then: |_| {},
    };

    /// Dropping kills the process group at once: no SIGTERM comes first to be ignored.
    dropping_a_session_without_close_kills_the_process_group => Shutdown {
        script: stubborn(),
        grace: None,
        end: End::Drop,
        logged: &[("sigterm_ignored", 0)],
        then: |_| {},
    };
}
