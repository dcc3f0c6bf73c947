//! The tokens file: tokens added, found, listed, replaced and removed; which clients' tokens
//! went away or were bound anew; the file private and refused when another user could have
//! planted it; bindings, and files from before them.

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
        profile: Some("coding".into()),
    };
    assert!(!format!("{e:?}").contains("secret"));
}

#[test]
fn usage_gives_each_host_the_url_and_the_header() {
    let text = usage(
        Path::new("/d/gateway-tokens.json"),
        "cursor",
        "lifeline_t",
        None,
        7424,
    );
    let url = "http://127.0.0.1:7424/servers/NAME/mcp";
    assert!(text.starts_with("Token for `cursor` (kept in /d/gateway-tokens.json"));
    assert!(
        text.contains("Every server:       http://127.0.0.1:7424/mcp"),
        "{text}"
    );
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

/// A bound token's snippets name the one entry `lifeline` at its profile's URL, and no
/// server's; `default`'s is /mcp.
#[test]
fn usage_gives_a_bound_token_its_profiles_url_alone() {
    let path = Path::new("/d/gateway-tokens.json");
    let text = usage(path, "cursor", "lifeline_t", Some("coding"), 7424);
    let url = "http://127.0.0.1:7424/profiles/coding/mcp";
    assert!(
        text.starts_with("Token for `cursor`, bound to profile `coding` (kept in"),
        "{text}"
    );
    assert!(
        text.contains(&format!("URL:                {url}\n")),
        "{text}"
    );
    assert!(text.contains("at /mcp too"), "{text}");
    assert!(text.contains(&format!(
        "claude mcp add --transport http lifeline {url} --header \"Authorization: Bearer lifeline_t\""
    )));
    assert!(
        text.contains(&format!("\"lifeline\": {{ \"url\": \"{url}\"")),
        "{text}"
    );
    assert!(!text.contains("/servers/"), "{text}");
    let text = usage(path, "cursor", "lifeline_t", Some("default"), 7424);
    assert!(
        text.contains("URL:                http://127.0.0.1:7424/mcp\n"),
        "{text}"
    );
    assert!(!text.contains("/profiles/"), "{text}");
}

#[test]
fn a_token_is_bound_to_a_profile_listed_with_it_and_found_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    let free = add(&path, "claude-code").unwrap();
    let bound = add_bound(&path, "cursor", Some("coding")).unwrap();
    let tokens = Tokens::new(path.clone());
    let caller = |client: &str, profile: Option<&str>| {
        Some(Caller {
            client: client.into(),
            profile: profile.map(Into::into),
        })
    };
    assert_eq!(tokens.caller_of(&free), caller("claude-code", None));
    assert_eq!(tokens.caller_of(&bound), caller("cursor", Some("coding")));
    let listed: Vec<_> = list(&path)
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.profile))
        .collect();
    assert_eq!(
        listed,
        [
            ("claude-code".to_owned(), None),
            ("cursor".to_owned(), Some("coding".to_owned()))
        ]
    );
    // Only a bound entry carries the key, so an unbound file reads as before.
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("\"profile\"").count(), 1, "{text}");
    let e = add_bound(&path, "x", Some("no spaces")).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("not a profile name"), "{e}");
}

#[test]
fn a_file_from_before_bindings_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    crate::private::create_dir(dir.path()).unwrap();
    let old = r#"{ "clients": { "a": { "token": "lifeline_old", "created": "2026-12-02T05:00:00.000Z" } } }"#;
    crate::private::write_atomic(&path, old.as_bytes(), crate::private::Mode::Private).unwrap();
    let tokens = Tokens::new(path.clone());
    let found = tokens.caller_of("lifeline_old").unwrap();
    assert_eq!((found.client.as_str(), found.profile), ("a", None));
    let listed = list(&path).unwrap();
    assert_eq!(listed[0].profile, None);
}

/// Binding a client's token to another profile (or unbinding it) in the file, the token
/// kept, revokes the client as a new token would: its sessions served another profile.
#[test]
fn a_changed_binding_is_revoked_like_a_replaced_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(dir.path());
    add_bound(&path, "a", Some("coding")).unwrap();
    add(&path, "b").unwrap();
    let tokens = Tokens::new(path.clone());
    assert!(tokens.take_revoked().is_empty());
    let rebind = |profile: Option<&str>| {
        let mut file = read(&path).unwrap();
        file.clients.get_mut("a").unwrap().profile = profile.map(Into::into);
        write(&path, &file).unwrap();
    };
    rebind(Some("reading"));
    assert_eq!(tokens.take_revoked(), ["a"]);
    rebind(None);
    assert_eq!(tokens.take_revoked(), ["a"]);
    let token = get(&path, "a").unwrap().unwrap();
    assert_eq!(tokens.caller_of(&token).unwrap().profile, None);
    assert!(tokens.take_revoked().is_empty());
}

#[test]
fn a_binding_is_checked_against_the_config() {
    let config = crate::config::parse(
        r#"{ "lifeline": { "profiles": { "coding": { "servers": ["s"] } } },
             "mcpServers": { "s": { "command": "true" } } }"#,
        None,
        &|_| None,
    )
    .unwrap();
    assert_eq!(check_profile("coding", Some(&config)), Ok(()));
    assert_eq!(check_profile("default", Some(&config)), Ok(()));
    assert_eq!(check_profile("nope", None), Ok(()));
    assert_eq!(
        check_profile("nope", Some(&config)),
        Err("the config has no profile `nope` (its profiles: default, coding)".into())
    );
    let bad = check_profile("a/b", Some(&config)).unwrap_err();
    assert!(bad.contains("not a profile name"), "{bad}");
}
