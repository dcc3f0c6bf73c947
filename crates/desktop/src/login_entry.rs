//! "Start at login" on Linux: an XDG autostart entry, `$XDG_CONFIG_HOME/autostart/
//! Lifeline.desktop` (the name tauri-plugin-autostart gave it, so an entry made by an earlier
//! build still counts), which starts the app with `--hidden`: in the tray, supervising, with
//! no window until the user opens one. Off until the user ticks it in the tray menu.

use crate::launch::HIDDEN;
use std::io;
use std::path::{Path, PathBuf};

const FILE: &str = "Lifeline.desktop";

/// The entry's path: `$XDG_CONFIG_HOME/autostart`, else `~/.config/autostart`.
pub fn path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("autostart").join(FILE))
}

/// Whether the app starts at login: the entry exists and is not hidden.
pub fn enabled(entry: &Path) -> bool {
    std::fs::read_to_string(entry).is_ok_and(|text| {
        !text
            .lines()
            .any(|l| l.trim().eq_ignore_ascii_case("Hidden=true"))
    })
}

/// Writes the entry, which starts `program --hidden`, or removes it.
pub fn set(entry: &Path, program: &Path, on: bool) -> io::Result<()> {
    if !on {
        return match std::fs::remove_file(entry) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            done => done,
        };
    }
    if let Some(dir) = entry.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Replaced whole, never truncated and half written (a session that starts while it is
    // written would skip the app); a link kept by a dotfiles manager stays a link.
    lifeline_core::private::write_atomic(
        entry,
        text(program).as_bytes(),
        lifeline_core::private::Mode::Keep,
    )
    .map_err(io::Error::from)
}

/// The entry's text. The program is quoted as the Desktop Entry spec says (a path with a
/// space, a quote or a backslash in it still starts).
pub fn text(program: &Path) -> String {
    let mut quoted = String::from('"');
    for c in program.to_string_lossy().chars() {
        if matches!(c, '"' | '`' | '$' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    format!(
        "[Desktop Entry]\nType=Application\nVersion=1.0\nName=Lifeline\n\
         Comment=Supervises your MCP servers from the tray\nExec={quoted} {HIDDEN}\n\
         Icon=lifeline-app\nTerminal=false\nX-GNOME-Autostart-enabled=true\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_at_login_is_off_then_writes_a_hidden_entry_then_removes_it() {
        let home = tempfile::tempdir().unwrap();
        let entry = home.path().join("autostart").join(FILE);
        let program = Path::new("/opt/Life line/lifeline-app");
        assert!(!enabled(&entry), "starting at login must be opt-in");
        set(&entry, program, true).unwrap();
        assert!(enabled(&entry));
        let text = std::fs::read_to_string(&entry).unwrap();
        assert!(
            text.lines()
                .any(|l| l == "Exec=\"/opt/Life line/lifeline-app\" --hidden"),
            "the entry starts the app hidden, in the tray:\n{text}"
        );
        set(&entry, program, false).unwrap();
        assert!(!enabled(&entry));
        assert!(!entry.exists());
        // Off twice is still off, not an error.
        set(&entry, program, false).unwrap();
    }

    #[test]
    fn an_entry_the_desktop_hid_does_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join(FILE);
        std::fs::write(
            &entry,
            text(Path::new("/usr/bin/lifeline-app")) + "Hidden=true\n",
        )
        .unwrap();
        assert!(!enabled(&entry));
    }

    #[test]
    fn quotes_and_dollars_are_escaped() {
        let text = text(Path::new("/a\"b/$c\\d"));
        assert!(
            text.contains("Exec=\"/a\\\"b/\\$c\\\\d\" --hidden"),
            "{text}"
        );
    }
}
