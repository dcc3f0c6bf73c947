//! Where a stdio server's command comes from: the program `spawn` would start, found the way
//! the spawn finds it (a command with a slash is a path, from `cwd` when one is set; any
//! other is looked up in the child's PATH — the config's `PATH` if it sets one, else the
//! app's), and what a person may be shown about it. Env values are secrets: only names.

use super::spawn::StdioConfig;
use crate::redact::{Redactor, scrub_args};
use std::path::{Path, PathBuf};

/// What a stdio server's command resolves to, safe to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The command as configured.
    pub command: String,
    /// The absolute path that would be spawned; `None` when nothing was found.
    pub program: Option<PathBuf>,
    /// The arguments, with configured secrets and `--token=…`-style values scrubbed.
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// The PATH directories searched, in order. Empty when the config sets PATH (an env
    /// value, never shown) or when the command is a path.
    pub path: Vec<String>,
    pub path_source: PathSource,
    /// The names of the env variables the config adds; never their values.
    pub env_names: Vec<String>,
    /// Why nothing would start, in words, naming what was searched.
    pub problem: Option<String>,
}

/// Where the PATH that is searched comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathSource {
    /// The app's own environment (shown).
    App,
    /// The server's `env` in the config: an env value, so never shown.
    Config,
    /// The command is a path; PATH is not searched.
    None,
}

impl PathSource {
    pub fn as_str(self) -> &'static str {
        match self {
            PathSource::App => "app",
            PathSource::Config => "config",
            PathSource::None => "none",
        }
    }
}

/// Resolves `config`'s command without starting anything.
pub fn resolve(config: &StdioConfig, redactor: &Redactor) -> Resolution {
    let configured_path = config.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v);
    let inherited = std::env::var("PATH").unwrap_or_default();
    let is_path = config.command.contains('/');
    let (path, path_source) = match (is_path, configured_path) {
        (true, _) => (Vec::new(), PathSource::None),
        (false, Some(_)) => (Vec::new(), PathSource::Config),
        (false, None) => (split_path(&inherited), PathSource::App),
    };
    let search: Vec<String> = match configured_path {
        Some(p) => split_path(p),
        None => split_path(&inherited),
    };
    let (program, problem) = if is_path {
        find_as_path(&config.command, config.cwd.as_deref())
    } else {
        find_in_path(&config.command, &search, path_source)
    };
    Resolution {
        command: redactor.scrub(&config.command),
        program,
        args: scrub_args(&config.args, redactor),
        cwd: config.cwd.clone(),
        path,
        path_source,
        env_names: config.env.iter().map(|(k, _)| k.clone()).collect(),
        problem: problem.map(|p| redactor.scrub(&p)),
    }
}

fn split_path(path: &str) -> Vec<String> {
    std::env::split_paths(path)
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

fn find_as_path(command: &str, cwd: Option<&Path>) -> (Option<PathBuf>, Option<String>) {
    let given = Path::new(command);
    let full = match (given.is_absolute(), cwd) {
        (true, _) => given.to_path_buf(),
        (false, Some(cwd)) => cwd.join(given),
        (false, None) => match std::env::current_dir() {
            Ok(dir) => dir.join(given),
            Err(_) => given.to_path_buf(),
        },
    };
    match executable(&full) {
        Ok(()) => (Some(full), None),
        Err(why) => (
            None,
            Some(format!(
                "{} {why}; check the path in the config",
                full.display()
            )),
        ),
    }
}

fn find_in_path(
    command: &str,
    dirs: &[String],
    source: PathSource,
) -> (Option<PathBuf>, Option<String>) {
    let found = dirs
        .iter()
        .map(|d| Path::new(d).join(command))
        .find(|p| executable(p).is_ok());
    if let Some(found) = found {
        return (Some(found), None);
    }
    let searched = match source {
        PathSource::Config => format!(
            "the {} directories of the PATH the config sets (its value is not shown)",
            dirs.len()
        ),
        _ if dirs.is_empty() => "PATH, which is empty".to_owned(),
        _ => format!("PATH: {}", dirs.join(", ")),
    };
    (
        None,
        Some(format!(
            "`{command}` was not found in {searched}; install it or give an absolute path in the config"
        )),
    )
}

/// `Ok` when `path` is a file someone may execute.
fn executable(path: &Path) -> Result<(), &'static str> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Err(_) => Err("does not exist"),
        Ok(m) if !m.is_file() => Err("is not a file"),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => Err("is not executable (chmod +x it)"),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(command: &str, args: &[&str], env: &[(&str, &str)]) -> StdioConfig {
        let mut c = StdioConfig::new(command, args.iter().map(|a| a.to_string()).collect());
        c.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        c
    }

    #[test]
    fn a_command_on_path_resolves_to_the_first_executable_match() {
        let r = resolve(&config("sh", &[], &[]), &Redactor::default());
        let program = r.program.expect("sh is on PATH");
        assert!(
            program.is_absolute() && program.ends_with("sh"),
            "{program:?}"
        );
        assert_eq!(r.path_source, PathSource::App);
        assert!(r.path.iter().any(|d| program.starts_with(d)));
        assert_eq!(r.problem, None);
    }

    #[test]
    fn a_missing_command_names_the_directories_searched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().display().to_string();
        let r = resolve(
            &config("lifeline-no-such-cmd", &[], &[("PATH", &path)]),
            &Redactor::new([path.clone()]),
        );
        assert_eq!(r.program, None);
        assert_eq!(r.path_source, PathSource::Config);
        assert!(r.path.is_empty(), "a configured PATH is an env value");
        let problem = r.problem.unwrap();
        assert!(
            problem.contains("the 1 directories of the PATH the config sets"),
            "{problem}"
        );
        assert!(!problem.contains(&path), "{problem}");

        let r = resolve(
            &config("lifeline-no-such-cmd", &[], &[]),
            &Redactor::default(),
        );
        let problem = r.problem.unwrap();
        assert!(problem.contains("not found in PATH: "), "{problem}");
        assert!(problem.contains(&r.path[0]), "{problem}");
    }

    #[test]
    fn a_path_command_resolves_from_cwd_and_says_what_is_wrong() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("srv");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        let mut c = config("./srv", &[], &[]);
        c.cwd = Some(dir.path().to_path_buf());
        let r = resolve(&c, &Redactor::default());
        assert_eq!(r.program, None);
        assert!(
            r.problem
                .unwrap()
                .ends_with("is not executable (chmod +x it); check the path in the config")
        );
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = resolve(&c, &Redactor::default());
        assert_eq!(r.program, Some(dir.path().join("./srv")));
        assert_eq!(r.path_source, PathSource::None);
    }

    #[test]
    fn args_lose_secrets_and_env_shows_names_only() {
        let c = config(
            "sh",
            &[
                "--token=abc123xyz",
                "--port",
                "8080",
                "--api-key",
                "k-verysecret",
                "sk-abcdefghijkl",
            ],
            &[("API_TOKEN", "hunter2-canary"), ("MODE", "fast")],
        );
        let r = resolve(&c, &Redactor::new(["hunter2-canary"]));
        assert_eq!(
            r.args,
            ["--token=***", "--port", "8080", "--api-key", "***", "***"]
        );
        assert_eq!(r.env_names, ["API_TOKEN", "MODE"]);
    }
}
