//! Reaping a crashed run's servers with real processes: the leftovers die, a live run's
//! servers and a reused pid are never touched.

use super::*;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// A `sleep` leading its own group, as a stdio server does.
fn server() -> Child {
    Command::new("sleep")
        .arg("60")
        .process_group(0)
        .spawn()
        .expect("spawning sleep")
}

fn pid_of(c: &Child) -> i32 {
    i32::try_from(c.id()).unwrap()
}

fn start_of(pid: i32) -> u64 {
    proc_info(pid).expect("a live process").proc.start
}

/// The live process `pid` as a runs file records it.
fn live(pid: i32) -> Proc {
    Proc {
        pid,
        start: start_of(pid),
    }
}

/// This test process: a running Lifeline, as far as a runs file tells.
fn me() -> i32 {
    i32::try_from(std::process::id()).unwrap()
}

/// The owner of a crashed run: a pid that no process has now (a child that was started and
/// reaped).
fn dead_owner() -> Proc {
    let mut c = Command::new("true").spawn().unwrap();
    c.wait().unwrap();
    Proc {
        pid: pid_of(&c),
        start: 1,
    }
}

fn write_run(dir: &Path, owner: Proc, children: &[Proc]) -> PathBuf {
    let session = proc_info(me()).unwrap().session;
    let mut text = format!(
        "boot {}\nowner {} {}\nsession {session}\n",
        boot_id(),
        owner.pid,
        owner.start
    );
    for c in children {
        text.push_str(&format!("child {} {}\n", c.pid, c.start));
    }
    let path = dir.join(format!("{}.run", owner.pid));
    std::fs::write(&path, text).unwrap();
    path
}

/// Waits (bounded by the test harness's own timeout) for `child` to end, killed by SIGKILL.
fn assert_killed(child: &mut Child) {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        child.wait().unwrap().signal(),
        Some(rustix::process::Signal::KILL.as_raw())
    );
}

#[test]
fn a_crashed_runs_servers_are_killed_with_their_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut leader = server();
    let pid = pid_of(&leader);
    let file = write_run(dir.path(), dead_owner(), &[live(pid)]);
    let reaped = reap(dir.path());
    assert_eq!(reaped.killed, [pid]);
    assert_killed(&mut leader);
    assert!(!file.exists(), "a reaped run's file is removed");
}

/// A run killed between filling its runs file's temporary and renaming it (the fsync makes
/// that window wide) recorded its servers only there: they are reaped all the same, and the
/// temporary is removed. A live run's temporary, still being filled, is left alone.
#[test]
fn a_run_killed_before_its_rename_is_reaped_from_the_temporary() {
    let dir = tempfile::tempdir().unwrap();
    let mut leader = server();
    let pid = pid_of(&leader);
    let dead_owner = dead_owner();
    let written = write_run(dir.path(), dead_owner, &[live(pid)]);
    let tmp = dir.path().join(format!(
        ".{}.run.{}.0.a9ca5e02.tmp",
        dead_owner.pid, dead_owner.pid
    ));
    std::fs::rename(&written, &tmp).unwrap();
    let me = me();
    let running = write_run(dir.path(), live(me), &[]);
    let live_tmp = dir.path().join(format!(".{me}.run.{me}.1.0b1c2d3e.tmp"));
    std::fs::rename(&running, &live_tmp).unwrap();
    let reaped = reap(dir.path());
    assert_eq!(reaped.killed, [pid]);
    assert_killed(&mut leader);
    assert!(!tmp.exists(), "a reaped run's temporary is removed");
    assert!(
        live_tmp.exists(),
        "a live run's temporary is left to its writer"
    );
}

#[test]
fn a_reused_pid_is_never_killed() {
    let dir = tempfile::tempdir().unwrap();
    let mut stranger = server();
    let pid = pid_of(&stranger);
    let owner = dead_owner();
    // The recorded server had this pid but started at another time: a reused pid.
    write_run(
        dir.path(),
        owner,
        &[Proc {
            pid,
            start: start_of(pid) + 1,
        }],
    );
    assert_eq!(reap(dir.path()), Reaped::default());
    assert!(proc_info(pid).is_some(), "the stranger still runs");
    stranger.kill().unwrap();
    stranger.wait().unwrap();
}

#[test]
fn a_running_lifelines_servers_are_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let mut mine = server();
    let pid = pid_of(&mine);
    let file = write_run(dir.path(), live(me()), &[live(pid)]);
    assert_eq!(reap(dir.path()), Reaped::default());
    assert!(file.exists());
    assert!(proc_info(pid).is_some());
    mine.kill().unwrap();
    mine.wait().unwrap();
}

