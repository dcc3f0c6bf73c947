//! A session's streams without HTTP: ids, what is kept and for how long, and what a resume
//! replays (that stream's events after the id, never another's), and what it refuses.

use super::*;
use serde_json::json;

const BOUNDS: Bounds = Bounds {
    events: 256,
    bytes: RESUME_BYTES,
};

fn note(i: i64) -> Message {
    let params = json!({"progressToken": "p", "progress": i});
    Message::notification("notifications/progress", Some(params))
}

fn answer(id: i64) -> Message {
    Message::from_value(json!({"jsonrpc": "2.0", "id": id, "result": {"n": id}})).unwrap()
}

fn request(id: i64) -> Carries {
    Carries::Request(RequestId::Number(id))
}

/// Everything queued on a connection, as text.
fn queued(rx: &mut mpsc::Receiver<Bytes>) -> String {
    let mut all = String::new();
    while let Ok(event) = rx.try_recv() {
        all.push_str(&String::from_utf8_lossy(&event));
    }
    all
}

/// The ids of the events in `text`, in order.
fn ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(str::to_owned)
        .collect()
}

fn text(b: &Bytes) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn an_event_id_is_a_stream_and_a_place() {
    let check = |text: &str, expect: Option<(u64, u64)>| {
        let got = EventId::parse(text).map(|id| (id.stream, id.n));
        assert_eq!(got, expect, "{text:?}");
        if let Some((stream, n)) = expect {
            assert_eq!(EventId { stream, n }.to_string(), text.trim());
        }
    };
    check("12-3", Some((12, 3)));
    check(" 12-0 ", Some((12, 0)));
    check("12-", None);
    check("-3", None);
    check("a-3", None);
    check("12-3-4", None);
    check("+1-2", None);
    check("1_000-2", None);
    check("99999999999999999999999-1", None);
    check("", None);
    check("ff3c2d1e-4f5a-7b6c", None);
}

#[tokio::test]
async fn every_event_carries_its_streams_number_and_its_place() {
    let now = Instant::now();
    let mut streams = Streams::new(BOUNDS, 16);
    let (a, mut rx_a) = streams.open(request(1));
    let (b, mut rx_b) = streams.open(request(2));
    assert_ne!(a, b);
    assert_eq!(streams.send(a, &note(1), false, now), Sent::Live);
    assert_eq!(streams.send(b, &note(1), false, now), Sent::Live);
    assert_eq!(streams.send(a, &answer(1), true, now), Sent::Live);
    let got = queued(&mut rx_a);
    assert_eq!(ids(&got), [format!("{a}-1"), format!("{a}-2")], "{got}");
    assert!(got.ends_with(
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":1}}\n\n"
    ));
    assert_eq!(ids(&queued(&mut rx_b)), [format!("{b}-1")]);
    // Answered on its connection, the stream is done: its connection ends, its id is gone.
    assert!(rx_a.recv().await.is_none());
    assert_eq!(
        streams.resume(&format!("{a}-1")).err(),
        Some(Unresumable::NotHeld)
    );
    assert_eq!(
        text(&priming(a)),
        format!("id: {a}-0\nretry: 1000\ndata: \n\n")
    );
}

#[test]
fn a_stream_whose_connection_broke_keeps_its_answer_for_a_resume() {
    let now = Instant::now();
    let mut streams = Streams::new(BOUNDS, 16);
    let (s, rx) = streams.open(request(1));
    drop(rx);
    let sent = streams.send(s, &note(1), false, now);
    assert_eq!(sent, Sent::Detached { full: false });
    assert_eq!(streams.send(s, &answer(1), true, now), Sent::Kept);
    assert!(streams.holds_requests());
    let resumed = streams.resume(&format!("{s}-0")).unwrap();
    assert!(!resumed.gap);
    assert!(
        resumed.rest.is_none(),
        "the replay ends the stream with its answer"
    );
    assert_eq!(
        ids(&text(&resumed.replay)),
        [format!("{s}-1"), format!("{s}-2")]
    );
    assert!(text(&resumed.replay).contains("\"result\""));
    // Delivered: it is not kept any longer.
    assert!(!streams.holds_requests());
    assert!(streams.resume(&format!("{s}-0")).is_err());
}

