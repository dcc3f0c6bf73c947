#!/usr/bin/env bash
# Run the MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# tests/peers/package-lock.json) against Lifeline's client, one scenario at a time.
#
#   scripts/conformance.sh [scenario ...]     (default: the four tier-1 non-auth scenarios, then
#                                              the 0.2.0 prerelease's suites, below)
#
# With no scenario given, it also runs the pinned 0.2.0 prerelease (npm alias conformance-next in
# tests/peers/package.json) at --spec-version 2025-11-25 and 2026-07-28: every client scenario
# that version lists, except extensions (the auth/ scenarios included: their authorization
# endpoints redirect back at once, and `lifeline conformance` follows that redirect to its
# loopback listener, so sign-in runs headless). What Lifeline still fails is listed, with a
# reason, in tests/peers/conformance-baseline-<version>.yml, passed as --expected-failures: the
# runner fails on an unlisted failure and on a listed scenario that now passes (stale entry).
# LIFELINE_CONFORMANCE_NEXT_JS_OVERRIDE points at another copy of that runner's dist/index.js.
#
# The client command is `<repo>/target/debug/lifeline conformance`; the runner appends the mock
# server's URL as the last argument and sets MCP_CONFORMANCE_SCENARIO. Override the command with
# LIFELINE_CONFORMANCE_CLIENT="..." (no spaces inside paths: the runner splits on spaces).
# Results: target/conformance/<scenario>-<timestamp>/{checks.json,stdout.txt,stderr.txt}.
# Exit status: 0 if every scenario passed, 1 otherwise.
set -euo pipefail

# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

die() {
  printf 'conformance: ERROR: %s\n' "$*" >&2
  exit 2
}

