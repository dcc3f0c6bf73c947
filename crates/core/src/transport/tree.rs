//! A stdio server's process tree: the server and everything it starts, as one thing that can
//! be asked to stop and be killed.
//!
//! - Unix: the server leads a process group of its own (`process_group(0)`); `terminate`
//!   sends SIGTERM to the group, `kill` SIGKILL. A group id is not reused while the group has
//!   members (POSIX), so `kill_stragglers` signals it only while `killpg(…, 0)` says so.
//! - Windows: the server runs in a Job Object of its own, created with
//!   `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` and without `BREAKAWAY_OK`, so everything the server
//!   starts is in the job too and dies when the job handle closes: when `kill` runs
//!   (`TerminateJobObject`), when the last `Tree` is dropped, and when Lifeline dies in any
//!   way (the kernel closes a dead process's handles). The server is created suspended and
//!   resumed only once it is in the job, so nothing it starts can escape in between. There
//!   is no SIGTERM: `terminate` sends nothing and says so, and shutdown goes from the closed
//!   stdin straight to `kill` (docs/config.md). A killed job's processes exit with
//!   `KILLED_EXIT_CODE`.

use std::io;
use tokio::process::{Child, Command};

/// The exit code of a process killed by `Tree::kill` on Windows (`taskkill /F`'s).
#[cfg(windows)]
pub(super) const KILLED_EXIT_CODE: u32 = 1;

/// One server's process tree (see the module doc). Clones share the tree.
#[derive(Clone)]
pub(super) struct Tree {
    #[cfg(unix)]
    group: i32,
    #[cfg(windows)]
    job: std::sync::Arc<windows::Job>,
}

impl Tree {
    /// Prepares `cmd` so the process it starts can be made a tree's root (`adopt`).
    pub(super) fn prepare(cmd: &mut Command) {
        #[cfg(unix)]
        cmd.process_group(0);
        #[cfg(windows)]
        cmd.creation_flags(windows::CREATE_SUSPENDED);
    }

    /// Makes the tree of a child `prepare`d and just spawned. On Windows this puts the
    /// suspended child in a new job and resumes it; on failure the child is killed and the
    /// error returned.
    pub(super) fn adopt(child: &mut Child) -> io::Result<Tree> {
        #[cfg(unix)]
        {
            let group = child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
            Ok(Tree { group })
        }
        #[cfg(windows)]
        {
            let adopted = windows::Job::adopt(child);
            if adopted.is_err() {
                let _ = child.start_kill();
            }
            Ok(Tree {
                job: std::sync::Arc::new(adopted?),
            })
        }
    }

    /// Asks the tree to stop. True when something was sent (SIGTERM to the group); false on
    /// Windows, which has no such request for console processes.
    pub(super) fn terminate(&self) -> bool {
        #[cfg(unix)]
        {
            signal_group(self.group, Signal::TERM);
            true
        }
        #[cfg(windows)]
        false
    }

    /// Kills every process of the tree at once. Only called while the root has not been
    /// reaped (on Unix its pid, and so the group id, cannot have been reused).
    pub(super) fn kill(&self) {
        #[cfg(unix)]
        signal_group(self.group, Signal::KILL);
        #[cfg(windows)]
        self.job.terminate();
    }

    /// Once the root has exited, whatever it started is an orphan holding our pipes: kill it.
    pub(super) fn kill_stragglers(&self) {
        #[cfg(unix)]
        {
            // Signal 0 only checks that the group still has a member.
            let alive = group_pid(self.group)
                .is_some_and(|g| rustix::process::test_kill_process_group(g).is_ok());
            if alive {
                signal_group(self.group, Signal::KILL);
            }
        }
        #[cfg(windows)]
        self.job.terminate();
    }
}

#[cfg(unix)]
use rustix::process::{Pid, Signal};

/// The group a tree's root leads; none for 0 (a child that had no pid) or below.
#[cfg(unix)]
fn group_pid(group: i32) -> Option<Pid> {
    Pid::from_raw(group).filter(|_| group > 0)
}

