//! Opens a sign-in address in the desktop's browser: `open` on macOS, the URL protocol
//! handler on Windows, `xdg-open` elsewhere. Used by `lifeline login` and the app's Sign in.
//! Those programs open anything they are given (a file, `search-ms:`, another app's scheme),
//! so `open` itself refuses every address but a web one (`web::web_url`), whoever calls it.

use super::Endpoint;
use super::web::{self, Refusal};
use crate::error::Error;

/// Starts the browser at `url` and returns at once (the browser outlives the call). An
/// address that is not `https` (or `http` to this computer) is refused and nothing starts.
pub fn open(url: &str) -> Result<(), Error> {
    let url = checked(url)?;
    let mut cmd = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler");
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    // The URL as parsed and serialized again: percent-encoded, no spaces or quotes.
    cmd.arg(url.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|e| {
            Error::config(format!(
                "could not start a browser ({e}): open the sign-in address yourself"
            ))
        })
}

fn checked(url: &str) -> Result<reqwest::Url, Error> {
    web::web_url(url).map_err(|why: Refusal| {
        web::refused(
            &format!("opening {} in the browser", Endpoint::Authorization.name()),
            why,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_addresses_are_opened() {
        for url in [
            "file:///C:/Users/x/Downloads/x.exe",
            "search-ms:query=x&crumb=location:\\\\evil.example\\share",
            "ms-officecmd:{}",
            "vscode://x",
            "javascript:alert(1)",
            "http://as.example/authorize",
        ] {
            // Refused before any program starts: `open` returns the refusal itself.
            let e = open(url).unwrap_err();
            assert!(e.message().contains("was refused"), "{url}: {e}");
            assert_eq!(e.kind(), crate::error::ErrorKind::Auth, "{url}");
        }
        assert_eq!(
            checked("https://as.example/a b?x=\"y\"").unwrap().as_str(),
            "https://as.example/a%20b?x=%22y%22"
        );
    }
}
