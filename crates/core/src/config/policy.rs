//! Reading `reconnect`, `timeouts`, `maxConcurrentCalls` and `trust` from the global `lifeline` block
//! or a server entry, over a base policy (built-in defaults for the global block, the global
//! policy for a server), field by field. Each number is checked against its bound; the rules
//! between fields (`maxDelayMs ≥ initialDelayMs`, quarantine cooldowns that never decrease)
//! are checked on the merged result and reported at the field this block set.

use super::error::Problem;
use super::types::{ServerPolicy, Trust};
use super::validate::{
    self, ATTEMPTS, Bound, CONCURRENCY, DELAY, ESTABLISH, PING_INTERVAL, PING_TIMEOUT, QUARANTINE,
    REQUEST, join,
};
use serde_json::{Map, Value};
use std::time::Duration;

/// The policy a block describes, over `base`. Problems are recorded; a bad field keeps
/// the base value so the rest can still be checked.
pub(crate) fn parse(
    block: &Map<String, Value>,
    base: &ServerPolicy,
    path: &str,
    problems: &mut Vec<Problem>,
) -> ServerPolicy {
    let mut policy = base.clone();
    if let Some(v) = block.get("reconnect") {
        let field = join(path, "reconnect");
        if let Some(o) = validate::object(v, &field, problems) {
            reconnect(o, &mut policy, &field, problems);
        }
    }
    if let Some(v) = block.get("timeouts") {
        let field = join(path, "timeouts");
        if let Some(o) = validate::object(v, &field, problems) {
            timeouts(o, &mut policy, &field, problems);
        }
    }
    if let Some(v) = block.get("maxConcurrentCalls") {
        let field = join(path, "maxConcurrentCalls");
        if let Some(n) = validate::integer(v, &field, CONCURRENCY, problems) {
            policy.max_concurrent_calls = n as u32;
        }
    }
    if let Some(v) = block.get("trust") {
        let field = join(path, "trust");
        match v.as_str() {
            Some("pin") => policy.trust = Trust::Pin,
            Some("off") => policy.trust = Trust::Off,
            _ => problems.push(
                Problem::new(
                    field,
                    "must be \"pin\" (hosts see only approved tool definitions) or \"off\"",
                )
                .with_value(v.as_str().map_or_else(|| v.to_string(), str::to_owned)),
            ),
        }
    }
    policy
}

fn ms(
    o: &Map<String, Value>,
    key: &str,
    path: &str,
    bound: Bound,
    problems: &mut Vec<Problem>,
) -> Option<Duration> {
    let v = o.get(key)?;
    validate::integer(v, &join(path, key), bound, problems).map(Duration::from_millis)
}

fn reconnect(
    o: &Map<String, Value>,
    policy: &mut ServerPolicy,
    path: &str,
    problems: &mut Vec<Problem>,
) {
    let r = &mut policy.reconnect;
    if let Some(v) = o.get("enabled")
        && let Some(b) = validate::boolean(v, &join(path, "enabled"), problems)
    {
        r.enabled = b;
    }
    let initial = ms(o, "initialDelayMs", path, DELAY, problems);
    let max = ms(o, "maxDelayMs", path, DELAY, problems);
    r.initial_delay = initial.unwrap_or(r.initial_delay);
    r.max_delay = max.unwrap_or(r.max_delay);
    if r.max_delay < r.initial_delay {
        let (i, m) = (r.initial_delay.as_millis(), r.max_delay.as_millis());
        if max.is_some() {
            problems.push(
                Problem::new(
                    join(path, "maxDelayMs"),
                    format!("must be at least initialDelayMs ({i} ms)"),
                )
                .with_value(m),
            );
        } else if initial.is_some() {
            problems.push(
                Problem::new(
                    join(path, "initialDelayMs"),
                    format!("must be at most maxDelayMs ({m} ms, inherited); raise maxDelayMs too"),
                )
                .with_value(i),
            );
        }
    }
    if let Some(v) = o.get("maxAttempts")
        && let Some(n) = validate::integer(v, &join(path, "maxAttempts"), ATTEMPTS, problems)
    {
        r.max_attempts = n as u32;
    }
    if let Some(v) = o.get("quarantineMs")
        && let Some(q) = quarantine(v, &join(path, "quarantineMs"), problems)
    {
        r.quarantine = q;
    }
}

