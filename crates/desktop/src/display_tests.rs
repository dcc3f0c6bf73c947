//! The display check against real sockets: a Wayland socket and an X server's TCP port that
//! the test listens on, and numbers nothing listens on.

use super::*;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;

fn check(x: Option<&str>, wayland: Option<&str>, runtime: Option<&Path>) -> Result<(), String> {
    check_with(x.map(OsStr::new), wayland.map(OsStr::new), runtime).map_err(|e| e.to_string())
}

/// An X display number with no server: neither its socket file nor its abstract twin.
fn unused_x() -> u16 {
    (4200..4300)
        .find(|n| x_answers(&format!(":{n}")) == Some(false))
        .expect("a free X display number in 4200..4300")
}

/// A TCP listener on 127.0.0.1 at an X server's port (6000 + N), and its N.
fn x_over_tcp() -> (TcpListener, u16) {
    (50..200)
        .find_map(|n| {
            TcpListener::bind(("127.0.0.1", 6000 + n))
                .ok()
                .map(|l| (l, n))
        })
        .expect("a free port in 6050..6200")
}

fn assert_one_line(said: &str, missing: &str) {
    assert!(said.contains(missing), "{said}");
    assert!(
        said.contains("`lifeline watch`") && said.contains("`lifeline serve`"),
        "{said}"
    );
    assert!(!said.contains('\n'), "one line: {said:?}");
}

#[test]
fn no_display_variable_is_no_display() {
    let said = check(None, None, None).unwrap_err();
    assert_one_line(&said, "neither DISPLAY nor WAYLAND_DISPLAY is set");
    let said = check(Some(""), Some(""), None).unwrap_err();
    assert_one_line(&said, "neither DISPLAY nor WAYLAND_DISPLAY is set");
}

#[test]
fn a_display_nothing_answers_at_is_named() {
    let n = unused_x();
    let said = check(Some(&format!(":{n}")), None, None).unwrap_err();
    assert_one_line(&said, &format!("no X server answers at DISPLAY=:{n}"));

    let runtime = tempfile::tempdir().unwrap();
    let said = check(
        Some(&format!(":{n}.0")),
        Some("wayland-9"),
        Some(runtime.path()),
    )
    .unwrap_err();
    assert_one_line(
        &said,
        &format!(
            "no Wayland compositor at WAYLAND_DISPLAY=wayland-9 and no X server answers at \
             DISPLAY=:{n}.0"
        ),
    );
}

#[test]
fn a_wayland_socket_that_accepts_is_a_display() {
    let runtime = tempfile::tempdir().unwrap();
    let _compositor = UnixListener::bind(runtime.path().join("wayland-1")).unwrap();
    assert_eq!(check(None, Some("wayland-1"), Some(runtime.path())), Ok(()));
    let absolute = runtime.path().join("wayland-1");
    assert_eq!(check(None, absolute.to_str(), None), Ok(()));
    // Relative, with no runtime directory to find it in.
    assert!(check(None, Some("wayland-1"), None).is_err());
}

#[test]
fn an_x_server_over_tcp_that_accepts_is_a_display() {
    let (_server, n) = x_over_tcp();
    assert_eq!(check(Some(&format!("127.0.0.1:{n}.0")), None, None), Ok(()));
    assert_eq!(check(Some(&format!("localhost:{n}")), None, None), Ok(()));
}

#[test]
fn a_form_the_check_does_not_know_is_left_to_gtk() {
    assert_eq!(check(Some("not-a-display"), None, None), Ok(()));
    assert_eq!(check(Some(":x"), None, None), Ok(()));
}

#[test]
fn gtk_refusing_the_display_is_the_same_one_line() {
    let said = NoDisplay::toolkit("DISPLAY=:7").to_string();
    assert_one_line(&said, "GTK cannot open the display DISPLAY=:7");
}
