//! The aggregated endpoint's pure parts; sessions over real servers are in lifeline-it
//! (`tests/tests/it/aggregate.rs`).

use super::lists::uris_to_host;
use super::{cap, host_name};
use serde_json::json;

#[test]
fn resource_uris_in_a_result_are_put_under_their_server() {
    let result = json!({
        "content": [
            {"type": "text", "text": "file:///a"},
            {"type": "resource_link", "uri": "file:///a", "name": "a"},
            {"type": "resource", "resource": {"uri": "mem://b", "text": "b"}},
        ],
        "contents": [{"uri": "file:///c", "text": "c"}],
    });
    let mapped = uris_to_host("files", result);
    assert_eq!(
        mapped["content"][0]["text"], "file:///a",
        "text is not a URI field"
    );
    assert_eq!(mapped["content"][1]["uri"], "lifeline://files/file:///a");
    assert_eq!(
        mapped["content"][2]["resource"]["uri"],
        "lifeline://files/mem://b"
    );
    assert_eq!(mapped["contents"][0]["uri"], "lifeline://files/file:///c");
}

#[test]
fn a_host_name_is_one_clean_line_of_at_most_64_characters() {
    let name = |info| host_name(&info);
    assert_eq!(
        name(json!({"name": "cursor-vscode", "version": "1.7.2"})),
        Some("cursor-vscode 1.7.2".to_owned())
    );
    assert_eq!(
        name(json!({"name": " claude\u{1b}[31m\ncode\t", "version": 7})),
        Some("claude [31m code".to_owned()),
        "control characters become spaces, runs of space one, a version not a string is left out"
    );
    let long = name(json!({"name": "é".repeat(100), "version": "1"})).unwrap();
    assert_eq!(long.chars().count(), 64);
    assert_eq!(
        name(json!({"name": "  ", "version": "1.0"})),
        None,
        "no name, no host name"
    );
    assert_eq!(name(json!({"version": "1.0"})), None);
    assert_eq!(name(json!("cursor")), None);
}

#[test]
fn instructions_past_the_cap_are_cut_on_a_character_and_say_so() {
    let text = "é".repeat(10);
    let cut = cap(text, 5);
    assert!(cut.starts_with("éé"), "{cut}");
    assert!(!cut.starts_with("ééé"), "{cut}");
    assert!(cut.ends_with("[the servers' instructions were cut here]"));
    assert_eq!(cap("short".to_owned(), 5), "short");
}

#[tokio::test]
async fn a_prompt_keeps_its_name_across_sessions_when_another_would_take_it() {
    use super::lists::assign_kept;
    use super::{Aggregate, AggregateOptions};
    use crate::gateway::names::store::List;
    let dir = tempfile::tempdir().unwrap();
    let session = || {
        Aggregate::new(AggregateOptions {
            names: Some(dir.path().join("gateway-names.json")),
            ..AggregateOptions::default()
        })
    };
    let pair = |s: &str, n: &str| (s.to_owned(), n.to_owned());
    // `a.b` is given `s__a_b` first (its `.` is not allowed in a name).
    let first = assign_kept(&session(), List::Prompts, &[pair("s", "a.b")]).await;
    assert_eq!(first.host_name("s", "a.b"), Some("s__a_b"));
    // A later run: `a_b` appears, whose plain name is that one; `a.b` keeps it all the same.
    let both = [pair("s", "a_b"), pair("s", "a.b")];
    let later = assign_kept(&session(), List::Prompts, &both).await;
    assert_eq!(later.host_name("s", "a.b"), Some("s__a_b"));
    let other = later.host_name("s", "a_b").unwrap();
    assert_ne!(other, "s__a_b");
    // Without the file, the exact name wins: what the file is for.
    let fresh = Aggregate::new(AggregateOptions::default());
    let unkept = assign_kept(&fresh, List::Prompts, &both).await;
    assert_eq!(unkept.host_name("s", "a_b"), Some("s__a_b"));
    // Tools' names are a table of their own.
    let tools = assign_kept(&session(), List::Tools, &both).await;
    assert_eq!(tools.host_name("s", "a_b"), Some("s__a_b"));
}

mod sessions {
    //! Aggregated sessions over in-process servers on a paused clock: what the per-server
    //! gateway guarantees holds per server behind one endpoint.