fn quarantine(v: &Value, field: &str, problems: &mut Vec<Problem>) -> Option<[Duration; 3]> {
    let items = validate::array(v, field, problems)?;
    if items.len() != 3 {
        problems.push(Problem::new(
            field,
            format!(
                "must have exactly 3 values (the cooldowns of levels 1, 2 and 3), found {}",
                items.len()
            ),
        ));
        return None;
    }
    let before = problems.len();
    let ms: Vec<u64> = items
        .iter()
        .enumerate()
        .filter_map(|(i, v)| validate::integer(v, &format!("{field}[{i}]"), QUARANTINE, problems))
        .collect();
    if problems.len() > before {
        return None;
    }
    if ms.windows(2).any(|w| w[1] < w[0]) {
        problems.push(
            Problem::new(
                field,
                "must not decrease: each level's cooldown is at least the one before",
            )
            .with_value(format!("[{}, {}, {}]", ms[0], ms[1], ms[2])),
        );
        return None;
    }
    Some([ms[0], ms[1], ms[2]].map(Duration::from_millis))
}

fn timeouts(
    o: &Map<String, Value>,
    policy: &mut ServerPolicy,
    path: &str,
    problems: &mut Vec<Problem>,
) {
    let t = &mut policy.timeouts;
    if let Some(d) = ms(o, "establishMs", path, ESTABLISH, problems) {
        t.establish = d;
    }
    if let Some(d) = ms(o, "requestMs", path, REQUEST, problems) {
        t.request = d;
    }
    if let Some(d) = ms(o, "pingIntervalMs", path, PING_INTERVAL, problems) {
        t.ping_interval = (!d.is_zero()).then_some(d);
    }
    if let Some(d) = ms(o, "pingTimeoutMs", path, PING_TIMEOUT, problems) {
        t.ping_timeout = d;
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::{check, loaded};
    use serde_json::{Value, json};
    use std::time::Duration;

    /// `{"mcpServers": {"x": {"command": "a", <block>: {<key>: n}, ...extra}}}`.
    fn server(block: &str, key: &str, n: Value, extra: Value) -> Value {
        let mut entry = json!({ "command": "a" });
        let fields = entry.as_object_mut().expect("object");
        if block.is_empty() {
            fields.insert(key.to_owned(), n);
        } else {
            let mut inner = extra.as_object().cloned().unwrap_or_default();
            inner.insert(key.to_owned(), n);
            fields.insert(block.to_owned(), Value::Object(inner));
        }
        json!({ "mcpServers": { "x": entry } })
    }

    #[test]
    fn every_bound_below_at_and_above() {
        let raise_max = json!({ "maxDelayMs": 3_600_000 });
        let none = json!({});
        // (block, key, lo, hi, unit, fields that keep the other rules satisfied)
        let table: [(&str, &str, u64, u64, &str, &Value); 8] = [
            (
                "reconnect",
                "initialDelayMs",
                1,
                3_600_000,
                " ms",
                &raise_max,
            ),
            (
                "reconnect",
                "maxDelayMs",
                1,
                3_600_000,
                " ms",
                &json!({ "initialDelayMs": 1 }),
            ),
            ("reconnect", "maxAttempts", 1, 1000, "", &none),
            ("timeouts", "establishMs", 1000, 600_000, " ms", &none),
            ("timeouts", "requestMs", 1000, 600_000, " ms", &none),
            ("timeouts", "pingIntervalMs", 1000, 3_600_000, " ms", &none),
            ("timeouts", "pingTimeoutMs", 100, 300_000, " ms", &none),
            ("", "maxConcurrentCalls", 1, 64, "", &none),
        ];
        for (block, key, lo, hi, unit, extra) in table {
            let field = if block.is_empty() {
                format!("mcpServers.x.{key}")
            } else {
                format!("mcpServers.x.{block}.{key}")
            };
            let off = if key == "pingIntervalMs" {
                "0 (off) or "
            } else {
                ""
            };
            let bad = |n: u64| format!("{field} = {n}: must be {off}between {lo} and {hi}{unit}");
            check(
                server(block, key, json!(lo - 1), extra.clone()),
                &[&bad(lo - 1)],
            );
            check(server(block, key, json!(lo), extra.clone()), &[]);
            check(server(block, key, json!(hi), extra.clone()), &[]);
            check(
                server(block, key, json!(hi + 1), extra.clone()),
                &[&bad(hi + 1)],
            );
        }
    }

    #[test]
    fn a_ping_interval_of_zero_turns_pings_off() {
        let c = loaded(server("timeouts", "pingIntervalMs", json!(0), json!({})));
        assert_eq!(c.servers[0].policy.timeouts.ping_interval, None);
    }

    #[test]
    fn trust_pins_by_default_and_is_off_per_server_or_for_all() {
        use crate::config::Trust;
        let c = loaded(json!({ "mcpServers": { "a": { "command": "a" },
            "b": { "command": "b", "trust": "off" } } }));
        assert_eq!(c.servers[0].policy.trust, Trust::Pin);
        assert_eq!(c.servers[1].policy.trust, Trust::Off);
        let c = loaded(json!({ "lifeline": { "trust": "off" }, "mcpServers": {
            "a": { "command": "a" }, "b": { "command": "b", "trust": "pin" } } }));
        assert_eq!(c.servers[0].policy.trust, Trust::Off);
        assert_eq!(c.servers[1].policy.trust, Trust::Pin);
        check(
            json!({ "mcpServers": { "a": { "command": "a", "trust": "always" } } }),
            &[
                "mcpServers.a.trust = always: must be \"pin\" (hosts see only approved tool \
               definitions) or \"off\"",
            ],
        );
        check(
            json!({ "lifeline": { "trust": false }, "mcpServers": {} }),
            &[
                "lifeline.trust = false: must be \"pin\" (hosts see only approved tool \
               definitions) or \"off\"",
            ],
        );
    }

    #[test]
    fn the_same_bounds_hold_in_the_global_block() {
        check(
            json!({ "lifeline": { "timeouts": { "establishMs": 999 } } }),
            &["lifeline.timeouts.establishMs = 999: must be between 1000 and 600000 ms"],
        );
        check(
            json!({ "lifeline": { "maxConcurrentCalls": 0, "reconnect": { "enabled": 1 } } }),
            &[
                "lifeline.reconnect.enabled: expected true or false, found a number",
                "lifeline.maxConcurrentCalls = 0: must be between 1 and 64",
            ],
        );
    }

    #[test]
    fn the_backoff_cap_is_at_least_the_first_delay() {
        let reconnect =
            |r: Value| json!({ "mcpServers": { "x": { "command": "a", "reconnect": r } } });
        check(
            reconnect(json!({ "initialDelayMs": 2000, "maxDelayMs": 2000 })),
            &[],
        );
        check(
            reconnect(json!({ "initialDelayMs": 2001, "maxDelayMs": 2000 })),
            &[
                "mcpServers.x.reconnect.maxDelayMs = 2000: must be at least initialDelayMs (2001 ms)",
            ],
        );
        check(
            reconnect(json!({ "maxDelayMs": 499 })),
            &["mcpServers.x.reconnect.maxDelayMs = 499: must be at least initialDelayMs (500 ms)"],
        );
        check(
            reconnect(json!({ "initialDelayMs": 40000 })),
            &[
                "mcpServers.x.reconnect.initialDelayMs = 40000: must be at most maxDelayMs (30000 ms, \
             inherited); raise maxDelayMs too",
            ],
        );
        // The rule holds against the global block's values too, reported where it is broken.
        check(
            json!({
                "lifeline": { "reconnect": { "maxDelayMs": 1000 } },
                "mcpServers": { "x": { "command": "a", "reconnect": { "initialDelayMs": 1001 } } }
            }),
            &[
                "mcpServers.x.reconnect.initialDelayMs = 1001: must be at most maxDelayMs (1000 \
               ms, inherited); raise maxDelayMs too",
            ],
        );
    }

    #[test]
    fn quarantine_has_three_non_decreasing_cooldowns() {
        let q = |v: Value| json!({ "mcpServers": { "x": { "command": "a", "reconnect": { "quarantineMs": v } } } });
        let field = "mcpServers.x.reconnect.quarantineMs";
        check(q(json!([1, 1, 86_400_000])), &[]);
        check(
            q(json!([1, 2])),
            &[&format!(
                "{field}: must have exactly 3 values (the cooldowns of levels 1, 2 and 3), found 2"
            )],
        );
        check(
            q(json!([1, 2, 3, 4])),
            &[&format!(
                "{field}: must have exactly 3 values (the cooldowns of levels 1, 2 and 3), found 4"
            )],
        );
        check(
            q(json!(30000)),
            &[&format!("{field}: expected an array, found a number")],
        );
        check(
            q(json!([0, 1, 86_400_001])),
            &[
                &format!("{field}[0] = 0: must be between 1 and 86400000 ms"),
                &format!("{field}[2] = 86400001: must be between 1 and 86400000 ms"),
            ],
        );
        check(
            q(json!([60000, 30000, 120000])),
            &[&format!(
                "{field} = [60000, 30000, 120000]: must not decrease: each level's cooldown is at \
             least the one before"
            )],
        );
        let c = loaded(q(json!([10, 20, 30])));
        assert_eq!(
            c.servers[0].policy.reconnect.quarantine,
            [10, 20, 30].map(Duration::from_millis)
        );
    }
}
