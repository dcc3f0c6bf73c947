#!/usr/bin/env bash
# `make run`: a short demo of Lifeline against the fixture MCP server.
# Starts `target/debug/lifeline-fixture http` in the background, reads the URL from its
# "LISTENING <url>" line, lists its tools and calls `echo`, then stops the fixture.
# Expects `cargo build -p lifeline-cli -p lifeline-it` to have run (the Makefile does it).
set -euo pipefail

# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

LIFELINE="$LIFELINE_ROOT/target/debug/lifeline"
FIXTURE="$LIFELINE_ROOT/target/debug/lifeline-fixture"
for bin in "$LIFELINE" "$FIXTURE"; do
  [[ -x $bin ]] || {
    echo "demo: $bin not found: run 'cargo build -p lifeline-cli -p lifeline-it'" >&2
    exit 1
  }
done

mkdir -p "$LIFELINE_ROOT/target"
work=$(mktemp -d "$LIFELINE_ROOT/target/demo.XXXXXX")
fixture_pid=""
cleanup() {
  if [[ -n $fixture_pid ]] && kill -0 "$fixture_pid" 2>/dev/null; then
    kill "$fixture_pid" 2>/dev/null || true
    wait "$fixture_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$FIXTURE" http >"$work/fixture.out" 2>"$work/fixture.err" &
fixture_pid=$!

url=""
for _ in $(seq 100); do
  url=$(sed -n 's/^LISTENING \(http[^ ]*\)$/\1/p' "$work/fixture.out" | head -n 1) || url=""
  [[ -n $url ]] && break
  if ! kill -0 "$fixture_pid" 2>/dev/null; then
    echo "demo: lifeline-fixture exited before listening; its stderr:" >&2
    cat "$work/fixture.err" >&2
    exit 1
  fi
  sleep 0.1
done
[[ -n $url ]] || {
  echo "demo: no LISTENING line from lifeline-fixture within 10 s" >&2
  exit 1
}
echo "demo: fixture MCP server (pid $fixture_pid) at $url"

run() {
  echo
  local line='$ lifeline' arg
  for arg in "$@"; do
    if [[ $arg =~ ^[A-Za-z0-9_./:@%+=,-]+$ ]]; then
      line+=" $arg"
    else
      line+=" '${arg//\'/\'\\\'\'}'"
    fi
  done
  echo "$line"
  "$LIFELINE" "$@"
}
run tools "$url"
run call "$url" echo '{"text":"hello from lifeline"}'
echo
echo "demo: done; stopping the fixture"
