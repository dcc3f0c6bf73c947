//! What the tray-resident process is linked with (Linux). The app in the tray is
//! `lifeline-tray` alone, and it stays small only while it maps no GUI toolkit: GTK and
//! WebKitGTK cost ~40 MB resident in a process that merely links them (docs/packaging.md).
//! Its dynamic section, read by `readelf`, must name neither, nor anything of theirs.

#![cfg(target_os = "linux")]

use std::process::Command;

/// Libraries a process that draws nothing must not need: GTK, GDK, WebKitGTK and its
/// JavaScript engine, libsoup, cairo, pango, and the libappindicator tauri's tray uses.
const TOOLKIT: &[&str] = &[
    "libgtk",
    "libgdk",
    "libwebkit",
    "libjavascriptcore",
    "libsoup",
    "libcairo",
    "libpango",
    "appindicator",
];

#[test]
fn the_tray_process_links_no_gui_toolkit() {
    let tray = env!("CARGO_BIN_EXE_lifeline-tray");
    let out = Command::new("readelf")
        .args(["--dynamic", "--wide", tray])
        .output()
        .expect("readelf (binutils) runs");
    assert!(out.status.success(), "readelf failed on {tray}");
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = dynamic
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .collect();
    assert!(
        needed.iter().any(|lib| lib.starts_with("libc.so")),
        "readelf's NEEDED entries were not read: {dynamic}"
    );
    for lib in &needed {
        assert!(
            !TOOLKIT.iter().any(|t| lib.contains(t)),
            "{tray} needs {lib}: the tray process must not link a GUI toolkit (all: {needed:?})"
        );
    }
}
