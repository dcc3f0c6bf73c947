//! The log tail: only the end of each file is read, newest files first, and a line the
//! byte limit cut is left out.

use super::{LOG_TAIL_BYTES, read_log_tail};
use std::io::Write;

#[test]
fn only_the_end_of_a_huge_log_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut big = std::fs::File::create(dir.path().join("lifeline-app.log")).unwrap();
    // Three times the limit, in 100-byte lines numbered from 0.
    let line_len = 100u64;
    let lines = 3 * LOG_TAIL_BYTES / line_len;
    for i in 0..lines {
        writeln!(big, "{i:09} {}", "x".repeat(89)).unwrap();
    }
    drop(big);
    let tail = read_log_tail(dir.path(), 1_000_000);
    assert_eq!(tail[0], "==> lifeline-app.log <==");
    let kept = &tail[1..];
    // What fits in the limit, whole lines only, ending with the last one written.
    let whole = usize::try_from(LOG_TAIL_BYTES / line_len).unwrap();
    assert!(
        kept.len() == whole || kept.len() == whole - 1,
        "{} lines",
        kept.len()
    );
    assert!(
        kept.last()
            .unwrap()
            .starts_with(&format!("{:09} ", lines - 1))
    );
    assert!(kept.iter().all(|l| l.len() == 99), "no cut line");
}
