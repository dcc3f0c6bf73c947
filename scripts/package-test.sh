#!/usr/bin/env bash
# `make package-test`: installs the .deb that `make package` made on this machine (as root, with
# apt resolving its dependencies), checks what it put where, runs the INSTALLED app in a real
# window under Xvfb with the app e2e check (src-tauri/e2e/screenshot.sh: the window, the
# servers' states, the UI's first paint, a clean exit, no leaked canaries), runs the installed
# CLI, then removes the package and checks that nothing of it is left.
set -euo pipefail

# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

say() { printf 'package-test: %s\n' "$*"; }
die() {
  printf 'package-test: FAILED: %s\n' "$*" >&2
  exit 1
}

((EUID == 0)) || die "installing a package needs root (run as root, as CI does)"
deb=$(ls -t target/release/bundle/deb/*.deb 2>/dev/null | head -n 1 || true)
[[ -n $deb ]] || die "no .deb in target/release/bundle/deb: run 'make package' first"
pkg=$(dpkg-deb -f "$deb" Package)
say "installing $deb (package $pkg)"
dpkg -s "$pkg" >/dev/null 2>&1 && die "$pkg is already installed: remove it first (apt-get remove $pkg)"
removed=""
cleanup() { [[ -n $removed ]] || apt-get remove -y -qq "$pkg" >/dev/null 2>&1 || true; }
trap cleanup EXIT
apt-get install -y -qq --no-install-recommends "$(realpath "$deb")" >/dev/null

files=$(dpkg -L "$pkg")
for want in /usr/bin/lifeline-app /usr/bin/lifeline-tray /usr/bin/lifeline /usr/share/applications/Lifeline.desktop; do
  grep -qx "$want" <<<"$files" || die "the package does not install $want"
done
grep -q '^/usr/share/icons/hicolor/.*/apps/lifeline-app.png$' <<<"$files" || die "the package installs no icon"
fixture=$(grep '/demo/lifeline-fixture$' <<<"$files" | head -n 1)
[[ -n $fixture && -x $fixture ]] || die "the package does not install the demo's fixture server"
grep -q '^Exec=lifeline-app' /usr/share/applications/Lifeline.desktop || die "the desktop entry does not start lifeline-app"
say "installed: $(wc -l <<<"$files") paths, the app, its tray process, the CLI, the desktop entry, icons, $fixture"

version=$(lifeline --version) || die "the installed CLI does not run"
say "CLI: $version"

LIFELINE_E2E_APP=/usr/bin/lifeline-app LIFELINE_E2E_FIXTURE=$fixture \
  LIFELINE_E2E_OUT=$LIFELINE_ROOT/target/screenshots/package src-tauri/e2e/screenshot.sh

say "removing $pkg"
apt-get remove -y -qq "$pkg" >/dev/null
removed=yes
dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed' && die "$pkg is still installed"
for f in /usr/bin/lifeline-app /usr/bin/lifeline-tray /usr/bin/lifeline /usr/share/applications/Lifeline.desktop "$fixture"; do
  [[ ! -e $f ]] || die "$f is left after removing $pkg"
done
say "ok: installed, painted, ran, removed"
