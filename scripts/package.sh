#!/usr/bin/env bash
# `make package`: the release app with the UI embedded, bundled by the Tauri bundler into this
# OS's packages (src-tauri/bundle/<os>.json): .deb and .rpm on Linux, .app and .dmg on macOS,
# an NSIS installer on Windows. Each carries the `lifeline` CLI beside the app and the demo's
# fixture server in its resources. Output: target/release/bundle/<kind>/.
#
# The Tauri CLI is pinned in tools/tauri-cli (npm ci here, not in setup: only packaging needs it).
set -euo pipefail

# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

say() { printf 'package: %s\n' "$*"; }
die() {
  printf 'package: ERROR: %s\n' "$*" >&2
  exit 1
}

case $(uname -s) in
Linux) os=linux ;;
Darwin) os=macos ;;
MINGW* | MSYS* | CYGWIN*) os=windows ;;
*) die "no bundle config for $(uname -s): add src-tauri/bundle/<os>.json" ;;
esac
triple=$(rustc -vV | sed -n 's/^host: //p')
[[ -n $triple ]] || die "rustc -vV did not say the host triple"
exe=""
[[ $os == windows ]] && exe=.exe

cli=tools/tauri-cli
if [[ ! -x $cli/node_modules/.bin/tauri || $cli/package-lock.json -nt $cli/node_modules ]]; then
  say "installing the pinned Tauri CLI ($cli)"
  (cd "$cli" && npm ci --no-audit --no-fund)
fi

say "building the UI (ui/dist, embedded by the app)"
(cd ui && npm run build) # its packages: scripts/setup.sh, which `make package` runs first

say "building the CLI and the demo's fixture (release)"
cargo build --release -p lifeline-cli -p lifeline-it --bin lifeline --bin lifeline-fixture
# The bundler's sidecar naming: binaries/<name>-<target triple>, installed as <name>.
mkdir -p src-tauri/binaries
cp "target/release/lifeline$exe" "src-tauri/binaries/lifeline-$triple$exe"
if [[ $os == linux ]]; then
  # The app's core process on Linux (crates/desktop): lifeline-app replaces itself with it.
  say "building the tray-resident core, lifeline-tray (release)"
  cargo build --release -p lifeline-desktop --bin lifeline-tray
  cp target/release/lifeline-tray "src-tauri/binaries/lifeline-tray-$triple"
fi

say "building and bundling the app (release, $os)"
(cd src-tauri && ../$cli/node_modules/.bin/tauri build --config "bundle/$os.json" --ci)

say "made:"
find target/release/bundle -maxdepth 2 -type f \( -name '*.deb' -o -name '*.rpm' -o -name '*.dmg' -o -name '*.exe' \) \
  -newer "src-tauri/binaries/lifeline-$triple$exe" -printf '  %p (%s bytes)\n'
size() { stat -c %s "$1" 2>/dev/null || stat -f %z "$1"; }
say "app binary: $(size "target/release/lifeline-app$exe") bytes"
if [[ $os == linux ]]; then
  say "tray binary: $(size target/release/lifeline-tray) bytes"
fi
