#!/usr/bin/env bash
# The MCP conformance suite's SERVER scenarios (@modelcontextprotocol/conformance, pinned in
# tests/peers/package-lock.json, `--suite all`) against Lifeline's local Streamable HTTP
# endpoint (`lifeline serve`, docs/gateway.md) fronting @modelcontextprotocol/server-everything
# over stdio, and against server-everything serving Streamable HTTP itself. Lifeline's
# per-scenario result must equal server-everything's own, except where listed below.
#
#   scripts/conformance-server.sh
#
# Scenarios whose result may differ, and why:
#   dns-rebinding-protection  Lifeline must PASS it (Host/Origin validation); server-everything's
#                             own HTTP mode does not validate Host and fails it.
#
# server-sse-polling calls a `test_reconnection` tool that server-everything lacks (so it fails
# on both sides above). It is run once more against `lifeline serve` fronting the fixture
# (target/debug/lifeline-fixture) over Streamable HTTP, whose `test_reconnection` ends its POST
# stream after a priming event and answers on the resume, and against that fixture itself; both
# must PASS by the suite's own rule: a SUCCESS, and no FAILURE and no WARNING (a missing answer
# is only a WARNING in that scenario).
#
# The endpoint runs with --no-auth: the suite sends no Authorization header. (The token
# check comes after the Host/Origin check, so dns-rebinding-protection tests the same guard
# that protects a tokened endpoint; tests/tests/it/gateway/http.rs covers the tokens.)
# Results: target/conformance-server/{lifeline,server-everything,lifeline-fixture,fixture}/
# …/checks.json.
# Exit status: 0 when every scenario matches, 1 otherwise, 2 when something is missing.
set -euo pipefail

# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

die() {
  printf 'conformance-server: ERROR: %s\n' "$*" >&2
  exit 2
}

bin="$LIFELINE_ROOT/target/debug/lifeline"
[[ -x $bin ]] || die "$bin not found: run 'cargo build -p lifeline-cli' first"
fixture="$LIFELINE_ROOT/target/debug/lifeline-fixture"
[[ -x $fixture ]] || die "$fixture not found: run 'cargo build -p lifeline-it' first"
[[ -x $LIFELINE_NODE22_BIN/node ]] || die "Node 22 missing at $LIFELINE_NODE22_BIN: run scripts/setup.sh"
[[ -f $LIFELINE_CONFORMANCE_JS ]] || die "conformance runner missing at $LIFELINE_CONFORMANCE_JS: run scripts/setup.sh"
[[ -f $LIFELINE_SERVER_EVERYTHING ]] || die "server-everything missing at $LIFELINE_SERVER_EVERYTHING: run scripts/setup.sh"
export PATH="$LIFELINE_NODE22_BIN:$PATH"

OUT="$LIFELINE_ROOT/target/conformance-server"
rm -rf "$OUT"
mkdir -p "$OUT/lifeline" "$OUT/server-everything" "$OUT/lifeline-fixture" "$OUT/fixture"
scratch=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT

# Waits (bounded) until FILE has a line matching REGEX; prints the first match.
wait_for_line() {
  local file=$1 regex=$2 i
  for i in $(seq 1 200); do
    if grep -m1 -E "$regex" "$file" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

# Lifeline, on a free port, with server-everything as a stdio server. A private history
# directory keeps this run away from the user's app and tokens.
LIFELINE_HISTORY="$scratch/history.db" "$bin" serve --no-auth --port 0 \
  "stdio:node $LIFELINE_SERVER_EVERYTHING stdio" >"$scratch/lifeline.out" 2>"$scratch/lifeline.err" &
pids+=($!)
line=$(wait_for_line "$scratch/lifeline.out" 'listening on http://127\.0\.0\.1:[0-9]+') ||
  die "lifeline serve did not start: $(cat "$scratch/lifeline.err")"
port=${line##*:}
ll_url="http://localhost:$port/servers/node/mcp"

# server-everything's own Streamable HTTP, on a free port.
se_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
PORT=$se_port node "$LIFELINE_SERVER_EVERYTHING" streamableHttp >"$scratch/se.out" 2>"$scratch/se.err" &
pids+=($!)
wait_for_line "$scratch/se.err" 'listening on port' >/dev/null ||
  die "server-everything did not start: $(cat "$scratch/se.err")"
se_url="http://localhost:$se_port/mcp"

# The fixture over Streamable HTTP, its `test_reconnection` ending its POST stream 50 ms into
# the call with `retry: 500` and answering on the resume (tests/FIXTURE.md, `sse_close`); and
# Lifeline in front of it, whose client side resumes that stream upstream.
polling='{"conformance_tools": true, "rules": [{"method": "tools/call", "tool": "test_reconnection",
  "action": {"kind": "sse_close", "after_ms": 50, "retry": "500"}}]}'
"$fixture" http --script "$polling" >"$scratch/fixture.out" 2>"$scratch/fixture.err" &
pids+=($!)
line=$(wait_for_line "$scratch/fixture.out" '^LISTENING http://127\.0\.0\.1:[0-9]+/mcp') ||
  die "lifeline-fixture did not start: $(cat "$scratch/fixture.err")"
