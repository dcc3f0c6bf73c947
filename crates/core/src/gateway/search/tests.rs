//! The ranking against the labelled query set over the real servers' tools (recall@5), and
//! its promises: deterministic order, ties by name, nothing found for nothing asked, and no
//! panic or runaway work on hostile tools.

use super::{Hit, Index, MAX_DESCRIPTION};
use serde_json::{Value, json};

const REAL_TOOLS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/real-tools.json"
));
const QUERIES: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/tool-queries.json"
));

/// The real servers' tools under their host names, `server__tool`.
fn real_tools() -> Vec<(String, Value)> {
    let file: Value = serde_json::from_str(REAL_TOOLS).unwrap();
    let mut out = Vec::new();
    for (server, listed) in file["servers"].as_object().unwrap() {
        for tool in listed["tools"].as_array().unwrap() {
            let name = tool["name"].as_str().unwrap();
            out.push((format!("{server}__{name}"), tool.clone()));
        }
    }
    out
}

fn index(tools: &[(String, Value)]) -> Index {
    Index::build(tools.iter().map(|(n, t)| (n.as_str(), t)))
}

fn names(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.name.as_str()).collect()
}

#[test]
fn recall_at_5_on_the_labelled_queries_is_at_least_0_9() {
    let tools = real_tools();
    let index = index(&tools);
    let file: Value = serde_json::from_str(QUERIES).unwrap();
    let queries = file["queries"].as_array().unwrap();
    assert!(queries.len() >= 40, "the set has {} queries", queries.len());
    let (mut sum, mut misses) = (0.0, Vec::new());
    for q in queries {
        let query = q["query"].as_str().unwrap();
        let expected: Vec<&str> = q["expected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        for e in &expected {
            assert!(
                tools.iter().any(|(n, _)| n == e),
                "{query:?} expects {e}, no such tool"
            );
        }
        let hits = index.search(query, 5);
        let top = names(&hits);
        let found = expected.iter().filter(|e| top.contains(e)).count();
        sum += found as f64 / expected.len().min(5) as f64;
        if found < expected.len() {
            misses.push(format!("{query:?}: expected {expected:?}, got {top:?}"));
        }
    }
    let recall = sum / queries.len() as f64;
    println!(
        "recall@5 = {recall:.3} over {} queries and {} tools; missed:\n{}",
        queries.len(),
        tools.len(),
        misses.join("\n")
    );
    assert!(
        recall >= 0.9,
        "recall@5 is {recall:.3}; missed:\n{}",
        misses.join("\n")
    );
}

#[test]
fn the_order_is_the_same_whatever_order_the_tools_come_in() {
    let tools = real_tools();
    let mut reversed = tools.clone();
    reversed.reverse();
    for query in ["read a file", "git", "delete", "time zone", "list"] {
        let a = index(&tools).search(query, 50);
        let b = index(&reversed).search(query, 50);
        assert!(!a.is_empty(), "{query:?} found nothing");
        assert_eq!(a, b, "{query:?}");
        assert_eq!(a, index(&tools).search(query, 50), "{query:?}, built again");
        for pair in a.windows(2) {
            assert!(
                pair[0].score > pair[1].score
                    || (pair[0].score == pair[1].score && pair[0].name < pair[1].name),
                "{query:?}: {pair:?} out of order"
            );
        }
    }
}

#[test]
fn ties_go_by_name_and_the_limit_keeps_the_first() {
    let tool = json!({"description": "Reads a widget"});
    let tools = [
        ("b__widget", &tool),
        ("c__widget", &tool),
        ("a__widget", &tool),
    ];
    let index = Index::build(tools);
    let hits = index.search("widget", 10);
    assert_eq!(names(&hits), ["a__widget", "b__widget", "c__widget"]);
    assert!(
        hits.iter()
            .all(|h| h.score == hits[0].score && h.score > 0.0)
    );
    assert_eq!(
        names(&index.search("widget", 2)),
        ["a__widget", "b__widget"]
    );
    assert_eq!(index.search("widget", usize::MAX), hits);
}

#[test]
fn a_word_in_the_name_outranks_it_in_a_description() {
    let in_name = json!({"description": "Shows something"});
    let in_title = json!({"title": "Branch list", "description": "Shows something"});
    let in_param = json!({"inputSchema": {"properties": {"branch": {"type": "string"}}}});
    let in_description = json!({"description": "Shows a branch"});
    let index = Index::build([
        ("git__description", &in_description),
        ("git__param", &in_param),
        ("git__title", &in_title),
        ("git__branch", &in_name),
    ]);
    let hits = index.search("branch", 10);
    assert_eq!(names(&hits)[0], "git__branch");
    assert_eq!(names(&hits)[3], "git__description");
}

