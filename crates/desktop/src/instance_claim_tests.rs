use super::*;
use std::sync::mpsc;

fn refuse_all() -> OnAttach {
    Arc::new(|_| Box::pin(async { Err((Refusal::Unknown, "none here".into())) }))
}

fn ignore_lines() -> OnLine {
    Arc::new(|_, _| Box::pin(async {}))
}

#[test]
fn a_second_instance_asks_the_first_to_show_itself_and_does_not_run() {
    let _runtime = crate::test_support::runtime().enter();
    let dir = tempfile::tempdir().unwrap();
    let Claim::First(guard) = claim(dir.path()) else {
        panic!("the first claim must win");
    };
    let (shown_tx, shown) = mpsc::channel();
    guard.serve(
        move || shown_tx.send(()).unwrap(),
        refuse_all(),
        ignore_lines(),
    );
    match claim(dir.path()) {
        Claim::Running { shown, dir: d } => {
            assert!(shown);
            assert_eq!(d, dir.path());
        }
        Claim::First(_) => panic!("a second claim must find the first"),
    }
    shown
        .recv_timeout(Duration::from_secs(10))
        .expect("the first instance was asked to show");
}

#[test]
fn a_first_line_over_the_cap_is_refused_and_reaches_no_handler() {
    let _runtime = crate::test_support::runtime().enter();
    let dir = tempfile::tempdir().unwrap();
    let Claim::First(guard) = claim(dir.path()) else {
        panic!("the first claim must win");
    };
    let (seen_tx, seen) = mpsc::channel();
    let on_line: OnLine = Arc::new(move |line: String, _| {
        let _ = seen_tx.send(line.len());
        Box::pin(async {})
    });
    guard.serve(|| {}, refuse_all(), on_line);
    crate::test_support::block_on(async {
        use tokio::io::AsyncReadExt;
        let mut stream = local_socket::connect(dir.path()).await.expect("it listens");
        // Whole, the line would be read and handed on; the guard stops at the cap
        // and hangs up, so the rest of the write may fail.
        let mut long = vec![b'x'; FIRST_LINE_MAX + 1];
        long.push(b'\n');
        let _ = stream.write_all(&long).await;
        let mut rest = Vec::new();
        let closed = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest));
        assert!(
            closed.await.is_ok(),
            "the guard did not close the connection"
        );
    });
    // A handler would have been called before the connection closed.
    assert_eq!(
        seen.try_recv().ok(),
        None,
        "a line over the cap reached a handler"
    );
}

#[cfg(unix)]
#[test]
fn the_directory_lock_and_socket_are_private() {
    let _runtime = crate::test_support::runtime().enter();
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("lifeline");
    let Claim::First(_guard) = claim(&dir) else {
        panic!("the first claim must win");
    };
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("app.lock")), 0o600);
    assert_eq!(mode(&dir.join("app.sock")), 0o600);
}

/// `LIFELINE_HISTORY` in a directory another user could write: the app does not listen
/// there (their socket could take its place), and its own socket's directory is new,
/// private and of a name nobody could have guessed and made first.
#[cfg(unix)]
#[test]
fn a_directory_others_may_write_is_not_listened_in_and_the_fallback_is_unguessable() {
    use std::os::unix::fs::PermissionsExt;
    let _runtime = crate::test_support::runtime().enter();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let Claim::First(guard) = claim(&dir) else {
        panic!("nothing runs there");
    };
    assert!(
        guard.listener.is_none(),
        "no listener in a shared directory"
    );
    assert!(!dir.join("app.sock").exists());
    let (guard, own) = endpoint(Some(guard), Some(dir.clone()));
    assert!(guard.listener.is_some());
    let own = own.expect("a socket directory of its own");
    let name = own.file_name().unwrap().to_string_lossy().into_owned();
    let hex = name.strip_prefix("lifeline-app-").expect("its prefix");
    assert!(
        hex.len() == 16 && hex.chars().all(|c| c.is_ascii_hexdigit()),
        "{name}"
    );
    assert_eq!(own.parent(), Some(std::env::temp_dir().as_path()));
    let mode = std::fs::metadata(&own).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    drop(guard);
    let _ = std::fs::remove_dir_all(&own);
}

#[cfg(unix)]
#[test]
fn a_socket_left_by_a_crashed_instance_does_not_stop_the_next() {
    let _runtime = crate::test_support::runtime().enter();
    let dir = tempfile::tempdir().unwrap();
    // A crash leaves the socket file; the lock went with the process.
    drop(std::os::unix::net::UnixListener::bind(dir.path().join("app.sock")).unwrap());
    assert!(dir.path().join("app.sock").exists());
    let Claim::First(guard) = claim(dir.path()) else {
        panic!("a stale socket is not a running instance");
    };
    assert!(guard.listener.is_some(), "it listens again");
}
