//! Opens a sign-in address in the desktop's browser: `open` on macOS, the URL protocol
//! handler on Windows, `xdg-open` elsewhere. Used by `lifeline login` and the app's Sign in.

use crate::error::Error;

/// Starts the browser at `url` and returns at once (the browser outlives the call).
pub fn open(url: &str) -> Result<(), Error> {
    let mut cmd = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler");
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    cmd.arg(url)
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
