//! The local endpoint's bearer tokens, one per client (`claude-code`, `vscode`, …), in
//! `gateway-tokens.json` beside the history (the instance directory), 0600 in a 0700
//! directory: any process of another user on this machine can reach 127.0.0.1, so a
//! request must carry one of these. The file is read again whenever it changed, so
//! `lifeline serve token add|remove` takes effect on a running endpoint.
//!
//! ```json
//! { "clients": { "claude-code": { "token": "lifeline_…", "created": "2026-12-02T05:00:00.000Z" } } }
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
}

impl std::fmt::Debug for Entry {
    /// Never the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("created", &self.created)
            .finish_non_exhaustive()
    }
}

/// One client, as `list` shows it (no token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub name: String,
    pub created: String,
}

fn read(path: &Path) -> io::Result<File> {
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
    if let Some(dir) = path.parent() {
        crate::private::create_dir(dir)?;
    }
    let text = serde_json::to_string_pretty(file).map_err(io::Error::other)?;
    crate::private::write_atomic(path, text.as_bytes())
}

/// Why a client name is not one (the config's rule for server names), if it is not.
pub fn check_client(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a client name: 1 to 64 ASCII letters, digits, `-`, `_` or `.`"
        ))
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
    check_client(client).map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))?;
    let mut file = read(path)?;
    let token = new_token()?;
    file.clients.insert(
        client.to_owned(),
        Entry {
            token: token.clone(),
            created: crate::events::rfc3339(SystemTime::now()),
        },
    );
    write(path, &file)?;
    Ok(token)
}

/// How the common hosts take the endpoint with `client`'s `token`: the token, each server's
/// URL on `port`, the header, and the Claude Code / VS Code / Cursor snippets. What
/// `lifeline serve token add` prints and the app's "Serve over HTTP" dialog shows once. It
/// holds the token: never log it.
pub fn usage(path: &Path, client: &str, token: &str, port: u16) -> String {
    let url = super::url(port, "NAME");
    let header = format!("Authorization: Bearer {token}");
    format!(
        "Token for `{client}` (kept in {}, readable by you only):\n  {token}\n\n\
         Each server's URL:  {url}\n\
         Header:             {header}\n\n\
         Claude Code:\n  claude mcp add --transport http NAME {url} --header \"{header}\"\n\
         VS Code (.vscode/mcp.json, under \"servers\"):\n  \
         \"NAME\": {{ \"type\": \"http\", \"url\": \"{url}\", \"headers\": {{ \"Authorization\": \"Bearer {token}\" }} }}\n\
         Cursor (~/.cursor/mcp.json, under \"mcpServers\"):\n  \
         \"NAME\": {{ \"url\": \"{url}\", \"headers\": {{ \"Authorization\": \"Bearer {token}\" }} }}\n",
        path.display()
    )
}

/// The token of `client`, if it has one.
pub fn get(path: &Path, client: &str) -> io::Result<Option<String>> {
    Ok(read(path)?.clients.get(client).map(|e| e.token.clone()))
}

/// Removes `client`'s token; whether it had one.
pub fn remove(path: &Path, client: &str) -> io::Result<bool> {
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

/// Each client's name and token.
type Pairs = Vec<(String, String)>;

/// The tokens a running endpoint checks requests against, read again when the file
/// changed.
pub struct Tokens {
    path: PathBuf,
    cache: Mutex<Option<(Stamp, Pairs)>>,
}

impl Tokens {
    pub fn new(path: PathBuf) -> Tokens {
        Tokens {
            path,
            cache: Mutex::new(None),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The client whose token `token` is, if any. A file that cannot be read holds no
    /// tokens (every request is refused) and is logged.
    pub fn client_of(&self, token: &str) -> Option<String> {
        let stamp = stamp(&self.path);
        let mut cache = self.cache.lock().expect("tokens lock");
        let stale = cache.as_ref().is_none_or(|(s, _)| *s != stamp);
        if stale {
            let pairs = match read(&self.path) {
                Ok(file) => file
                    .clients
                    .into_iter()
                    .map(|(name, e)| (name, e.token))
                    .collect(),
                Err(e) => {
                    tracing::warn!("gateway: cannot read the tokens ({e}); refusing every request");
                    Vec::new()
                }
            };
            *cache = Some((stamp, pairs));
        }
        let (_, pairs) = cache.as_ref().expect("just filled");
        // Every entry is compared, so the time taken does not say which one matched.
        let mut found = None;
        for (name, t) in pairs {
            if super::guard::same_token(t, token) && found.is_none() {
                found = Some(name.clone());
            }
        }
        found
    }
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens").field("path", &self.path).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_added_found_listed_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir.path().join("lifeline"));
        let tokens = Tokens::new(path.clone());
        assert_eq!(tokens.client_of("nope"), None);
        let a = add(&path, "claude-code").unwrap();
        let b = add(&path, "vscode").unwrap();
        assert!(a.starts_with("lifeline_") && a.len() == 9 + 64 && a != b);
        assert_eq!(tokens.client_of(&a).as_deref(), Some("claude-code"));
        assert_eq!(tokens.client_of(&b).as_deref(), Some("vscode"));
        assert_eq!(tokens.client_of(&a[..20]), None);
        let names: Vec<_> = list(&path).unwrap().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["claude-code", "vscode"]);
        assert_eq!(get(&path, "vscode").unwrap().as_deref(), Some(b.as_str()));
        // A new token for a client replaces its old one.
        let a2 = add(&path, "claude-code").unwrap();
        assert_eq!(tokens.client_of(&a), None);
        assert_eq!(tokens.client_of(&a2).as_deref(), Some("claude-code"));
        assert!(remove(&path, "vscode").unwrap());
        assert!(!remove(&path, "vscode").unwrap());
        assert_eq!(tokens.client_of(&b), None);
        assert!(add(&path, "no spaces").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir.path().join("lifeline"));
        add(&path, "c").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }

    #[test]
    fn debug_never_shows_a_token() {
        let e = Entry {
            token: "lifeline_secret".into(),
            created: "now".into(),
        };
        assert!(!format!("{e:?}").contains("secret"));
    }

    #[test]
    fn usage_gives_each_host_the_url_and_the_header() {
        let text = usage(
            Path::new("/d/gateway-tokens.json"),
            "cursor",
            "lifeline_t",
            7424,
        );
        let url = "http://127.0.0.1:7424/servers/NAME/mcp";
        assert!(text.starts_with("Token for `cursor` (kept in /d/gateway-tokens.json"));
        assert!(text.contains(&format!(
            "claude mcp add --transport http NAME {url} --header \"Authorization: Bearer lifeline_t\""
        )));
        let vscode = format!(
            "\"NAME\": {{ \"type\": \"http\", \"url\": \"{url}\", \"headers\": {{ \"Authorization\": \"Bearer lifeline_t\" }} }}"
        );
        let cursor = format!(
            "\"NAME\": {{ \"url\": \"{url}\", \"headers\": {{ \"Authorization\": \"Bearer lifeline_t\" }} }}"
        );
        assert!(text.contains(&vscode) && text.contains(&cursor), "{text}");
    }
}
