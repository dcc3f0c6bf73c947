//! The naming scheme, case by case: what each pair is called, why, and how it routes back.
//! `assign_props.rs` holds the properties over arbitrary pairs.

use super::*;

fn sep() -> Separator {
    Separator::default()
}

fn assign(pairs: &[(&str, &str)], budget: usize) -> Names {
    Names::assign(pairs.iter().copied(), budget, &sep(), &Remembered::new())
}

/// Checks that each pair of `pairs` is named as `expect` says, and routes back.
fn check(pairs: &[(&str, &str)], budget: usize, expect: &[(&str, &str, &str, Change)]) {
    let names = assign(pairs, budget);
    for (server, tool, name, change) in expect {
        let entry = names.entry(server, tool).unwrap();
        assert_eq!(entry.name, *name, "{server}/{tool}");
        assert_eq!(entry.change, *change, "{server}/{tool}");
        assert_eq!(names.route(name), Some((*server, *tool)));
    }
}

fn taken(server: &str, tool: &str) -> Change {
    Change::Shortened(Why::Taken {
        server: server.to_owned(),
        tool: tool.to_owned(),
    })
}

#[test]
fn a_pair_is_server_separator_tool() {
    check(
        &[("github", "search_code"), ("time", "now")],
        49,
        &[
            ("github", "search_code", "github__search_code", Change::None),
            ("time", "now", "time__now", Change::None),
        ],
    );
    let dash = Separator::try_new("-").unwrap();
    let names = Names::assign([("a", "b")], 49, &dash, &Remembered::new());
    assert_eq!(names.host_name("a", "b"), Some("a-b"));
}

#[test]
fn a_separator_is_one_to_three_name_characters() {
    for ok in ["_", "__", "___", "-", "x1", "-_-"] {
        assert_eq!(Separator::try_new(ok).unwrap().as_str(), ok);
    }
    for bad in ["", "____", ".", "a.b", "é", " ", "/"] {
        let e = Separator::try_new(bad).unwrap_err().to_string();
        assert!(
            e.contains("1 to 3") && e.contains(&format!("{bad:?}")),
            "{e}"
        );
    }
    let long = "x".repeat(1000);
    let e = Separator::try_new(&long).unwrap_err().to_string();
    assert!(e.len() < 150, "the value is cut: {e}");
}

#[test]
fn other_characters_become_underscores_and_a_name_starts_with_a_letter() {
    check(
        &[
            ("fs", "read.file"),
            ("fs", "écrire"),
            ("1password", "get"),
            ("", "x"),
            ("_srv", "y"),
        ],
        49,
        &[
            ("fs", "read.file", "fs__read_file", Change::Sanitized),
            ("fs", "écrire", "fs___crire", Change::Sanitized),
            ("1password", "get", "t1password__get", Change::Sanitized),
            ("", "x", "t__x", Change::Sanitized),
            ("_srv", "y", "t_srv__y", Change::Sanitized),
        ],
    );
}

#[test]
fn separators_inside_names_never_make_two_pairs_one_name() {
    // Both read `a__b__c` whole; the first in byte order keeps it.
    check(
        &[("a__b", "c"), ("a", "b__c")],
        49,
        &[
            ("a", "b__c", "a__b__c", Change::None),
            ("a__b", "c", "a__b__c_vetqbt", taken("a", "b__c")),
        ],
    );
}

#[test]
fn case_twins_and_sanitization_twins_are_told_apart() {
    check(
        &[("s", "Search"), ("s", "search")],
        49,
        &[
            ("s", "Search", "s__Search", Change::None),
            ("s", "search", "s__search_rsocqf", taken("s", "Search")),
        ],
    );
    // The name that needed no change keeps it, whatever the byte order says.
    check(
        &[("s", "a.b"), ("s", "a_b")],
        49,
        &[
            ("s", "a_b", "s__a_b", Change::None),
            ("s", "a.b", "s__a_b_ib7i4x", taken("s", "a_b")),
        ],
    );
}

