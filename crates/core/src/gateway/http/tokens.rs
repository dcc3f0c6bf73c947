//! The local endpoint's bearer tokens, one per client (`claude-code`, `vscode`, …), in
//! `gateway-tokens.json` beside the history (the instance directory), 0600 in a 0700
//! directory: any process of another user on this machine can reach 127.0.0.1, so a
//! request must carry one of these. The file is read again whenever it changed, so
//! `lifeline serve token add|remove` takes effect on a running endpoint. A token may be
//! bound to a profile (`"profile"`, absent in older files): it then opens that profile's
//! endpoint and nothing else (`route.rs`).
//!
//! ```json
//! { "clients": { "claude-code": { "token": "lifeline_…", "created": "2026-12-02T05:00:00.000Z" },
//!                "cursor": { "token": "lifeline_…", "created": "…", "profile": "coding" } } }
//! ```

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// The file's name in the instance directory.
pub const FILE_NAME: &str = "gateway-tokens.json";

/// Where the tokens of the instance directory `dir` are.
pub fn path_in(dir: &Path) -> PathBuf {
    dir.join(FILE_NAME)
}

/// The instance directory's tokens file (`history::resolve_path()`'s directory).
pub fn default_path() -> Option<PathBuf> {
    crate::history::resolve_path().and_then(|p| p.parent().map(path_in))
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    clients: BTreeMap<String, Entry>,
}

#[derive(Clone, Serialize, Deserialize)]
struct Entry {
    token: String,
    #[serde(default)]
    created: String,
    /// The profile the token is bound to; without one it opens every path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    profile: Option<String>,
}

impl std::fmt::Debug for Entry {
    /// Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("created", &self.created)
            .field("profile", &self.profile)
            .finish_non_exhaustive()
    }
}

/// One client, as `list` shows it (no token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub name: String,
    pub created: String,
    /// The profile its token is bound to, if it is bound.
    pub profile: Option<String>,
}

/// Who a request's token belongs to: the client, and the profile its token is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub client: String,
    pub profile: Option<String>,
}

/// How to put the tokens elsewhere, for an error refusing where they are.
const ELSEWHERE: &str = "set LIFELINE_HISTORY to a file in a directory of your own";

/// The file, refused (`private::check_trusted`) when another user owns it or its
/// directory, or may write either: a token planted there would open the endpoint to them.
fn read(path: &Path) -> io::Result<File> {
    crate::private::check_trusted(path, ELSEWHERE)?;
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a tokens file ({e})", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(File::default()),
        Err(e) => Err(e),
    }
}

fn write(path: &Path, file: &File) -> io::Result<()> {
    let text = serde_json::to_string_pretty(file).map_err(io::Error::other)?;
    crate::private::write_atomic(path, text.as_bytes(), crate::private::Mode::Private)
        .map_err(io::Error::from)
}

/// Takes the file's lock (creating its directory 0700), held across a read-modify-write so
/// that two `lifeline serve token add` at once both land.
fn lock(path: &Path) -> io::Result<crate::private::StoreLock> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private::create_dir(dir)?;
    }
    crate::private::lock_beside(path)
}

/// The config's rule for server and profile names: 1 to 64 of ASCII letters, digits, `-_.`.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Why a client name is not one (the config's rule for server names), if it is not.
pub fn check_client(name: &str) -> Result<(), String> {
    if is_name(name) {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a client name: 1 to 64 ASCII letters, digits, `-`, `_` or `.`"
        ))
    }
}

/// Why a token cannot be bound to `profile`, if it cannot: a name the config would not
/// take, or, given the config, a profile it does not have (naming those it has).
pub fn check_profile(profile: &str, config: Option<&crate::config::Config>) -> Result<(), String> {
    if !is_name(profile) {
        return Err(format!(
            "{profile:?} is not a profile name: 1 to 64 ASCII letters, digits, `-`, `_` or `.`"
        ));
    }
    match config {
        Some(config) if config.profile(profile).is_none() => Err(format!(
            "the config has no profile `{profile}` (its profiles: {})",
            config.profile_names().join(", ")
        )),
        _ => Ok(()),
    }
}

/// A new random token: `lifeline_` and 64 hex digits (256 bits from the OS).
fn new_token() -> io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| io::Error::other(e.to_string()))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("lifeline_{hex}"))
}

/// Makes a token for `client` (a new one in place of any it had) and returns it.
pub fn add(path: &Path, client: &str) -> io::Result<String> {
    add_bound(path, client, None)
}

/// `add`, the token bound to `profile` when there is one: it opens that profile alone.
/// The profile's name is checked, not that the config has it (`check_profile`).
pub fn add_bound(path: &Path, client: &str, profile: Option<&str>) -> io::Result<String> {
    let invalid = |m| io::Error::new(io::ErrorKind::InvalidInput, m);
    check_client(client).map_err(invalid)?;
    if let Some(p) = profile {
        check_profile(p, None).map_err(invalid)?;
    }
    let _lock = lock(path)?;
    let mut file = read(path)?;
    let token = new_token()?;
    file.clients.insert(
        client.to_owned(),
        Entry {
            token: token.clone(),
            created: crate::events::rfc3339(SystemTime::now()),
            profile: profile.map(str::to_owned),
        },
    );
    write(path, &file)?;
    Ok(token)
}

