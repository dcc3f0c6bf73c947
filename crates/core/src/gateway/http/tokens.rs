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
    let _lock = lock(path)?;
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
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// The file's stamp and its pairs when it was last read; `None` before the first read.
    read: Option<(Stamp, Pairs)>,
    /// The clients whose token went away (removed, or replaced by a new one) since
    /// `take_revoked` last asked: their sessions must end.
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

    /// Reads the file again when it changed, noting the clients whose token went away.
    fn refresh(&self, cache: &mut Cache) {
        let stamp = stamp(&self.path);
        if cache.read.as_ref().is_some_and(|(s, _)| *s == stamp) {
            return;
        }
        let pairs: Pairs = match read(&self.path) {
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
        if let Some((_, old)) = &cache.read {
            for (name, token) in old {
                let kept = pairs.iter().any(|(n, t)| n == name && t == token);
                if !kept && !cache.revoked.contains(name) {
                    cache.revoked.push(name.clone());
                }
            }
        }
        cache.read = Some((stamp, pairs));
    }

    /// The clients whose token was removed or replaced since the last call (the file is
    /// read again if it changed): the endpoint ends their sessions.
    pub fn take_revoked(&self) -> Vec<String> {
        let mut cache = self.cache.lock().expect("tokens lock");
        self.refresh(&mut cache);
        std::mem::take(&mut cache.revoked)
    }

    /// The client whose token `token` is, if any. A file that cannot be read holds no
    /// tokens (every request is refused) and is logged.
    pub fn client_of(&self, token: &str) -> Option<String> {
        let mut cache = self.cache.lock().expect("tokens lock");
        self.refresh(&mut cache);
        let (_, pairs) = cache.read.as_ref().expect("just read");
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

    #[test]
    fn a_removed_or_replaced_token_is_revoked_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path());
        add(&path, "a").unwrap();
        add(&path, "b").unwrap();
        add(&path, "c").unwrap();
        let tokens = Tokens::new(path.clone());
        assert!(
            tokens.take_revoked().is_empty(),
            "the first read revokes nothing"
        );
        remove(&path, "a").unwrap();
        add(&path, "b").unwrap();
        // A request reading the file first does not hide the change.
        assert_eq!(tokens.client_of("lifeline_nope"), None);
        assert_eq!(tokens.take_revoked(), ["a", "b"]);
        assert!(tokens.take_revoked().is_empty());
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

    /// `LIFELINE_HISTORY` in a shared directory: a tokens file someone else could have put
    /// there admits nobody, and `add` refuses it, naming the path and the fix.
    #[cfg(unix)]
    #[test]
    fn a_tokens_file_another_user_could_have_planted_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let chmod = |p: &Path, mode: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("shared");
        let path = path_in(&dir);
        let planted = add(&path, "intruder").unwrap();
        let root = rustix::process::geteuid().is_root();
        let mut cases: Vec<(u32, u32, Option<u32>, String)> = vec![
            (
                0o777,
                0o600,
                None,
                format!("the directory {}", dir.display()),
            ),
            (0o700, 0o666, None, format!("the file {}", path.display())),
        ];
        if root {
            // What another user's own file looks like to root, who must refuse it too.
            cases.push((
                0o700,
                0o600,
                Some(65534),
                format!("the file {}", path.display()),
            ));
        }
        for (dir_mode, file_mode, owner, named) in cases {
            chmod(&dir, dir_mode);
            chmod(&path, file_mode);
            std::os::unix::fs::chown(&path, owner.or(Some(0)).filter(|_| root), None).unwrap();
            let tokens = Tokens::new(path.clone());
            assert_eq!(tokens.client_of(&planted), None, "{named}");
            let e = add(&path, "me").unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
            let text = e.to_string();
            assert!(text.starts_with(&named), "{text}");
            assert!(
                text.ends_with("or set LIFELINE_HISTORY to a file in a directory of your own"),
                "{text}"
            );
        }
        chmod(&dir, 0o700);
        chmod(&path, 0o600);
        std::os::unix::fs::chown(&path, Some(0).filter(|_| root), None).unwrap();
        assert_eq!(
            Tokens::new(path.clone()).client_of(&planted).as_deref(),
            Some("intruder"),
            "a file and directory of ours are trusted again"
        );
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