#[test]
fn a_long_name_is_cut_with_its_hash_at_the_end() {
    let tool = format!("get_{}", "x".repeat(196));
    let names = assign(&[("github", &tool)], 49);
    let entry = names.entry("github", &tool).unwrap();
    assert_eq!(
        entry.name,
        "github__get_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_t2mq3w"
    );
    assert_eq!(entry.name.len(), 49);
    let too_long = Why::TooLong {
        len: 208,
        budget: 49,
    };
    assert_eq!(entry.change, Change::Shortened(too_long));
    assert_eq!(names.route(&entry.name), Some(("github", tool.as_str())));

    // A long server gives way to the tool: it keeps max(8, room / 3) characters.
    let server = "s".repeat(60);
    let names = assign(&[(&server, "list_issues")], 46);
    assert_eq!(
        names.host_name(&server, "list_issues").unwrap(),
        "sssssssssssss__list_issues_giekjb"
    );
}

#[test]
fn the_budget_is_kept_within_what_the_scheme_works_with() {
    let tool = "t".repeat(100);
    for (budget, len) in [
        (0, MIN_BUDGET),
        (5, MIN_BUDGET),
        (30, 30),
        (1000, MAX_BUDGET),
    ] {
        let names = assign(&[("s", &tool)], budget);
        assert_eq!(names.budget(), len);
        assert_eq!(names.host_name("s", &tool).unwrap().len(), len, "{budget}");
    }
}

#[test]
fn a_taken_hash_is_lengthened_then_counted() {
    let (s, t) = ("server", "tool");
    let whole = Whole::of(s, t, &sep());
    let hash = pair_hash(s, t);
    let mut taken = Taken::default();
    let first = free_short(s, t, &whole, 16, &sep(), &taken);
    assert_eq!(first, short(&whole, &hash, 6, None, 16, &sep()));
    assert_eq!(first.len(), 16);
    taken.take(&first.to_ascii_uppercase(), 99);
    let second = free_short(s, t, &whole, 16, &sep(), &taken);
    assert_eq!(second, short(&whole, &hash, 8, None, 16, &sep()));
    for len in [8, 10, 12, 14] {
        taken.take(&short(&whole, &hash, len, None, 16, &sep()), 99);
    }
    let counted = free_short(s, t, &whole, 16, &sep(), &taken);
    assert_eq!(counted, format!("server_{}_2", &hash[..6]));
    assert!(is_derived(s, t, &whole, &counted, 16, &sep()));
    taken.take(&counted, 99);
    let next = free_short(s, t, &whole, 16, &sep(), &taken);
    assert_eq!(next, format!("server_{}_3", &hash[..6]));
}

#[test]
fn base32_is_rfc_4648_in_lowercase() {
    for (input, expect) in [
        ("", ""),
        ("f", "my"),
        ("fo", "mzxq"),
        ("foo", "mzxw6"),
        ("foob", "mzxw6yq"),
        ("fooba", "mzxw6ytb"),
        ("foobar", "mzxw6ytboi"),
    ] {
        assert_eq!(base32(input.as_bytes()), expect);
    }
    assert_eq!(pair_hash("a", "b").len(), HASH_CHARS);
}

#[test]
fn routing_is_by_the_map_and_ignores_case() {
    let names = assign(&[("a", "b__c"), ("a__b", "c")], 49);
    assert_eq!(names.route("a__b__c"), Some(("a", "b__c")));
    assert_eq!(names.route("A__B__C"), Some(("a", "b__c")));
    assert_eq!(names.route("a__b__c_vetqbt"), Some(("a__b", "c")));
    assert_eq!(names.route("a__b"), None);
    assert_eq!(names.route(""), None);
    assert_eq!(names.host_name("a", "nope"), None);
}

