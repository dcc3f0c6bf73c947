use super::*;
use crate::gateway::names::MIN_BUDGET;
use std::time::Duration;

const DAY: u64 = 86_400;

fn on_day(day: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(day * DAY + 3_600)
}

fn names(pairs: &[(&str, &str)], budget: usize, remembered: &Remembered) -> Names {
    Names::assign(
        pairs.iter().copied(),
        budget,
        &Separator::default(),
        remembered,
    )
}

fn load_tools(path: &Path, budget: usize) -> Remembered {
    load(path, List::Tools, budget, &Separator::default())
}

#[test]
fn names_come_back_the_same_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    assert!(load_tools(&path, 49).is_empty(), "no file: nothing kept");

    // `a__b`+`c` first, then `a`+`b__c` joins: the first keeps its whole name.
    let first = names(&[("a__b", "c"), ("s", "x")], 49, &Remembered::new());
    record(&path, List::Tools, &first, on_day(20_000)).unwrap();
    let pairs = [("a", "b__c"), ("a__b", "c"), ("s", "x")];
    let later = names(&pairs, 49, &load_tools(&path, 49));
    assert_eq!(later.host_name("a__b", "c"), Some("a__b__c"));
    record(&path, List::Tools, &later, on_day(20_001)).unwrap();
    assert_eq!(names(&pairs, 49, &load_tools(&path, 49)), later);

    // Each list, budget and separator has its own table.
    assert!(load(&path, List::Prompts, 49, &Separator::default()).is_empty());
    assert!(load_tools(&path, 46).is_empty());
    let dash = Separator::try_new("-").unwrap();
    assert!(load(&path, List::Tools, 49, &dash).is_empty());
    assert_eq!(
        load_tools(&path, 0),
        load_tools(&path, MIN_BUDGET),
        "clamped alike"
    );
}

#[cfg(unix)]
#[test]
fn the_file_is_its_owners_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new").join(FILE_NAME);
    let n = names(&[("s", "x")], 49, &Remembered::new());
    record(&path, List::Tools, &n, on_day(1)).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
}

#[test]
fn a_file_that_is_not_a_names_file_is_a_fresh_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    for bad in [
        &b"{ not json"[..],
        b"[]",
        b"{\"version\": 2, \"tables\": {}}",
        b"{\"version\": 1, \"tables\": {\"tools 49 __\": [{\"server\": 1}]}}",
        b"\xff\xfe",
    ] {
        std::fs::write(&path, bad).unwrap();
        assert!(load_tools(&path, 49).is_empty());
        let n = names(&[("s", "x")], 49, &Remembered::new());
        record(&path, List::Tools, &n, on_day(1)).unwrap();
        assert_eq!(load_tools(&path, 49), n.remembered(), "rewritten whole");
    }
}

#[test]
fn a_file_that_cannot_be_read_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the file should be: unreadable, and never replaced.
    let path = path_in(dir.path());
    std::fs::create_dir(&path).unwrap();
    assert!(load_tools(&path, 49).is_empty());
    let n = names(&[("s", "x")], 49, &Remembered::new());
    assert!(record(&path, List::Tools, &n, on_day(1)).is_err());
    assert!(path.is_dir());
}

#[cfg(unix)]
#[test]
fn a_file_others_may_write_is_not_believed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    let n = names(&[("s", "x")], 49, &Remembered::new());
    record(&path, List::Tools, &n, on_day(1)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert!(load_tools(&path, 49).is_empty());
    let e = record(&path, List::Tools, &n, on_day(2)).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
}

fn table(file: &File, key: &str) -> Vec<(String, String, u64)> {
    file.tables.get(key).map_or_else(Vec::new, |t| {
        t.iter()
            .map(|k| (k.tool.clone(), k.name.clone(), k.seen))
            .collect()
    })
}

#[test]
fn an_unchanged_day_writes_nothing() {
    let mut file = File::default();
    let n = names(&[("s", "x")], 49, &Remembered::new());
    assert!(update(&mut file, "tools 49 __", &n, 7, MAX_ENTRIES));
    assert!(!update(&mut file, "tools 49 __", &n, 7, MAX_ENTRIES));
    assert!(update(&mut file, "tools 49 __", &n, 8, MAX_ENTRIES));
    assert_eq!(
        table(&file, "tools 49 __"),
        [("x".to_owned(), "s__x".to_owned(), 8)]
    );
}

#[test]
fn a_pair_gone_for_90_days_is_forgotten() {
    let key = "tools 49 __";
    let mut file = File::default();
    update(
        &mut file,
        key,
        &names(&[("s", "old")], 49, &Remembered::new()),
        100,
        MAX_ENTRIES,
    );
    let now = names(&[("s", "new")], 49, &Remembered::new());
    update(&mut file, key, &now, 190, MAX_ENTRIES);
    assert_eq!(table(&file, key).len(), 2, "90 days: still kept");
    update(&mut file, key, &now, 191, MAX_ENTRIES);
    assert_eq!(
        table(&file, key),
        [("new".to_owned(), "s__new".to_owned(), 191)]
    );
    // Other tables age the same way, and an empty one goes.
    update(&mut file, "prompts 49 __", &now, 191, MAX_ENTRIES);
    update(
        &mut file,
        key,
        &names(&[], 49, &Remembered::new()),
        300,
        MAX_ENTRIES,
    );
    assert!(file.tables.is_empty());
}

#[test]
fn past_the_cap_the_least_recently_seen_go() {
    let key = "tools 49 __";
    let mut file = File::default();
    for (day, tool) in [(10, "a"), (12, "b"), (11, "c")] {
        update(
            &mut file,
            key,
            &names(&[("s", tool)], 49, &Remembered::new()),
            day,
            2,
        );
    }
    let kept: Vec<String> = table(&file, key).into_iter().map(|(t, _, _)| t).collect();
    assert_eq!(kept, ["b", "c"]);
}

#[test]
fn a_pair_that_lost_its_name_is_forgotten() {
    // `s`+`X` held `s__X` and went; `s`+`x` has had `s__x` since: `s`+`X` must not
    // come back to find its old name kept for it.
    let key = "tools 49 __";
    let mut file = File::default();
    update(
        &mut file,
        key,
        &names(&[("s", "X")], 49, &Remembered::new()),
        1,
        MAX_ENTRIES,
    );
    update(
        &mut file,
        key,
        &names(&[("s", "x")], 49, &Remembered::new()),
        2,
        MAX_ENTRIES,
    );
    assert_eq!(table(&file, key), [("x".to_owned(), "s__x".to_owned(), 2)]);
}

#[test]
fn days_are_counted_in_utc_from_1970() {
    assert_eq!(day(SystemTime::UNIX_EPOCH), 0);
    assert_eq!(day(on_day(20_424)), 20_424);
    assert_eq!(day(SystemTime::UNIX_EPOCH - Duration::from_secs(5)), 0);
}
