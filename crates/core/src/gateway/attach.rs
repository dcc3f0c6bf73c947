//! The attach handshake on the app's local endpoint (`local_socket`): how `lifeline connect
//! NAME` asks the running app to serve its host with the app's own supervisor for NAME.
//! One line each way, then the stream is the host's MCP session (`gateway::serve_lines` on the
//! app's side, a byte pump on the bridge's):
//!
//! ```text
//! bridge → app   attach v1 NAME\n            (or `attach v1 NAME CONFIG_PATH\n`)
//! app → bridge   ok\n                        (or `error KIND MESSAGE\n`, then it closes)
//! ```
//!
//! NAME is a server's name, or `@P` for profile P's aggregated endpoint (`lifeline connect
//! --profile P`, `--all` is `@default`). Server and profile names are ASCII letters, digits,
//! `-`, `_` and `.` (the config's rule), so NAME never holds a space, and `@` is in neither:
//! an app that predates profiles refuses `@P` as malformed, and the bridge serves the
//! profile itself. CONFIG_PATH is the rest of the line (the `--config` the bridge was
//! given, made absolute). An app that predates attach reads the line, finds it is not
//! `show`, and closes without an answer: the bridge takes that as "cannot attach".

use super::Target;
use crate::lines::{LineRead, fmt_bytes, read_line_capped};
use crate::local_socket::{self, Stream};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};

/// The protocol revision this build speaks.
pub const VERSION: &str = "v1";

/// How long the app may take to answer an attach request.
const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// The longest answer to an attach request (`ok`, or `error KIND MESSAGE`).
const ANSWER_MAX: usize = 64 * 1024;

/// What asking the app to attach gave (`ask`).
pub enum Asked {
    /// The app serves the host: from here the stream is the host's MCP session.
    Attached(BufReader<Stream>),
    /// No app listens at the endpoint (the usual headless case).
    NoApp,
    /// The app is there and did not attach; why, in a sentence.
    Refused(String),
}

/// The bridge's side of the handshake: asks the app listening in `dir`, if any, to serve
/// `request`, waiting for its answer at most 5 s.
pub async fn ask(dir: &Path, request: &Request) -> Asked {
    let Ok(stream) = local_socket::connect(dir).await else {
        return Asked::NoApp;
    };
    let mut app = BufReader::new(stream);
    if app
        .get_mut()
        .write_all(request.to_line().as_bytes())
        .await
        .is_err()
    {
        return Asked::Refused("the Lifeline app's endpoint did not take the request".into());
    }
    let mut line = Vec::new();
    let read = read_line_capped(&mut app, &mut line, ANSWER_MAX);
    match tokio::time::timeout(ANSWER_WAIT, read).await {
        Ok(Ok(LineRead::Eof)) => Asked::Refused(
            "the running Lifeline app cannot serve `lifeline connect` (it predates attach v1: update it)"
                .into(),
        ),
        Ok(Ok(LineRead::TooLong)) => Asked::Refused(format!(
            "the Lifeline app answered with a line longer than {}",
            fmt_bytes(ANSWER_MAX)
        )),
        Ok(Ok(LineRead::Line)) => match Answer::parse(&String::from_utf8_lossy(&line)) {
            Answer::Ok => Asked::Attached(app),
            Answer::Refused { kind, message } => Asked::Refused(format!(
                "the Lifeline app did not attach ({}: {message})",
                kind.as_str()
            )),
            Answer::Other(text) => {
                Asked::Refused(format!("the Lifeline app answered `{text}`, not `ok`"))
            }
        },
        Ok(Err(e)) => Asked::Refused(format!("reading the Lifeline app's answer failed ({e})")),
        Err(_) => Asked::Refused(format!(
            "the Lifeline app did not answer within {}s",
            ANSWER_WAIT.as_secs()
        )),
    }
}

/// What a bridge asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The server, or the profile, to attach to.
    pub target: Target,
    /// The config the bridge was told to use (`--config`), if any: the app attaches only
    /// when it is the config the app runs.
    pub config: Option<PathBuf>,
}

/// Why the app did not attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The bridge speaks another revision of this protocol.
    Version,
    /// The app has no server by that name.
    Unknown,
    /// The bridge's `--config` is not the config the app runs.
    Config,
    /// The app is shutting down.
    Closing,
    /// The line was not an attach request this build understands.
    Malformed,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Version => "version",
            Refusal::Unknown => "unknown",
            Refusal::Config => "config",
            Refusal::Closing => "closing",
            Refusal::Malformed => "malformed",
        }
    }

    fn parse(s: &str) -> Option<Refusal> {
        [
            Refusal::Version,
            Refusal::Unknown,
            Refusal::Config,
            Refusal::Closing,
            Refusal::Malformed,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }
}

/// The app's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Ok,
    Refused {
        kind: Refusal,
        message: String,
    },
    /// An answer this build does not know (a newer app): treated as a refusal.
    Other(String),
}

