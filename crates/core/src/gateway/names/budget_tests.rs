use super::*;

fn check_info(name: &str, expect: ClientKind) {
    assert_eq!(ClientKind::from_client_info(name), expect, "{name:?}");
}

#[test]
fn a_host_is_known_by_the_name_it_gives() {
    use ClientKind::*;
    for (name, kind) in [
        ("claude-code", ClaudeCode),
        ("claude-ai", ClaudeDesktop),
        ("Claude-AI", ClaudeDesktop),
        ("cursor-vscode", Cursor),
        ("Cursor", Cursor),
        ("Visual Studio Code", VsCode),
        ("Visual-Studio-Code", VsCode),
        ("Visual Studio Code - Insiders", VsCode),
        ("vscode-copilot", VsCode),
        ("codex-mcp-client", Codex),
        ("Codex", Codex),
        ("gemini-cli-mcp-client", Gemini),
        ("windsurf-client", Windsurf),
        ("Windsurf", Windsurf),
        ("  claude-code  ", ClaudeCode),
        ("mcp-inspector", Unknown),
        ("claude", Unknown),
        ("", Unknown),
        ("\u{0}\u{ffff}", Unknown),
    ] {
        check_info(name, kind);
    }
}

#[test]
fn a_client_info_name_of_any_length_is_safe() {
    // Only the first 256 bytes count, cut on a character boundary.
    let long = format!("{}claude-code", "é".repeat(200));
    check_info(&long, ClientKind::Unknown);
    let early = format!("claude-code{}", "é".repeat(100_000));
    check_info(&early, ClientKind::ClaudeCode);
    for n in 250..260 {
        check_info(&"é".repeat(n), ClientKind::Unknown);
        check_info(&format!("x{}", "€".repeat(n)), ClientKind::Unknown);
    }
}

#[test]
fn an_explicit_kind_is_its_name_or_a_common_spelling() {
    for kind in ClientKind::ALL {
        assert_eq!(kind.as_str().parse::<ClientKind>(), Ok(kind));
        assert_eq!(kind.as_str().to_uppercase().parse::<ClientKind>(), Ok(kind));
        assert_eq!(kind.to_string(), kind.as_str());
    }
    for (alias, kind) in [
        ("claude", ClientKind::ClaudeCode),
        ("vs-code", ClientKind::VsCode),
        ("Visual-Studio-Code", ClientKind::VsCode),
        ("gemini-cli", ClientKind::Gemini),
    ] {
        assert_eq!(alias.parse::<ClientKind>(), Ok(kind));
    }
    let e = "emacs".parse::<ClientKind>().unwrap_err().to_string();
    assert!(
        e.starts_with("\"emacs\" is not a client kind") && e.contains("vscode"),
        "{e}"
    );
    let e = "x"
        .repeat(500)
        .parse::<ClientKind>()
        .unwrap_err()
        .to_string();
    assert!(e.len() < 200, "{e}");
}

#[test]
fn each_host_gets_its_budget_for_the_entry_name() {
    use ClientKind::*;
    for (kind, lifeline, long_entry) in [
        (ClaudeCode, 49, 27),
        (ClaudeDesktop, 49, 27),
        (Codex, 49, 27),
        (Cursor, 51, 29),
        (VsCode, 46, 46),
        (Gemini, 53, 31),
        (Windsurf, 46, 27),
        (Unknown, 46, 27),
    ] {
        assert_eq!(kind.name_budget("lifeline"), lifeline, "{kind}");
        assert_eq!(kind.name_budget(&"e".repeat(30)), long_entry, "{kind}");
        assert_eq!(
            kind.name_budget(&"e".repeat(100)),
            if kind == VsCode { 46 } else { 0 },
            "a budget never goes below nothing: {kind}"
        );
    }
}

#[test]
fn the_unknown_budget_fits_every_host() {
    for len in 0..70 {
        let entry = "e".repeat(len);
        let unknown = ClientKind::Unknown.name_budget(&entry);
        for kind in ClientKind::ALL {
            assert!(unknown <= kind.name_budget(&entry), "{kind} with {len}");
        }
    }
}

#[test]
fn tool_count_limits_are_the_known_ones() {
    let max = |k: ClientKind| k.tool_limit().map(|l| l.max);
    assert_eq!(max(ClientKind::VsCode), Some(128));
    assert_eq!(
        ClientKind::VsCode.tool_limit().unwrap().over,
        OverLimit::RequestFails
    );
    assert_eq!(max(ClientKind::Cursor), Some(40));
    assert_eq!(max(ClientKind::Windsurf), Some(100));
    assert_eq!(max(ClientKind::Unknown), Some(40));
    assert_eq!(max(ClientKind::ClaudeCode), None);
    let strictest = ClientKind::ALL.iter().filter_map(|k| max(*k)).min();
    assert_eq!(strictest, max(ClientKind::Unknown));
}

#[test]
fn each_client_is_the_host_kind_of_its_name() {
    use crate::config::clients::Client;
    for client in Client::ALL {
        assert_eq!(ClientKind::of_client(client).as_str(), client.id());
    }
}

#[test]
fn an_entry_names_its_tools_for_its_client_unless_it_says_another() {
    use crate::config::clients::Client;
    use crate::config::clients::profile::Endpoint;
    let entry = |kind: Option<&str>| Endpoint {
        field: "mcpServers.lifeline".to_owned(),
        profile: "default".to_owned(),
        kind: kind.map(str::to_owned),
        entry: "lifeline".to_owned(),
    };
    assert_eq!(
        ClientKind::of_entry(&entry(None), Client::Cursor),
        ClientKind::Cursor
    );
    assert_eq!(
        ClientKind::of_entry(&entry(Some("codex")), Client::Cursor),
        ClientKind::Codex
    );
    assert_eq!(
        ClientKind::of_entry(&entry(Some("nonsense")), Client::VsCode),
        ClientKind::VsCode
    );
}
