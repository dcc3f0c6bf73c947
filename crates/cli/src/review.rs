//! `lifeline tools review NAME`, `lifeline tools approve NAME TOOL…|--all` and `lifeline
//! tools reject NAME TOOL…` (docs/trust.md): the pins file read and changed the way every
//! running Lifeline process reads it, so a decision made here reaches every bridge, `lifeline
//! serve` and the app within a second. Thin: the review is `pins::report`'s, the decision
//! `pins::book::Book::decide`'s; this prints.

use crate::fleet;
use crate::output::{EXIT_OK, Out};
use lifeline_core::pins::book::{Book, BookError, Decision, Which};
use lifeline_core::pins::flags::Flag;
use lifeline_core::pins::report::{FieldChange, HeldKind, Op, ServerReview, Words};
use lifeline_core::pins::{store, visible};
use lifeline_core::redact::Redactor;
use lifeline_core::{Error, ErrorKind};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A first-seen tool's description is shown up to this many characters.
const DESCRIPTION_SHOWN: usize = 400;

#[derive(clap::Subcommand)]
pub enum ToolsCommand {
    /// Show what Lifeline holds back from NAME's tools for review: each changed description
    /// word by word ([-removed-] {+added+}), the rest of each definition by path, new tools,
    /// the tools first seen since the last review, and what looks suspicious in each
    Review {
        /// The configured server's name
        name: String,
        /// The config file, for its servers' names (default: $LIFELINE_CONFIG, else the
        /// platform config dir's lifeline/config.json)
        #[arg(long)]
        config: Option<PathBuf>,
        /// One JSON object: the review
        #[arg(long)]
        json: bool,
    },
    /// Approve NAME's held TOOLs (or --all, with the tools first seen): hosts are shown them
    /// and told, within a second, wherever they connect through Lifeline
    Approve {
        name: String,
        /// The tools to approve, as `lifeline tools review NAME` names them
        #[arg(required_unless_present = "all")]
        tools: Vec<String>,
        /// Every tool waiting for review
        #[arg(long, conflicts_with = "tools")]
        all: bool,
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Reject NAME's held or first-seen TOOLs: they stay out of every host's list until the
    /// server serves something else
    Reject {
        name: String,
        #[arg(required = true)]
        tools: Vec<String>,
        #[arg(long)]
        config: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: ToolsCommand) -> i32 {
    let (name, config, json) = match &command {
        ToolsCommand::Review { name, config, json }
        | ToolsCommand::Approve {
            name, config, json, ..
        }
        | ToolsCommand::Reject {
            name, config, json, ..
        } => (name.clone(), config.clone(), *json),
    };
    let (name, config) = (name.as_str(), config.as_deref());
    let out = Out {
        json,
        redactor: Redactor::default(),
    };
    let (book, path) = match open(name, config) {
        Ok(opened) => opened,
        Err(e) => return out.error(&e),
    };
    let now = unix_now();
    let decided = match command {
        ToolsCommand::Review { .. } => {
            print_review(&out, &book.review(name), &path);
            return EXIT_OK;
        }
        ToolsCommand::Approve { tools, all, .. } => {
            let which = if all { Which::All } else { Which::Tools(tools) };
            book.decide(name, Decision::Approve, &which, now)
                .map(|t| ("approved", t))
        }
        ToolsCommand::Reject { tools, .. } => book
            .decide(name, Decision::Reject, &Which::Tools(tools), now)
            .map(|t| ("rejected", t)),
    };
    match decided {
        Ok((verb, tools)) => {
            if out.json {
                out.json_line(&json!({ "ok": true, "result": { "server": name, verb: tools } }));
            } else if tools.is_empty() {
                out.note(&format!("{name}: nothing was waiting for review"));
            } else {
                let listed = tools.iter().map(|t| visible(t)).collect::<Vec<_>>();
                out.line(&format!("{name}: {verb} {}", listed.join(", ")));
                out.note("every running Lifeline process takes this in within a second");
            }
            EXIT_OK
        }
        Err(e) => out.error(&book_error(e)),
    }
}

/// The pins file, for the configured servers (so that a fresh start after a corrupt file
/// counts each as seen); refuses a server it has no pins of.
fn open(name: &str, config: Option<&Path>) -> Result<(Book, PathBuf), Error> {
    let path = store::default_path().ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            "no data directory for the pins file: set LIFELINE_HISTORY to a file in a \
             directory of your own",
        )
    })?;
    let config = fleet::load(config).ok();
    let servers = config
        .iter()
        .flat_map(|c| c.servers.iter().map(|s| s.name.as_str()));
    let (book, problem) = Book::open(Some(path.clone()), servers);
    if let Some(problem) = problem {
        eprintln!("lifeline tools: {problem}");
    }
    if !book.knows(name) {
        return Err(Error::new(
            ErrorKind::Config,
            format!(
                "Lifeline has not seen `{name}`'s tools yet (no pins for it in {}): they are \
                 pinned the first time Lifeline connects it for a host or in the app",
                path.display()
            ),
        ));
    }
    Ok((book, path))
}

