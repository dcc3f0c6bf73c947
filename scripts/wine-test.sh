#!/usr/bin/env bash
# `make wine-test`: the core's unit tests and the CLI's, built for Windows
# (x86_64-pc-windows-gnu) and run under Wine (scripts/wine-run.sh). Needs what
# `scripts/setup.sh portability` installs (the rustup target, MinGW, wine64).
#
# Skipped, with the reason (docs/packaging.md lists them with the failure seen):
#   session::server_requests::tests::a_flooding_server_that_never_reads_holds_a_bounded_number_of_tasks
#     its server is `sh -c …`, and Windows has no sh ("could not start `sh`: command not found")
#   local_socket::windows::tests::a_pipe_someone_else_made_first_is_never_joined
#     Wine does not enforce FILE_FLAG_FIRST_PIPE_INSTANCE: the second "first instance" is made
#     (Windows refuses it with ERROR_ACCESS_DENIED)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$PWD/scripts/wine-run.sh"
cargo="${CARGO:-cargo}"
"$cargo" test -p lifeline-core --lib --target x86_64-pc-windows-gnu -- \
  --skip session::server_requests::tests::a_flooding_server_that_never_reads_holds_a_bounded_number_of_tasks \
  --skip local_socket::windows::tests::a_pipe_someone_else_made_first_is_never_joined
"$cargo" test -p lifeline-cli --bins --target x86_64-pc-windows-gnu