/// How the common hosts take the endpoint with `client`'s `token`: the token, the URLs on
/// `port` (a token bound to `profile` gets that profile's alone, under one entry named
/// `lifeline`; another gets each server's, and every server's at /mcp), the header, and the
/// Claude Code / VS Code / Cursor snippets. What `lifeline serve token add` prints and the
/// app's "Serve over HTTP" dialog shows once. It holds the token: never log it.
pub fn usage(path: &Path, client: &str, token: &str, profile: Option<&str>, port: u16) -> String {
    let header = format!("Authorization: Bearer {token}");
    let (bound, urls, entry, url) = match profile {
        Some(p) => {
            let url = super::profile_url(port, p);
            let at = if p == crate::config::DEFAULT_PROFILE {
                ""
            } else {
                ", at /mcp too"
            };
            (
                format!(", bound to profile `{p}`"),
                format!(
                    "URL:                {url}\n                    \
                     (profile `{p}`{at}: this token opens nothing else)\n"
                ),
                "lifeline",
                url,
            )
        }
        None => {
            let url = super::url(port, "NAME");
            (
                String::new(),
                format!(
                    "Each server's URL:  {url}\n\
                     Every server:       {} (a profile's: /profiles/P/mcp)\n",
                    super::profile_url(port, crate::config::DEFAULT_PROFILE)
                ),
                "NAME",
                url,
            )
        }
    };
    format!(
        "Token for `{client}`{bound} (kept in {}, readable by you only):\n  {token}\n\n\
         {urls}\
         Header:             {header}\n\n\
         Claude Code:\n  claude mcp add --transport http {entry} {url} --header \"{header}\"\n\
         VS Code (.vscode/mcp.json, under \"servers\"):\n  \
         \"{entry}\": {{ \"type\": \"http\", \"url\": \"{url}\", \"headers\": {{ \"Authorization\": \"Bearer {token}\" }} }}\n\
         Cursor (~/.cursor/mcp.json, under \"mcpServers\"):\n  \
         \"{entry}\": {{ \"url\": \"{url}\", \"headers\": {{ \"Authorization\": \"Bearer {token}\" }} }}\n",
        path.display()
    )
}

/// The token of `client`, if it has one.
pub fn get(path: &Path, client: &str) -> io::Result<Option<String>> {
    Ok(read(path)?.clients.get(client).map(|e| e.token.clone()))
}

/// Removes `client`'s token; whether it had one.
pub fn remove(path: &Path, client: &str) -> io::Result<bool> {
    let _lock = lock(path)?;
    let mut file = read(path)?;
    let had = file.clients.remove(client).is_some();
    if had {
        write(path, &file)?;
    }
    Ok(had)
}

/// The clients that have a token, by name.
pub fn list(path: &Path) -> io::Result<Vec<Client>> {
    Ok(read(path)?
        .clients
        .into_iter()
        .map(|(name, e)| Client {
            name,
            created: e.created,
            profile: e.profile,
        })
        .collect())
}

/// What says the file changed: its modification time, size and (Unix) inode — a write
/// replaces the file, so a new token of the same length in the same tick still shows.
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some((m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len(), ino))
}

/// Each client's name and entry.
type Pairs = Vec<(String, Entry)>;

/// The tokens a running endpoint checks requests against, read again when the file
/// changed.
pub struct Tokens {
    path: PathBuf,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// The file's stamp and its pairs when it was last read; `None` before the first read.
    read: Option<(Stamp, Pairs)>,
    /// The clients whose token went away (removed, replaced by a new one, or bound to
    /// another profile) since `take_revoked` last asked: their sessions must end.
    revoked: Vec<String>,
}

impl Tokens {
    pub fn new(path: PathBuf) -> Tokens {
        Tokens {
            path,
            cache: Mutex::new(Cache::default()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again when it changed, noting the clients whose token went away or
    /// whose binding changed.
    fn refresh(&self, cache: &mut Cache) {
        let stamp = stamp(&self.path);
        if cache.read.as_ref().is_some_and(|(s, _)| *s == stamp) {
            return;
        }
        let pairs: Pairs = match read(&self.path) {
            Ok(file) => file.clients.into_iter().collect(),
            Err(e) => {
                tracing::warn!("gateway: cannot read the tokens ({e}); refusing every request");
                Vec::new()
            }
        };
        if let Some((_, old)) = &cache.read {
            for (name, was) in old {
                let kept = pairs
                    .iter()
                    .any(|(n, e)| n == name && e.token == was.token && e.profile == was.profile);
                if !kept && !cache.revoked.contains(name) {
                    cache.revoked.push(name.clone());
                }
            }
        }
        cache.read = Some((stamp, pairs));
    }

    /// The clients whose token was removed, replaced or bound anew since the last call (the
    /// file is read again if it changed): the endpoint ends their sessions.
    pub fn take_revoked(&self) -> Vec<String> {
        let mut cache = self.cache.lock().expect("tokens lock");
        self.refresh(&mut cache);
        std::mem::take(&mut cache.revoked)
    }

    /// The client whose token `token` is, and the profile it is bound to, if any. A file
    /// that cannot be read holds no tokens (every request is refused) and is logged.
    pub fn caller_of(&self, token: &str) -> Option<Caller> {
        let mut cache = self.cache.lock().expect("tokens lock");
        self.refresh(&mut cache);
        let (_, pairs) = cache.read.as_ref().expect("just read");
        // Every entry is compared, so the time taken does not say which one matched.
        let mut found = None;
        for (name, e) in pairs {
            if super::guard::same_token(&e.token, token) && found.is_none() {
                found = Some(Caller {
                    client: name.clone(),
                    profile: e.profile.clone(),
                });
            }
        }
        found
    }

    /// The client whose token `token` is, if any (`caller_of` without the binding).
    pub fn client_of(&self, token: &str) -> Option<String> {
        self.caller_of(token).map(|c| c.client)
    }
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").field("path", &self.path).finish()
    }
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