#[test]
fn a_gone_servers_group_is_reaped_only_in_its_session_and_after_its_start() {
    // The leader (a shell) starts a grandchild in its group, prints its pid and exits once
    // its start time is read (it waits on stdin until then: a shell that exited at once
    // would be a zombie before we saw it); the grandchild stays, as a server's worker does
    // after the parent-death signal took it.
    let mut shell = Command::new("sh")
        .args(["-c", "sleep 60 >/dev/null & echo $!; read _"])
        .process_group(0)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let leader = pid_of(&shell);
    let mut out = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(shell.stdout.take().unwrap())
        .read_line(&mut out)
        .unwrap();
    let leader_start = start_of(leader);
    drop(shell.stdin.take());
    shell.wait().unwrap();
    let grandchild: i32 = out.trim().parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let owner = dead_owner();
    let recorded = Proc {
        pid: leader,
        start: leader_start,
    };
    write_run(dir.path(), owner, &[recorded]);
    assert_eq!(reap(dir.path()).killed, [grandchild]);
    ended(grandchild);
    assert!(proc_info(grandchild).is_none(), "{grandchild} is gone");
}

/// Waits, at most 10 s, for `pid` to end. Not our child, so through a pidfd: it becomes
/// readable once the process exited.
fn ended(pid: i32) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::process::{Pid, PidfdFlags, pidfd_open};
    let fd = match pidfd_open(Pid::from_raw(pid).expect("a pid"), PidfdFlags::empty()) {
        Ok(fd) => fd,
        // Already ended and reaped.
        Err(e) if e == rustix::io::Errno::SRCH => return,
        Err(e) => panic!("pidfd_open({pid}): {e}"),
    };
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let bound = Timespec {
        tv_sec: 10,
        tv_nsec: 0,
    };
    let ready = poll(&mut fds, Some(&bound)).expect("polling the pidfd");
    assert_eq!(ready, 1, "the killed process {pid} ended within 10 s");
}

#[test]
fn run_files_read_back_and_stat_fields_count_past_the_name() {
    let run = parse("boot b-1\nowner 10 20\nsession 7\nchild 11 21\nchild 12 22\n").unwrap();
    assert_eq!(
        run,
        RunFile {
            boot: "b-1".into(),
            owner: Proc { pid: 10, start: 20 },
            session: 7,
            children: vec![Proc { pid: 11, start: 21 }, Proc { pid: 12, start: 22 }],
        }
    );
    assert_eq!(parse("owner 10 20\n"), None);
    assert_eq!(parse("boot b\nowner 10 x\nsession 1\n"), None);
    let stat = "42 (a) b) c) S 1 40 41 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0";
    let info = parse_stat(42, stat).unwrap();
    assert_eq!(
        (info.group, info.session, info.proc.start),
        (40, 41, 987654)
    );
    assert!(
        parse_stat(42, "42 (z) Z 1 40 41").is_none(),
        "a zombie is not running"
    );
}

/// A runs file names processes to kill; one another user could have written or changed is
/// never acted on: in a directory others may write, or itself writable by others, or (as
/// root, who can make it so) owned by another user.
#[test]
fn a_crashed_run_that_another_user_could_have_written_is_not_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let chmod = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let root = rustix::process::geteuid().is_root();
    let mut cases: Vec<(&str, u32, u32, bool)> = vec![
        // (what, the directory's mode, the file's mode, chown the file to nobody)
        ("a directory others may write", 0o777, 0o600, false),
        ("a directory its group may write", 0o770, 0o600, false),
        ("a file others may write", 0o700, 0o666, false),
    ];
    if root {
        cases.push(("another user's file", 0o700, 0o600, true));
    }
    for (what, dir_mode, file_mode, chown) in cases {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("runs");
        std::fs::create_dir(&dir).unwrap();
        let mut victim = server();
        let pid = pid_of(&victim);
        let file = write_run(&dir, dead_owner(), &[live(pid)]);
        chmod(&file, file_mode);
        if chown {
            std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        }
        chmod(&dir, dir_mode);
        assert_eq!(reap(&dir).killed, Vec::<i32>::new(), "{what}");
        assert!(is_running(live(pid)));
        assert!(file.exists(), "{what}: the file is left for its owner");
        victim.kill().unwrap();
        victim.wait().unwrap();
    }
}
