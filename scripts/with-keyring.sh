#!/usr/bin/env bash
# Runs a command inside a real, private Secret Service: a D-Bus session bus of its own
# (dbus-run-session) with gnome-keyring-daemon on it, its keyrings in a fresh temporary
# XDG_DATA_HOME, the login keyring created and unlocked with a throwaway password. The
# command sees LIFELINE_KEYCHAIN_TEST=1, which makes the keychain tests (crates/core/src/
# secrets/tests.rs, tests/tests/it/secrets.rs) require the keychain instead of skipping.
# The user's own keyring and session bus are never touched.
#
#   scripts/with-keyring.sh cargo nextest run --workspace
#
# Needs dbus-run-session and gnome-keyring-daemon (scripts/setup.sh check installs them).
# Where they are missing, it says so in one line and runs the command without a keyring
# (the keychain tests then skip, and the file-store tests still run). On macOS and Windows,
# where the Secret Service does not exist (their keychains are the system's own, which CI
# does not unlock for a test), it says so in one line and runs the command as it is.
set -euo pipefail

case $(uname -s) in
Linux) ;;
*)
  echo "with-keyring: no private Secret Service on $(uname -s) (D-Bus and gnome-keyring are Linux's):" \
    "running without one; the keychain tests skip" >&2
  exec "$@"
  ;;
esac

if [[ ${1-} == --inside ]]; then
  shift
  # Inside the private bus: start the daemon, unlocking (creating) the login keyring.
  # It prints GNOME_KEYRING_CONTROL=…, which the Secret Service clients do not need (they
  # find it on the bus), so the output is dropped.
  if ! printf '%s' "lifeline-test-keyring" |
    gnome-keyring-daemon --unlock --components=secrets >/dev/null; then
    echo "with-keyring: gnome-keyring-daemon could not create and unlock a keyring" >&2
    exit 1
  fi
  gnome-keyring-daemon --start --components=secrets >/dev/null 2>&1 || true
  export LIFELINE_KEYCHAIN_TEST=1
  exec "$@"
fi

if ! command -v dbus-run-session >/dev/null || ! command -v gnome-keyring-daemon >/dev/null; then
  echo "with-keyring: dbus-run-session or gnome-keyring-daemon missing (scripts/setup.sh check):" \
    "running without a keyring; the keychain tests skip" >&2
  exec "$@"
fi

home=$(mktemp -d "${TMPDIR:-/tmp}/lifeline-keyring.XXXXXX")
trap 'rm -rf "$home"' EXIT
mkdir -m 0700 "$home/data" "$home/runtime"
# The keyrings go under XDG_DATA_HOME/keyrings; the daemon's control socket under
# XDG_RUNTIME_DIR. Neither is the user's. LIFELINE_HISTORY and the config keep their own
# paths (the tests set theirs).
env XDG_DATA_HOME="$home/data" XDG_RUNTIME_DIR="$home/runtime" \
  dbus-run-session -- "$0" --inside "$@"
