use super::*;

#[test]
fn the_login_shells_entries_come_first_without_repeats() {
    let cases = [
        (
            "/opt/homebrew/bin:/usr/bin",
            "/usr/bin:/bin",
            "/opt/homebrew/bin:/usr/bin:/bin",
        ),
        ("/a::/b", "", "/a:/b"),
        ("", "/usr/bin", "/usr/bin"),
        ("/usr/bin:/usr/bin", "/usr/bin", "/usr/bin"),
    ];
    for (login, current, expect) in cases {
        assert_eq!(
            merge(login, current),
            expect,
            "merge({login:?}, {current:?})"
        );
    }
}

#[test]
fn the_path_is_read_between_markers_whatever_a_profile_prints() {
    let noisy = format!("Welcome!\nnvm: using node 22\n\n{START}/x/bin:/usr/bin{END}\nbye\n");
    assert_eq!(extract(&noisy).as_deref(), Some("/x/bin:/usr/bin"));
    assert_eq!(extract("no markers at all"), None);
    assert_eq!(extract(&format!("{START}{END}")), None);
    assert_eq!(
        extract(&format!("{START}/a")),
        None,
        "an unfinished line is not a PATH"
    );
}

#[cfg(unix)]
mod with_real_shells {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn script(dir: &Path, name: &str, body: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.display().to_string()
    }

    #[test]
    fn bash_as_a_login_shell_reads_the_profile_that_sets_path() {
        if !Path::new("/bin/bash").exists() {
            panic!("this test needs /bin/bash (Debian's bash package)");
        }
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(".bash_profile"),
            "echo 'a profile that talks'\nexport PATH=/lifeline-login-test/bin:$PATH\n",
        )
        .unwrap();
        // `ask` runs the shell with Lifeline's environment; HOME picks the profile.
        let sh = script(
            home.path(),
            "shell",
            &format!("HOME={} exec /bin/bash \"$@\"", home.path().display()),
        );
        let path = ask(&sh, Duration::from_secs(20)).expect("bash printed its PATH");
        assert!(
            path.starts_with("/lifeline-login-test/bin:"),
            "the profile's entry comes first: {path}"
        );
    }

    #[test]
    fn a_shell_that_hangs_is_given_up_on_and_killed() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let sh = script(
            dir.path(),
            "shell",
            &format!("echo $$ > {}; exec sleep 600", pid_file.display()),
        );
        assert_eq!(ask(&sh, Duration::from_millis(300)), None);
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Signal 0 only asks whether the process exists.
        let alive = rustix::process::Pid::from_raw(pid)
            .is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
        assert!(!alive, "the hung shell {pid} was killed and reaped");
    }

    #[test]
    fn a_shell_that_fails_or_prints_no_path_gives_none() {
        let dir = tempfile::tempdir().unwrap();
        let failing = script(dir.path(), "failing", "exit 3");
        assert_eq!(ask(&failing, Duration::from_secs(20)), None);
        assert_eq!(ask("/no/such/shell", Duration::from_secs(20)), None);
    }
}