#[tokio::test]
async fn a_resume_replays_only_what_followed_the_id_and_takes_over_the_stream() {
    let now = Instant::now();
    let mut streams = Streams::new(BOUNDS, 16);
    let (s, mut old) = streams.open(request(1));
    streams.send(s, &note(1), false, now);
    streams.send(s, &note(2), false, now);
    // The host saw 1 (2 was lost with its connection, as far as it knows).
    let mut resumed = streams.resume(&format!("{s}-1")).unwrap();
    assert_eq!(ids(&text(&resumed.replay)), [format!("{s}-2")]);
    // The old connection is let go; what comes now goes to the new one.
    assert_eq!(ids(&queued(&mut old)), [format!("{s}-1"), format!("{s}-2")]);
    assert!(
        old.recv().await.is_none(),
        "the old connection's stream ended"
    );
    let mut rest = resumed.rest.take().unwrap();
    assert_eq!(streams.send(s, &answer(1), true, now), Sent::Live);
    assert_eq!(ids(&queued(&mut rest)), [format!("{s}-3")]);
    assert!(rest.recv().await.is_none(), "it ends after the answer");
}

#[test]
fn no_event_of_another_stream_is_replayed() {
    let now = Instant::now();
    let mut streams = Streams::new(BOUNDS, 16);
    let (a, rx_a) = streams.open(request(1));
    let (b, rx_b) = streams.open(request(2));
    let (g, rx_g) = streams.open(Carries::Get);
    drop((rx_a, rx_b, rx_g));
    for i in 1..=3 {
        streams.send(a, &note(i), false, now);
        streams.send(b, &note(i), false, now);
        streams.send(g, &note(i), false, now);
    }
    streams.send(b, &answer(2), true, now);
    let resumed = streams.resume(&format!("{a}-1")).unwrap();
    assert_eq!(
        ids(&text(&resumed.replay)),
        [format!("{a}-2"), format!("{a}-3")]
    );
    let resumed = streams.resume(&format!("{g}-0")).unwrap();
    let got = ids(&text(&resumed.replay));
    assert_eq!(got, [format!("{g}-1"), format!("{g}-2"), format!("{g}-3")]);
}

#[test]
fn an_id_of_no_stream_held_here_is_refused() {
    let now = Instant::now();
    let mut mine = Streams::new(BOUNDS, 16);
    let mut theirs = Streams::new(BOUNDS, 16);
    let (s, rx) = mine.open(request(1));
    let (t, rx_t) = theirs.open(request(1));
    drop((rx, rx_t));
    mine.send(s, &note(1), false, now);
    theirs.send(t, &answer(1), true, now);
    // Another session's stream, however it is numbered, is not in this table.
    assert_eq!(
        mine.resume(&format!("{t}-0")).err(),
        Some(Unresumable::NotHeld)
    );
    // An event this stream has not had yet, a stream never opened, a foreign format.
    assert_eq!(
        mine.resume(&format!("{s}-2")).err(),
        Some(Unresumable::NotHeld)
    );
    assert_eq!(mine.resume("999999999-0").err(), Some(Unresumable::NotHeld));
    assert_eq!(mine.resume("event-1").err(), Some(Unresumable::Malformed));
    // Theirs is still theirs.
    assert!(theirs.resume(&format!("{t}-0")).is_ok());
}

