//! Which addresses the sign-in may open in a browser or send a credential to, decided in one
//! place: `https` anywhere; `http` only to this computer (127.0.0.0/8, `::1`, `localhost`);
//! never another scheme, never a URL with user info. `web_url` is that rule; `endpoint` adds
//! the downgrade rule for an address a server published: `http` only when the MCP server
//! itself is `http` on this computer (the loopback test setup), so an `https` server can never
//! send its sign-in over `http`, not even to a loopback address. Pure functions.

use super::auth_error;
use crate::error::Error;
use reqwest::Url;

/// Why an address is refused. None of the variants holds what the server sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    NotAUrl,
    /// Not `https` or `http`: the scheme's name if it is a well-known one.
    Scheme(Option<&'static str>),
    /// `user:password@` before the host.
    UserInfo,
    /// `http` to another computer.
    HttpElsewhere,
    /// `http` published by a server that is not itself `http` on this computer.
    Downgrade,
}

/// Schemes a refusal may name, because they are a fixed list and not the server's words.
const KNOWN_SCHEMES: &[&str] = &[
    "file",
    "javascript",
    "data",
    "vbscript",
    "blob",
    "about",
    "ftp",
    "ws",
    "wss",
    "mailto",
    "smb",
    "search-ms",
    "search",
    "ms-officecmd",
    "ms-settings",
    "ms-msdt",
];

impl Refusal {
    /// Why, in words a person can act on.
    pub fn reason(self) -> String {
        let only = "Lifeline opens and sends sign-in credentials only to https addresses \
                    (http only to this computer: 127.0.0.1, ::1 or localhost)";
        match self {
            Refusal::NotAUrl => format!("it is not a valid URL; {only}"),
            Refusal::Scheme(Some(name)) => format!("it is a {name}: address; {only}"),
            Refusal::Scheme(None) => format!("it uses a non-web scheme; {only}"),
            Refusal::UserInfo => {
                "it carries a user name or password before the host, which hides where it \
                 really goes"
                    .to_owned()
            }
            Refusal::HttpElsewhere => {
                format!("it is http to another computer, so it would travel unencrypted; {only}")
            }
            Refusal::Downgrade => "it is http while the MCP server is not itself http on this \
                                   computer: the sign-in must not fall back to an unencrypted \
                                   connection"
                .to_owned(),
        }
    }
}

/// `url` if a browser may open it and a credential may go there (see the module doc).
pub fn web_url(url: &str) -> Result<Url, Refusal> {
    let parsed = Url::parse(url).map_err(|_| Refusal::NotAUrl)?;
    match parsed.scheme() {
        "https" => {}
        "http" if is_loopback(&parsed) => {}
        "http" => return Err(Refusal::HttpElsewhere),
        other => {
            return Err(Refusal::Scheme(
                KNOWN_SCHEMES.iter().find(|k| **k == other).copied(),
            ));
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Refusal::UserInfo);
    }
    Ok(parsed)
}

/// `url`, published by (or for) the MCP server at `server`, if the sign-in may use it:
/// `web_url`, and `http` only when `server` is `http` on this computer too.
pub fn endpoint(server: &Url, url: &str) -> Result<Url, Refusal> {
    let parsed = web_url(url)?;
    if parsed.scheme() == "http" && !(server.scheme() == "http" && is_loopback(server)) {
        return Err(Refusal::Downgrade);
    }
    Ok(parsed)
}

/// Whether a sign-in's tokens may go to the MCP server at `server` at all: not over `http`
/// to another computer.
pub fn may_sign_in_to(server: &Url) -> bool {
    server.scheme() == "https" || (server.scheme() == "http" && is_loopback(server))
}