#[test]
fn a_remembered_name_is_kept_when_the_scheme_gives_it() {
    // `a__b`+`c` held `a__b__c` on an earlier run, before `a`+`b__c` existed.
    let first = assign(&[("a__b", "c")], 49);
    assert_eq!(first.host_name("a__b", "c"), Some("a__b__c"));
    let both = [("a", "b__c"), ("a__b", "c")];
    let names = Names::assign(both, 49, &sep(), &first.remembered());
    assert_eq!(names.host_name("a__b", "c"), Some("a__b__c"));
    let late = names.entry("a", "b__c").unwrap();
    assert_eq!(late.change, taken("a__b", "c"));

    // Once the other went away, the shortened name stays, and says why.
    let again = Names::assign([("a", "b__c")], 49, &sep(), &names.remembered());
    let entry = again.entry("a", "b__c").unwrap();
    assert_eq!(entry.name, late.name);
    assert_eq!(entry.change, Change::Shortened(Why::Remembered));
}

#[test]
fn a_remembered_name_the_scheme_would_not_give_is_ignored() {
    let pairs = [("github", "read_file"), ("github", "delete_repo")];
    let mut planted = Remembered::new();
    for (pair, name) in [
        (("github", "delete_repo"), "github__read_file"),
        (("github", "read_file"), "github__read_file_aaaaaa"),
        (("github", "nothing"), "github__nothing_at_all"),
    ] {
        planted.insert((pair.0.to_owned(), pair.1.to_owned()), name.to_owned());
    }
    let names = Names::assign(pairs, 49, &sep(), &planted);
    assert_eq!(names, assign(&pairs, 49));
    assert_eq!(
        names.host_name("github", "read_file"),
        Some("github__read_file")
    );

    // Over the budget: a name kept for a roomier host is not this one's.
    let tool = "x".repeat(45);
    let roomy = assign(&[("s", &tool)], 64);
    let tight = Names::assign([("s", tool.as_str())], 46, &sep(), &roomy.remembered());
    assert_eq!(tight, assign(&[("s", &tool)], 46));
}

#[test]
fn two_pairs_remembering_one_name_keep_it_for_the_first() {
    let mut remembered = Remembered::new();
    for tool in ["Search", "search"] {
        let key = ("s".to_owned(), tool.to_owned());
        remembered.insert(key, format!("s__{tool}"));
    }
    let names = Names::assign([("s", "search"), ("s", "Search")], 49, &sep(), &remembered);
    assert_eq!(names.host_name("s", "Search"), Some("s__Search"));
    assert_eq!(names.host_name("s", "search"), Some("s__search_rsocqf"));
}

#[test]
fn duplicates_count_once_and_order_does_not_matter() {
    let names = assign(&[("b", "x"), ("a", "y"), ("b", "x")], 49);
    assert_eq!(names.len(), 2);
    assert_eq!(names, assign(&[("a", "y"), ("b", "x")], 49));
    let order: Vec<&str> = names.entries().iter().map(|e| e.server.as_str()).collect();
    assert_eq!(order, ["a", "b"]);
    assert!(assign(&[], 49).is_empty());
}

#[test]
fn servers_differing_only_in_case_or_separator_clash() {
    let clashes = server_clashes(["a.b", "github", "A_b", "a-b", "time", "git-hub"]);
    let pairs: Vec<(&str, &str)> = clashes
        .iter()
        .map(|c| (c.first.as_str(), c.second.as_str()))
        .collect();
    assert_eq!(pairs, [("A_b", "a-b"), ("A_b", "a.b")]);
    let message = clashes[0].to_string();
    assert!(
        message.contains("`A_b`") && message.contains("`a-b`") && message.contains("rename"),
        "{message}"
    );
    assert!(server_clashes(["github", "gitlab", "a.b", "ab", "a"]).is_empty());
    assert_eq!(fold_server("My.Server-x_y"), "my_server_x_y");
}