#[test]
fn what_a_stream_keeps_is_bounded_in_count_and_bytes_but_never_drops_the_newest() {
    let now = Instant::now();
    let small = Bounds {
        events: 3,
        bytes: 400,
    };
    let mut streams = Streams::new(small, 64);
    let (s, rx) = streams.open(request(1));
    drop(rx);
    for i in 1..=5 {
        streams.send(s, &note(i), false, now);
    }
    let resumed = streams.resume(&format!("{s}-0")).unwrap();
    assert!(resumed.gap, "events 1 and 2 were let go");
    let want: Vec<_> = (3..=5).map(|n| format!("{s}-{n}")).collect();
    assert_eq!(ids(&text(&resumed.replay)), want);
    // No gap from the first id still kept on.
    drop(resumed);
    let (s, rx) = streams.open(request(2));
    drop(rx);
    for i in 1..=5 {
        streams.send(s, &note(i), false, now);
    }
    assert!(!streams.resume(&format!("{s}-2")).unwrap().gap);

    // Past the byte bound the oldest go; an answer over it is kept, whole.
    let mut streams = Streams::new(
        Bounds {
            events: 64,
            bytes: 100,
        },
        64,
    );
    let (s, rx) = streams.open(request(3));
    drop(rx);
    streams.send(s, &note(1), false, now);
    streams.send(s, &note(2), false, now);
    let big = json!({"jsonrpc": "2.0", "id": 3, "result": {"text": "x".repeat(1000)}});
    streams.send(s, &Message::from_value(big).unwrap(), true, now);
    let resumed = streams.resume(&format!("{s}-0")).unwrap();
    assert!(resumed.gap);
    assert_eq!(ids(&text(&resumed.replay)), [format!("{s}-3")]);
    assert!(resumed.replay.len() > 1000);
}

#[test]
fn a_stream_nobody_resumes_is_dropped_after_the_window() {
    let now = Instant::now();
    let mut streams = Streams::new(BOUNDS, 16);
    let (s, rx) = streams.open(request(1));
    let (g, rx_g) = streams.open(Carries::Get);
    let (live, _rx_live) = streams.open(request(2));
    drop((rx, rx_g));
    assert_eq!(streams.next_expiry(), None, "nothing is detached yet");
    streams.send(s, &note(1), false, now);
    let later = now + Duration::from_secs(5);
    streams.send(g, &note(1), false, later);
    assert_eq!(streams.next_expiry(), Some(now + RESUME_WINDOW));
    assert!(
        streams
            .expire(now + RESUME_WINDOW - Duration::from_millis(1))
            .is_empty()
    );
    assert_eq!(streams.expire(now + RESUME_WINDOW), [RequestId::Number(1)]);
    assert_eq!(
        streams.resume(&format!("{s}-0")).err(),
        Some(Unresumable::NotHeld)
    );
    assert!(streams.is_live(live), "a live stream has no window");
    assert_eq!(streams.next_expiry(), Some(later + RESUME_WINDOW));
    let end = later + RESUME_WINDOW;
    assert!(streams.expire(end).is_empty());
    // Past its window the GET stream keeps nothing, but stays the session's to resume.
    assert_eq!(streams.send(g, &note(2), false, end), Sent::Dropped);
    assert_eq!(streams.next_expiry(), None);
    let resumed = streams.resume(&format!("{g}-1")).unwrap();
    assert!(resumed.replay.is_empty());
    assert!(resumed.gap, "event 2 was lost");
    assert!(streams.get_is_live());
    assert_eq!(streams.send(g, &note(3), false, end), Sent::Live);
}

#[test]
fn a_host_that_stops_reading_loses_its_connection_not_its_events() {
    let now = Instant::now();
    let mut streams = Streams::new(BOUNDS, 2);
    let (s, _rx) = streams.open(request(1));
    assert_eq!(streams.send(s, &note(1), false, now), Sent::Live);
    assert_eq!(streams.send(s, &note(2), false, now), Sent::Live);
    assert_eq!(
        streams.send(s, &note(3), false, now),
        Sent::Detached { full: true }
    );
    assert!(!streams.is_live(s));
    let resumed = streams.resume(&format!("{s}-1")).unwrap();
    assert_eq!(
        ids(&text(&resumed.replay)),
        [format!("{s}-2"), format!("{s}-3")]
    );
}

#[test]
fn a_new_get_stream_replaces_the_old_one() {
    let now = Instant::now();
    let mut streams = Streams::new(BOUNDS, 16);
    let (g, rx) = streams.open(Carries::Get);
    assert!(streams.get_is_live());
    drop(rx);
    streams.send(g, &note(1), false, now);
    assert!(!streams.get_is_live());
    let (h, _rx) = streams.open(Carries::Get);
    assert_eq!(streams.get(), Some(h));
    assert_eq!(
        streams.resume(&format!("{g}-0")).err(),
        Some(Unresumable::NotHeld)
    );
}
