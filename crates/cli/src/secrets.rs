//! `lifeline secrets set|delete|list`: the secrets a config references as `${keyring:NAME}`,
//! kept in the OS keychain (or the private file where there is none; `lifeline_core::secrets`).
//! A value is read from stdin, or asked for without echo on a terminal — never taken from the
//! command line, where `ps` and the shell's history would show it. Nothing prints a value.

use crate::output::{EXIT_OK, EXIT_TOOL_ERROR, EXIT_UNAVAILABLE, EXIT_USAGE, Out};
use clap::Subcommand;
use lifeline_core::redact::Redactor;
use lifeline_core::secrets::{SecretError, SecretStore};
use serde_json::json;
use std::io::{IsTerminal, Read};

#[derive(Subcommand)]
pub enum SecretsCommand {
    /// Store a secret (the value from stdin, or typed without echo at a terminal); a config
    /// uses it as ${keyring:NAME}
    Set {
        /// The secret's name: letters, digits, _, - and .
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove a secret
    Delete {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// The names of the stored secrets (never the values), and where they are kept
    List {
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: SecretsCommand) -> i32 {
    match command {
        SecretsCommand::Set { name, json } => set(&name, &out(json)),
        SecretsCommand::Delete { name, json } => delete(&name, &out(json)),
        SecretsCommand::List { json } => list(&out(json)),
    }
}

fn out(json: bool) -> Out {
    Out {
        json,
        redactor: Redactor::default(),
    }
}

fn set(name: &str, out: &Out) -> i32 {
    if let Some(e) = lifeline_core::secrets::check_name(name) {
        return fail(out, &e.to_string(), EXIT_USAGE);
    }
    let value = match read_value(name) {
        Ok(v) => v,
        Err(why) => return fail(out, &why, EXIT_USAGE),
    };
    let store = SecretStore::open();
    // From here the value is scrubbed from whatever this command prints.
    let out = Out {
        json: out.json,
        redactor: Redactor::new(vec![value.clone()]),
    };
    if let Err(e) = store.set(name, &value) {
        return store_error(&out, &e);
    }
    let backend = store.backend();
    if out.json {
        out.json_line(&json!({ "ok": true, "result": { "name": name, "backend": backend } }));
    } else {
        out.line(&format!(
            "stored {name} in {}; use it in the config as ${{keyring:{name}}}",
            where_(&store)
        ));
        fallback_notice(&out, &store);
    }
    EXIT_OK
}

fn delete(name: &str, out: &Out) -> i32 {
    let store = SecretStore::open();
    match store.delete(name) {
        Ok(true) => {
            if out.json {
                out.json_line(&json!({ "ok": true, "result": { "name": name, "deleted": true } }));
            } else {
                out.line(&format!("deleted {name} from {}", where_(&store)));
            }
            EXIT_OK
        }
        Ok(false) => fail(
            out,
            &format!("there is no secret {name} in {}", where_(&store)),
            EXIT_TOOL_ERROR,
        ),
        Err(e @ SecretError::BadName(_)) => fail(out, &e.to_string(), EXIT_USAGE),
        Err(e) => store_error(out, &e),
    }
}

fn list(out: &Out) -> i32 {
    let store = SecretStore::open();
    let names = match store.list() {
        Ok(n) => n,
        Err(e) => return store_error(out, &e),
    };
    if out.json {
        out.json_line(
            &json!({ "ok": true, "result": { "names": names, "backend": store.backend() } }),
        );
    } else {
        for n in &names {
            out.line(n);
        }
        out.note(&format!(
            "{} secret{} in {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            where_(&store)
        ));
        fallback_notice(out, &store);
    }
    EXIT_OK
}

/// The value to store: typed without echo at a terminal, else all of stdin less one final
/// line break. An empty value is refused (delete the secret instead).
fn read_value(name: &str) -> Result<String, String> {
    let value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("value for {name} (not shown): "))
            .map_err(|e| format!("could not read the value from the terminal: {e}"))?
    } else {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("could not read the value from stdin: {e}"))?;
        let trimmed = text
            .strip_suffix("\r\n")
            .or_else(|| text.strip_suffix('\n'))
            .unwrap_or(&text);
        trimmed.to_owned()
    };
    if value.is_empty() {
        return Err(format!(
            "the value for {name} is empty: pipe it in (`… | lifeline secrets set {name}`) or \
             type it at the prompt; to remove a secret, `lifeline secrets delete {name}`"
        ));
    }
    Ok(value)
}

fn where_(store: &SecretStore) -> String {
    let b = store.backend();
    match &b.path {
        Some(p) => format!("the secrets file {}", p.display()),
        None => format!("the {}", b.name),
    }
}

/// The file store is not the keychain: say so wherever it is used.
fn fallback_notice(out: &Out, store: &SecretStore) {
    if store.backend().is_fallback() {
        out.note(&format!("note: secrets are kept in {}", store.backend()));
    }
}

fn store_error(out: &Out, e: &SecretError) -> i32 {
    let code = match e {
        SecretError::BadName(_) => EXIT_USAGE,
        SecretError::Store { .. } => EXIT_UNAVAILABLE,
    };
    fail(out, &e.to_string(), code)
}

fn fail(out: &Out, message: &str, code: i32) -> i32 {
    if out.json {
        out.json_line(&json!({ "ok": false, "error": { "message": message } }));
    } else {
        out.note(&format!("error: {message}"));
    }
    code
}
