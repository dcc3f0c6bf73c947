#!/usr/bin/env bash
# Runs a Windows program under Wine: cargo's runner for x86_64-pc-windows-gnu in
# `scripts/wine-test.sh` (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER). Uses a prefix of its own
# under target/ (made on first use, about 10 s) holding bcryptprimitives.dll, which Debian 12's
# Wine 8.0 lacks and every Rust program since 1.78 needs (scripts/wine/bcryptprimitives.c).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export WINEPREFIX="${WINEPREFIX:-$root/target/wine}"
export WINEDEBUG="${WINEDEBUG:--all}"
# Debian installs the 64-bit loader off PATH (/usr/lib/wine/wine64); `wine` would look for a
# 32-bit (WoW64) setup that the wine64 package alone does not have.
wine=$(command -v wine64 || true)
[[ -n $wine ]] || wine=/usr/lib/wine/wine64
[[ -x $wine ]] || { echo "wine-run: no wine64 (apt-get install wine64; scripts/setup.sh portability)" >&2; exit 127; }
shim="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if [[ ! -f $shim ]]; then
  "$wine" cmd /c exit >/dev/null 2>&1 || true # creates the prefix
  x86_64-w64-mingw32-gcc -O2 -shared -o "$shim" "$root/scripts/wine/bcryptprimitives.c" -ladvapi32
fi
exec "$wine" "$@"
