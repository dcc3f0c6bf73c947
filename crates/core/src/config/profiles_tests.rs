//! `lifeline.profiles` and `lifeline.separator`, and the server-name clash rule.

use crate::config::tests::{loaded, parse_value};
use crate::config::{DEFAULT_PROFILE, Profile, Tools};
use serde_json::{Value, json};

fn servers() -> Value {
    json!({
        "github": {"url": "https://example.com/mcp"},
        "filesystem": {"command": "npx"},
        "files-extra": {"command": "npx"},
        "memory": {"command": "npx"},
    })
}

fn with(lifeline: Value) -> Value {
    json!({"mcpServers": servers(), "lifeline": lifeline})
}

/// The problems of a config that does not load, as `field: message` lines.
fn refused(v: Value) -> Vec<String> {
    let e = parse_value(&v).expect_err("the config is refused");
    e.problems
        .iter()
        .map(|p| format!("{}: {}", p.field, p.message))
        .collect()
}

#[test]
fn default_is_every_server_and_every_tool_unless_the_file_defines_it() {
    let config = loaded(json!({"mcpServers": servers()}));
    assert_eq!(config.profile_names(), [DEFAULT_PROFILE]);
    let default = config.profile(DEFAULT_PROFILE).unwrap();
    assert_eq!(default, Profile::everything(DEFAULT_PROFILE));
    assert!(default.serves("memory") && default.shows("github", "delete_repo"));
    assert!(config.profile("coding").is_none());

    let config = loaded(with(
        json!({"profiles": {"default": {"servers": ["memory"]}}}),
    ));
    assert_eq!(config.profile_names(), [DEFAULT_PROFILE]);
    let default = config.profile(DEFAULT_PROFILE).unwrap();
    assert!(default.serves("memory") && !default.serves("github"));
}

#[test]
fn a_profile_selects_servers_and_tools_by_glob() {
    let config = loaded(with(json!({"profiles": {
        "coding": {
            "servers": ["github", "file*"],
            "tools": {
                "github": {"exclude": ["delete_*"]},
                "file*": {"include": ["read_*", "list_*"], "exclude": ["*_media*"]},
            },
        },
        "quiet": {"servers": {"exclude": ["memory"]}},
        "big": {"tools": "search"},
    }})));
    assert_eq!(
        config.profile_names(),
        [DEFAULT_PROFILE, "coding", "quiet", "big"]
    );
    let coding = config.profile("coding").unwrap();
    assert!(coding.serves("github") && coding.serves("filesystem") && coding.serves("files-extra"));
    assert!(!coding.serves("memory"));
    assert!(coding.shows("github", "search_code"));
    assert!(!coding.shows("github", "delete_repo"));
    assert!(coding.shows("filesystem", "read_text_file"));
    assert!(
        !coding.shows("filesystem", "read_media_file"),
        "excluded by the second glob"
    );
    assert!(!coding.shows("filesystem", "write_file"), "not included");
    assert!(!coding.search());

    let quiet = config.profile("quiet").unwrap();
    assert!(quiet.serves("github") && !quiet.serves("memory"));
    assert_eq!(config.profile("big").unwrap().tools, Tools::Search);
}

#[test]
fn a_profile_naming_an_unknown_server_or_field_is_refused_with_the_field_named() {
    let problems = refused(with(json!({"profiles": {
        "coding": {"servers": ["github", "gitlab"], "tool": {}},
        "bad name!": {},
        "typed": {"servers": "github", "tools": 3},
        "filters": {"tools": {"jira": {"exclude": ["*"]}, "github": {"only": ["x"]}}},
    }})));
    let all = problems.join("\n");
    for expected in [
        "lifeline.profiles.coding.servers: names `gitlab`, which is not a configured server; \
         the servers are: github, filesystem, files-extra, memory",
        "lifeline.profiles.coding.tool: is not a profile field; a profile has `servers` and `tools`",
        "lifeline.profiles.\"bad name!\": a profile name may contain only letters, digits",
        "lifeline.profiles.typed.servers: expected a list of names or",
        "lifeline.profiles.typed.tools: expected an object",
        "lifeline.profiles.filters.tools: names `jira`, which is not a configured server",
        "lifeline.profiles.filters.tools.github.only: is not a filter field",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in\n{all}");
    }
}

#[test]
fn a_glob_that_matches_no_server_is_allowed() {
    let config = loaded(with(
        json!({"profiles": {"later": {"servers": ["jira-*"]}}}),
    ));
    assert!(!config.profile("later").unwrap().serves("github"));
}

#[test]
fn the_separator_is_checked() {
    assert_eq!(loaded(json!({"mcpServers": {}})).separator.as_str(), "__");
    let config = loaded(json!({"mcpServers": {}, "lifeline": {"separator": "-"}}));
    assert_eq!(config.separator.as_str(), "-");
    for bad in [json!("."), json!(""), json!("____"), json!(2)] {
        let problems = refused(json!({"mcpServers": {}, "lifeline": {"separator": bad}}));
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("lifeline.separator: ")),
            "{bad}: {problems:?}"
        );
    }
}

#[test]
fn servers_that_differ_only_in_case_or_separator_are_refused_naming_both() {
    let problems = refused(json!({"mcpServers": {
        "GitHub": {"command": "a"}, "github": {"command": "b"}, "GITHUB": {"command": "c"},
        "server-everything": {"command": "d"}, "server_everything": {"command": "e"},
    }}));
    let all = problems.join("\n");
    assert_eq!(problems.len(), 3, "{all}");
    assert!(
        all.contains("mcpServers.github: servers `GITHUB` and `github` differ only"),
        "{all}"
    );
    assert!(all.contains("servers `GITHUB` and `GitHub`"), "{all}");
    assert!(
        all.contains("servers `server-everything` and `server_everything`"),
        "{all}"
    );
}