#[cfg(unix)]
fn signal_group(group: i32, signal: Signal) {
    if let Some(group) = group_pid(group) {
        // A stale group yields ESRCH, which is the group gone: nothing to do.
        let _ = rustix::process::kill_process_group(group, signal);
    }
}

#[cfg(windows)]
mod windows {
    //! The Job Object, through windows-sys (the version already in the tree via tokio/mio).

    use std::io;
    use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
    use tokio::process::Child;
    use windows_sys::Win32::Foundation::{HANDLE, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
    };
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
        SetInformationJobObject, TerminateJobObject,
    };
    use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};

    pub(super) use windows_sys::Win32::System::Threading::CREATE_SUSPENDED;

    /// A job whose processes all die when it closes.
    pub(super) struct Job(OwnedHandle);

    impl Job {
        /// A new kill-on-close job holding `child` (created suspended), which is then resumed.
        pub(super) fn adopt(child: &Child) -> io::Result<Job> {
            let job = Job::new()?;
            let process = child
                .raw_handle()
                .ok_or_else(|| io::Error::other("the process has already exited"))?;
            // SAFETY: both handles are valid for the call: the job is owned, the process
            // handle is the child's, which is not reaped while we hold `child`.
            if unsafe { AssignProcessToJobObject(job.raw(), process as HANDLE) } == 0 {
                return Err(io::Error::last_os_error());
            }
            let pid = child
                .id()
                .ok_or_else(|| io::Error::other("the process has already exited"))?;
            resume(pid)?;
            Ok(job)
        }

        fn new() -> io::Result<Job> {
            // SAFETY: null attributes and name: an unnamed job with a non-inheritable handle.
            let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
            if raw.is_null() {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `raw` is a fresh handle owned by nobody else.
            let job = Job(unsafe { OwnedHandle::from_raw_handle(raw) });
            // SAFETY: an all-zero JOBOBJECT_EXTENDED_LIMIT_INFORMATION is valid (no limits).
            let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            // SAFETY: the pointer and size describe `limits`, which outlives the call.
            let set = unsafe {
                SetInformationJobObject(
                    job.raw(),
                    JobObjectExtendedLimitInformation,
                    std::ptr::from_ref(&limits).cast(),
                    u32::try_from(std::mem::size_of_val(&limits)).unwrap_or(u32::MAX),
                )
            };
            if set == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(job)
        }

        fn raw(&self) -> HANDLE {
            self.0.as_raw_handle() as HANDLE
        }

        /// Kills every process in the job (nothing when it is empty).
        pub(super) fn terminate(&self) {
            // SAFETY: the job handle is owned and valid.
            unsafe {
                TerminateJobObject(self.raw(), super::KILLED_EXIT_CODE);
            }
        }
    }

    /// Resumes the threads of a process created suspended (its one main thread). std does
    /// not hand out the thread handle CreateProcess returned, so it is found by a snapshot.
    fn resume(pid: u32) -> io::Result<()> {
        // SAFETY: a snapshot of every thread; the handle is owned below.
        let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
        if snapshot == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a valid handle owned by nobody else.
        let snapshot = unsafe { OwnedHandle::from_raw_handle(snapshot) };
        // SAFETY: all-zero is a valid THREADENTRY32; dwSize is set before use.
        let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
        entry.dwSize = u32::try_from(std::mem::size_of::<THREADENTRY32>()).unwrap_or(0);
        let mut resumed = 0;
        // SAFETY: the snapshot handle is valid and `entry` is a properly sized buffer.
        let mut more = unsafe { Thread32First(snapshot.as_raw_handle() as HANDLE, &mut entry) };
        while more != 0 {
            if entry.th32OwnerProcessID == pid {
                // SAFETY: OpenThread has no memory-safety preconditions.
                let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
                if !thread.is_null() {
                    // SAFETY: a fresh handle owned by nobody else.
                    let thread = unsafe { OwnedHandle::from_raw_handle(thread) };
                    // SAFETY: a valid thread handle with THREAD_SUSPEND_RESUME access.
                    if unsafe { ResumeThread(thread.as_raw_handle() as HANDLE) } != u32::MAX {
                        resumed += 1;
                    }
                }
            }
            // SAFETY: as for Thread32First.
            more = unsafe { Thread32Next(snapshot.as_raw_handle() as HANDLE, &mut entry) };
        }
        if resumed == 0 {
            return Err(io::Error::other(
                "could not resume the server's main thread",
            ));
        }
        Ok(())
    }
}