/// Whether `url`'s host is this computer: 127.0.0.0/8, `::1` or `localhost` exactly.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// The error of a refused address: `what` names it ("the token endpoint"), never its value.
pub fn refused(what: &str, why: Refusal) -> Error {
    auth_error(format!("{what} was refused: {}", why.reason()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_urls_pass() {
        let check = |url: &str, want: Result<(), Refusal>| {
            assert_eq!(web_url(url).map(drop), want, "{url}");
        };
        let ok = Ok(());
        check("https://as.example/authorize?x=1", ok);
        check("HTTPS://AS.example:8443/a", ok);
        check("https://127.0.0.1/a", ok);
        check("https://10.0.0.1/a", ok);
        check("http://127.0.0.1:5/callback", ok);
        check("http://127.1.2.3/x", ok);
        check("http://[::1]:8080/x", ok);
        check("http://localhost:3000/x", ok);
        check("http://LOCALHOST/x", ok);
        // WHATWG parsing: these are 127.0.0.1 written otherwise.
        check("http://0x7f.1/x", ok);
        check("http://2130706433/x", ok);

        let elsewhere = Err(Refusal::HttpElsewhere);
        check("http://as.example/token", elsewhere);
        check("http://10.0.0.1/token", elsewhere);
        check("http://192.168.1.1/token", elsewhere);
        check("http://169.254.169.254/latest", elsewhere);
        check("http://[::ffff:127.0.0.1]/x", elsewhere);
        check("http://[fe80::1]/x", elsewhere);
        check("http://localhost.evil.example/x", elsewhere);
        check("http://evil.localhost/x", elsewhere);
        check("http://127.0.0.1.evil.example/x", elsewhere);

        let named = |s| Err(Refusal::Scheme(Some(s)));
        check("file:///C:/Users/x/Downloads/x.exe", named("file"));
        check("file://server/share/x.exe", named("file"));
        check("javascript:alert(1)", named("javascript"));
        check("JavaScript:alert(1)", named("javascript"));
        check("data:text/html,<script>x</script>", named("data"));
        check(
            "search-ms:query=x&crumb=location:\\\\evil\\share",
            named("search-ms"),
        );
        check("ms-officecmd:{\"id\":1}", named("ms-officecmd"));
        check("ftp://as.example/x", named("ftp"));
        check("vscode://ext/install?x", Err(Refusal::Scheme(None)));
        check("slack://open", Err(Refusal::Scheme(None)));
        check("CANARYscheme://x", Err(Refusal::Scheme(None)));

        check(
            "https://accounts.example@evil.example/",
            Err(Refusal::UserInfo),
        );
        check("https://u:p@as.example/", Err(Refusal::UserInfo));
        check("http://u@127.0.0.1/", Err(Refusal::UserInfo));

        check("", Err(Refusal::NotAUrl));
        check("/authorize", Err(Refusal::NotAUrl));
        check("https://", Err(Refusal::NotAUrl));
        check("https://exa mple/", Err(Refusal::NotAUrl));
    }

    #[test]
    fn http_only_from_a_loopback_http_server() {
        let check = |server: &str, url: &str, want: Result<(), Refusal>| {
            let server = Url::parse(server).unwrap();
            assert_eq!(endpoint(&server, url).map(drop), want, "{server} {url}");
        };
        // The test setup: both on this computer, both http.
        check("http://127.0.0.1:7/mcp", "http://127.0.0.1:8/token", Ok(()));
        check("http://localhost:7/mcp", "http://localhost:8/token", Ok(()));
        check("http://127.0.0.1:7/mcp", "https://as.example/token", Ok(()));
        check(
            "https://mcp.example/mcp",
            "https://as.example/token",
            Ok(()),
        );
        // A downgrade from the server's own https, even to this computer.
        let down = Err(Refusal::Downgrade);
        check("https://mcp.example/mcp", "http://127.0.0.1:8/token", down);
        check("https://localhost:7/mcp", "http://localhost:8/token", down);
        // A server on another computer pointing at one here.
        check("http://192.168.1.5/mcp", "http://127.0.0.1:8/token", down);
        check(
            "https://mcp.example/mcp",
            "http://as.example/token",
            Err(Refusal::HttpElsewhere),
        );
        check(
            "http://127.0.0.1:7/mcp",
            "file:///etc/passwd",
            Err(Refusal::Scheme(Some("file"))),
        );
    }

    #[test]
    fn sign_in_only_to_https_or_this_computer() {
        let check = |server: &str, want: bool| {
            assert_eq!(
                may_sign_in_to(&Url::parse(server).unwrap()),
                want,
                "{server}"
            );
        };
        check("https://mcp.example/mcp", true);
        check("http://127.0.0.1:7/mcp", true);
        check("http://[::1]:7/mcp", true);
        check("http://mcp.example/mcp", false);
        check("http://192.168.1.5/mcp", false);
    }

    #[test]
    fn refusals_name_the_endpoint_and_the_reason_never_the_value() {
        for url in [
            "CANARYscheme://CANARYhost/CANARYpath",
            "https://CANARYuser:CANARYpw@h/",
            "http://CANARYhost.example/",
            "not a url CANARY",
        ] {
            let why = web_url(url).unwrap_err();
            let e = refused("the token endpoint", why);
            let shown = format!("{e}\n{e:?}");
            assert!(!shown.contains("CANARY"), "{shown}");
            assert!(shown.contains("the token endpoint was refused"), "{shown}");
        }
        let e = refused("the authorization endpoint", Refusal::Scheme(Some("file")));
        assert!(e.to_string().contains("a file: address"), "{e}");
        assert_eq!(e.kind(), crate::error::ErrorKind::Auth);
    }
}