    use super::super::AggregateOptions;
    use crate::config::{Profile, Selection, Tools};
    use crate::gateway::tests::{Calls, ask, seen_upstream, upstream_in, upstream_named};
    use crate::gateway::{GatewayOptions, serve_session, start_aggregate};
    use crate::supervisor::Supervisor;
    use serde_json::{Value, json};
    use std::sync::Arc;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

    type Host = (
        WriteHalf<DuplexStream>,
        tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    );

    fn options() -> GatewayOptions {
        GatewayOptions {
            request_wait: Duration::from_secs(5),
            ..GatewayOptions::default()
        }
    }

    fn aggregate(servers: &[Arc<Supervisor>]) -> Host {
        aggregate_with(servers, AggregateOptions::default())
    }

    fn aggregate_with(servers: &[Arc<Supervisor>], aggregate: AggregateOptions) -> Host {
        let (host, gw) = tokio::io::duplex(1 << 16);
        let (gw_read, gw_write) = tokio::io::split(gw);
        let servers = servers.iter().map(|s| (s.clone(), options())).collect();
        let session = start_aggregate(servers, aggregate);
        tokio::spawn(serve_session(session, gw_read, gw_write));
        let (host_read, host_write) = tokio::io::split(host);
        (host_write, BufReader::new(host_read).lines())
    }

    fn names(list: &Value) -> Vec<String> {
        let mut names: Vec<String> = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    }

    fn list_changes(notes: &[Value]) -> usize {
        notes
            .iter()
            .filter(|n| n["method"] == "notifications/tools/list_changed")
            .count()
    }

    /// Reads what the host is sent until it has seen `want` list_changed notifications
    /// (the clock is paused: the debounce passes as soon as nothing else can run).
    async fn until_list_changes(host: &mut Host, seen: &mut Vec<Value>, want: usize) {
        let read = async {
            while list_changes(seen) < want {
                let line = host
                    .1
                    .next_line()
                    .await
                    .unwrap()
                    .expect("the session is open");
                seen.push(serde_json::from_str(&line).unwrap());
            }
        };
        tokio::time::timeout(Duration::from_secs(30), read)
            .await
            .unwrap_or_else(|_| panic!("{want} tools/list_changed never came: {seen:?}"));
    }

