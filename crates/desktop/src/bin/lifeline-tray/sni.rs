//! The tray on Linux, straight over the session bus: a StatusNotifierItem with its menu
//! (ksni: what libappindicator speaks, without GTK), and notifications through
//! `org.freedesktop.Notifications` (notify-rust). Menu clicks become `Action`s for the main
//! loop.
//!
//! The item shows only while a panel's StatusNotifierWatcher is on the bus (KDE, Xfce,
//! Cinnamon, MATE, GNOME with the AppIndicator extension; not plain GNOME). Without one —
//! or without a session bus — there is no tray to come back from, so closing the window
//! quits rather than leave an app nobody can see or quit; a watcher that starts later
//! brings the tray (and the keep-running) back.

use ksni::TrayMethods;
use ksni::menu::{CheckmarkItem, MenuItem, StandardItem};
use lifeline_desktop::tray::{Health, ICON_SIZE, Summary, icon_rgba};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{mpsc, watch};

/// What the menu asks of the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Open,
    ReconnectFailed,
    StartAtLogin,
    Quit,
}

/// The tray item: what it shows, and where its clicks go.
struct Item {
    summary: Summary,
    login: bool,
    actions: mpsc::UnboundedSender<Action>,
    /// Whether a StatusNotifierWatcher (a panel's tray) is on the bus to show the item.
    shown: Arc<AtomicBool>,
}

impl Item {
    fn entry(label: &str, action: Action) -> MenuItem<Item> {
        StandardItem {
            label: label.into(),
            activate: Box::new(move |item: &mut Item| {
                if action == Action::Quit {
                    tracing::info!("Quit from the tray");
                }
                let _ = item.actions.send(action);
            }),
            ..Default::default()
        }
        .into()
    }
}

impl ksni::Tray for Item {
    // A click opens the menu, as on the other desktops.
    const MENU_ON_ACTIVATE: bool = true;

    fn id(&self) -> String {
        "lifeline".into()
    }

    fn title(&self) -> String {
        "Lifeline".into()
    }

    fn icon_pixmap(&self) -> Vec<ksni::Icon> {
        vec![icon(self.summary.health())]
    }

    fn tool_tip(&self) -> ksni::ToolTip {
        ksni::ToolTip {
            title: "Lifeline".into(),
            description: self.summary.label(),
            ..Default::default()
        }
    }

    fn watcher_online(&self) {
        tracing::info!("tray: a panel shows the icon (StatusNotifierWatcher online)");
        self.shown.store(true, Ordering::Relaxed);
    }

    fn watcher_offline(&self, reason: ksni::OfflineReason) -> bool {
        let why = match reason {
            ksni::OfflineReason::Error(e) => e.to_string(),
            _ => "the panel's tray went away".to_owned(),
        };
        tracing::warn!(
            "tray: nothing on this desktop shows tray icons ({why}; GNOME needs the \
             AppIndicator extension); closing the window quits until one does"
        );
        self.shown.store(false, Ordering::Relaxed);
        true // keep the item, for a watcher that comes later
    }

    fn menu(&self) -> Vec<MenuItem<Self>> {
        vec![
            StandardItem {
                label: self.summary.label(),
                enabled: false,
                ..Default::default()
            }
            .into(),
            MenuItem::Separator,
            Item::entry("Open Lifeline", Action::Open),
            Item::entry("Reconnect all failed", Action::ReconnectFailed),
            MenuItem::Separator,
            CheckmarkItem {
                label: "Start at login".into(),
                checked: self.login,
                activate: Box::new(|item: &mut Item| {
                    let _ = item.actions.send(Action::StartAtLogin);
                }),
                ..Default::default()
            }
            .into(),
            Item::entry("Quit Lifeline", Action::Quit),
        ]
    }
}

/// The well-known name of a panel's tray (the StatusNotifierWatcher) on the session bus.
const WATCHER: &str = "org.kde.StatusNotifierWatcher";

/// How long the session bus gets to say whether a panel's tray is on it.
const BUS_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether a panel's tray is on the session bus now (false without a session bus, or one
/// that does not answer within `BUS_PATIENCE`). Asked before the app starts when there is
/// no display, so nothing is logged.
pub async fn tray_on_bus() -> bool {
    tokio::time::timeout(BUS_PATIENCE, watcher_on_bus())
        .await
        .unwrap_or(false)
}

