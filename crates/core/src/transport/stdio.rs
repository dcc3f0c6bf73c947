//! A server run as a child process speaking newline-delimited JSON-RPC on stdin/stdout.
//!
//! The child is the root of its own process tree (`tree`: a process group on Unix, a Job
//! Object on Windows) so that shutdown reaches everything it started: close stdin → wait →
//! SIGTERM to the group → wait → SIGKILL to the group. Windows has no SIGTERM: close stdin →
//! wait → terminate the job. A dropped transport kills the tree at once. Lines longer than the cap are a protocol error, not
//! unbounded memory (`crate::lines`); stderr is kept as a bounded tail. Starting the process — its
//! environment, its group, its death with Lifeline, its reaping — is `spawn`'s.

use super::spawn::{self, Started, io_reason};
pub use super::stdio_config::StdioConfig;
use super::tree::Tree;
use super::{Connection, INCOMING_CAPACITY, Incoming, Transport};
use crate::error::{Error, ErrorKind, ExitStatus};
use crate::gloss::exit_gloss_here;
use crate::lines::{LineRead, fmt_bytes, read_line_capped};
use crate::protocol::Message;
use crate::redact::{Redactor, cap};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, watch};

pub struct StdioTransport {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    tree: Tree,
    exit: watch::Receiver<Option<ExitStatus>>,
    closed: Arc<Mutex<Option<Error>>>,
    stderr: StderrTail,
    grace: Duration,
    redactor: Redactor,
}

/// Starts the server process. Failing to start is a `spawn` error naming the command,
/// what went wrong and the PATH that was searched.
pub fn spawn(config: &StdioConfig) -> Result<Connection, Error> {
    let Started {
        tree,
        stdin,
        stdout,
        stderr: stderr_pipe,
        exit: exit_rx,
    } = spawn::start(config)?;

    let stderr = Arc::new(Mutex::new(Tail::new(config.stderr_tail_bytes)));
    let (grown_tx, grown) = watch::channel(0);
    tokio::spawn(read_stderr(stderr_pipe, stderr.clone(), grown_tx));

    let closed = Arc::new(Mutex::new(None));
    let (tx, rx) = mpsc::channel(INCOMING_CAPACITY);
    let redactor = config.redactor();
    tokio::spawn(read_stdout(StdoutReader {
        stdout: BufReader::with_capacity(64 * 1024, stdout),
        max_line: config.max_line_bytes,
        tx,
        exit: exit_rx.clone(),
        closed: closed.clone(),
        stderr: stderr.clone(),
        stderr_grown: grown.clone(),
        grace: config.shutdown_grace,
        redactor: redactor.clone(),
        tree: tree.clone(),
    }));

    let transport = StdioTransport {
        stdin: tokio::sync::Mutex::new(stdin),
        tree,
        exit: exit_rx,
        closed,
        stderr: StderrTail {
            tail: stderr,
            grown,
        },
        grace: config.shutdown_grace,
        redactor: redactor.clone(),
    };
    Ok(Connection {
        transport: Transport::Stdio(transport),
        incoming: rx,
        redactor,
    })
}

impl StdioTransport {
    pub async fn send(&self, msg: &Message) -> Result<(), Error> {
        if let Some(cause) = self.closed.lock().expect("closed lock").as_ref() {
            return Err(Error::closed_because(cause));
        }
        let mut line = msg.to_json();
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(Error::cancelled(
                "the connection is being closed, so the message was not sent",
            ));
        };
        let write = async {
            pipe.write_all(line.as_bytes()).await?;
            pipe.flush().await
        };
        write.await.map_err(|e| {
            Error::transport(format!(
                "could not write to the server's stdin ({}); the process has probably exited",
                io_reason(&e)
            ))
            .with(|c| c.method = msg.method().map(str::to_owned))
        })
    }

    /// A handle on this process's stderr tail that outlives the transport, so a
    /// generation's last words can be read after it was closed.
    pub fn stderr(&self) -> StderrTail {
        self.stderr.clone()
    }

    /// The last lines the server wrote to stderr, scrubbed of configured secrets.
    pub fn stderr_tail(&self) -> String {
        self.redactor
            .scrub(&self.stderr.tail.lock().expect("stderr lock").text())
    }

    pub fn exit_status(&self) -> Option<ExitStatus> {
        *self.exit.borrow()
    }

    /// Resolves once the process has exited (and was reaped), with how it ended. `None`
    /// only if the task that owns the child ended without a status, which it does not.
    pub async fn exited(&self) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        wait_exit(&mut exit, None).await;
        self.exit_status()
    }

    /// close stdin → grace → SIGTERM to the group → grace → SIGKILL to the group; on
    /// Windows close stdin → grace → terminate the job.
    pub async fn close(&self) {
        self.closed
            .lock()
            .expect("closed lock")
            .get_or_insert_with(|| Error::cancelled("the connection was closed by Lifeline"));
        // A send blocked on a server that does not read its stdin holds the pipe; waiting
        // for it past the grace would hang the close. The signals below unblock it.
        if let Ok(mut stdin) = tokio::time::timeout(self.grace, self.stdin.lock()).await {
            drop(stdin.take());
        }
        let mut exit = self.exit.clone();
        if !wait_exit(&mut exit, Some(self.grace)).await {
            let asked = self.tree.terminate();
            if !asked || !wait_exit(&mut exit, Some(self.grace)).await {
                self.tree.kill();
                // A kill cannot be ignored; the owning task reaps the child promptly.
                wait_exit(&mut exit, None).await;
            }
        }
        self.tree.kill_stragglers();
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if self.exit.borrow().is_none() {
            self.tree.kill();
        } else {
            self.tree.kill_stragglers();
        }
    }
}

