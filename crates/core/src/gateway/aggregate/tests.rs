//! The aggregated endpoint's pure parts; sessions over real servers are in lifeline-it
//! (`tests/tests/it/aggregate.rs`).

use super::cap;
use super::lists::uris_to_host;
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
fn instructions_past_the_cap_are_cut_on_a_character_and_say_so() {
    let text = "é".repeat(10);
    let cut = cap(text, 5);
    assert!(cut.starts_with("éé"), "{cut}");
    assert!(!cut.starts_with("ééé"), "{cut}");
    assert!(cut.ends_with("[the servers' instructions were cut here]"));
    assert_eq!(cap("short".to_owned(), 5), "short");
}
