#!/usr/bin/env bash
# `make audit`, part of `make test`: the supply chain checks of docs/security.md ("Supply chain").
#
#   cargo deny check       every crate of the workspace, for every target Lifeline ships for
#                          (deny.toml): RustSec advisories, licences, bans, sources
#   npm audit --omit=dev   the UI's packages that ship inside the app (ui/package.json)
#
# The advisory database is RustSec's, from github.com when it answers. CI reaches only the
# package registries, so there the committed snapshot (tools/advisory-db/snapshot.tar.xz) is
# used instead, and this says so and how old it is. `scripts/audit.sh --refresh-snapshot`
# replaces the snapshot with GitHub's current database (commit the result).
#
# npm's audit service is part of the registry, but a registry mirror may not offer it: then
# this says so in one loud line and goes on (the registry answered, but not with an audit).
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

DB_URL=https://github.com/rustsec/advisory-db
SNAPSHOT=tools/advisory-db/snapshot.tar.xz
DENY="$LIFELINE_TOOLS_DIR/cargo/bin/cargo-deny"
# Where cargo-deny keeps its databases: one directory per URL, named by cargo-deny from the URL.
export LIFELINE_ADVISORY_DB="$LIFELINE_TOOLS_DIR/advisory-dbs"
DB_DIR="$LIFELINE_ADVISORY_DB/advisory-db-3157b0e258782691"

say() { printf 'audit: %s\n' "$*"; }
die() {
  printf 'audit: ERROR: %s\n' "$*" >&2
  exit 1
}

github_answers() { timeout 20 git ls-remote "$DB_URL" HEAD >/dev/null 2>&1; }

if [[ ${1:-} == --refresh-snapshot ]]; then
  github_answers || die "$DB_URL does not answer from here: refresh the snapshot where it does"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  git clone -q --depth 1 "$DB_URL" "$tmp/db"
  (cd "$tmp/db" && git archive --format=tar HEAD crates rust LICENSE.txt README.md) | xz -9 >"$SNAPSHOT"
  printf '%s %s\n' "$(git -C "$tmp/db" log -1 --format=%cI)" "$(git -C "$tmp/db" rev-parse HEAD)" \
    >tools/advisory-db/SNAPSHOT
  say "snapshot of $(cat tools/advisory-db/SNAPSHOT) written to $SNAPSHOT"
  exit 0
fi

[[ -x $DENY ]] || die "$DENY is missing: run scripts/setup.sh (it installs cargo-deny)"
mkdir -p "$LIFELINE_ADVISORY_DB"

# The snapshot as the git repository cargo-deny expects, its one commit dated when RustSec
# made it, so that cargo-deny's staleness check measures the real age.
unpack_snapshot() {
  local stamp want
  read -r snapshot_date snapshot_commit <tools/advisory-db/SNAPSHOT
  want="$snapshot_commit $(sha256sum "$SNAPSHOT" | cut -d' ' -f1)"
  stamp="$DB_DIR/.lifeline-snapshot"
  if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    return
  fi
  rm -rf "$DB_DIR"
  mkdir -p "$DB_DIR"
  tar -xJf "$SNAPSHOT" -C "$DB_DIR"
  git -C "$DB_DIR" init -q
  git -C "$DB_DIR" add -A
  GIT_AUTHOR_DATE=$snapshot_date GIT_COMMITTER_DATE=$snapshot_date \
    git -C "$DB_DIR" -c user.name=RustSec -c user.email=snapshot@invalid \
    commit -q -m "RustSec advisory-db $snapshot_commit"
  printf '%s\n' "$want" >"$stamp"
}

# cargo-deny reads `cargo metadata` for every target in deny.toml, so the crates only Windows
# or macOS use must be here too; a build for this machine fetches only its own. `cargo fetch`
# without --target fetches them all (from crates.io, which CI reaches).
say "cargo fetch --locked (every target's crates, for cargo metadata)"
cargo fetch --locked --quiet

if github_answers; then
  say "cargo deny check, with the advisory database fetched from $DB_URL"
  rm -f "$DB_DIR/.lifeline-snapshot"
  "$DENY" --locked check --hide-inclusion-graph
else
  unpack_snapshot
  read -r snapshot_date snapshot_commit <tools/advisory-db/SNAPSHOT
  age_days=$((($(date +%s) - $(date -d "$snapshot_date" +%s)) / 86400))
  printf '\n*** AUDIT: %s does not answer from here; advisories are checked against the committed snapshot of %s (%s days old). Run `scripts/audit.sh --refresh-snapshot` where GitHub answers. ***\n\n' \
    "$DB_URL" "${snapshot_date%%T*}" "$age_days" >&2
  "$DENY" --locked --offline check --hide-inclusion-graph
fi

say "npm audit --omit=dev in ui/"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if (cd ui && npm audit --omit=dev --audit-level=low) >"$log" 2>&1; then
  cat "$log"
elif grep -q 'audit endpoint returned an error\|ENOAUDIT\|405 Method Not Allowed' "$log"; then
  printf '\n*** AUDIT: npm audit SKIPPED: the npm registry here does not offer its audit service (%s). Run `cd ui && npm audit --omit=dev` against registry.npmjs.org. ***\n\n' \
    "$(grep -m1 -o '[0-9]\{3\} [A-Za-z ]*- POST [^ ]*' "$log" || echo 'no answer')" >&2
else
  cat "$log" >&2
  die "npm audit found vulnerable packages in what the UI ships (above)"
fi