/// Waits for the exit status, up to `limit`. True when the process has exited.
async fn wait_exit(
    exit: &mut watch::Receiver<Option<ExitStatus>>,
    limit: Option<Duration>,
) -> bool {
    let wait = exit.wait_for(Option::is_some);
    match limit {
        Some(limit) => matches!(tokio::time::timeout(limit, wait).await, Ok(Ok(_))),
        None => wait.await.is_ok(),
    }
}

struct StdoutReader {
    stdout: BufReader<tokio::process::ChildStdout>,
    max_line: usize,
    tx: mpsc::Sender<Incoming>,
    exit: watch::Receiver<Option<ExitStatus>>,
    closed: Arc<Mutex<Option<Error>>>,
    stderr: Arc<Mutex<Tail>>,
    /// Closes when the stderr reader has read the pipe to its end: what a process wrote
    /// just before it exited is in the tail only then.
    stderr_grown: watch::Receiver<u64>,
    grace: Duration,
    redactor: Redactor,
    tree: Tree,
}

async fn read_stdout(mut r: StdoutReader) {
    let mut line = Vec::new();
    // Something the server started can hold stdout open after the server itself exited, so
    // EOF alone would leave every waiter hanging: once the process has exited, what it wrote
    // is read for one grace period, then the connection ends with its exit status.
    let gone = exited_then_grace(r.exit.clone(), r.grace);
    tokio::pin!(gone);
    let cause = loop {
        line.clear();
        let read = tokio::select! {
            read = read_line_capped(&mut r.stdout, &mut line, r.max_line) => read,
            () = &mut gone => Ok(LineRead::Eof),
        };
        match read {
            Ok(LineRead::Line) => {}
            Ok(LineRead::Eof) => break ended(&mut r).await,
            Ok(LineRead::TooLong) => {
                // The rest of the stream cannot be framed reliably; end the connection.
                r.tree.kill();
                break Error::protocol(format!(
                    "the server wrote a line longer than {} on stdout; the connection was closed",
                    fmt_bytes(r.max_line)
                ));
            }
            Err(e) => {
                break Error::transport(format!(
                    "reading the server's stdout failed: {}",
                    io_reason(&e)
                ));
            }
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match Message::parse_many(&line) {
            Ok(messages) => {
                for m in messages {
                    if r.tx.send(Incoming::Message(m)).await.is_err() {
                        return;
                    }
                }
            }
            // stdout is the protocol channel, but servers do print stray logs there. Skip
            // the line and keep the connection: dropping it would lose every answer.
            Err(e) => {
                tracing::warn!(bytes = line.len(), error = %e, "skipped a stdout line that is not JSON-RPC")
            }
        }
    };
    *r.closed.lock().expect("closed lock") = Some(cause.clone());
    let _ = r.tx.send(Incoming::Closed(cause)).await;
}

/// Resolves one grace period after the process exited.
async fn exited_then_grace(mut exit: watch::Receiver<Option<ExitStatus>>, grace: Duration) {
    if exit.wait_for(Option::is_some).await.is_err() {
        // The owning task always reports the exit; without it there is nothing to wait for.
        std::future::pending::<()>().await;
    }
    tokio::time::sleep(grace).await;
}

/// stdout reached EOF (or the process exited and a grace period passed): report how the
/// process ended, with the tail of its stderr.
async fn ended(r: &mut StdoutReader) -> Error {
    if !wait_exit(&mut r.exit, Some(r.grace)).await {
        return Error::transport(
            "the server closed its stdout but kept running; the connection was closed",
        );
    }
    let status = r.exit.borrow().expect("exited");
    // The stderr pipe may still hold the process's last words; read them before quoting
    // the tail. A descendant can keep the pipe open, so the wait is one grace period.
    let _ = tokio::time::timeout(r.grace, async {
        while r.stderr_grown.changed().await.is_ok() {}
    })
    .await;
    let gloss = exit_gloss_here(status)
        .map(|g| format!(" — {g}"))
        .unwrap_or_default();
    let last = r
        .stderr
        .lock()
        .expect("stderr lock")
        .text()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| {
            format!(
                "; its last stderr line: {}",
                cap(&r.redactor.scrub(l.trim()), 300)
            )
        })
        .unwrap_or_default();
    Error::new(
        ErrorKind::ProcessExit,
        format!("the server process exited with {status}{gloss}{last}"),
    )
    .with(|c| c.exit = Some(status))
}

