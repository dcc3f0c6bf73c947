//! The redactor's rules, one `check(input, expect)` per shape.

use super::*;

fn check(secrets: &[&str], input: &str, expect: &str) {
    assert_eq!(
        Redactor::new(secrets.iter().copied()).scrub(input),
        expect,
        "{input}"
    );
}

#[test]
fn args_named_like_secrets_lose_their_values() {
    let check = |args: &[&str], expect: &[&str]| {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        assert_eq!(
            scrub_args(&args, &Redactor::new(["hunter2-canary"])),
            expect
        );
    };
    check(&["--token=abc", "--port=80"], &["--token=***", "--port=80"]);
    check(&["--api-key", "abc", "x"], &["--api-key", "***", "x"]);
    check(&["--password", "--verbose"], &["--password", "--verbose"]);
    check(&["-p", "8080", "hunter2-canary"], &["-p", "8080", "***"]);
    check(
        &["--db=postgres://u:hunter2-canary@h"],
        &["--db=postgres://u:***@h"],
    );
    check(&["postgresql://u:pw1@h/db"], &["postgresql://u:***@h/db"]);
}

#[test]
fn configured_secrets_and_their_parts() {
    check(
        &["CANARY-1234"],
        "token CANARY-1234 leaked",
        "token *** leaked",
    );
    check(&["Bearer CANARY-xyz"], "got CANARY-xyz", "got ***");
    check(
        &["abc"],
        "abc is too short to mask",
        "abc is too short to mask",
    );
    check(&["CANARY-12", "CANARY-1234"], "CANARY-1234", "***");
}

#[test]
fn token_shapes_without_configuration() {
    check(
        &[],
        "Authorization: Bearer abcdef123456",
        "Authorization: Bearer ***",
    );
    check(&[], "key sk-abcdefghijklmnop here", "key *** here");
    check(&[], "ghp_0123456789abcdef", "***");
    check(&[], "xoxb-123456789012-abc", "***");
    check(
        &[],
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "jwt ***",
    );
    check(
        &[],
        "connection refused (os error 111)",
        "connection refused (os error 111)",
    );
    check(&[], "sk-short", "sk-short");
}

#[test]
fn more_key_prefixes() {
    for token in [
        "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "ghu_0123456789abcdefABCDEF",
        "ghs_0123456789abcdefABCDEF",
        "glpat-0123456789abcdefABCD",
        "xoxp-1234567890-1234567890",
        "sk-ant-api03-AbCdEf0123456789",
        "pk_live_0123456789abcdef",
        "rk_live_0123456789abcdef",
    ] {
        check(&[], &format!("leaked {token}, then"), "leaked ***, then");
    }
    // Identifiers that share a prefix are not tokens.
    for word in ["hf_hub_download", "npm_config_cache", "npm_package_version"] {
        check(&[], word, word);
    }
}

#[test]
fn urls_keep_scheme_host_port_path_and_query_keys() {
    let check = |url: &str, expect: &str| {
        assert_eq!(Redactor::default().url(url), expect, "{url}");
    };
    check("https://h.example/mcp", "https://h.example/mcp");
    check(
        "https://u:p@h.example:8443/a/b?k=v&x=y&flag#frag",
        "https://h.example:8443/a/b?k=***&x=***&flag",
    );
    check("http://user@127.0.0.1:9/", "http://127.0.0.1:9/");
    check("not a url", "(not a valid URL)");
}

#[test]
fn credential_shaped_path_segments_are_masked() {
    let check = |url: &str, expect: &str| {
        assert_eq!(Redactor::default().url(url), expect, "{url}");
    };
    check(
        "https://mcp.example.com/mcp/3f9a1c7e5b2d4a6f8e0c1b3d5f7a9e2c/sse",
        "https://mcp.example.com/mcp/***/sse",
    );
    check(
        "https://h/s/550e8400-e29b-41d4-a716-446655440000/mcp",
        "https://h/s/***/mcp",
    );
    check("https://h/k/ghp_0123456789abcdefXYZ", "https://h/k/***");
    // Ordinary paths stay as written.
    for url in [
        "https://api.githubcopilot.com/mcp/",
        "https://h/v1/modelcontextprotocol/server-filesystem",
        "https://h/mcp-server-v2-release-2024/sse",
        "https://h/2025-11-25/tools",
    ] {
        check(url, url);
    }
    assert_eq!(
        Redactor::default().url_path("/mcp/Zk3xQ9mB7vR2tW5yL8nP4cD6/sse"),
        "/mcp/***/sse"
    );
}

