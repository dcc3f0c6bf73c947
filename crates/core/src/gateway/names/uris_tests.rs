use super::*;
use proptest::prelude::*;

fn check(server: &str, uri: &str, host: &str) {
    assert_eq!(to_host(server, uri), host);
    let (s, u) = from_host(host).unwrap();
    assert_eq!((s.as_ref(), u), (server, uri));
}

#[test]
fn a_uri_is_prefixed_with_its_server_verbatim() {
    check(
        "filesystem",
        "file:///home/me/a b.txt",
        "lifeline://filesystem/file:///home/me/a b.txt",
    );
    check(
        "memory",
        "memory://graph",
        "lifeline://memory/memory://graph",
    );
    check(
        "my.server_1-x",
        "https://x.test/p?q=1#f",
        "lifeline://my.server_1-x/https://x.test/p?q=1#f",
    );
    check("git", "", "lifeline://git/");
    // A template gets the same prefix, so what a host expands from it maps back.
    check("fs", "file:///{+path}", "lifeline://fs/file:///{+path}");
    let expanded = "lifeline://fs/file:///tmp/x";
    assert_eq!(
        from_host(expanded).map(|(s, u)| (s.into_owned(), u)),
        Some(("fs".to_owned(), "file:///tmp/x"))
    );
}

#[test]
fn a_server_name_outside_a_reg_name_is_percent_encoded() {
    check("a/b", "x", "lifeline://a%2Fb/x");
    check("", "x", "lifeline:///x");
    check("100%", "x", "lifeline://100%25/x");
    check("é", "x", "lifeline://%C3%A9/x");
}

#[test]
fn only_the_endpoints_uris_map_back() {
    for other in [
        "file:///x",
        "lifeline:/x/y",
        "lifeline//x/y",
        "lifeline://server-without-path",
        "lifelin",
        "",
        "lifeline://%FF/x",
        "é",
    ] {
        assert_eq!(from_host(other), None, "{other:?}");
    }
    let upper = from_host("LifeLine://fs/x").unwrap();
    assert_eq!((upper.0.as_ref(), upper.1), ("fs", "x"));
}

#[test]
fn a_uri_routes_to_its_server_ignoring_the_authoritys_case() {
    let servers = ["filesystem", "Memory"];
    assert_eq!(
        route("lifeline://FileSystem/file:///a", servers),
        Some(("filesystem", "file:///a"))
    );
    assert_eq!(
        route("lifeline://memory/memory://x", servers),
        Some(("Memory", "memory://x"))
    );
    assert_eq!(route("lifeline://git/x", servers), None);
    assert_eq!(route("file:///a", servers), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_uri_maps_back_exactly(server in "\\PC{0,20}", uri in "\\PC{0,60}") {
        let host = to_host(&server, &uri);
        let (s, u) = from_host(&host).unwrap();
        prop_assert_eq!(s.as_ref(), server.as_str());
        prop_assert_eq!(u, uri.as_str());
    }

    #[test]
    fn a_configured_server_routes_back(
        server in "[A-Za-z0-9._-]{1,64}",
        uri in "\\PC{0,60}",
        others in prop::collection::vec("[a-z]{1,8}", 0..5),
    ) {
        let host = to_host(&server, &uri);
        let prefix = format!("lifeline://{server}/");
        prop_assert!(host.starts_with(&prefix));
        let mut servers: Vec<&str> = others.iter().map(String::as_str).collect();
        servers.retain(|s| !s.eq_ignore_ascii_case(&server));
        servers.push(&server);
        prop_assert_eq!(route(&host, servers), Some((server.as_str(), uri.as_str())));
    }
}
