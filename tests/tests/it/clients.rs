//! `lifeline clients`: the real binary rewrites a client's file in a scratch home — dry runs
//! write nothing, a connect backs up and imports, restore round-trips byte for byte and
//! refuses over later edits unless forced, and no secret is ever printed; `connect
//! --profile` puts one entry in place of a profile's servers, and `show` lists what the
//! client sees through it.

use crate::cli::{CliRun, lifeline_bin, lifeline_with_env};
use crate::support::TempDirGuard;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const CANARY: &str = "sk-clients-canary-7d41e09b3f2a";

/// A scratch home: HOME, XDG and APPDATA all inside it.
struct Home {
    dir: TempDirGuard,
}

impl Home {
    fn new(label: &str) -> Home {
        Home {
            dir: TempDirGuard::new(label),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn ours(&self) -> PathBuf {
        self.path().join("lifeline.json")
    }

    async fn run(&self, args: &[&str]) -> CliRun {
        let home = self.path().display().to_string();
        let config = self.path().join(".config").display().to_string();
        let data = self
            .path()
            .join(".local")
            .join("share")
            .display()
            .to_string();
        let env = [
            ("HOME", home.as_str()),
            ("XDG_CONFIG_HOME", config.as_str()),
            ("XDG_DATA_HOME", data.as_str()),
            ("APPDATA", config.as_str()),
            ("LIFELINE_CONFIG", ""),
        ];
        lifeline_with_env(args, &env).await
    }

    /// `lifeline clients ARGS… --config <scratch>/lifeline.json`.
    async fn clients(&self, args: &[&str]) -> CliRun {
        let ours = self.ours().display().to_string();
        let mut all = vec!["clients"];
        all.extend_from_slice(args);
        if matches!(args.first(), Some(&"connect" | &"show")) {
            all.extend(["--config", ours.as_str()]);
        }
        self.run(&all).await
    }
}

/// Cursor's file as Cursor writes it, 2-space indent, with a secret and an unknown key.
fn cursor_text() -> String {
    format!(
        "{{\n  \"mcpServers\": {{\n    \"fs\": {{\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n    }},\n    \"gh\": {{\n      \"command\": \"gh-mcp\",\n      \"env\": {{ \"GITHUB_TOKEN\": \"{CANARY}\" }}\n    }},\n    \"left\": {{ \"command\": \"left-alone\" }}\n  }},\n  \"x-unknown\": {{ \"kept\": true }}\n}}\n"
    )
}

fn write_cursor(home: &Home) -> PathBuf {
    let path = home.path().join(".cursor").join("mcp.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, cursor_text()).unwrap();
    path
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Everything in a directory, sorted (an absent one is empty).
fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = read.map(|e| e.unwrap().path()).collect();
    out.sort();
    out
}

impl Home {
    /// Lifeline's data dir: `clients.json` and `backups/`.
    fn data(&self) -> PathBuf {
        self.path().join(".local").join("share").join("lifeline")
    }

    /// The backups Lifeline keeps, in its data dir.
    fn backups(&self) -> Vec<PathBuf> {
        entries(&self.data().join("backups"))
    }
}

fn no_secret(run: &CliRun) {
    assert!(
        !run.stdout.contains(CANARY) && !run.stderr.contains(CANARY),
        "a secret was printed: {run:?}"
    );
}

#[tokio::test]
async fn clients_dry_run_prints_the_diff_and_writes_nothing() {
    let home = Home::new("clients-dry");
    let file = write_cursor(&home);
    let run = home
        .clients(&["connect", "cursor", "--server", "gh", "--dry-run"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    no_secret(&run);
    assert!(
        run.stdout.contains("-      \"command\": \"gh-mcp\","),
        "{run:?}"
    );
    assert!(run.stdout.contains("+        \"connect\","), "{run:?}");
    assert!(run.stdout.contains("dry run"), "{run:?}");
    assert_eq!(read(&file), cursor_text());
    assert_eq!(entries(file.parent().unwrap()), std::slice::from_ref(&file));
    assert!(home.backups().is_empty());
    assert!(!home.ours().exists(), "nothing was imported");
    assert!(
        !home
            .path()
            .join(".local/share/lifeline/clients.json")
            .exists()
    );
}

#[tokio::test]
async fn clients_connect_backs_up_imports_and_restore_round_trips() {
    let home = Home::new("clients-connect");
    let file = write_cursor(&home);
    let beside = entries(file.parent().unwrap());
    let run = home
        .clients(&["connect", "cursor", "--server", "fs", "--server", "gh"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    no_secret(&run);

    // The entries run `lifeline connect NAME` against our config; the rest is untouched.
    let written = read(&file);
    let v: Value = serde_json::from_str(&written).unwrap();
    let exe = std::fs::canonicalize(lifeline_bin()).unwrap();
    let ours = home.ours().display().to_string();
    for name in ["fs", "gh"] {
        assert_eq!(
            v["mcpServers"][name],
            json!({ "command": exe.display().to_string(), "args": ["connect", name, "--config", ours] })
        );
    }
    assert!(written.contains("    \"left\": { \"command\": \"left-alone\" }\n"));
    assert!(written.ends_with("  \"x-unknown\": { \"kept\": true }\n}\n"));

    // Imported first, the secret kept as the importer keeps it.
    let imported: Value = serde_json::from_str(&read(&home.ours())).unwrap();
    assert_eq!(imported["mcpServers"]["fs"]["command"], "npx");
    assert_eq!(imported["mcpServers"]["gh"]["env"]["GITHUB_TOKEN"], CANARY);

    // A private backup of the original, in the data dir: nothing new beside the file,
    // which may sit in a repository that `git add -A` takes whole.
    assert_eq!(
        entries(file.parent().unwrap()),
        beside,
        "nothing beside the file"
    );
    let found = home.backups();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(read(&found[0]), cursor_text());
    let name = found[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("cursor-") && name.ends_with("Z.json"),
        "{name}"
    );
    assert!(
        run.stdout
            .contains(&format!("backup {}\n", found[0].display())),
        "the output names the backup: {run:?}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&found[0]), 0o600);
        assert_eq!(mode(&home.data().join("backups")), 0o700);
    }

    // Found at Cursor's default path, and reported as going through Lifeline.
    let list = home.run(&["clients", "list"]).await;
    assert_eq!(list.code, 0, "{list:?}");
    assert!(list.stdout.contains("mcpServers.gh"), "{list:?}");
    assert!(list.stdout.contains("through Lifeline"), "{list:?}");
    assert!(list.stdout.contains("restorable"), "{list:?}");
    assert!(
        list.stdout
            .contains(&format!("  backup {}\n", found[0].display())),
        "{list:?}"
    );
    let listed = home.run(&["clients", "list", "--json"]).await;
    let v: Value = serde_json::from_str(listed.stdout.trim()).unwrap();
    let cursor = &v["result"]["clients"][2];
    assert_eq!(cursor["client"], "cursor");
    assert_eq!(cursor["backup"], found[0].display().to_string());

    // A second connect changes nothing and backs up nothing.
    let again = home
        .clients(&["connect", "cursor", "--server", "fs", "--server", "gh"])
        .await;
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again.stdout.contains("already goes through Lifeline"),
        "{again:?}"
    );
    assert_eq!(read(&file), written);
    assert_eq!(home.backups().len(), 1);

    let restore = home.clients(&["restore", "cursor"]).await;
    assert_eq!(restore.code, 0, "{restore:?}");
    no_secret(&restore);
    assert!(
        restore
            .stdout
            .contains(&format!("from {} ", found[0].display())),
        "restore says where the backup was: {restore:?}"
    );
    assert_eq!(read(&file), cursor_text(), "byte for byte");
}

/// A connection recorded before backups moved to the data dir (the backup beside the
/// file, as `<file>.lifeline-backup-<time>`) still restores, and says from where.
#[tokio::test]
async fn clients_restore_reads_a_backup_recorded_beside_the_file() {
    let home = Home::new("clients-old-layout");
    let file = write_cursor(&home);
    let run = home.clients(&["connect", "cursor", "--all"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    // Rewrite the record as the old layout had it.
    let state = home.data().join("clients.json");
    let mut v: Value = serde_json::from_str(&read(&state)).unwrap();
    let canonical = std::fs::canonicalize(&file).unwrap();
    let old = PathBuf::from(format!(
        "{}.lifeline-backup-20261202T031500Z",
        canonical.display()
    ));
    std::fs::rename(home.backups()[0].clone(), &old).unwrap();
    v["connections"][0]["backup"] = json!(old);
    std::fs::write(&state, v.to_string()).unwrap();

    let list = home.run(&["clients", "list"]).await;
    assert!(
        list.stdout
            .contains(&format!("  backup {}\n", old.display())),
        "{list:?}"
    );
    let restore = home.clients(&["restore", "cursor"]).await;
    assert_eq!(restore.code, 0, "{restore:?}");
    assert!(
        restore.stdout.contains(&format!("from {} ", old.display())),
        "{restore:?}"
    );
    assert_eq!(read(&file), cursor_text(), "byte for byte");
}

#[tokio::test]
async fn clients_restore_refuses_over_later_edits_until_forced() {
    let home = Home::new("clients-edited");
    let file = home.path().join("elsewhere.json");
    std::fs::write(&file, cursor_text()).unwrap();
    let file_s = file.display().to_string();
    let run = home
        .clients(&["connect", "cursor", "--all", "--client-config", &file_s])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let list = home.run(&["clients", "list"]).await;
    assert!(
        list.stdout
            .contains(&format!("{} (restorable)", file.display())),
        "{list:?}"
    );

    // The user (or Cursor) edits the file afterwards.
    let edited = read(&file).replace("\"kept\": true", "\"kept\": false");
    std::fs::write(&file, &edited).unwrap();
    let refused = home.clients(&["restore", "cursor"]).await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("x-unknown: changed since"),
        "{refused:?}"
    );
    assert!(refused.stderr.contains("--force"), "{refused:?}");
    no_secret(&refused);
    assert_eq!(read(&file), edited, "nothing was restored");

    let forced = home.clients(&["restore", "cursor", "--force"]).await;
    assert_eq!(forced.code, 0, "{forced:?}");
    assert_eq!(read(&file), cursor_text());

    let nothing = home.clients(&["restore", "cursor"]).await;
    assert_eq!(nothing.code, 2, "{nothing:?}");
    assert!(nothing.stderr.contains("nothing to restore"), "{nothing:?}");
}

#[tokio::test]
async fn clients_connect_without_servers_or_with_unknown_ones_is_a_usage_error() {
    let home = Home::new("clients-usage");
    let file = write_cursor(&home);
    let none = home.clients(&["connect", "cursor"]).await;
    assert_eq!(none.code, 2, "{none:?}");
    let unknown = home
        .clients(&["connect", "cursor", "--server", "nope"])
        .await;
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(unknown.stderr.contains("nope"), "{unknown:?}");
    assert_eq!(read(&file), cursor_text());
}

#[tokio::test]
async fn clients_vscode_and_claude_desktop_at_their_default_paths_round_trip() {
    let home = Home::new("clients-defaults");
    let config = home.path().join(".config");
    let vscode = config.join("Code").join("User").join("mcp.json");
    let vscode_text = "{\n\t// servers for every workspace\n\t\"servers\": {\n\t\t\"mem\": {\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \"node\",\n\t\t\t\"args\": [\"mem.js\"],\n\t\t},\n\t},\n\t\"inputs\": []\n}";
    let desktop = config.join("Claude").join("claude_desktop_config.json");
    let desktop_text = "{\r\n    \"mcpServers\": {\r\n        \"web\": {\r\n            \"url\": \"https://mcp.example.com/mcp\",\r\n            \"headers\": {\r\n                \"Authorization\": \"Bearer sk-clients-canary-7d41e09b3f2a\"\r\n            }\r\n        }\r\n    },\r\n    \"globalShortcut\": \"\"\r\n}\r\n";
    for (path, text) in [(&vscode, vscode_text), (&desktop, desktop_text)] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    let run = home.clients(&["connect", "vscode", "--all"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    let written = read(&vscode);
    assert!(
        written.starts_with("{\n\t// servers for every workspace\n"),
        "{written}"
    );
    assert!(
        written.contains("\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": \""),
        "{written}"
    );
    let run = home
        .clients(&["connect", "claude-desktop", "--server", "web"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    no_secret(&run);
    let written = read(&desktop);
    assert!(
        written.contains("\r\n                \"connect\",\r\n"),
        "{written:?}"
    );
    assert!(!written.contains(CANARY));

    for (client, path, text) in [
        ("vscode", &vscode, vscode_text),
        ("claude-desktop", &desktop, desktop_text),
    ] {
        let restore = home.clients(&["restore", client]).await;
        assert_eq!(restore.code, 0, "{restore:?}");
        assert_eq!(read(path), text, "{client} byte for byte");
    }
}

#[tokio::test]
async fn clients_the_rewritten_entry_starts_a_working_gateway() {
    use lifeline_core::session::RequestOptions;
    use lifeline_core::transport::stdio::{self, StdioConfig};
    use lifeline_core::{Session, SessionOptions};

    let home = Home::new("clients-gateway");
    let fx = crate::support::stdio_fixture(&json!({}));
    let file = home.path().join(".cursor").join("mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = serde_json::to_string_pretty(&json!({ "mcpServers": {
        "fixture": { "command": fx.program, "args": fx.args },
    }}))
    .unwrap();
    std::fs::write(&file, &text).unwrap();
    let run = home
        .clients(&["connect", "cursor", "--server", "fixture"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");

    // Start the entry exactly as Cursor would: its command with its args.
    let v: Value = serde_json::from_str(&read(&file)).unwrap();
    let entry = &v["mcpServers"]["fixture"];
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    let mut cfg = StdioConfig::new(entry["command"].as_str().unwrap().to_owned(), args);
    // And the test's own history directory (its tool pins), not the machine's.
    cfg.env.push(crate::cli::history_env());
    let conn = stdio::spawn(&cfg).expect("spawn the rewritten entry");
    let session = Session::connect(conn, SessionOptions::default())
        .await
        .expect("the gateway's handshake");
    let tools = session.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let echo = session
        .call_tool(
            "echo",
            json!({"text": "via lifeline"}),
            RequestOptions::default(),
        )
        .await
        .expect("a call through the gateway");
    assert_eq!(echo["content"][0]["text"], "via lifeline");
    session.close().await;
}

/// Lifeline's config with `fs` and profile `coding` (`fs` and every `g…` server).
fn write_coding(home: &Home) {
    let ours = json!({
        "mcpServers": { "fs": { "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] } },
        "lifeline": { "profiles": { "coding": { "servers": ["fs", "g*"] } } }
    });
    std::fs::write(home.ours(), ours.to_string()).unwrap();
}

#[tokio::test]
async fn clients_connect_a_profile_puts_one_entry_in_place_of_its_servers() {
    let home = Home::new("clients-profile");
    let file = write_cursor(&home);
    write_coding(&home);

    // An unknown profile is refused, naming the profiles there are; nothing is written.
    let unknown = home
        .clients(&["connect", "cursor", "--profile", "writing"])
        .await;
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("its profiles are: default, coding"),
        "{unknown:?}"
    );
    assert_eq!(read(&file), cursor_text());

    let run = home
        .clients(&["connect", "cursor", "--profile", "coding"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    no_secret(&run);
    let ours = home.ours().display().to_string();
    let exe = std::fs::canonicalize(lifeline_bin()).unwrap();
    let v: Value = serde_json::from_str(&read(&file)).unwrap();
    assert_eq!(
        v["mcpServers"],
        json!({
            "lifeline": { "command": exe.display().to_string(), "args": [
                "connect", "--profile", "coding", "--client", "cursor", "--entry", "lifeline",
                "--config", ours] },
            "left": { "command": "left-alone" },
        })
    );
    assert_eq!(v["x-unknown"], json!({ "kept": true }));
    for line in [
        "entry mcpServers.lifeline: runs `lifeline connect --profile coding --client cursor \
         --entry lifeline`",
        "removed mcpServers.fs: server fs is served behind `lifeline` (profile coding)\n",
        "removed mcpServers.gh: server gh is served behind `lifeline` (profile coding); \
         imported into Lifeline's config first",
        "unchanged mcpServers.left: profile coding does not serve it",
        "-    \"gh\": {",
        "+    \"lifeline\": {",
    ] {
        assert!(run.stdout.contains(line), "{line:?} in {run:?}");
    }
    // Nothing lost: the server taken out is in Lifeline's config, with its secret.
    let imported: Value = serde_json::from_str(&read(&home.ours())).unwrap();
    assert_eq!(imported["mcpServers"]["gh"]["env"]["GITHUB_TOKEN"], CANARY);

    // A second connect changes nothing; restore puts the file back byte for byte.
    let again = home
        .clients(&["connect", "cursor", "--profile", "coding"])
        .await;
    assert!(again.stdout.contains("nothing to change"), "{again:?}");
    assert_eq!(home.backups().len(), 1);
    let restore = home.clients(&["restore", "cursor"]).await;
    assert_eq!(restore.code, 0, "{restore:?}");
    assert_eq!(read(&file), cursor_text(), "byte for byte");
}

/// A server name long enough that its tools' names must be shortened at every host.
const LONG: &str = "a-server-with-a-name-long-enough-to-need-shortening";

#[tokio::test]
async fn clients_show_lists_the_tools_tokens_shortened_names_and_unreachable_servers() {
    let home = Home::new("clients-show");
    let fx = crate::support::stdio_fixture(&json!({}));
    let ours = json!({
        "mcpServers": {
            "fixture": { "command": fx.program, "args": fx.args },
            LONG: { "command": fx.program, "args": fx.args },
            "broken": { "command": home.path().join("no-such-server").display().to_string() },
        },
        "lifeline": { "profiles": { "coding": {
            "tools": { "fixture": { "exclude": ["crash"] } } } } }
    });
    std::fs::write(home.ours(), ours.to_string()).unwrap();
    let file = home.path().join(".cursor").join("mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{\n  \"mcpServers\": {}\n}\n").unwrap();
    let run = home
        .clients(&["connect", "cursor", "--profile", "coding"])
        .await;
    assert_eq!(run.code, 0, "{run:?}");

    // The profile its entry serves, each tool under the name Cursor gets.
    let show = home.clients(&["show", "cursor"]).await;
    assert_eq!(show.code, 0, "{show:?}");
    let out = &show.stdout;
    assert!(
        out.contains(
            "profile coding (as mcpServers.lifeline serves it): names for cursor, at \
                      most 51 characters with entry `lifeline`"
        ),
        "{show:?}"
    );
    assert!(out.contains("\n  fixture__echo\n"), "{show:?}");
    let crash = out.lines().find(|l| l.contains("fixture__crash")).unwrap();
    assert!(crash.ends_with("filtered out by the profile"), "{crash}");
    let shortened = out
        .lines()
        .find(|l| l.contains(&format!("echo of {LONG}: shortened: the whole name has")))
        .unwrap_or_else(|| panic!("a shortened name with its reason: {show:?}"));
    assert!(!shortened.contains(&format!("{LONG}__echo")), "{shortened}");
    assert!(
        out.contains("  broken: cannot connect, its tools are unknown and not counted: "),
        "{show:?}"
    );
    let totals = out.lines().last().unwrap();
    assert!(totals.contains(" tools listed · about "), "{totals}");
    assert!(
        totals.ends_with("within the 40 tools cursor handles"),
        "{totals}"
    );

    // --json: the preview itself, and the server that could not be reached.
    let json = home.clients(&["show", "cursor", "--json"]).await;
    let o = json.outcome();
    let p = &o["result"]["profiles"][0];
    assert_eq!(p["field"], "mcpServers.lifeline");
    assert_eq!(p["preview"]["profile"], "coding");
    assert_eq!(p["preview"]["client"], "cursor");
    assert!(p["preview"]["tokens"].as_u64().unwrap() > 100, "{p}");
    let listed = p["preview"]["listed"].as_u64().unwrap();
    let tools = p["preview"]["tools"].as_array().unwrap();
    assert_eq!(
        tools.len() as u64,
        listed + 1,
        "every tool but crash is listed"
    );
    assert!(
        tools
            .iter()
            .any(|t| t["server"] == LONG && t["changed"].as_str().is_some()),
        "{p}"
    );
    assert_eq!(p["unreachable"][0]["server"], "broken");
    assert_eq!(p["unreachable"][0]["error"]["kind"], "spawn");

    // A long entry name leaves less room: a short server's names are shortened too.
    let entry = "an-entry-name-of-forty-characters-long-x";
    let long_entry = home
        .clients(&["show", "cursor", "--profile", "default", "--entry", entry])
        .await;
    assert_eq!(long_entry.code, 0, "{long_entry:?}");
    assert!(
        long_entry.stdout.contains(
            "list_changed of fixture: shortened: the whole name has 21 characters, over \
             this host's 19"
        ),
        "{long_entry:?}"
    );
    let unknown = home.clients(&["show", "cursor", "--profile", "nope"]).await;
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("its profiles are: default, coding"),
        "{unknown:?}"
    );
}
