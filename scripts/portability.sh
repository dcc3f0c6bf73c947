#!/usr/bin/env bash
# `make portability`: the whole workspace checked and linted for Windows (x86_64-pc-windows-gnu,
# every crate and test target), then the core's and the CLI's tests for Windows run under Wine
# (scripts/wine-test.sh). Installs what it needs first (`scripts/setup.sh portability`: the
# rustup target, MinGW, wine64).
#
#   scripts/portability.sh               fails when anything is missing or fails
#   scripts/portability.sh --if-possible what `make test` runs: when the rustup target is not
#                                        installed and `rustup target add` cannot fetch it
#                                        (rustup downloads from static.rust-lang.org, which a CI
#                                        machine that reaches only package registries cannot),
#                                        prints one loud line saying so and succeeds
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET=x86_64-pc-windows-gnu
cargo="${CARGO:-cargo}"

if [[ ${1:-} == --if-possible && $(uname -s) != Linux ]]; then
  # This check cross-builds for Windows with MinGW and runs the tests under Wine, from Linux.
  # On a Windows or macOS machine (CI, docs/ci.md) `make test` has already built and run the
  # workspace's tests natively.
  printf '\n*** PORTABILITY SKIPPED on %s: it checks Windows from Linux (MinGW, Wine); here the workspace was built and tested natively ***\n\n' \
    "$(uname -s)" >&2
  exit 0
fi

if [[ ${1:-} == --if-possible ]]; then
  log=$(mktemp)
  trap 'rm -f "$log"' EXIT
  if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET" &&
    ! rustup target add "$TARGET" >"$log" 2>&1; then
    why=$(tail -n 1 "$log" 2>/dev/null || true)
    printf '\n*** PORTABILITY SKIPPED: the rust target %s is not installed and `rustup target add` could not fetch it (%s); run `make portability` where static.rust-lang.org is reachable ***\n\n' \
      "$TARGET" "${why:-no rustup}" >&2
    exit 0
  fi
fi

scripts/setup.sh portability
# clippy type-checks every crate and test target as `cargo check` would, and lints the
# Windows-only code the Linux lint never sees.
echo "portability: cargo clippy --workspace --all-targets --target $TARGET -- -D warnings"
"$cargo" clippy --workspace --all-targets --target "$TARGET" -- -D warnings
echo "portability: the core's and the CLI's tests under Wine"
scripts/wine-test.sh
