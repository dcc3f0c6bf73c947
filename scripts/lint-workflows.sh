#!/usr/bin/env bash
# `make lint-workflows`, part of `make lint` and so of `make test`: every GitHub Actions workflow
# in .github/workflows/ checked by actionlint (syntax, expressions, runner labels, action inputs),
# with the shell of every `run:` step checked by shellcheck. Both come pinned from PyPI
# (tools/lint/requirements.txt), installed by scripts/setup.sh into .tools/lint-venv; a
# ShellCheck found on PATH is not used, so every machine checks with the same version.
#
#   scripts/lint-workflows.sh [FILE...]   (default: every .github/workflows/*.yml)
#
# Exit status: 0 when every workflow passes, 1 when actionlint reports anything, 2 when a tool
# is missing.
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$LIFELINE_ROOT"

die() {
  printf 'lint-workflows: ERROR: %s\n' "$*" >&2
  exit 2
}

for tool in "$LIFELINE_ACTIONLINT" "$LIFELINE_SHELLCHECK"; do
  [[ -x $tool ]] || die "$tool is missing: run scripts/setup.sh (it installs tools/lint/requirements.txt)"
done

files=("$@")
if ((${#files[@]} == 0)); then
  shopt -s nullglob
  files=(.github/workflows/*.yml .github/workflows/*.yaml)
  shopt -u nullglob
  ((${#files[@]} > 0)) || die "no workflows in .github/workflows/"
fi

echo "lint-workflows: $("$LIFELINE_ACTIONLINT" -version | head -n 1)," \
  "shellcheck $("$LIFELINE_SHELLCHECK" --version | sed -n 's/^version: //p'): ${files[*]}"
# -pyflakes= : no workflow runs Python inline, and a pyflakes that happens to be on PATH must
# not decide the result.
if ! "$LIFELINE_ACTIONLINT" -no-color -shellcheck "$LIFELINE_SHELLCHECK" -pyflakes= "${files[@]}"; then
  echo "lint-workflows: FAILED: actionlint found the problems above" >&2
  exit 1
fi
echo "lint-workflows: ${#files[@]} workflows pass"
