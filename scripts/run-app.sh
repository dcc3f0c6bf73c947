#!/usr/bin/env bash
# `make run`: starts the desktop app. With no config file (~/.config/lifeline/config.json,
# or $LIFELINE_CONFIG) the app runs its demo of fixture servers (src-tauri/README.md).
# Without a display there is no window to show, so it says so and runs the CLI demo instead.
set -euo pipefail

# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

APP="$LIFELINE_ROOT/target/debug/lifeline-app"
[[ -x $APP ]] || {
  echo "run: $APP not found: run 'make run' (it builds it)" >&2
  exit 1
}
if [[ -z ${DISPLAY:-} && -z ${WAYLAND_DISPLAY:-} ]]; then
  echo "run: no display (DISPLAY and WAYLAND_DISPLAY are unset), so the desktop app cannot open a window."
  echo "run: showing the command-line demo instead; 'make app-e2e' runs the app under Xvfb and saves screenshots."
  exec scripts/demo.sh
fi
echo "run: starting $APP (logs in ~/.local/state/lifeline/logs)"
exec "$APP"
