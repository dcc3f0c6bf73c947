//! The fixture's command line: `lifeline-fixture stdio|http|sse|stateless [--script JSON] [--log FILE]
//! [--port N]`, with the script also accepted from `LIFELINE_FIXTURE_SCRIPT`.

use std::path::PathBuf;

use crate::script::Script;

pub const SCRIPT_ENV: &str = "LIFELINE_FIXTURE_SCRIPT";

pub const USAGE: &str =
    "usage: lifeline-fixture stdio|http|sse|stateless [--script JSON|@FILE] [--log FILE] [--port N] [-- ARG…]
  --script  the fault script (see tests/FIXTURE.md); default $LIFELINE_FIXTURE_SCRIPT, else {}
  --log     append one JSON object per line for every request, message and event
  --port    http, sse and stateless only: port on 127.0.0.1 (default 0, ephemeral)
  -- ARG…   positional arguments, accepted and ignored";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    Http,
    /// The legacy HTTP+SSE transport (2024-11-05): GET /sse, POST /messages.
    Sse,
    /// Streamable HTTP in the stateless 2026-07-28 revision: POST /mcp only.
    Stateless,
}

#[derive(Debug)]
pub struct Args {
    pub transport: Transport,
    pub script: Script,
    pub log: Option<PathBuf>,
    pub port: u16,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    #[error("expected transport `stdio`, `http`, `sse` or `stateless`, got {0:?}")]
    Transport(Option<String>),
    #[error("unknown argument {0:?}")]
    UnknownArgument(String),
    #[error("{0} needs a value")]
    MissingValue(&'static str),
    #[error("--port: {0:?} is not a port number")]
    Port(String),
    #[error("--port applies only to the http, sse and stateless transports")]
    PortOnStdio,
    #[error("reading script file {path}: {source}")]
    ScriptFile {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid script: {0}")]
    Script(#[from] serde_json::Error),
}

impl Args {
    /// Parses arguments (without the program name); `env_script` is `$LIFELINE_FIXTURE_SCRIPT`.
    pub fn parse(
        args: impl IntoIterator<Item = String>,
        env_script: Option<String>,
    ) -> Result<Args, CliError> {
        let mut args = args.into_iter();
        let transport = match args.next().as_deref() {
            Some("stdio") => Transport::Stdio,
            Some("http") => Transport::Http,
            Some("sse") => Transport::Sse,
            Some("stateless") => Transport::Stateless,
            other => return Err(CliError::Transport(other.map(str::to_owned))),
        };
        let (mut script, mut log, mut port) = (None, None, None);
        while let Some(arg) = args.next() {
            let mut value = |flag| args.next().ok_or(CliError::MissingValue(flag));
            match arg.as_str() {
                "--script" => script = Some(value("--script")?),
                "--log" => log = Some(PathBuf::from(value("--log")?)),
                "--port" => {
                    let text = value("--port")?;
                    port = Some(text.parse().map_err(|_| CliError::Port(text))?);
                }
                // What follows `--` is the server's own positional arguments, which the
                // fixture accepts and ignores (a server started with a password as an
                // argument, for the redaction tests).
                "--" => break,
                _ => return Err(CliError::UnknownArgument(arg)),
            }
        }
        if transport == Transport::Stdio && port.is_some() {
            return Err(CliError::PortOnStdio);
        }
        let text = match script.or(env_script) {
            Some(path) if path.starts_with('@') => {
                std::fs::read_to_string(&path[1..]).map_err(|source| CliError::ScriptFile {
                    path: path[1..].to_owned(),
                    source,
                })?
            }
            Some(text) => text,
            None => "{}".to_owned(),
        };
        Ok(Args {
            transport,
            script: Script::from_json(&text)?,
            log,
            port: port.unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `expect` summarises the parse (`"Http port=8080 delay=5 log=Some(\"/x\")"`), or starts
    /// the error's message (`"error: --log needs"`).
    fn check(args: &str, env: Option<&str>, expect: &str) {
        let args_iter = args.split_whitespace().map(str::to_owned);
        let got = match Args::parse(args_iter, env.map(str::to_owned)) {
            Ok(a) => {
                let (t, p, d, l) = (a.transport, a.port, a.script.delay_ms, a.log);
                format!("{t:?} port={p} delay={d} log={l:?}")
            }
            Err(e) => format!("error: {e}"),
        };
        assert!(
            got.starts_with(expect),
            "args {args:?}: got {got:?}, want {expect:?}"
        );
    }

    #[test]
    fn arguments() {
        let script5 = r#"--script {"delay_ms":5}"#;
        let env7 = Some(r#"{"delay_ms":7}"#);
        check("stdio", None, "Stdio port=0 delay=0 log=None");
        check(
            "stateless --port 9",
            None,
            "Stateless port=9 delay=0 log=None",
        );
        check(
            "http --port 8080 --log /x",
            None,
            r#"Http port=8080 delay=0 log=Some("/x")"#,
        );
        check(
            &format!("http {script5}"),
            None,
            "Http port=0 delay=5 log=None",
        );
        check("stdio", env7, "Stdio port=0 delay=7 log=None");
        check(
            "stdio --log /x -- pw-4rg --script x",
            None,
            r#"Stdio port=0 delay=0 log=Some("/x")"#,
        );
        check(
            &format!("stdio {script5}"),
            env7,
            "Stdio port=0 delay=5 log=None",
        );
        check(
            "",
            None,
            "error: expected transport `stdio`, `http`, `sse` or `stateless`, got None",
        );
        check(
            "tcp",
            None,
            r#"error: expected transport `stdio`, `http`, `sse` or `stateless`, got Some("tcp")"#,
        );
        check(
            "stdio --port 1",
            None,
            "error: --port applies only to the http, sse and stateless transports",
        );
        check(
            "http --port x",
            None,
            r#"error: --port: "x" is not a port number"#,
        );
        check("http --log", None, "error: --log needs a value");
        check(
            "http --verbose",
            None,
            r#"error: unknown argument "--verbose""#,
        );
        check(
            r#"http --script {"delay":1}"#,
            None,
            "error: invalid script: unknown field `delay`",
        );
        check(
            "http --script @/nonexistent",
            None,
            "error: reading script file /nonexistent",
        );
    }
}