/// Keeps the tail of the stderr pipe, counting in `grown` the bytes read so far; `grown`
/// closes when the pipe does. Each line is read through the redaction rules as it
/// arrives (`redact::learn_from`), before it is in the tail: a `{"password":"…"}` the
/// server prints is masked from then on wherever the value turns up, in any message,
/// event or file.
async fn read_stderr(
    mut pipe: tokio::process::ChildStderr,
    tail: Arc<Mutex<Tail>>,
    grown: watch::Sender<u64>,
) {
    let mut buf = [0u8; 8192];
    let mut line = Vec::new();
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        learn_lines(&mut line, &buf[..n]);
        tail.lock().expect("stderr lock").push(&buf[..n]);
        // After the tail's lock is released: a waiter checks the tail while it holds the
        // watch's, so taking them the other way round here could deadlock.
        grown.send_modify(|bytes| *bytes += n as u64);
    }
    if !line.is_empty() {
        crate::redact::learn_from(&String::from_utf8_lossy(&line));
    }
}

/// A stderr line longer than this is learned from in pieces of this size: a runaway line
/// costs a bounded buffer.
const LEARN_LINE_BYTES: usize = 8 * 1024;

/// Learns from every line `data` completes; the unfinished rest waits in `line`.
fn learn_lines(line: &mut Vec<u8>, data: &[u8]) {
    for piece in data.split_inclusive(|b| *b == b'\n') {
        line.extend_from_slice(piece);
        if piece.ends_with(b"\n") || line.len() >= LEARN_LINE_BYTES {
            crate::redact::learn_from(&String::from_utf8_lossy(line));
            line.clear();
        }
    }
}

/// The last `cap` bytes of a byte stream.
#[derive(Debug)]
struct Tail {
    bytes: VecDeque<u8>,
    cap: usize,
    /// Whether anything was dropped from the front.
    truncated: bool,
}

impl Tail {
    fn new(cap: usize) -> Self {
        Tail {
            bytes: VecDeque::with_capacity(cap.min(8192)),
            cap,
            truncated: false,
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.truncated |= self.bytes.len() + data.len() > self.cap;
        let data = &data[data.len().saturating_sub(self.cap)..];
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.cap);
        self.bytes.drain(..overflow);
        self.bytes.extend(data);
    }

    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let mut v = a.to_vec();
        v.extend_from_slice(b);
        String::from_utf8_lossy(&v).into_owned()
    }
}

/// A shared view of one process's bounded stderr tail (`stderr_tail_bytes`, from the end).
#[derive(Debug, Clone)]
pub struct StderrTail {
    tail: Arc<Mutex<Tail>>,
    /// The bytes read from the pipe so far; changes after each read is in `tail`.
    grown: watch::Receiver<u64>,
}

/// What a stderr tail holds now, as lines, scrubbed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StderrLines {
    pub lines: Vec<String>,
    /// The process wrote more than the tail keeps; the first kept line is whole (a cut
    /// one is dropped).
    pub truncated: bool,
}

impl StderrTail {
    /// The lines kept so far, each scrubbed by `redactor` (the connection's: its env and
    /// header values and the server's substituted values).
    pub fn lines(&self, redactor: &Redactor) -> StderrLines {
        let (text, truncated) = {
            let tail = self.tail.lock().expect("stderr lock");
            (tail.text(), tail.truncated)
        };
        let mut lines: Vec<&str> = text.lines().collect();
        if truncated && !lines.is_empty() {
            lines.remove(0);
        }
        StderrLines {
            lines: lines.into_iter().map(|l| redactor.scrub(l)).collect(),
            truncated,
        }
    }

    /// A receiver that changes each time the process's stderr grows (its value: the bytes
    /// written so far), and closes when the process has closed its stderr. Lets a reader
    /// wait for a line instead of polling: `grown().wait_for(|_| check the lines)`.
    pub fn grown(&self) -> watch::Receiver<u64> {
        self.grown.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_bytes() {
        let mut t = Tail::new(5);
        t.push(b"abc");
        t.push(b"defg");
        assert_eq!(t.text(), "cdefg");
        t.push(b"0123456789");
        assert_eq!(t.text(), "56789");
        assert!(t.truncated);
        let mut fits = Tail::new(5);
        fits.push(b"abcde");
        assert!(!fits.truncated);
    }

    #[test]
    fn stderr_lines_drop_a_cut_first_line_and_scrub() {
        let tail = StderrTail {
            tail: Arc::new(Mutex::new(Tail::new(26))),
            grown: watch::channel(0).1,
        };
        let redactor = Redactor::new(["hunter2-canary"]);
        tail.tail.lock().unwrap().push(b"one\ntwo hunter2-canary\n");
        let shown = tail.lines(&redactor);
        assert_eq!(shown.lines, ["one", "two ***"]);
        assert!(!shown.truncated);
        tail.tail.lock().unwrap().push(b"three\n");
        let shown = tail.lines(&redactor);
        assert_eq!(shown.lines, ["two ***", "three"]);
        assert!(shown.truncated);
    }
}
