//! Text logs: tracing to stderr and to a size-capped, rotated file in the platform's log
//! directory (`log_file`: at most `KEEP_FILES` files of `MAX_BYTES`). Nothing logged here
//! carries a secret: the app logs events (redacted by the core) and its own decisions, never
//! config values or tool results.

use crate::log_file::{KEEP_FILES, LogFile, MAX_BYTES};
use std::path::{Path, PathBuf};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The filter, in `RUST_LOG` syntax (`LIFELINE_LOG=debug`, `LIFELINE_LOG=lifeline_core=trace`).
pub const FILTER_ENV: &str = "LIFELINE_LOG";

/// `lifeline-app.log`, then `lifeline-app.1.log`, … as it rotates.
pub const FILE_PREFIX: &str = "lifeline-app";

/// Where the log files go, from the directories the platform knows:
/// Linux: `$XDG_STATE_HOME/lifeline/logs` (`~/.local/state/lifeline/logs`);
/// macOS: `~/Library/Logs/Lifeline`; elsewhere: `<local data dir>/lifeline/logs`.
/// `None` when there is no home at all (then only stderr is logged).
pub fn dir_for(
    os: &str,
    state: Option<&Path>,
    home: Option<&Path>,
    data_local: Option<&Path>,
) -> Option<PathBuf> {
    match os {
        "linux" => state
            .map(Path::to_owned)
            .or_else(|| home.map(|h| h.join(".local").join("state")))
            .map(|d| d.join("lifeline").join("logs")),
        "macos" => home.map(|h| h.join("Library").join("Logs").join("Lifeline")),
        _ => data_local.map(|d| d.join("lifeline").join("logs")),
    }
}

pub fn dir() -> Option<PathBuf> {
    dir_for(
        std::env::consts::OS,
        dirs::state_dir().as_deref(),
        dirs::home_dir().as_deref(),
        dirs::data_local_dir().as_deref(),
    )
}

/// Installs the global subscriber. Keep the guard until the app exits: dropping it flushes
/// the file. A log directory that cannot be created leaves stderr only (and says so).
pub fn init(dir: Option<&Path>) -> Option<WorkerGuard> {
    let filter = || EnvFilter::try_from_env(FILTER_ENV).unwrap_or_else(|_| EnvFilter::new("info"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter());
    let file = dir.map(|d| {
        LogFile::open(d, FILE_PREFIX, MAX_BYTES, KEEP_FILES)
            .map_err(|e| (d.to_owned(), e.to_string()))
    });
    match file {
        Some(Ok(appender)) => {
            let (writer, guard) = tracing_appender::non_blocking(appender);
            let file = tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_ansi(false)
                .with_filter(filter());
            tracing_subscriber::registry()
                .with(stderr)
                .with(file)
                .init();
            Some(guard)
        }
        Some(Err((d, e))) => {
            tracing_subscriber::registry().with(stderr).init();
            tracing::warn!(
                "logging to stderr only: cannot write logs in {}: {e}",
                d.display()
            );
            None
        }
        None => {
            tracing_subscriber::registry().with(stderr).init();
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        os: &str,
        state: Option<&str>,
        home: Option<&str>,
        local: Option<&str>,
        expect: Option<&str>,
    ) {
        let p = |s: Option<&str>| s.map(PathBuf::from);
        let got = dir_for(
            os,
            p(state).as_deref(),
            p(home).as_deref(),
            p(local).as_deref(),
        );
        assert_eq!(got, p(expect), "{os} {state:?} {home:?} {local:?}");
    }

    #[test]
    fn logs_go_where_each_platform_keeps_them() {
        let home = Some("/home/ada");
        check(
            "linux",
            Some("/xdg/state"),
            home,
            None,
            Some("/xdg/state/lifeline/logs"),
        );
        check(
            "linux",
            None,
            home,
            None,
            Some("/home/ada/.local/state/lifeline/logs"),
        );
        check("linux", None, None, None, None);
        check(
            "macos",
            None,
            Some("/Users/ada"),
            None,
            Some("/Users/ada/Library/Logs/Lifeline"),
        );
        check(
            "windows",
            None,
            None,
            Some("C:/L"),
            Some("C:/L/lifeline/logs"),
        );
    }
}