fn book_error(e: BookError) -> Error {
    Error::new(ErrorKind::Config, e.to_string())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn print_review(out: &Out, review: &ServerReview, path: &Path) {
    if out.json {
        let result = serde_json::to_value(review).unwrap_or(Value::Null);
        out.json_line(&json!({ "ok": true, "result": result }));
        return;
    }
    let server = &review.server;
    let waiting = review.held.iter().filter(|h| !h.rejected).count();
    out.line(&format!(
        "{server}: {waiting} held for review, {} first seen (pins: {})",
        review.first_seen.len(),
        path.display()
    ));
    for held in review.held.iter().filter(|h| !h.rejected) {
        let kind = match held.kind {
            HeldKind::Changed => "changed",
            HeldKind::New => "new",
        };
        out.line("");
        out.line(&format!(
            "{} — {kind}, held since {}",
            visible(&held.tool),
            held.since
        ));
        if !held.description.is_empty() {
            out.line(&format!("  description: {}", words(&held.description)));
        }
        let fields = held.fields.iter().filter(|f| f.path != "name");
        fields.for_each(|f| out.line(&format!("  {}", field(f))));
        if held.more_fields {
            out.line("  … and more differences (`--json` has the held definition)");
        }
        print_flags(out, &held.flags);
    }
    let rejected: Vec<&str> = (review.held.iter())
        .filter(|h| h.rejected)
        .map(|h| h.tool.as_str())
        .collect();
    if !rejected.is_empty() {
        out.line("");
        let names: Vec<String> = rejected.iter().map(|t| visible(t)).collect();
        out.line(&format!(
            "rejected, kept out of hosts' lists: {}",
            names.join(", ")
        ));
    }
    if !review.first_seen.is_empty() {
        out.line("");
        out.line("first seen since the last review (shown to hosts, marked new):");
        for seen in &review.first_seen {
            out.line(&format!("  {} — pinned {}", visible(&seen.tool), seen.at));
            let description = seen.definition.get("description").and_then(Value::as_str);
            if let Some(text) = description.filter(|t| !t.is_empty()) {
                out.line(&format!("    {}", cut(&visible(text), DESCRIPTION_SHOWN)));
            }
            print_flags(out, &seen.flags);
        }
    }
    if review.awaiting() > 0 {
        out.line("");
        out.note(&format!(
            "approve: lifeline tools approve {server} TOOL… (or --all) · reject: lifeline \
             tools reject {server} TOOL…"
        ));
    } else if rejected.is_empty() {
        out.note(&format!("{server}: nothing is waiting for review"));
    }
}

/// A word diff as git's plain word diff writes it: `[-removed-]`, `{+added+}`.
fn words(diff: &[Words]) -> String {
    let mut line = String::new();
    for w in diff {
        match w.op {
            Op::Removed => line.push_str(&format!("[-{}-]", w.text)),
            Op::Added => line.push_str(&format!("{{+{}+}}", w.text)),
            _ => line.push_str(&w.text),
        }
    }
    line.replace('\n', "\n    ")
}

fn field(f: &FieldChange) -> String {
    let (before, after) = (f.before.as_deref(), f.after.as_deref());
    match f.op {
        Op::Added => format!("{}: added {}", f.path, after.unwrap_or_default()),
        Op::Removed => format!("{}: removed (was {})", f.path, before.unwrap_or_default()),
        _ => format!(
            "{}: {} → {}",
            f.path,
            before.unwrap_or_default(),
            after.unwrap_or_default()
        ),
    }
}

fn print_flags(out: &Out, flags: &[Flag]) {
    for flag in flags {
        let kind = serde_json::to_value(flag.kind).unwrap_or(Value::Null);
        out.line(&format!(
            "  flag {} ({} {}–{}): {}",
            kind.as_str().unwrap_or("?"),
            flag.field,
            flag.start,
            flag.end,
            flag.why
        ));
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}