#[test]
fn percent_decoding_keeps_malformed_escapes_and_plus() {
    let check = |written: &str, expect: &str| {
        assert_eq!(url::percent_decoded(written), expect, "{written}");
    };
    check("p%40ss", "p@ss");
    check("a+b%2Bc", "a+b+c");
    // Malformed or cut-off escapes are kept as written (`%+1` is not hex).
    check("100%", "100%");
    check("%zz%4", "%zz%4");
    check("%+1", "%+1");
    // Bytes that are not UTF-8 become U+FFFD; UTF-8 escapes decode.
    check("a%FFb", "a\u{FFFD}b");
    check("caf%C3%A9", "café");
    // A credential-shaped segment is still found behind its escapes.
    assert_eq!(
        Redactor::default().url("https://h/k/%67hp_0123456789abcdefXYZ"),
        "https://h/k/***"
    );
}

#[test]
fn connection_strings_of_any_scheme_lose_their_password() {
    let check = |url: &str, expect: &str| {
        assert_eq!(Redactor::default().url(url), expect, "{url}");
        assert_eq!(Redactor::default().scrub(url), expect, "{url}");
    };
    check(
        "postgresql://user:s3cretpw@db.example:5432/app",
        "postgresql://user:***@db.example:5432/app",
    );
    check(
        "mongodb+srv://admin:s3cretpw@c0.a.mongodb.net,c1.a.mongodb.net/db?retryWrites=true",
        "mongodb+srv://admin:***@c0.a.mongodb.net,c1.a.mongodb.net/db?retryWrites=***",
    );
    check(
        "redis://:s3cretpw@cache:6379/0",
        "redis://:***@cache:6379/0",
    );
    check("amqp://guest:p@ss@mq/vhost", "amqp://guest:***@mq/vhost");
    check("mysql://root@localhost/db", "mysql://root@localhost/db");
    assert_eq!(connection_password("mysql://r:pw@h/db"), Some("pw"));
    assert_eq!(connection_password("mysql://r@h/db"), None);
    assert_eq!(connection_password("--db=postgres://u:pw@h"), Some("pw"));
    assert_eq!(connection_password("https://h:8080/@scope/pkg"), None);
}

#[test]
fn urls_in_free_text_are_rerendered() {
    check(
        &[],
        "GET https://u:CANARYpw@h.example/mcp?sig=abc&k=v failed.",
        "GET https://h.example/mcp?sig=***&k=*** failed.",
    );
    check(
        &[],
        "see \"http://h/x?a=1\" (and http://h/plain)",
        "see \"http://h/x?a=***\" (and http://h/plain)",
    );
    check(
        &[],
        "ftp://a?b=1 then HTTPS://h/p?q=2",
        "ftp://a?b=*** then https://h/p?q=***",
    );
    check(
        &[],
        "could not connect to postgres://app:pw-canary@db/app: refused",
        "could not connect to postgres://app:***@db/app: refused",
    );
    check(
        &[],
        "GET https://h/mcp/Zk3xQ9mB7vR2tW5yL8nP4cD6/sse failed",
        "GET https://h/mcp/***/sse failed",
    );
    check(
        &[],
        "redirected to https://app.example/cb#access_token=abc123&state=x",
        "redirected to https://app.example/cb",
    );
}

#[test]
fn bare_query_and_fragment_parameters_lose_their_values() {
    check(
        &[],
        "GET /callback#access_token=abc123&token_type=bearer 200",
        "GET /callback#access_token=***&token_type=*** 200",
    );
    check(&[], "POST /mcp?api_key=abc123", "POST /mcp?api_key=***");
    check(&[], "what? yes=no", "what? yes=no");
    check(&[], "is it #1?", "is it #1?");
}

#[test]
fn secret_named_arguments_lose_their_values() {
    check(
        &[],
        "run --token=abc123 --port=80",
        "run --token=*** --port=80",
    );
    check(&[], "run --api-key abc123 -v", "run --api-key *** -v");
    check(&[], "GITHUB_TOKEN=abc123 npx x", "GITHUB_TOKEN=*** npx x");
    check(&[], "--password\tp4ss\n", "--password\t***\n");
    check(&[], "--pass p4ss", "--pass ***");
    check(&[], "--verbose value", "--verbose value");
    check(&[], "a == b", "a == b");
    check(&[], "--api-key --other", "--api-key --other");
    check(&[], "--token  two-spaces", "--token  ***");
    check(
        &[],
        "unknown argument \"--token=abc123\", (--api-key abc)",
        "unknown argument \"--token=***\", (--api-key ***)",
    );
    check(
        &[],
        "sent X-Api-Key: abc123 and Authorization: Basic dXNlcjpw {\"password\": \"hunter2\", \"n\": 1}",
        "sent X-Api-Key: *** and Authorization: Basic *** {\"password\": \"***\", \"n\": 1}",
    );
    check(
        &[],
        "needs valid credentials: check the Authorization header",
        "needs valid credentials: check the Authorization header",
    );
    let args: Vec<String> = [
        "run",
        "--token=t1",
        "--api-key",
        "k2",
        "-v",
        "--port=1",
        "-p",
        "8080",
        "-p",
        "hunter2pass",
        "postgres://u:pw9@h/db",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        secret_argument_values(&args),
        ["t1", "k2", "hunter2pass", "pw9"]
    );
}