impl Request {
    /// The request line, newline included.
    pub fn to_line(&self) -> String {
        let name = match &self.target {
            Target::Server(name) => name.clone(),
            Target::Profile(name) => format!("@{name}"),
        };
        match &self.config {
            Some(path) => format!("attach {VERSION} {name} {}\n", path.display()),
            None => format!("attach {VERSION} {name}\n"),
        }
    }

    /// Parses a line (with or without its newline). `None` when it is not an attach
    /// request at all (`show`, say); `Err` when it is one this build cannot serve.
    pub fn parse(line: &str) -> Option<Result<Request, Refusal>> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let rest = line.strip_prefix("attach ")?;
        let Some((version, rest)) = rest.split_once(' ') else {
            return Some(Err(Refusal::Malformed));
        };
        if version != VERSION {
            return Some(Err(Refusal::Version));
        }
        let (name, config) = match rest.split_once(' ') {
            Some((name, path)) if !path.is_empty() => (name, Some(PathBuf::from(path))),
            Some((name, _)) => (name, None),
            None => (rest, None),
        };
        let target = match name.strip_prefix('@') {
            Some(profile) => Target::Profile(profile.to_owned()),
            None => Target::Server(name.to_owned()),
        };
        let (Target::Server(bare) | Target::Profile(bare)) = &target;
        let valid = !bare.is_empty()
            && bare
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Some(Err(Refusal::Malformed));
        }
        Some(Ok(Request { target, config }))
    }
}

impl Answer {
    /// The answer line, newline included (a message's own line breaks become spaces).
    pub fn to_line(&self) -> String {
        match self {
            Answer::Ok => "ok\n".to_owned(),
            Answer::Refused { kind, message } => {
                let message = message.replace(['\r', '\n'], " ");
                format!("error {} {message}\n", kind.as_str())
            }
            Answer::Other(text) => format!("{}\n", text.replace(['\r', '\n'], " ")),
        }
    }

    pub fn parse(line: &str) -> Answer {
        let line = line.trim_end_matches(['\r', '\n']);
        if line == "ok" {
            return Answer::Ok;
        }
        if let Some(rest) = line.strip_prefix("error ") {
            let (kind, message) = rest.split_once(' ').unwrap_or((rest, ""));
            if let Some(kind) = Refusal::parse(kind) {
                return Answer::Refused {
                    kind,
                    message: message.to_owned(),
                };
            }
        }
        Answer::Other(line.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_with_and_without_a_config() {
        for config in [
            None,
            Some(PathBuf::from("/home/ada/My Configs/lifeline.json")),
        ] {
            let req = Request {
                target: Target::Server("fixture.v2".into()),
                config: config.clone(),
            };
            let line = req.to_line();
            assert!(line.ends_with('\n') && line.starts_with("attach v1 fixture.v2"));
            assert_eq!(Request::parse(&line), Some(Ok(req)));
            let profile = Request {
                target: Target::Profile("coding".into()),
                config,
            };
            let line = profile.to_line();
            assert!(line.starts_with("attach v1 @coding"), "{line}");
            assert_eq!(Request::parse(&line), Some(Ok(profile)));
        }
    }

    #[test]
    fn other_lines_are_not_attach_requests() {
        assert_eq!(Request::parse("show\n"), None);
        assert_eq!(Request::parse(""), None);
        assert_eq!(Request::parse("attached v1 x"), None);
    }

    #[test]
    fn another_revision_or_a_bad_name_is_refused() {
        assert_eq!(
            Request::parse("attach v2 fixture\n"),
            Some(Err(Refusal::Version))
        );
        assert_eq!(
            Request::parse("attach fixture\n"),
            Some(Err(Refusal::Malformed))
        );
        assert_eq!(
            Request::parse("attach v1 \n"),
            Some(Err(Refusal::Malformed))
        );
        assert_eq!(
            Request::parse("attach v1 a/b\n"),
            Some(Err(Refusal::Malformed))
        );
        for bad in ["attach v1 @\n", "attach v1 @@x\n", "attach v1 @a/b\n"] {
            assert_eq!(Request::parse(bad), Some(Err(Refusal::Malformed)), "{bad}");
        }
    }

    #[test]
    fn answers_round_trip_and_unknown_ones_are_kept() {
        assert_eq!(Answer::parse(&Answer::Ok.to_line()), Answer::Ok);
        let refused = Answer::Refused {
            kind: Refusal::Unknown,
            message: "no server `x` in the app".into(),
        };
        assert_eq!(Answer::parse(&refused.to_line()), refused);
        let broken = Answer::Refused {
            kind: Refusal::Config,
            message: "two\nlines".into(),
        };
        assert_eq!(broken.to_line(), "error config two lines\n");
        assert_eq!(
            Answer::parse("error teapot short and stout\n"),
            Answer::Other("error teapot short and stout".into())
        );
        assert_eq!(Answer::parse("welcome\n"), Answer::Other("welcome".into()));
    }
}
