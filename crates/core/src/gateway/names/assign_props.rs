//! Properties of `Names::assign` over arbitrary and adversarial pairs (proptest): separators
//! inside names, case twins, sanitization twins, 200-character names, any Unicode, empty
//! names, leading digits, thousands of pairs. For every host's budget, every name is unique
//! ignoring case, matches `^[A-Za-z][A-Za-z0-9_-]*$`, fits the budget and routes back to its
//! pair; the names do not depend on the order of the pairs, come back the same from the
//! store, and a pair keeps its name when others join. `tests.rs` holds the exact cases.

use super::store::{self, List};
use super::*;
use proptest::prelude::*;
use std::collections::HashSet;
use std::time::SystemTime;

/// One part of a pair (a server's name or a tool's), from the kinds that are hard to name.
fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z]{1,3}",
        2 => "[a-zA-Z_]{0,6}",
        2 => "(a|b|_|__|-|\\.|A|B){0,6}",
        1 => "[0-9][a-z0-9]{0,5}",
        1 => "\\PC{0,12}",
        1 => "[a-z_]{150,220}",
        1 => Just(String::new()),
    ]
}

/// `name` in another case, or with `.`, `-` and `_` swapped: its twins.
fn twins(name: &str) -> [String; 3] {
    let swap = |c: char| match c {
        '_' => '.',
        '.' => '-',
        '-' => '_',
        c => c,
    };
    [
        name.to_ascii_uppercase(),
        name.chars().map(swap).collect(),
        name.replace("__", "_._"),
    ]
}

/// Pairs, each joined by its twins now and then, and a pair split differently at a `__`.
fn pairs(most: usize) -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((part(), part(), 0u8..4), 0..most).prop_map(|raw| {
        let mut out = Vec::new();
        for (server, tool, twin) in raw {
            match twin {
                1 => out.extend(twins(&tool).map(|t| (server.clone(), t))),
                2 => out.extend(twins(&server).map(|s| (s, tool.clone()))),
                // `a`+`b__c` beside `a__b`+`c`.
                3 => out.push((format!("{server}__{tool}"), String::new())),
                _ => {}
            }
            out.push((server, tool));
        }
        out
    })
}

fn sep() -> impl Strategy<Value = Separator> {
    prop_oneof![
        4 => Just(Separator::default()),
        1 => "[A-Za-z0-9_-]{1,3}".prop_map(|s| Separator::try_new(&s).unwrap()),
    ]
}

fn assign(pairs: &[(String, String)], budget: usize, sep: &Separator, kept: &Remembered) -> Names {
    let pairs = pairs.iter().map(|(s, t)| (s.as_str(), t.as_str()));
    Names::assign(pairs, budget, sep, kept)
}

/// Every name valid, unique ignoring case, within `budget`, routing back to its pair.
fn check_names(
    names: &Names,
    pairs: &[(String, String)],
    budget: usize,
) -> Result<(), TestCaseError> {
    let distinct: BTreeSet<&(String, String)> = pairs.iter().collect();
    prop_assert_eq!(names.len(), distinct.len());
    let mut seen = HashSet::new();
    for (server, tool) in distinct {
        let name = names.host_name(server, tool).unwrap();
        prop_assert!(
            name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{:?}",
            name
        );
        prop_assert!(name.len() <= clamp_budget(budget), "{} > {}", name, budget);
        prop_assert_eq!(names.route(name), Some((server.as_str(), tool.as_str())));
        prop_assert!(seen.insert(name.to_ascii_lowercase()), "{} twice", name);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_host_gets_valid_unique_names_within_its_budget(
        pairs in pairs(40),
        sep in sep(),
        entry in "[a-z]{1,12}",
    ) {
        for kind in ClientKind::ALL {
            let budget = kind.name_budget(&entry);
            let names = assign(&pairs, budget, &sep, &Remembered::new());
            check_names(&names, &pairs, budget)?;
        }
        // What the unknown host gets fits every host.
        let strictest = ClientKind::Unknown.name_budget(&entry);
        let names = assign(&pairs, strictest, &sep, &Remembered::new());
        for kind in ClientKind::ALL {
            for e in names.entries() {
                prop_assert!(e.name.len() <= kind.name_budget(&entry), "{} at {}", e.name, kind);
            }
        }
    }

    #[test]
    fn the_order_of_the_pairs_does_not_matter(
        (pairs, shuffled) in pairs(40).prop_flat_map(|p| (Just(p.clone()), Just(p).prop_shuffle())),
        budget in 0usize..80,
        sep in sep(),
    ) {
        let names = assign(&pairs, budget, &sep, &Remembered::new());
        prop_assert_eq!(&names, &assign(&shuffled, budget, &sep, &Remembered::new()));
        let kept = names.remembered();
        prop_assert_eq!(assign(&pairs, budget, &sep, &kept), assign(&shuffled, budget, &sep, &kept));
    }

    #[test]
    fn a_pair_keeps_its_name_when_others_join(
        old in pairs(20),
        new in pairs(20),
        budget in 0usize..80,
        sep in sep(),
    ) {
        let before = assign(&old, budget, &sep, &Remembered::new());
        let all: Vec<(String, String)> = old.iter().chain(&new).cloned().collect();
        let after = assign(&all, budget, &sep, &before.remembered());
        check_names(&after, &all, budget)?;
        for e in before.entries() {
            prop_assert_eq!(after.host_name(&e.server, &e.tool), Some(e.name.as_str()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn names_come_back_the_same_from_the_store(pairs in pairs(40), budget in 0usize..80) {
        let dir = tempfile::tempdir().unwrap();
        let path = store::path_in(dir.path());
        let sep = Separator::default();
        let names = assign(&pairs, budget, &sep, &Remembered::new());
        store::record(&path, List::Tools, &names, SystemTime::UNIX_EPOCH).unwrap();
        let kept = store::load(&path, List::Tools, budget, &sep);
        prop_assert_eq!(&kept, &names.remembered());
        prop_assert_eq!(assign(&pairs, budget, &sep, &kept), names);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn thousands_of_pairs_are_named_apart(pairs in pairs(3_000)) {
        let budget = ClientKind::Unknown.name_budget("lifeline");
        let names = assign(&pairs, budget, &Separator::default(), &Remembered::new());
        check_names(&names, &pairs, budget)?;
    }
}
