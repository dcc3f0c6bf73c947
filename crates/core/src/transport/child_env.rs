//! The environment a stdio server starts with. Like the MCP SDKs (the TypeScript SDK's
//! `getDefaultEnvironment`, the Python SDK's `get_default_environment`), a server gets only
//! the variables a program needs to run — home, user, shell, PATH, terminal, locale and the
//! platform's equivalents — plus its own `env` from the config, never Lifeline's whole
//! environment: one server's `${VAR}` secret must not reach every other server. A server
//! whose entry says `inheritEnv: true` gets everything, as before.

use std::ffi::{OsStr, OsString};

/// What the TypeScript SDK passes on Unix, plus the locale (`LANG`, `LC_*`), so a server's
/// messages and its text handling match the user's.
pub const UNIX_PASSED: [&str; 7] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG"];

/// What the TypeScript SDK passes on Windows. Names there are case-insensitive.
pub const WINDOWS_PASSED: [&str; 12] = [
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// Whether a stdio server gets `name` from Lifeline's own environment (`windows` picks the
/// platform's list; names are compared without case there).
pub fn is_passed(name: &OsStr, windows: bool) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    if windows {
        return WINDOWS_PASSED.iter().any(|p| p.eq_ignore_ascii_case(name));
    }
    UNIX_PASSED.contains(&name) || name.starts_with("LC_")
}

/// The variables of `from` (Lifeline's environment) a stdio server starts with, before its
/// own `env` is added. Functions, as bash exports them (`BASH_FUNC_x%%`, a value starting
/// `()`), are left out even when their name would pass, as the SDKs do: they are code.
pub fn passed(
    from: impl IntoIterator<Item = (OsString, OsString)>,
    windows: bool,
) -> Vec<(OsString, OsString)> {
    from.into_iter()
        .filter(|(k, v)| is_passed(k, windows) && !v.as_encoded_bytes().starts_with(b"()"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(vars: &[(&str, &str)], windows: bool, expect: &[&str]) {
        let from = vars
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let got: Vec<String> = passed(from, windows)
            .into_iter()
            .map(|(k, _)| k.into_string().unwrap())
            .collect();
        assert_eq!(got, expect, "{vars:?} windows={windows}");
    }

    #[test]
    fn only_what_the_sdks_pass_reaches_a_server() {
        let unix = [
            ("HOME", "/home/ada"),
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("LC_ALL", "C.UTF-8"),
            ("LANG", "en_GB.UTF-8"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("USER", "ada"),
            ("SHELL", "() { :; }"),
            ("Path", "lowercase is another variable on Unix"),
        ];
        check(&unix, false, &["HOME", "PATH", "LC_ALL", "LANG", "USER"]);
        let windows = [
            ("Path", "C:\\Windows"),
            ("SystemRoot", "C:\\Windows"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("USERPROFILE", "C:\\Users\\ada"),
            ("HOME", "not passed on Windows"),
        ];
        check(&windows, true, &["Path", "SystemRoot", "USERPROFILE"]);
    }
}