SCENARIOS=("$@")
if ((${#SCENARIOS[@]} == 0)); then
  SCENARIOS=(initialize tools_call sse-retry elicitation-sep1034-client-defaults)
fi
TIMEOUT_MS="${LIFELINE_CONFORMANCE_TIMEOUT_MS:-30000}"
BACKSTOP_S=$((TIMEOUT_MS / 1000 + 15))
OUT="$LIFELINE_ROOT/target/conformance"

if [[ -n ${LIFELINE_CONFORMANCE_CLIENT:-} ]]; then
  CLIENT="$LIFELINE_CONFORMANCE_CLIENT"
else
  bin="$LIFELINE_ROOT/target/debug/lifeline"
  [[ -x $bin ]] || die "$bin not found: run 'cargo build -p lifeline-cli' first"
  [[ $bin != *" "* ]] || die "the repository path has a space; the conformance runner splits --command on spaces"
  CLIENT="$bin conformance"
fi

[[ -x $LIFELINE_NODE22_BIN/node ]] || die "Node 22 missing at $LIFELINE_NODE22_BIN: run scripts/setup.sh"
[[ -f $LIFELINE_CONFORMANCE_JS ]] || die "conformance runner missing at $LIFELINE_CONFORMANCE_JS: run scripts/setup.sh"
# The runner needs Node >= 22 (it imports globSync from "fs"). Put Node 22 first on PATH so that
# the runner and anything it spawns with `node` get it.
export PATH="$LIFELINE_NODE22_BIN:$PATH"
runner_version=$(node -p 'require(process.argv[1]).version' \
  "$LIFELINE_PEERS_NODE_MODULES/@modelcontextprotocol/conformance/package.json")
mkdir -p "$OUT"

echo "conformance: @modelcontextprotocol/conformance $runner_version on node $(node --version)"
echo "conformance: client command: $CLIENT <url>"

# "<successes> <failures> <warnings>" from a checks.json (INFO checks are not counted).
# shellcheck disable=SC2016 # the JavaScript below is meant to be in single quotes
count_checks() {
  node -e '
    const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
    const n = (s) => checks.filter((c) => c.status === s).length;
    console.log(`${n("SUCCESS")} ${n("FAILURE")} ${n("WARNING")}`);
  ' "$1" 2>/dev/null || echo "0 0 0"
}

# The whole checks.json, pretty-printed (it is already; cat keeps it byte-exact).
print_checks() {
  cat "$1"
  echo
}

declare -a results=()
failed=0
for s in "${SCENARIOS[@]}"; do
  echo
  echo "=== conformance scenario: $s"
  marker=$(mktemp)
  t0=$SECONDS
  rc=0
  # Backstop: on --timeout the runner kills only the `sh -c` it spawned the client with, then
  # waits for the client's pipes to close, i.e. for a hung client forever. `timeout` signals its
  # whole process group (runner, sh and client) a while after the runner's own deadline.
  timeout -k 5 "$BACKSTOP_S" node "$LIFELINE_CONFORMANCE_JS" client --command "$CLIENT" \
    --scenario "$s" --timeout "$TIMEOUT_MS" -o "$OUT" || rc=$?
  dt=$((SECONDS - t0))
  # The runner names the result dir <scenario>-<ISO time>; "/" in a scenario name makes subdirs.
  dir=$(find "$OUT" -mindepth 1 -type f -name checks.json -newer "$marker" -path "$OUT/$s-*" \
    -printf '%h\n' 2>/dev/null | sort | tail -n 1)
  rm -f "$marker"
  ok=0 bad=0 warn=0
  if [[ -n $dir ]]; then
    read -r ok bad warn < <(count_checks "$dir/checks.json")
    detail="$ok/$((ok + bad + warn)) checks ok"
    ((bad == 0)) || detail+=", $bad failed"
    ((warn == 0)) || detail+=", $warn warnings"
  else
    detail="no checks.json written"
  fi
  # The runner (0.1.16) calls a scenario with no checks at all a pass: the `initialize` scenario
  # passes "0/0" for a client that never connects. Require at least one SUCCESS, and no
  # FAILURE or WARNING, on top of the runner's verdict.
  why=""
  if ((rc == 124 || rc == 137)); then
    why="client still running ${BACKSTOP_S}s after the start (hung past --timeout); killed"
  elif ((rc != 0)); then
    why="runner exit $rc"
  elif ((ok == 0)); then
    why="no successful check: the client did not do what the scenario asks"
  elif ((bad + warn > 0)); then
    why="failed or warning checks"
  fi
  if [[ -z $why ]]; then
    results+=("PASS  $s  ($detail, ${dt}s)")
  else
    failed=1
    results+=("FAIL  $s  ($detail; $why; ${dt}s)")
    echo "--- $s FAILED: $why"
    if [[ -n $dir ]]; then
      echo "--- $dir/checks.json:"
      print_checks "$dir/checks.json"
      if [[ -s $dir/stderr.txt ]]; then
        echo "--- last 40 lines of the client's stderr ($dir/stderr.txt):"
        tail -n 40 "$dir/stderr.txt"
      fi
    fi
  fi
done

# The 0.2.0 prerelease, per spec version, judged by its own baseline handling.
if (($# == 0)); then
  next_js="${LIFELINE_CONFORMANCE_NEXT_JS_OVERRIDE:-$LIFELINE_CONFORMANCE_NEXT_JS}"
  [[ -f $next_js ]] || die "conformance runner 0.2.0 missing at $next_js: run scripts/setup.sh"
  next_version=$(node -p 'require(process.argv[1]).version' "$(dirname "$next_js")/../package.json")
  for spec in 2025-11-25 2026-07-28; do
    baseline="$LIFELINE_PEERS_DIR/conformance-baseline-$spec.yml"
    [[ -f $baseline ]] || die "baseline $baseline missing"
    mapfile -t next_scenarios < <(node "$next_js" list --client --spec-version "$spec" |
      sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1 \2/p' | grep -v ' extension$' |
      cut -d' ' -f1)
    ((${#next_scenarios[@]} > 0)) || die "conformance $next_version lists no client scenarios for $spec"
    for s in "${next_scenarios[@]}"; do
      echo
      echo "=== conformance $next_version --spec-version $spec: $s"
      t0=$SECONDS
      rc=0
      timeout -k 5 "$BACKSTOP_S" node "$next_js" client --command "$CLIENT" --scenario "$s" \
        --spec-version "$spec" --timeout "$TIMEOUT_MS" --expected-failures "$baseline" \
        -o "$OUT/$spec" || rc=$?
      dt=$((SECONDS - t0))
      expected=""
      grep -qx -- "  - $s" "$baseline" && expected=" (expected failure: see the baseline)"
      if ((rc == 0)); then
        results+=("PASS  $spec $s${expected}  (${dt}s)")
      else
        failed=1
        results+=("FAIL  $spec $s  (runner exit $rc: an unlisted failure, or a baseline entry that now passes; ${dt}s)")
      fi
    done
  done
fi

echo
echo "=== conformance summary (results in ${OUT#"$LIFELINE_ROOT"/})"
printf '  %s\n' "${results[@]}"
exit "$failed"
