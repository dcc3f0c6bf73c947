//! Where the app's servers come from: the user's config file, the demo of fixture servers
//! when there is none, or no servers and a notice when the file is broken; and what the UI
//! is told about it (`AppInfo`).

use crate::demo;
use crate::error::ErrorView;
use lifeline_core::config::{self, Config, ConfigErrorKind};
use lifeline_core::redact::Redactor;
use serde::Serialize;
use std::path::Path;
use tokio::process::Child;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The servers of the user's config file.
    Config,
    /// No config file: the fixture servers of `demo/config.json`.
    Demo,
}

/// Where the servers came from, and what the UI should say about it.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct AppInfo {
    pub version: &'static str,
    pub mode: Mode,
    /// The config file in use, or the one that was looked for (demo mode).
    pub config_path: Option<String>,
    pub log_dir: Option<String>,
    /// Things to show as a banner: `{kind, message}` (kinds `demo`, `fixture_missing`,
    /// `fixture_failed`, `config`).
    pub notices: Vec<ErrorView>,
}

/// What to run: the config and what the UI should know about it.
pub struct Source {
    pub config: Config,
    pub info: AppInfo,
    /// Processes the demo started; killed at shutdown.
    pub fixtures: Vec<Child>,
}

/// The config at `LIFELINE_CONFIG` or the platform default; the demo when there is no
/// file there; no servers and a notice when the file is broken.
pub async fn load(fixture: Option<&Path>, log_dir: Option<&Path>) -> Source {
    let mut source = load_config(fixture, log_dir).await;
    open_pins(&mut source);
    source
}

/// Opens the app's tool pins (docs/trust.md) before any supervisor starts; the demo's are
/// kept in memory, so that its fixture servers never reach the pins file. A pins file that
/// could not be used is a notice.
fn open_pins(source: &mut Source) {
    // And the watch on the machine's sleep (`system::watch`): a wake checks every server.
    lifeline_core::system::watch::start();
    let path = match source.info.mode {
        Mode::Demo => None,
        _ => lifeline_core::pins::store::default_path(),
    };
    let servers = source.config.servers.iter().map(|s| s.name.as_str());
    if let Some(problem) = lifeline_core::pins::book::open_for_hosts(path, servers) {
        tracing::warn!("pins: {problem}");
        source.info.notices.push(ErrorView::new("pins", problem));
    }
}

async fn load_config(fixture: Option<&Path>, log_dir: Option<&Path>) -> Source {
    let mut info = AppInfo {
        version: env!("CARGO_PKG_VERSION"),
        mode: Mode::Config,
        config_path: None,
        log_dir: log_dir.map(|d| d.display().to_string()),
        notices: Vec::new(),
    };
    let path = config::resolve_path(None);
    info.config_path = path.as_ref().ok().map(|p| p.display().to_string());
    let loaded = path.and_then(|p| config::load(&p));
    match loaded {
        Ok(config) => Source {
            config,
            info,
            fixtures: Vec::new(),
        },
        Err(e) if e.kind == ConfigErrorKind::NotFound => {
            let where_ = info
                .config_path
                .as_deref()
                .unwrap_or("the default location");
            info.mode = Mode::Demo;
            info.notices.push(ErrorView::new(
                demo::NOTICE_DEMO,
                format!(
                    "There is no config file at {where_}, so this is a demo of fixture servers. \
                     Add a server or import another client's servers here (that creates the \
                     file and ends the demo), or create the file yourself."
                ),
            ));
            let demo = demo::start(fixture).await;
            info.notices.extend(demo.notices);
            Source {
                config: demo.config,
                info,
                fixtures: demo.fixtures,
            }
        }
        Err(e) => {
            info.notices.push(ErrorView::new(
                "config",
                Redactor::default().scrub(&e.to_string()),
            ));
            Source {
                config: Config::empty(),
                info,
                fixtures: Vec::new(),
            }
        }
    }
}
