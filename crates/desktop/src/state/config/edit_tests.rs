use super::*;
use serde_json::json;

#[test]
fn values_are_masked_unless_they_are_only_references() {
    for (value, shown) in [
        ("", ""),
        ("hunter2", "***"),
        ("${env:TOKEN}", "${env:TOKEN}"),
        ("Bearer ${GITHUB_TOKEN}", "Bearer ${GITHUB_TOKEN}"),
        ("Bearer abc${env:X}", "***"),
        ("${unclosed", "***"),
        ("${A}:${B}", "***"),
    ] {
        assert_eq!(masked_value(value), shown, "{value}");
    }
}

#[test]
fn urls_hide_userinfo_and_query_values() {
    for (url, shown) in [
        ("https://h.example/mcp", "https://h.example/mcp"),
        (
            "https://u:p@h.example:8443/mcp",
            "https://***@h.example:8443/mcp",
        ),
        (
            "https://h/mcp?key=s3cret&v=2",
            "https://h/mcp?key=***&v=***",
        ),
        (
            "https://h/mcp?key=${env:K}#top",
            "https://h/mcp?key=${env:K}#top",
        ),
        ("https://h/a@b", "https://h/a@b"),
        (
            "https://h/mcp/Zk3xQ9mB7vR2tW5yL8nP4cD6/sse",
            "https://h/mcp/***/sse",
        ),
    ] {
        assert_eq!(masked_url(url), shown, "{url}");
    }
}

const STORED: &str = "canary-stored-9f2";

fn old() -> Value {
    json!({
        "x-note": "mine",
        "command": "npx",
        "args": ["-y", "pkg"],
        "env": {"TOKEN": STORED, "REF": "${env:HOME}"},
        "maxConcurrentCalls": 2
    })
}

#[test]
fn a_form_round_trip_keeps_secrets_policy_and_unknown_keys() {
    let form = form_of("gh", &old());
    assert!(!serde_json::to_string(&form).unwrap().contains(STORED));
    assert_eq!(form.env[0].value, "***");
    assert_eq!(form.env[1].value, "${env:HOME}");
    let same = entry_from(&form, Some(&old())).unwrap();
    // Same keys, same values, same order.
    assert_eq!(same.to_string(), old().to_string());

    let mut edited = form.clone();
    edited.disabled = true;
    edited.args.push("--verbose".into());
    edited.env[0].value = "new-value".into();
    let entry = entry_from(&edited, Some(&old())).unwrap();
    assert_eq!(
        entry,
        json!({
            "x-note": "mine",
            "command": "npx",
            "args": ["-y", "pkg", "--verbose"],
            "env": {"TOKEN": "new-value", "REF": "${env:HOME}"},
            "maxConcurrentCalls": 2,
            "disabled": true
        })
    );
}

#[test]
fn switching_to_http_drops_the_stdio_fields_and_keeps_a_masked_url() {
    let mut form = form_of("gh", &old());
    form.transport = "http".into();
    form.url = "https://u:pw@h.example/mcp?k=v".into();
    form.headers = vec![KeyValue {
        key: "Authorization".into(),
        value: "Bearer x".into(),
    }];
    let entry = entry_from(&form, Some(&old())).unwrap();
    assert_eq!(
        entry,
        json!({"x-note": "mine", "maxConcurrentCalls": 2,
               "url": "https://u:pw@h.example/mcp?k=v",
               "headers": {"Authorization": "Bearer x"}})
    );
    let shown = form_of("gh", &entry);
    assert_eq!(shown.url, "https://***@h.example/mcp?k=***");
    assert_eq!(entry_from(&shown, Some(&entry)).unwrap(), entry);
}

#[test]
fn fields_that_cannot_be_saved_are_named() {
    let check = |form: ServerForm, expect: &[&str]| {
        let errors = entry_from(&form, Some(&old())).unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, expect);
    };
    let mut form = form_of("gh", &old());
    form.command = " ".into();
    form.env.push(KeyValue {
        key: "NEW".into(),
        value: "***".into(),
    });
    form.env.push(KeyValue {
        key: "TOKEN".into(),
        value: "again".into(),
    });
    check(form, &["command", "env.NEW", "env.TOKEN"]);
    let mut form = form_of("gh", &old());
    form.transport = "sse".into();
    form.url = "https://***@h/mcp".into();
    check(form.clone(), &["url"]);
    form.transport = "grpc".into();
    check(form, &["transport"]);
}

#[test]
fn problems_inside_the_server_are_relative_to_its_entry() {
    assert_eq!(relative("mcpServers.gh.env.TOKEN", Some("gh")), "env.TOKEN");
    assert_eq!(relative("mcpServers.gh", Some("gh")), "");
    assert_eq!(relative("mcpServers.\"a b\".url", Some("a b")), "url");
    assert_eq!(
        relative("mcpServers.other.url", Some("gh")),
        "mcpServers.other.url"
    );
    assert_eq!(relative("lifeline.x", None), "lifeline.x");
}