async fn watcher_on_bus() -> bool {
    let Ok(bus) = zbus::Connection::session().await else {
        return false;
    };
    let Ok(dbus) = zbus::fdo::DBusProxy::new(&bus).await else {
        return false;
    };
    let Ok(name) = zbus::names::BusName::try_from(WATCHER) else {
        return false;
    };
    dbus.name_has_owner(name).await.unwrap_or(false)
}

/// The icon as a StatusNotifierItem wants it: ARGB32, in network byte order.
fn icon(health: Health) -> ksni::Icon {
    let mut data = icon_rgba(health);
    for pixel in data.chunks_exact_mut(4) {
        pixel.rotate_right(1); // RGBA → ARGB
    }
    ksni::Icon {
        width: ICON_SIZE as i32,
        height: ICON_SIZE as i32,
        data,
    }
}

/// The desktop around the core: lifeline-desktop's `Shell` for Linux.
pub struct Shell {
    tray: Option<ksni::Handle<Item>>,
    shown: Arc<AtomicBool>,
    summary: watch::Sender<Summary>,
    actions: mpsc::UnboundedSender<Action>,
}

impl Shell {
    /// Puts the item on the session bus, where a panel's StatusNotifierWatcher shows it, now
    /// or once one starts.
    pub async fn start(actions: mpsc::UnboundedSender<Action>, login: bool) -> Arc<Shell> {
        // Registered means shown, unless ksni says the watcher is not there (at once, before
        // `spawn` returns, or whenever it goes).
        let shown = Arc::new(AtomicBool::new(true));
        let item = Item {
            summary: Summary::default(),
            login,
            actions: actions.clone(),
            shown: shown.clone(),
        };
        let tray = match item.assume_sni_available(true).spawn().await {
            Ok(handle) => {
                tracing::info!("tray: a StatusNotifierItem on the session bus");
                Some(handle)
            }
            Err(e) => {
                tracing::warn!("no tray icon ({e}); closing the window will quit the app");
                None
            }
        };
        let (summary, mut latest) = watch::channel(Summary::default());
        if let Some(handle) = tray.clone() {
            // One task applies the latest summary: updates never overtake each other.
            tokio::spawn(async move {
                while latest.changed().await.is_ok() {
                    let summary = *latest.borrow_and_update();
                    if handle.update(|item| item.summary = summary).await.is_none() {
                        return;
                    }
                }
            });
        }
        Arc::new(Shell {
            tray,
            shown,
            summary,
            actions,
        })
    }

    /// Ticks (or unticks) "Start at login".
    pub async fn set_login(&self, on: bool) {
        if let Some(tray) = &self.tray {
            tray.update(|item| item.login = on).await;
        }
    }

    /// Takes the item off the bus.
    pub async fn remove(&self) {
        if let Some(tray) = &self.tray {
            tray.shutdown().await;
        }
    }
}

impl lifeline_desktop::Shell for Shell {
    fn has_tray(&self) -> bool {
        self.tray.is_some() && self.shown.load(Ordering::Relaxed)
    }

    fn show(&self, summary: &Summary) {
        self.summary.send_replace(*summary);
    }

    fn notify(&self, title: &str, body: &str) {
        tracing::info!("notification: {title}: {body}");
        let mut notification = notify_rust::Notification::new();
        notification.appname("Lifeline").summary(title).body(body);
        tokio::spawn(async move {
            if let Err(e) = notification.show_async().await {
                tracing::debug!("the notification was not shown: {e}");
            }
        });
    }

    fn quit(&self) {
        tracing::info!("Quit");
        let _ = self.actions.send(Action::Quit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_icon_is_argb_in_network_order() {
        let rgba = icon_rgba(Health::Failed);
        let argb = icon(Health::Failed);
        assert_eq!(
            (argb.width, argb.height),
            (ICON_SIZE as i32, ICON_SIZE as i32)
        );
        let centre = ((16 * ICON_SIZE + 16) * 4) as usize;
        assert_eq!(&rgba[centre..centre + 4], &[0xd6, 0x45, 0x45, 0xff]);
        assert_eq!(&argb.data[centre..centre + 4], &[0xff, 0xd6, 0x45, 0x45]);
    }
}