fx_url=${line#LISTENING }
LIFELINE_HISTORY="$scratch/history-fixture.db" "$bin" serve --no-auth --port 0 "$fx_url" \
  >"$scratch/lifeline-fixture.out" 2>"$scratch/lifeline-fixture.err" &
pids+=($!)
line=$(wait_for_line "$scratch/lifeline-fixture.out" 'http://127\.0\.0\.1:[0-9]+/servers/[^ ]+/mcp') ||
  die "lifeline serve (fixture) did not start: $(cat "$scratch/lifeline-fixture.err")"
ll_fx_url=${line##* }

runner_version=$(node -p 'require(process.argv[1]).version' \
  "$LIFELINE_PEERS_NODE_MODULES/@modelcontextprotocol/conformance/package.json")
echo "conformance-server: @modelcontextprotocol/conformance $runner_version on node $(node --version)"
echo "conformance-server: lifeline serve at $ll_url; server-everything at $se_url"

t0=$SECONDS
timeout -k 5 120 node "$LIFELINE_CONFORMANCE_JS" server --suite all --url "$ll_url" \
  -o "$OUT/lifeline" >"$OUT/lifeline.txt" 2>&1 || true
timeout -k 5 120 node "$LIFELINE_CONFORMANCE_JS" server --suite all --url "$se_url" \
  -o "$OUT/server-everything" >"$OUT/server-everything.txt" 2>&1 || true
echo "conformance-server: server-sse-polling: lifeline serve at $ll_fx_url; the fixture at $fx_url"
timeout -k 5 60 node "$LIFELINE_CONFORMANCE_JS" server --scenario server-sse-polling \
  --url "$ll_fx_url" -o "$OUT/lifeline-fixture" >"$OUT/lifeline-fixture.txt" 2>&1 || true
timeout -k 5 60 node "$LIFELINE_CONFORMANCE_JS" server --scenario server-sse-polling \
  --url "$fx_url" -o "$OUT/fixture" >"$OUT/fixture.txt" 2>&1 || true

# One line per scenario: "<scenario> <lifeline PASS|FAIL> <server-everything PASS|FAIL>",
# then "server-sse-polling@fixture <lifeline PASS|FAIL> <fixture PASS|FAIL>". A scenario
# passes when it has at least one SUCCESS check and no FAILURE; in the fixture's runs, no
# WARNING either (the suite's own verdict).
node - "$OUT" <<'JS' >"$scratch/table"
const fs = require("fs");
const path = require("path");
const out = process.argv[2];
const results = (side, strict) => {
  const r = {};
  for (const d of fs.readdirSync(path.join(out, side))) {
    const m = d.match(/^server-(.*)-\d{4}-\d\d-\d\dT[\d-]+Z$/);
    const file = path.join(out, side, d, "checks.json");
    if (!m || !fs.existsSync(file)) continue;
    const checks = JSON.parse(fs.readFileSync(file, "utf8"));
    const bad = strict ? ["FAILURE", "WARNING"] : ["FAILURE"];
    const ok = checks.some((c) => c.status === "SUCCESS") && !checks.some((c) => bad.includes(c.status));
    r[m[1]] = ok ? "PASS" : "FAIL";
  }
  return r;
};
const ll = results("lifeline", false);
const se = results("server-everything", false);
for (const s of [...new Set([...Object.keys(se), ...Object.keys(ll)])].sort()) {
  console.log(`${s} ${ll[s] || "MISSING"} ${se[s] || "MISSING"}`);
}
const s = "server-sse-polling";
const llfx = results("lifeline-fixture", true);
const fx = results("fixture", true);
console.log(`${s}@fixture ${llfx[s] || "MISSING"} ${fx[s] || "MISSING"}`);
JS

failed=0
echo
printf '  %-32s %-9s %-9s\n' scenario lifeline server-everything
while read -r s ll se; do
  verdict=ok
  if [[ $s == dns-rebinding-protection ]]; then
    [[ $ll == PASS ]] || verdict="MUST PASS"
  elif [[ $s == server-sse-polling@fixture ]]; then
    [[ $ll == PASS && $se == PASS ]] || verdict="MUST PASS"
  elif [[ $ll != "$se" ]]; then
    verdict=DIFFERS
  fi
  [[ $verdict == ok ]] || failed=1
  printf '  %-32s %-9s %-9s %s\n' "$s" "$ll" "$se" "$verdict"
done <"$scratch/table"
n=$(wc -l <"$scratch/table")
((n > 0)) || { echo "conformance-server: no results: see $OUT/*.txt" >&2; exit 1; }
echo "conformance-server: $n scenarios in $((SECONDS - t0))s (results in ${OUT#"$LIFELINE_ROOT"/})"
if ((failed)); then
  echo "conformance-server: FAILED: Lifeline's result differs from server-everything's, or a" \
    "scenario that must pass failed (above); see $OUT/*.txt" >&2
fi
exit "$failed"
