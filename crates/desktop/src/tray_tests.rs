use super::*;
use StateName::*;
use lifeline_core::events::Generation;
use lifeline_core::events::{FailureInfo, StateInfo};

fn summary(states: &[Option<StateName>]) -> Summary {
    Summary::of(states.iter().copied())
}

#[test]
fn health_is_the_worst_state() {
    assert_eq!(summary(&[]).health(), Health::Idle);
    assert_eq!(summary(&[Some(Disabled)]).health(), Health::Idle);
    assert_eq!(
        summary(&[Some(Ready), Some(Disabled)]).health(),
        Health::AllReady
    );
    assert_eq!(summary(&[Some(Ready), None]).health(), Health::Recovering);
    assert_eq!(
        summary(&[Some(Ready), Some(Reconnecting), Some(Quarantined)]).health(),
        Health::Failed
    );
    assert_eq!(summary(&[Some(Retired)]).health(), Health::Failed);
    assert_eq!(summary(&[Some(GaveUp)]).health(), Health::Failed);
}

#[test]
fn labels_count_what_matters() {
    assert_eq!(summary(&[]).label(), "No servers configured");
    assert_eq!(summary(&[Some(Ready)]).label(), "The server is ready");
    assert_eq!(
        summary(&[Some(Ready), Some(Ready), Some(Disabled)]).label(),
        "All 2 servers ready"
    );
    assert_eq!(
        summary(&[Some(Disabled), Some(Disabled)]).label(),
        "All 2 servers disabled"
    );
    assert_eq!(
        summary(&[Some(Ready), Some(Retrying), Some(Connecting)]).label(),
        "2 recovering of 3 servers"
    );
    assert_eq!(
        summary(&[Some(Retired), Some(Retrying), Some(Ready)]).label(),
        "1 failed, 1 recovering of 3 servers"
    );
}

fn state_event(state: StateName, reason: Option<&str>, message: &str) -> Event {
    Event {
        v: 1,
        seq: 7,
        at: "2026-11-29T20:00:00.000Z".into(),
        server: "github".into(),
        generation: Generation(3),
        body: EventBody::State(StateInfo {
            state: Some(state),
            reason: reason.map(str::to_owned),
            cause: Some(FailureInfo {
                kind: "auth".into(),
                message: message.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
    }
}

#[test]
fn only_servers_that_stop_trying_notify() {
    let (title, body) = notification_for(&state_event(
        Retired,
        Some("auth"),
        "HTTP 401 Unauthorized.",
    ))
    .expect("retired notifies");
    assert_eq!(title, "github stopped");
    assert_eq!(
        body,
        "Reason: auth. HTTP 401 Unauthorized. It will not retry until you fix it and press Reconnect."
    );
    let (title, _) = notification_for(&state_event(GaveUp, None, "connection refused"))
        .expect("gave up notifies");
    assert_eq!(title, "github gave up reconnecting");
    let (title, body) = notification_for(&state_event(Retired, Some("sign_in"), "x"))
        .expect("sign-in needed notifies");
    assert_eq!(title, "github needs you to sign in");
    assert!(
        body.contains("press Sign in, or run `lifeline login github`"),
        "{body}"
    );
    for quiet in [Ready, Reconnecting, Quarantined, Retrying, Disabled] {
        assert_eq!(notification_for(&state_event(quiet, None, "x")), None);
    }
}

fn held_event(server: &str, tools: &[&str], count: usize) -> Event {
    Event {
        body: EventBody::ToolChanged {
            tools: tools.iter().map(|t| t.to_string()).collect(),
            count,
        },
        server: server.into(),
        ..state_event(Ready, None, "x")
    }
}

#[test]
fn held_tools_notify_once_per_server_per_burst() {
    let (title, body) = notification_for(&held_event("fs", &["read"], 1)).unwrap();
    assert_eq!(title, "fs: a tool changed");
    assert_eq!(
        body,
        "Lifeline holds `read` from your AI clients until you review it. Open Lifeline, or run \
         `lifeline tools review fs`."
    );
    let long = "x".repeat(100);
    let many = held_event("fs", &["a", "b", "c", &long], 9);
    let (title, body) = notification_for(&many).unwrap();
    assert_eq!(title, "fs: 9 tools changed");
    assert!(
        body.starts_with("Lifeline holds `a`, `b`, `c`, 6 more from"),
        "{body}"
    );
    assert!(!body.contains(&long[..41]), "a name is cut: {body}");

    let mut bursts = Bursts::default();
    let t0 = tokio::time::Instant::now();
    assert!(bursts.admit(&many, t0));
    assert!(!bursts.admit(&many, t0 + HELD_BURST / 2), "the same burst");
    assert!(
        bursts.admit(&held_event("gh", &["x"], 1), t0),
        "another server"
    );
    assert!(
        bursts.admit(&state_event(Retired, None, "x"), t0),
        "not a held tool"
    );
    assert!(bursts.admit(&many, t0 + HELD_BURST), "a burst later");
}

#[test]
fn long_messages_are_cut() {
    let long = "x".repeat(500);
    let (_, body) = notification_for(&state_event(Retired, None, &long)).unwrap();
    assert_eq!(body.chars().count(), NOTIFICATION_MAX_CHARS);
    assert!(body.ends_with('…'));
}

#[test]
fn icons_differ_by_health_and_are_round() {
    let icons = [
        Health::Idle,
        Health::AllReady,
        Health::Recovering,
        Health::Failed,
    ]
    .map(icon_rgba);
    for (i, a) in icons.iter().enumerate() {
        assert_eq!(a.len(), (ICON_SIZE * ICON_SIZE * 4) as usize);
        for b in &icons[i + 1..] {
            assert_ne!(a, b);
        }
    }
    let pixel = |rgba: &[u8], x: u32, y: u32| {
        let i = ((y * ICON_SIZE + x) * 4) as usize;
        [rgba[i], rgba[i + 1], rgba[i + 2], rgba[i + 3]]
    };
    // Corners transparent, the centre the opaque health colour.
    assert_eq!(pixel(&icons[3], 0, 0)[3], 0);
    assert_eq!(pixel(&icons[3], 16, 16), [0xd6, 0x45, 0x45, 0xff]);
}
