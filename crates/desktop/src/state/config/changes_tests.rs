//! The Profiles view's switch on the file's JSON: which key it writes, what it keeps, what
//! it takes out again, and what it refuses (with the core's own check of the result).

use super::*;
use serde_json::json;

/// The story's servers, with `lifeline` as given.
fn file(lifeline: Value) -> Value {
    let mut file = json!({"mcpServers": {
        "github": {"url": "https://github.example.com/mcp"},
        "fs": {"command": "fs-mcp"}
    }, "x-notes": "kept"});
    if !lifeline.is_null() {
        file["lifeline"] = lifeline;
    }
    file
}

/// The switch of `tool` of `server` in `profile` set to `shown` on `before`: the file after
/// (checked by the core), or the error's message.
fn switch(
    before: &Value,
    profile: &str,
    server: &str,
    tool: &str,
    shown: bool,
) -> Result<Value, String> {
    let config = config::from_value(before.clone(), None, &|_| None).expect("the file loads");
    let mut after = before.clone();
    set_tool_shown(&mut after, &config, profile, server, tool, shown).map_err(|e| e.message)?;
    let path = Path::new("/home/ada/.config/lifeline/config.json");
    check(before, &after, path, None, &Redactor::default()).map_err(|e| e.message)?;
    Ok(after)
}

#[test]
fn turning_a_tool_off_in_default_adds_default_to_a_file_without_profiles() {
    let after = switch(
        &file(Value::Null),
        "default",
        "github",
        "delete_repo",
        false,
    )
    .unwrap();
    assert_eq!(
        after,
        file(json!({"profiles": {"default": {"tools": {"github": {"exclude": ["delete_repo"]}}}}}))
    );
    // Every other key stays where it was.
    let keys: Vec<&String> = after.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["mcpServers", "x-notes", "lifeline"]);
}

#[test]
fn turning_it_on_again_takes_out_what_the_switch_left_empty() {
    let before = file(json!({"serve": {"enabled": true}}));
    let off = switch(&before, "default", "fs", "write", false).unwrap();
    let on = switch(&off, "default", "fs", "write", true).unwrap();
    assert_eq!(
        on,
        file(json!({"serve": {"enabled": true}, "profiles": {"default": {}}}))
    );
}

#[test]
fn the_exact_name_joins_and_leaves_the_servers_own_filter() {
    let coding = |tools: Value| {
        file(json!({"profiles": {"coding": {"servers": ["github", "fs"], "tools": tools}}}))
    };
    let before = coding(json!({"github": {"exclude": ["delete_*"]}, "fs": ["read_*", "write"]}));
    let cases = [
        // (server, tool, shown) -> its filter after
        (
            ("github", "create_issue", false),
            json!({"exclude": ["delete_*", "create_issue"]}),
        ),
        // A list is the names to include: written out, with the exclude beside it.
        (
            ("fs", "write", false),
            json!({"include": ["read_*", "write"], "exclude": ["write"]}),
        ),
    ];
    for ((server, tool, shown), filter) in cases {
        let after = switch(&before, "coding", server, tool, shown).unwrap();
        let got = &after["lifeline"]["profiles"]["coding"]["tools"][server];
        assert_eq!(got, &filter, "{server} {tool} {shown}");
    }
    // Already as asked: the file does not change (check then saves nothing).
    let same = switch(&before, "coding", "github", "delete_repo", false).unwrap();
    assert_eq!(same, before);
}

#[test]
fn what_the_switch_cannot_do_is_refused_with_why() {
    let before = file(json!({"profiles": {
        "coding": {"tools": {"github": {"exclude": ["delete_*", "fork"]}, "f*": {"include": ["read"]}}},
        "everything": {"tools": "search"}
    }}));
    let cases = [
        (
            ("coding", "github", "delete_repo", true),
            "`delete_*` in `lifeline.profiles.coding.tools.github.exclude` leaves it out",
        ),
        (
            ("coding", "fs", "write", true),
            "`lifeline.profiles.coding.tools.f*.include` does not name it",
        ),
        (("coding", "fs", "a*b", false), "its name has `*` or `?`"),
        (("everything", "fs", "read", false), "search mode"),
        (
            ("nope", "fs", "read", false),
            "there is no profile `nope` (the profiles: default, coding, everything)",
        ),
        (
            ("coding", "gitlab", "read", false),
            "there is no server named `gitlab`",
        ),
    ];
    for ((profile, server, tool, shown), want) in cases {
        let got = switch(&before, profile, server, tool, shown).unwrap_err();
        assert!(
            got.contains(want),
            "{profile} {server} {tool} {shown}: {got}"
        );
    }
    // The exact name is the switch's: that one turns on.
    let on = switch(&before, "coding", "github", "fork", true).unwrap();
    assert_eq!(
        on["lifeline"]["profiles"]["coding"]["tools"]["github"],
        json!({"exclude": ["delete_*"]})
    );
}

#[test]
fn a_file_whose_keys_are_not_objects_is_refused_untouched() {
    let before = file(json!({"profiles": {"coding": {"tools": {"fs": {"exclude": "write"}}}}}));
    // The core refuses such a file before the switch could read it.
    assert!(config::from_value(before, None, &|_| None).is_err());
    let mut raw =
        json!({"mcpServers": {"fs": {"command": "fs-mcp"}}, "lifeline": {"profiles": []}});
    let config = config::parse(
        r#"{"mcpServers": {"fs": {"command": "fs-mcp"}}}"#,
        None,
        &|_| None,
    )
    .unwrap();
    let refused = set_tool_shown(&mut raw, &config, "default", "fs", "write", false).unwrap_err();
    assert_eq!(
        refused.message,
        "`lifeline.profiles` in the file is not an object; fix the file first."
    );
}