/// The job with real processes: a server that starts a grandchild, and the grandchild gone
/// once the tree is killed or its last handle closes (as when Lifeline dies). The Unix twin
/// (process groups) is the integration tests' `stdio::shutdown`.
#[cfg(all(test, windows))]
mod tests {
    use super::*;
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, BufReader};
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, PROCESS_SYNCHRONIZE, WaitForSingleObject,
    };

    /// Tells `helper` what to be: `parent` starts a `sleeper` and prints its pid.
    const ROLE: &str = "LIFELINE_TREE_TEST_ROLE";

    /// A no-op in a normal run; the processes of the tree when this test binary is started
    /// with `ROLE` set. Both block on their stdin (the test's pipe, never written) instead
    /// of sleeping.
    #[test]
    fn helper() {
        use std::io::Read;
        match std::env::var(ROLE).as_deref() {
            Ok("parent") => {
                let mut child = std::process::Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", "transport::tree::tests::helper", "--nocapture"])
                    .env(ROLE, "sleeper")
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap();
                println!("grandchild {}", child.id());
                let _ = child.wait();
            }
            Ok("sleeper") => {
                let _ = std::io::stdin().read_to_end(&mut Vec::new());
            }
            _ => {}
        }
    }

    /// Starts a server that starts a grandchild; returns the server, its tree and a
    /// synchronize handle on the grandchild (taken before anything is killed, so its pid
    /// cannot have been reused).
    async fn server_with_grandchild() -> (tokio::process::Child, Tree, HANDLE) {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "transport::tree::tests::helper", "--nocapture"])
            .env(ROLE, "parent")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        Tree::prepare(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let tree = Tree::adopt(&mut child).unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let pid: u32 = loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("the grandchild's pid");
            if let Some(pid) = line.strip_prefix("grandchild ") {
                break pid.trim().parse().unwrap();
            }
        };
        // SAFETY: OpenProcess has no memory-safety preconditions.
        let grandchild = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid) };
        assert!(!grandchild.is_null(), "the grandchild {pid} runs");
        (child, tree, grandchild)
    }

    /// Waits (up to 10 s) for the process behind `handle` to end, then closes the handle.
    fn ended(handle: HANDLE) -> bool {
        // SAFETY: a valid process handle with SYNCHRONIZE access, closed once.
        unsafe {
            let waited = WaitForSingleObject(handle, 10_000);
            CloseHandle(handle);
            waited == WAIT_OBJECT_0
        }
    }

    #[tokio::test]
    async fn killing_the_tree_ends_the_server_and_its_grandchild() {
        let (mut child, tree, grandchild) = server_with_grandchild().await;
        tree.kill();
        let status = child.wait().await.unwrap();
        assert_eq!(status.code(), Some(KILLED_EXIT_CODE as i32));
        assert!(ended(grandchild), "the grandchild outlived the job");
    }

    #[tokio::test]
    async fn closing_the_last_handle_on_the_job_ends_the_tree() {
        let (mut child, tree, grandchild) = server_with_grandchild().await;
        // What happens when Lifeline dies: the kernel closes its handles, the job's too.
        drop(tree);
        child.wait().await.unwrap();
        assert!(ended(grandchild), "the grandchild outlived the job");
    }
}