#[test]
fn compact_json_fields_named_like_secrets() {
    check(
        &[],
        r#"bad config {"password":"hunter2","user":"me","api_key":"k1","n":1}"#,
        r#"bad config {"password":"***","user":"me","api_key":"***","n":1}"#,
    );
    check(
        &[],
        r#"{"token":"t","secret":"s","authorization":"Bearer x","clientSecret":"c","ssh_key":"k","refresh_token":"r","db_secret":"d"}"#,
        r#"{"token":"***","secret":"***","authorization":"***","clientSecret":"***","ssh_key":"***","refresh_token":"***","db_secret":"***"}"#,
    );
    check(
        &[],
        r#"message: "{\"password\":\"hunter2\",\"ok\":true}""#,
        r#"message: "{\"password\":\"***\",\"ok\":true}""#,
    );
    check(
        &[],
        r#"{"name":"x","count":"3"}"#,
        r#"{"name":"x","count":"3"}"#,
    );
}

#[test]
fn header_lines_lose_their_values() {
    check(
        &[],
        "> GET /mcp HTTP/1.1\n> Cookie: session=abc; csrf=def\n> x-api-key: k-123 456\n< HTTP/1.1 401",
        "> GET /mcp HTTP/1.1\n> Cookie: ***\n> x-api-key: ***\n< HTTP/1.1 401",
    );
    check(
        &[],
        "authorization: Bearer abc def\nproxy-authorization: Basic dXNlcjpw\n",
        "authorization: Bearer ***\nproxy-authorization: Basic ***\n",
    );
    check(&[], "set-cookie: id=1; HttpOnly", "set-cookie: ***");
    check(
        &[],
        "sent {\"h\": \"Cookie: a=1; s=2\"} then",
        "sent {\"h\": \"Cookie: ***\"} then",
    );
    check(
        &[],
        "Content-Type: application/json",
        "Content-Type: application/json",
    );
    check(&[], "Author: Jane", "Author: Jane");
}

#[test]
fn env_values_are_secrets_only_when_they_look_like_one() {
    let env = [
        ("NODE_ENV", "production"),
        ("DEBUG", "true"),
        ("PORT", "3000"),
        ("HOME_DIR", "/home/me/notes"),
        ("REGION", "us-east-1"),
        ("APP_ENV", "development"),
        ("BASE_URL", "https://api.example.com/v1"),
        ("API_TOKEN", "t0k3"),
        ("OPAQUE", "Zk3xQ9mB7vR2"),
        ("DATABASE_URL", "postgres://u:dbpass@h/db"),
        ("AUTH_MODE", "production"),
    ];
    assert_eq!(env_secrets(env), ["t0k3", "Zk3xQ9mB7vR2", "dbpass"]);
    let r = Redactor::new(env_secrets(env));
    assert_eq!(r.scrub("mode production"), "mode production");
}

#[test]
fn rules_that_fired_are_counted_across_clones() {
    let r = Redactor::new(["CANARY-secret"]);
    let clone = r.clone();
    clone.scrub("CANARY-secret and CANARY-secret, Bearer abcdefgh");
    r.scrub("https://u:p@h/?a=1&b=2 --token=x");
    r.scrub(r#"{"password":"x"} https://h/k/Zk3xQ9mB7vR2tW5yL8nP4cD6"#);
    r.scrub("Cookie: a=b");
    let counts = r.counts();
    assert_eq!(counts.get("configured_secret"), Some(&2));
    assert_eq!(counts.get("auth_scheme"), Some(&1));
    assert_eq!(counts.get("url_userinfo"), Some(&1));
    assert_eq!(counts.get("url_query_value"), Some(&2));
    assert_eq!(counts.get("secret_argument"), Some(&1));
    assert_eq!(counts.get("json_field"), Some(&1));
    assert_eq!(counts.get("url_path_segment"), Some(&1));
    assert_eq!(counts.get("header_line"), Some(&1));
    assert_eq!(counts.get("jwt"), None);
}

#[test]
fn debug_never_shows_the_secrets() {
    let debug = format!("{:?}", Redactor::new(["CANARY-dbg-1"]));
    assert!(!debug.contains("CANARY"), "{debug}");
}

#[test]
fn cap_cuts_on_a_char_boundary() {
    assert_eq!(cap("abc", 10), "abc");
    assert_eq!(cap("ééé", 3), "é… (4 bytes cut)");
}
