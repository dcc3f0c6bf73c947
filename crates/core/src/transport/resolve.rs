//! Where a stdio server's command comes from: the program `spawn` would start, found the way
//! the spawn finds it (a command with a slash is a path, from `cwd` when one is set; any
//! other is looked up in the child's PATH — the config's `PATH` if it sets one, else the
//! app's), and what a person may be shown about it. Env values are secrets: only names.
//!
//! On Unix a program is a file with an execute bit. On Windows it is a file whose extension
//! is in PATHEXT (`.COM;.EXE;.BAT;.CMD` when unset), and a name without one is tried with each
//! in turn, as cmd.exe does: `npx` is `npx.cmd`. `\` is a path separator there too. std's
//! own lookup only appends `.exe`, so the spawn starts the program found here
//! (`windows_program`).

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
    let inherited = crate::login_path::effective();
    let is_path = is_path(&config.command);
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

/// A command naming a file rather than a program to look up in PATH: it holds a path
/// separator (`/`, and on Windows `\\`).
pub(crate) fn is_path(command: &str) -> bool {
    command.contains('/') || (cfg!(windows) && command.contains('\\'))
}

/// The program to spawn for `config` on Windows: what `resolve` finds (an absolute path,
/// with its PATHEXT extension), else the command as configured (the spawn then fails and
/// says so).
#[cfg(windows)]
pub(crate) fn windows_program(config: &StdioConfig) -> std::ffi::OsString {
    match resolve(config, &Redactor::default()).program {
        Some(p) => p.into_os_string(),
        None => config.command.clone().into(),
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
    if let Some(found) = candidates(&full, &pathext())
        .into_iter()
        .find(|p| executable(p).is_ok())
    {
        return (Some(found), None);
    }
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
    let exts = pathext();
    let found = dirs
        .iter()
        .flat_map(|d| candidates(&Path::new(d).join(command), &exts))
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

/// The extensions a program may have, lowercase with their dot: Windows' PATHEXT (or its
/// default); none elsewhere.
fn pathext() -> Vec<String> {
    if !cfg!(windows) {
        return Vec::new();
    }
    let var = std::env::var("PATHEXT").unwrap_or_default();
    let var = if var.trim().is_empty() {
        ".COM;.EXE;.BAT;.CMD"
    } else {
        var.as_str()
    };
    parse_pathext(var)
}

fn parse_pathext(var: &str) -> Vec<String> {
    var.split(';')
        .map(|e| e.trim().to_ascii_lowercase())
        .filter(|e| e.len() > 1 && e.starts_with('.'))
        .collect()
}

/// The files `path` may name as a program, in order. With no extensions (Unix): `path`. With
/// some (Windows): `path` itself when its extension is one of them, else `path` with each.
fn candidates(path: &Path, exts: &[String]) -> Vec<PathBuf> {
    if exts.is_empty() || has_ext(path, exts) {
        return vec![path.to_path_buf()];
    }
    exts.iter()
        .map(|e| {
            let mut p = path.as_os_str().to_owned();
            p.push(e);
            PathBuf::from(p)
        })
        .collect()
}

fn has_ext(path: &Path, exts: &[String]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| exts.iter().any(|x| x[1..].eq_ignore_ascii_case(e)))
}

/// `Ok` when `path` is a file someone may execute: on Unix one with an execute bit, on
/// Windows one with a PATHEXT extension.
fn executable(path: &Path) -> Result<(), &'static str> {
    match std::fs::metadata(path) {
        Err(_) => Err("does not exist"),
        Ok(m) if !m.is_file() => Err("is not a file"),
        #[cfg(unix)]
        Ok(m) if std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 == 0 => {
            Err("is not executable (chmod +x it)")
        }
        #[cfg(windows)]
        Ok(_) if !has_ext(path, &pathext()) => {
            Err("is not a program (its extension is not in PATHEXT: .exe, .cmd, .bat …)")
        }
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

    /// A program every machine has on PATH, and the file name it resolves to.
    const SHELL: (&str, &str) = if cfg!(windows) {
        ("cmd", "cmd.exe")
    } else {
        ("sh", "sh")
    };

    #[test]
    fn a_command_on_path_resolves_to_the_first_executable_match() {
        let r = resolve(&config(SHELL.0, &[], &[]), &Redactor::default());
        let program = r.program.expect("the shell is on PATH");
        let name = program
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_lowercase();
        assert!(program.is_absolute() && name == SHELL.1, "{program:?}");
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
    fn pathext_names_the_files_a_command_may_be() {
        let exts = parse_pathext(".COM;.EXE; .Bat;;.CMD;bad");
        assert_eq!(exts, [".com", ".exe", ".bat", ".cmd"]);
        let dir = Path::new("bin");
        assert_eq!(
            candidates(&dir.join("npx"), &exts),
            ["npx.com", "npx.exe", "npx.bat", "npx.cmd"].map(|f| dir.join(f))
        );
        // A name that already has one of the extensions is only itself.
        assert_eq!(
            candidates(&dir.join("npx.CMD"), &exts),
            [dir.join("npx.CMD")]
        );
        assert_eq!(
            candidates(&dir.join("server.js"), &exts)[0],
            dir.join("server.js.com")
        );
        // Without PATHEXT (Unix) a name is only itself.
        assert_eq!(candidates(&dir.join("npx"), &[]), [dir.join("npx")]);
    }

    #[cfg(windows)]
    #[test]
    fn a_windows_command_is_found_with_its_pathext_extension() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("srv.txt"), "").unwrap();
        let mut c = config(".\\srv.txt", &[], &[]);
        c.cwd = Some(dir.path().to_path_buf());
        let r = resolve(&c, &Redactor::default());
        assert_eq!(r.program, None);
        assert!(r.problem.unwrap().contains("is not a program"));

        std::fs::write(dir.path().join("npx.cmd"), "@echo off\r\n").unwrap();
        let path = dir.path().display().to_string();
        let r = resolve(
            &config("npx", &[], &[("PATH", &path)]),
            &Redactor::default(),
        );
        assert_eq!(r.program, Some(dir.path().join("npx.cmd")));
        let mut c = config(".\\npx", &[], &[]);
        c.cwd = Some(dir.path().to_path_buf());
        let r = resolve(&c, &Redactor::default());
        assert_eq!(r.program, Some(dir.path().join(".\\npx.cmd")));
    }

    #[cfg(unix)]
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
            SHELL.0,
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
