//! Matching requests against the script's rules: which fault, if any, a request triggers.
//!
//! Each rule counts the requests it matches, whether or not it fired, so `nth` means "the Nth
//! request of this method (and tool)", independent of the other rules. The first rule in script
//! order that fires wins.

use std::sync::Mutex;

use crate::script::{Action, Rule};

#[derive(Debug)]
pub struct Faults {
    rules: Vec<Rule>,
    /// How many requests each rule (by index) has matched so far.
    seen: Mutex<Vec<u64>>,
}

impl Faults {
    pub fn new(rules: Vec<Rule>) -> Faults {
        let seen = Mutex::new(vec![0; rules.len()]);
        Faults { rules, seen }
    }

    /// Counts this request against every rule and returns the action of the first that fires.
    pub fn decide(&self, method: &str, tool: Option<&str>) -> Option<Action> {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let mut chosen = None;
        for (rule, count) in self.rules.iter().zip(seen.iter_mut()) {
            if !matches(rule, method, tool) {
                continue;
            }
            *count += 1;
            if chosen.is_none() && rule.nth.is_none_or(|n| n == *count) {
                chosen = Some(rule.action.clone());
            }
        }
        chosen
    }
}

impl Faults {
    /// The `http_status` of the first rule without `nth` that matches, without counting
    /// the request: what a gateway in front of the server answers before the server
    /// looks at sessions (an auth proxy refuses every request, session or not).
    pub fn gateway(&self, method: &str, tool: Option<&str>) -> Option<Action> {
        self.rules
            .iter()
            .find(|r| {
                r.nth.is_none()
                    && matches!(r.action, Action::HttpStatus(_))
                    && matches(r, method, tool)
            })
            .map(|r| r.action.clone())
    }
}

fn matches(rule: &Rule, method: &str, tool: Option<&str>) -> bool {
    let method_ok = rule.method.as_deref().is_none_or(|m| m == method);
    let tool_ok = rule.tool.is_none() || rule.tool.as_deref() == tool;
    method_ok && tool_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Script;

    /// Feeds `requests` (method, tool) in order; `expect` is the fired action's kind per request.
    fn check(rules: &str, requests: &[(&str, Option<&str>)], expect: &[Option<&str>]) {
        let script = Script::from_json(&format!(r#"{{"rules": {rules}}}"#)).unwrap();
        let faults = Faults::new(script.rules);
        let got: Vec<Option<String>> = requests
            .iter()
            .map(|(m, t)| faults.decide(m, *t).map(|a| kind(&a)))
            .collect();
        let want: Vec<Option<String>> = expect.iter().map(|e| e.map(str::to_owned)).collect();
        assert_eq!(got, want, "rules {rules}");
    }

    fn kind(action: &Action) -> String {
        let debug = format!("{action:?}");
        debug
            .split([' ', '('])
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    const INIT: (&str, Option<&str>) = ("initialize", None);
    const LIST: (&str, Option<&str>) = ("tools/list", None);
    const ECHO: (&str, Option<&str>) = ("tools/call", Some("echo"));
    const ADD: (&str, Option<&str>) = ("tools/call", Some("add"));

    #[test]
    fn rules() {
        check("[]", &[INIT, LIST], &[None, None]);
        // Crash after two requests: the third request of any method.
        check(
            r#"[{"nth": 3, "action": {"kind": "crash"}}]"#,
            &[INIT, LIST, ECHO, ECHO],
            &[None, None, Some("Crash"), None],
        );
        check(
            r#"[{"method": "tools/call", "tool": "add", "action": {"kind": "never_answer"}}]"#,
            &[INIT, ECHO, ADD, ADD],
            &[None, None, Some("NeverAnswer"), Some("NeverAnswer")],
        );
        // nth counts only this rule's matches; later rules still count when an earlier fires.
        check(
            r#"[{"method": "tools/call", "nth": 1, "action": {"kind": "delay", "ms": 1}},
                {"method": "tools/call", "nth": 2, "action": {"kind": "never_answer"}}]"#,
            &[LIST, ECHO, ADD, ECHO],
            &[None, Some("Delay"), Some("NeverAnswer"), None],
        );
        // The first rule in order wins when both fire.
        check(
            r#"[{"method": "tools/list", "action": {"kind": "never_answer"}},
                {"action": {"kind": "crash"}}]"#,
            &[LIST, INIT],
            &[Some("NeverAnswer"), Some("Crash")],
        );
    }
}