    #[tokio::test(start_paused = true)]
    async fn subscriptions_progress_and_notifications_go_per_server() {
        let (a_calls, b_calls) = (Calls::default(), Calls::default());
        let alpha = Arc::new(upstream_named("alpha", a_calls.clone(), &[]));
        let beta = Arc::new(upstream_named("beta", b_calls.clone(), &["prog", "notify"]));
        let mut host = aggregate(&[alpha.clone(), beta.clone()]);
        let (w, r) = (&mut host.0, &mut host.1);
        let (init, _) = ask(w, r, 1, "initialize", json!({})).await;
        assert_eq!(init["result"]["serverInfo"]["name"], "lifeline", "{init}");
        let instructions = init["result"]["instructions"].as_str().unwrap();
        assert!(instructions.contains("[alpha] hi") && instructions.contains("[beta] hi"));
        let (list, _) = ask(w, r, 2, "tools/list", json!({})).await;
        let all = [
            "alpha__die",
            "alpha__echo",
            "alpha__peek",
            "beta__die",
            "beta__echo",
            "beta__notify",
            "beta__peek",
            "beta__prog",
        ];
        assert_eq!(names(&list), all);

        // A subscription reaches its own server under its own URI, and is made again when
        // that server reconnects.
        let uri = json!({"uri": "lifeline://alpha/file:///a"});
        let (ok, _) = ask(w, r, 3, "resources/subscribe", uri).await;
        assert_eq!(ok["result"], json!({}), "{ok}");
        seen_upstream(&a_calls, "resources/subscribe file:///a@1").await;
        ask(w, r, 4, "tools/call", json!({"name": "alpha__die"})).await;
        seen_upstream(&a_calls, "resources/subscribe file:///a@2").await;
        assert!(
            !b_calls
                .lock()
                .unwrap()
                .iter()
                .any(|c| c.starts_with("resources/")),
            "beta heard nothing of it"
        );

        // Progress comes under the host's token, before the answer.
        let params = json!({"name": "beta__prog", "_meta": {"progressToken": "t-1"}});
        let (done, notes) = ask(w, r, 5, "tools/call", params).await;
        assert_eq!(done["result"]["content"][0]["text"], "prog@1", "{done}");
        let progress: Vec<&Value> = notes
            .iter()
            .filter(|n| n["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 2, "{notes:?}");
        assert!(
            progress
                .iter()
                .all(|p| p["params"]["progressToken"] == "t-1")
        );

        // A server's resource notification names the resource by its host URI.
        let (_, mut notes) = ask(w, r, 6, "tools/call", json!({"name": "beta__notify"})).await;
        let (_, more) = ask(w, r, 7, "ping", json!({})).await;
        notes.extend(more);
        let updated = notes
            .iter()
            .find(|n| n["method"] == "notifications/resources/updated")
            .unwrap_or_else(|| panic!("{notes:?}"));
        assert_eq!(updated["params"]["uri"], "lifeline://beta/file:///a");
    }

    #[tokio::test(start_paused = true)]
    async fn the_host_hears_once_per_burst_when_a_server_leaves_and_comes_back() {
        let alpha = Arc::new(upstream_named("alpha", Calls::default(), &[]));
        let beta = Arc::new(upstream_named("beta", Calls::default(), &[]));
        let mut host = aggregate(&[alpha.clone(), beta.clone()]);
        let mut id = 1;
        ask(&mut host.0, &mut host.1, id, "initialize", json!({})).await;
        id += 1;
        let (list, _) = ask(&mut host.0, &mut host.1, id, "tools/list", json!({})).await;
        assert_eq!(names(&list).len(), 6);

        let mut seen = Vec::new();
        beta.disable();
        until_list_changes(&mut host, &mut seen, 1).await;
        id += 1;
        let (list, notes) = ask(&mut host.0, &mut host.1, id, "tools/list", json!({})).await;
        seen.extend(notes);
        assert_eq!(names(&list), ["alpha__die", "alpha__echo", "alpha__peek"]);
        assert_eq!(list_changes(&seen), 1, "one for the burst: {seen:?}");

        beta.enable();
        until_list_changes(&mut host, &mut seen, 2).await;
        id += 1;
        let (list, notes) = ask(&mut host.0, &mut host.1, id, "tools/list", json!({})).await;
        seen.extend(notes);
        // Back on its second generation, which lists one more tool.
        assert_eq!(names(&list).len(), 7, "beta is back: {list}");
        assert!(names(&list).contains(&"beta__extra".to_owned()), "{list}");
        assert_eq!(list_changes(&seen), 2, "{seen:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_tool_keeps_its_name_is_refused_and_comes_back_on_approval() {
        // `beta` was pinned long ago with its first generation's tools; its second lists
        // `extra`, new to a pinned server.
        let book = Arc::new(crate::pins::book::Book::open(None, ["beta"]).0);
        let first = [
            json!({"name": "echo", "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object"}, "icons": [{"src": "data:,"}],
                "_meta": {"ui": 1}}),
            json!({"name": "die", "inputSchema": {"type": "object"}}),
            json!({"name": "peek", "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true}}),
        ];
        book.judge("beta", &first, 1);
        let alpha = Arc::new(upstream_named("alpha", Calls::default(), &[]));
        let beta = Arc::new(upstream_in(
            "beta",
            Calls::default(),
            &[],
            Some(book.clone()),
        ));
        let mut host = aggregate(&[alpha.clone(), beta.clone()]);
        let (w, r) = (&mut host.0, &mut host.1);
        ask(w, r, 1, "initialize", json!({})).await;
        ask(w, r, 2, "tools/call", json!({"name": "beta__die"})).await;
        beta.wait_for(|s| s.generation.0 == 2 && s.tools_held == 1)
            .await;
        let (list, _) = ask(w, r, 3, "tools/list", json!({})).await;
        assert!(!names(&list).contains(&"beta__extra".to_owned()), "{list}");
        let (refused, _) = ask(w, r, 4, "tools/call", json!({"name": "beta__extra"})).await;
        assert_eq!(
            refused["error"]["code"],
            crate::gateway::errors::TOOL_HELD,
            "{refused}"
        );
        assert_eq!(refused["error"]["data"]["tool"], "extra", "{refused}");

        let mut seen = Vec::new();
        book.approve("beta", "extra", 2).unwrap();
        until_list_changes(&mut host, &mut seen, 1).await;
        let (list, _) = ask(&mut host.0, &mut host.1, 5, "tools/list", json!({})).await;
        assert!(names(&list).contains(&"beta__extra".to_owned()), "{list}");
        let (called, _) = ask(
            &mut host.0,
            &mut host.1,
            6,
            "tools/call",
            json!({"name": "beta__extra"}),
        )
        .await;
        assert_eq!(
            called["result"]["content"][0]["text"], "extra@2",
            "{called}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn servers_the_config_adds_or_removes_join_or_leave_the_session() {
        let alpha = Arc::new(upstream_named("alpha", Calls::default(), &[]));
        let beta = Arc::new(upstream_named("beta", Calls::default(), &[]));
        let (bump, changed) = tokio::sync::watch::channel(0u64);
        let now = Arc::new(std::sync::Mutex::new(vec![alpha.clone()]));
        let profile = Arc::new(std::sync::Mutex::new(Profile::everything("default")));
        let current: super::super::Current = {
            let (now, profile) = (now.clone(), profile.clone());
            Arc::new(move || {
                let servers: Vec<_> = now
                    .lock()
                    .unwrap()
                    .iter()
                    .map(|s| (s.clone(), options()))
                    .collect();
                let profile = Some(profile.lock().unwrap().clone());
                Box::pin(async move { super::super::Now { servers, profile } })
            })
        };
        let members = super::super::Members { changed, current };
        let options = AggregateOptions {
            members: Some(members),
            ..AggregateOptions::default()
        };
        let mut host = aggregate_with(std::slice::from_ref(&alpha), options);
        let init = json!({"capabilities": {"sampling": {}}});
        ask(&mut host.0, &mut host.1, 1, "initialize", init).await;
        let (list, _) = ask(&mut host.0, &mut host.1, 2, "tools/list", json!({})).await;
        assert_eq!(names(&list), ["alpha__die", "alpha__echo", "alpha__peek"]);

        // The config adds beta: it joins, with the host's capabilities, and the host hears.
        *now.lock().unwrap() = vec![alpha.clone(), beta.clone()];
        bump.send_modify(|n| *n += 1);
        let mut seen = Vec::new();
        until_list_changes(&mut host, &mut seen, 1).await;
        let (list, _) = ask(&mut host.0, &mut host.1, 3, "tools/list", json!({})).await;
        assert_eq!(names(&list).len(), 6, "{list}");
        let (echo, _) = ask(
            &mut host.0,
            &mut host.1,
            4,
            "tools/call",
            json!({"name": "beta__echo"}),
        )
        .await;
        assert_eq!(echo["result"]["content"][0]["text"], "echo@1", "{echo}");

        // The config removes alpha: it leaves, and its tools are no longer routed.
        *now.lock().unwrap() = vec![beta.clone()];
        bump.send_modify(|n| *n += 1);
        until_list_changes(&mut host, &mut seen, 2).await;
        let (list, _) = ask(&mut host.0, &mut host.1, 5, "tools/list", json!({})).await;
        assert_eq!(names(&list), ["beta__die", "beta__echo", "beta__peek"]);
        let (gone, _) = ask(
            &mut host.0,
            &mut host.1,
            6,
            "tools/call",
            json!({"name": "alpha__echo"}),
        )
        .await;
        assert_eq!(gone["error"]["code"], -32602, "{gone}");

        // The profile turns `peek` off: the same servers, one tool fewer, and the host hears.
        profile.lock().unwrap().tools = Tools::List(vec![(
            "*".into(),
            Selection {
                include: vec![],
                exclude: vec!["peek".into()],
            },
        )]);
        bump.send_modify(|n| *n += 1);
        until_list_changes(&mut host, &mut seen, 3).await;
        let (list, _) = ask(&mut host.0, &mut host.1, 7, "tools/list", json!({})).await;
        assert_eq!(names(&list), ["beta__die", "beta__echo"]);
    }
}
