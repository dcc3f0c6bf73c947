//! Embeds the UI: `../ui/dist` (the Vite build) when it has been built, otherwise
//! `placeholder/`, a page that says so and still lists the servers, so `cargo build` works
//! on a fresh clone. The choice reaches both tauri-build and `generate_context!` through
//! `TAURI_CONFIG`, a JSON merge patch over tauri.conf.json.

use std::path::Path;

const UI_INDEX: &str = "../ui/dist/index.html";

fn main() {
    // While the file is missing Cargo reruns this script on every build, so the real UI is
    // picked up as soon as it exists.
    println!("cargo:rerun-if-changed={UI_INDEX}");
    println!("cargo:rerun-if-changed=placeholder");
    if !Path::new(UI_INDEX).is_file() {
        let patch = r#"{"build":{"frontendDist":"placeholder"},"app":{"withGlobalTauri":true}}"#;
        println!("cargo:rustc-env=TAURI_CONFIG={patch}");
        println!(
            "cargo:warning=ui/dist/index.html not found: embedding src-tauri/placeholder \
             (build the UI first to embed it)"
        );
        // SAFETY: build scripts are single-threaded; this is before tauri-build reads it.
        unsafe { std::env::set_var("TAURI_CONFIG", patch) };
    }
    tauri_build::build()
}
