//! What changed between two configs, server by server: the plan for applying an edit to a
//! running fleet without touching the servers that stayed the same. Pure: no I/O.

use super::types::Config;

/// Server names sorted by what happened to them between `old` and `new`. A server is
/// `changed` when anything in its entry differs once loaded (transport, secrets, `disabled`,
/// policy, including the global defaults it inherits); keys Lifeline ignores change
/// nothing. `added`, `changed` and `unchanged` follow `new`'s order, `removed` `old`'s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
    pub unchanged: Vec<String>,
}

impl ConfigDiff {
    /// True when applying the diff would start or stop nothing (an order change or a
    /// comment in an unknown key is not a change).
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// Compares two loaded configs by server name.
pub fn diff(old: &Config, new: &Config) -> ConfigDiff {
    let mut out = ConfigDiff::default();
    for server in &new.servers {
        match old.server(&server.name) {
            None => out.added.push(server.name.clone()),
            Some(before) if before == server => out.unchanged.push(server.name.clone()),
            Some(_) => out.changed.push(server.name.clone()),
        }
    }
    out.removed = old
        .servers
        .iter()
        .filter(|s| new.server(&s.name).is_none())
        .map(|s| s.name.clone())
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    fn config(text: &str) -> Config {
        let lookup = |name: &str| (name == "TOKEN").then(|| "t0ken-value".to_owned());
        parse(text, None, &lookup).expect("valid")
    }

    /// `(added, removed, changed, unchanged)` from `old` to `new`.
    fn check(old: &str, new: &str, expect: [&[&str]; 4]) {
        let d = diff(&config(old), &config(new));
        let got = [&d.added, &d.removed, &d.changed, &d.unchanged];
        for (g, e) in got.iter().zip(expect) {
            assert_eq!(g.as_slice(), e, "{old} -> {new}: {d:?}");
        }
        assert_eq!(d.is_empty(), expect[..3].iter().all(|e| e.is_empty()));
    }

    const AB: &str =
        r#"{"mcpServers": {"a": {"command": "x"}, "b": {"url": "http://127.0.0.1:1/mcp"}}}"#;

    #[test]
    fn servers_are_sorted_by_what_happened_to_them() {
        check(AB, AB, [&[], &[], &[], &["a", "b"]]);
        check(r#"{"mcpServers": {}}"#, AB, [&["a", "b"], &[], &[], &[]]);
        check(AB, r#"{"mcpServers": {}}"#, [&[], &["a", "b"], &[], &[]]);
        check(
            AB,
            r#"{"mcpServers": {"c": {"command": "y"}, "a": {"command": "x", "args": ["1"]}}}"#,
            [&["c"], &["b"], &["a"], &[]],
        );
    }

    #[test]
    fn any_difference_in_a_servers_entry_is_a_change() {
        let a = |entry: &str| format!(r#"{{"mcpServers": {{"a": {entry}}}}}"#);
        let base = a(r#"{"command": "x"}"#);
        for other in [
            r#"{"command": "y"}"#,
            r#"{"command": "x", "env": {"K": "v"}}"#,
            r#"{"command": "x", "cwd": "/tmp"}"#,
            r#"{"command": "x", "disabled": true}"#,
            r#"{"command": "x", "maxConcurrentCalls": 2}"#,
            r#"{"command": "x", "args": ["${env:TOKEN}"]}"#,
        ] {
            check(&base, &a(other), [&[], &[], &["a"], &[]]);
        }
        let global =
            r#"{"mcpServers": {"a": {"command": "x"}}, "lifeline": {"maxConcurrentCalls": 2}}"#;
        check(&base, global, [&[], &[], &["a"], &[]]);
    }

    #[test]
    fn unknown_keys_and_order_change_nothing() {
        check(
            AB,
            r#"{"x-note": 1, "mcpServers": {"b": {"url": "http://127.0.0.1:1/mcp", "x-mine": true}, "a": {"command": "x"}}}"#,
            [&[], &[], &[], &["b", "a"]],
        );
    }
}
