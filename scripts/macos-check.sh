#!/usr/bin/env bash
# `make macos-check`: the workspace's Rust type-checked for aarch64-apple-darwin, as far as a
# Linux machine allows. The C parts (ring, SQLite) need the macOS SDK, which cannot be had
# here, so they are "compiled" by scripts/macos/fake-cc (empty objects; `cargo check` links
# nothing). Needs the rustup target (`rustup target add aarch64-apple-darwin`, from
# static.rust-lang.org): not part of `make test`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET=aarch64-apple-darwin
rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"
fake="$PWD/scripts/macos/fake-cc"
export CC_aarch64_apple_darwin="$fake" CXX_aarch64_apple_darwin="$fake" AR_aarch64_apple_darwin=ar
"${CARGO:-cargo}" check --workspace --all-targets --target "$TARGET" "$@"
