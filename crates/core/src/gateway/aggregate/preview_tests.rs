//! What a host would be shown, worked out without a session.

use super::{estimate_tokens, preview};
use crate::config::{DEFAULT_PROFILE, Profile, Selection, Separator, Tools};
use crate::gateway::names::{ClientKind, Remembered};
use crate::protocol::mcp::Tool;
use serde_json::json;

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({
        "name": name,
        "description": format!("Does {name}."),
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }))
    .unwrap()
}

fn servers() -> Vec<(String, Vec<Tool>)> {
    vec![
        (
            "github".into(),
            (0..30).map(|i| tool(&format!("tool_{i:02}"))).collect(),
        ),
        (
            "a-server-name-long-enough-to-be-cut-for-cursor".into(),
            vec![tool("read_file")],
        ),
        (
            "memory".into(),
            vec![tool("read_graph"), tool("delete_entities")],
        ),
    ]
}

#[test]
fn every_tool_is_shown_under_the_hosts_name_with_its_cost() {
    let p = preview(
        &Profile::everything(DEFAULT_PROFILE),
        &Separator::default(),
        ClientKind::Cursor,
        "lifeline",
        &servers(),
        &Remembered::new(),
    );
    assert_eq!(p.client, "cursor");
    assert_eq!(p.tools.len(), 33);
    assert_eq!(p.listed, 33);
    assert!(p.tools.iter().all(|t| t.shown));
    let github = &p.tools[0];
    assert_eq!(github.name.as_deref(), Some("github__tool_00"));
    assert_eq!(github.changed, None);
    let long = p.tools.iter().find(|t| t.tool == "read_file").unwrap();
    let name = long.name.as_deref().unwrap();
    assert!(name.len() <= p.budget, "{name} fits {}", p.budget);
    assert!(
        long.changed
            .as_deref()
            .unwrap()
            .starts_with("shortened: the whole name has"),
        "{long:?}"
    );
    assert_eq!(p.tokens, p.full_tokens);
    assert!(p.tokens > 33 * 20, "{}", p.tokens);
    assert_eq!(p.limit, Some(40));
    assert_eq!(p.over_limit, None, "33 tools is under Cursor's 40");
}

#[test]
fn filters_hide_tools_and_the_hosts_limit_is_named_when_passed() {
    let coding = Profile {
        name: "coding".into(),
        servers: Selection::default(),
        tools: Tools::List(vec![(
            "memory".into(),
            Selection {
                include: vec![],
                exclude: vec!["delete_*".into()],
            },
        )]),
    };
    let mut many = servers();
    many[0].1 = (0..130).map(|i| tool(&format!("tool_{i:03}"))).collect();
    let p = preview(
        &coding,
        &Separator::default(),
        ClientKind::VsCode,
        "lifeline",
        &many,
        &Remembered::new(),
    );
    let delete = p
        .tools
        .iter()
        .find(|t| t.tool == "delete_entities")
        .unwrap();
    assert!(!delete.shown && delete.name.is_none());
    assert_eq!(p.listed, 132);
    let over = p.over_limit.as_deref().unwrap();
    assert!(
        over.starts_with("132 tools is over the 128 vscode handles"),
        "{over}"
    );
}

#[test]
fn search_mode_lists_three_tools_for_a_fraction_of_the_tokens() {
    let lean = Profile {
        name: "lean".into(),
        servers: Selection::default(),
        tools: Tools::Search,
    };
    let mut many = servers();
    many[0].1 = (0..300).map(|i| tool(&format!("tool_{i:03}"))).collect();
    let p = preview(
        &lean,
        &Separator::default(),
        ClientKind::Unknown,
        "lifeline",
        &many,
        &Remembered::new(),
    );
    assert!(p.search);
    assert_eq!(p.listed, 3);
    assert!(p.tools.iter().all(|t| t.shown), "every tool can be found");
    assert!(
        p.tokens * 20 < p.full_tokens,
        "{} vs {}",
        p.tokens,
        p.full_tokens
    );
    assert_eq!(p.over_limit, None);
}

#[test]
fn tokens_are_the_bytes_over_four_rounded_up() {
    assert_eq!(estimate_tokens(&json!("abcdef")), 2);
    assert_eq!(estimate_tokens(&json!({})), 1);
}