#[test]
fn nothing_asked_finds_nothing() {
    let tools = real_tools();
    let index = index(&tools);
    for query in ["", "   ", "the of to in", "東京 😀", "!!! ??? ---", "a b c"] {
        assert_eq!(index.search(query, 5), [], "{query:?}");
    }
    assert_eq!(index.search("read a file", 0), []);
    assert_eq!(index.search("xyzzy", 5), []);
    assert_eq!(Index::build([]).search("read a file", 5), []);
    assert!(Index::build([]).is_empty());
    assert_eq!(index.len(), tools.len());
}

#[test]
fn unicode_around_the_words_is_a_separator() {
    let tool = json!({
        "title": "Café — 東京 Zeitzone",
        "description": "Gibt die Uhrzeit zurück 🕒 für eine Zeitzone",
        "inputSchema": {"properties": {"ζώνη": {"description": "ώρα"}, "zone": {}}}
    });
    let other = json!({"description": "Something else entirely"});
    let index = Index::build([("welt__uhr", &tool), ("other__thing", &other)]);
    assert_eq!(names(&index.search("uhrzeit 🕒", 5)), ["welt__uhr"]);
    assert_eq!(names(&index.search("zone", 5)), ["welt__uhr"]);
    assert_eq!(names(&index.search("Café", 5)), ["welt__uhr"]);
}

#[test]
fn hostile_tools_are_read_up_to_the_caps_and_never_panic() {
    let huge = "flood ".repeat(2_000_000); // 12 MB of one word
    let blob = "A".repeat(1 << 20); // one megabyte-long word
    let long = "flood ".repeat(1000);
    let many: serde_json::Map<String, Value> = (0..10_000)
        .map(|i| (format!("p{i}"), json!({"description": long})))
        .collect();
    let odd = [
        json!({"title": blob, "description": blob}),
        json!({"inputSchema": {"properties": many}}),
        json!({"inputSchema": {"properties": ["not", "an", "object"]}}),
        json!({"inputSchema": "nonsense", "title": 7, "description": null}),
        json!({"name": 42, "annotations": {"title": ["x"]}}),
        json!("a tool that is a string"),
        json!(null),
        json!([1, 2, 3]),
        json!({"description": "Floods the basement with water"}),
    ];
    let build = |first: &Value| {
        let mut tools: Vec<(String, &Value)> = vec![("bad__flood".to_owned(), first)];
        tools.extend(
            odd.iter()
                .enumerate()
                .map(|(i, t)| (format!("bad__t{i}"), t)),
        );
        tools.push((format!("x__{}", "é".repeat(200)), &odd[8]));
        Index::build(tools.iter().map(|(n, t)| (n.as_str(), *t)))
    };
    let index = build(&json!({ "description": huge }));
    assert_eq!(index.len(), odd.len() + 2);
    let hits = index.search("flood", 20);
    assert!(hits.len() >= 3 && hits.iter().all(|h| h.score.is_finite() && h.score > 0.0));
    // 12 MB of a word counts exactly as the first MAX_DESCRIPTION bytes of it would.
    let capped = build(&json!({ "description": &huge[..MAX_DESCRIPTION] }));
    assert_eq!(capped.search("flood", 20), hits);
    // A query is read only up to its cap: `flood` lies beyond it here.
    let query = format!("{} flood", "é".repeat(100_000));
    assert_eq!(index.search(&query, 3), []);
    // 8 bytes a word: the query's cap falls between two, so it holds `flood` alone.
    assert_eq!(index.search(&"flood   ".repeat(100_000), 20), hits);
    assert_eq!(index.search(&"A".repeat(1 << 20), 1)[0].name, "bad__t0");
}

#[test]
fn a_shortened_host_name_still_finds_the_tool_by_its_own_name() {
    let tool = json!({"name": "get_pull_request_review_comments", "description": "Lists them"});
    let plain = json!({"name": "echo", "description": "Echoes the text"});
    let index = Index::build([
        ("github__get_pull_request_re_t2mq3w", &tool),
        ("everything__echo", &plain),
    ]);
    assert_eq!(
        names(&index.search("review comments", 5)),
        ["github__get_pull_request_re_t2mq3w"]
    );
    // A name within its host name is not counted twice: with and without it, the same score.
    let with_own = json!({"name": "echo", "description": "Echoes the text"});
    let without = json!({"description": "Echoes the text"});
    let index = Index::build([("a__echo", &with_own), ("b__echo", &without)]);
    let hits = index.search("echo", 5);
    assert_eq!(names(&hits), ["a__echo", "b__echo"]);
    assert_eq!(hits[0].score, hits[1].score);
}
