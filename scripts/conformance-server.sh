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
# The endpoint runs with --no-auth: the suite sends no Authorization header. (The token
# check comes after the Host/Origin check, so dns-rebinding-protection tests the same guard
# that protects a tokened endpoint; tests/tests/it/gateway/http.rs covers the tokens.)
# Results: target/conformance-server/{lifeline,server-everything}/…/checks.json.
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
[[ -x $LIFELINE_NODE22_BIN/node ]] || die "Node 22 missing at $LIFELINE_NODE22_BIN: run scripts/setup.sh"
[[ -f $LIFELINE_CONFORMANCE_JS ]] || die "conformance runner missing at $LIFELINE_CONFORMANCE_JS: run scripts/setup.sh"
[[ -f $LIFELINE_SERVER_EVERYTHING ]] || die "server-everything missing at $LIFELINE_SERVER_EVERYTHING: run scripts/setup.sh"
export PATH="$LIFELINE_NODE22_BIN:$PATH"

OUT="$LIFELINE_ROOT/target/conformance-server"
rm -rf "$OUT"
mkdir -p "$OUT/lifeline" "$OUT/server-everything"
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

runner_version=$(node -p 'require(process.argv[1]).version' \
  "$LIFELINE_PEERS_NODE_MODULES/@modelcontextprotocol/conformance/package.json")
echo "conformance-server: @modelcontextprotocol/conformance $runner_version on node $(node --version)"
echo "conformance-server: lifeline serve at $ll_url; server-everything at $se_url"

t0=$SECONDS
timeout -k 5 120 node "$LIFELINE_CONFORMANCE_JS" server --suite all --url "$ll_url" \
  -o "$OUT/lifeline" >"$OUT/lifeline.txt" 2>&1 || true
timeout -k 5 120 node "$LIFELINE_CONFORMANCE_JS" server --suite all --url "$se_url" \
  -o "$OUT/server-everything" >"$OUT/server-everything.txt" 2>&1 || true

# One line per scenario: "<scenario> <lifeline PASS|FAIL> <server-everything PASS|FAIL>".
# A scenario passes when it has at least one SUCCESS check and no FAILURE.
node - "$OUT" <<'JS' >"$scratch/table"
const fs = require("fs");
const path = require("path");
const out = process.argv[2];
const results = (side) => {
  const r = {};
  for (const d of fs.readdirSync(path.join(out, side))) {
    const m = d.match(/^server-(.*)-\d{4}-\d\d-\d\dT[\d-]+Z$/);
    const file = path.join(out, side, d, "checks.json");
    if (!m || !fs.existsSync(file)) continue;
    const checks = JSON.parse(fs.readFileSync(file, "utf8"));
    const ok = checks.some((c) => c.status === "SUCCESS") && !checks.some((c) => c.status === "FAILURE");
    r[m[1]] = ok ? "PASS" : "FAIL";
  }
  return r;
};
const ll = results("lifeline");
const se = results("server-everything");
for (const s of [...new Set([...Object.keys(se), ...Object.keys(ll)])].sort()) {
  console.log(`${s} ${ll[s] || "MISSING"} ${se[s] || "MISSING"}`);
}
JS

failed=0
echo
printf '  %-32s %-9s %-9s\n' scenario lifeline server-everything
while read -r s ll se; do
  verdict=ok
  if [[ $s == dns-rebinding-protection ]]; then
    [[ $ll == PASS ]] || verdict="MUST PASS"
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
  echo "conformance-server: FAILED: Lifeline's result differs from server-everything's (above);" \
    "see $OUT/lifeline.txt and $scratch/lifeline.err" >&2
fi
exit "$failed"
