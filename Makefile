# Lifeline's entry points. CI runs `.ci/run`, which runs `make test`.
#
#   make setup        install what the build and every test need (scripts/setup.sh; idempotent, fast when done)
#   make check        the inner loop (a few minutes warm): fmt check, clippy -D warnings, every
#                     Rust test (unit + integration, real processes), the UI's type check and unit
#                     tests; no browser, no app window, no conformance, no bench
#   make test         setup, UI checks and build, the workflows' lint, fmt check, clippy -D
#                     warnings, every test, the UI in headless Chromium, the app in a real window
#                     (Xvfb), conformance, bench-smoke, portability (skipped, loudly, where the
#                     rustup target cannot be had)
#   make run          setup (only what running needs), build, start the desktop app (the CLI
#                     demo when there is no display)
#   make ui           the UI's type check, unit tests and production build (ui/dist, embedded by the app)
#   make ui-e2e       the UI in headless Chromium against its mock host
#   make app-e2e      the real app in a real window (Xvfb): screenshots, then a WebDriver test
#   make fmt          cargo fmt --all
#   make lint         the workflows' check (lint-workflows), fmt check, clippy -D warnings
#   make lint-workflows  actionlint (with shellcheck) over .github/workflows/ (scripts/lint-workflows.sh)
#   make audit        cargo deny check (advisories, licences, bans, sources: deny.toml) and npm
#                     audit of what the UI ships (scripts/audit.sh; part of make test)
#   make build        cargo build --workspace
#   make unit         the Rust tests only (nextest if installed, else cargo test), inside a
#                     private gnome-keyring session (scripts/with-keyring.sh)
#   make conformance  scripts/conformance.sh (the client scenarios) and scripts/conformance-server.sh
#                     (the server scenarios against `lifeline serve`); needs target/debug/lifeline
#   make bench        every client against every server: docs/benchmarks.json + .md (long; quiet machine)
#   make bench-serve  only `lifeline serve` kept-alive vs fresh vs direct (docs/benchmarks.md)
#   make bench-smoke  the same harness, seconds long, debug builds, into target/bench-smoke/
#                     (no thresholds; part of make test)
#   make portability  the whole workspace checked and linted for Windows (x86_64-pc-windows-gnu),
#                     then `make wine-test` (part of `make test` when the rustup target can be had)
#   make wine-test    the core's and the CLI's tests built for Windows, run under Wine
#   make macos-check  the workspace type-checked for aarch64-apple-darwin (not in make test)
#   make package      the release app bundled for this OS (.deb + .rpm here; scripts/package.sh)
#   make package-test install the .deb, run the installed app under Xvfb, remove it (root)
#   make types        regenerate ui/src/host/generated.ts from the Rust wire types (ts-rs) and glosses
#   make recording    re-record ui/src/host/recorded/ (the mock host's story, config edits, Profiles view and tool review) from the real core

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

CARGO ?= cargo

# Whether a CI runner sets TERM must not change what the tests see: the app and `lifeline
# connect` ask the login shell for PATH only when told to here (docs/config.md, "Finding the
# command"); the tests of that feature ask for it themselves.
export LIFELINE_LOGIN_PATH ?= 0
HAVE_NEXTEST := $(shell $(CARGO) nextest --version >/dev/null 2>&1 && echo yes)

.PHONY: test check run setup fmt fmt-check lint audit clippy build unit conformance help ui ui-e2e app-e2e demo \
  bench bench-serve bench-smoke bench-build ui-unit package package-test portability wine-test macos-check \
  lint-workflows

audit:
	scripts/audit.sh

help:
	@sed -n 's/^#   make /make /p' $(firstword $(MAKEFILE_LIST))

setup:
	scripts/setup.sh

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# GitHub Actions' workflows (.github/workflows/, docs/ci.md): actionlint, and shellcheck on their
# scripts, from tools/lint/requirements.txt. First in `lint`: a broken workflow fails in a second.
lint-workflows:
	scripts/lint-workflows.sh

lint: lint-workflows fmt-check clippy

# The UI's wire types, from the Rust types that cross IPC (crates/desktop/src/wire.rs). The same
# test, without the variable, fails in `make test` while the checked-in file is stale.
.PHONY: types
types:
	LIFELINE_WRITE_TYPES=1 $(CARGO) test -p lifeline-desktop wire_types_are_fresh

# The UI mock host's story, recorded from real supervisors against lifeline-fixture
# (tests/tests/it/recording.rs), its config edits, recorded from the shell's editor
# functions (crates/desktop/src/state/config/recording.rs), and its Profiles view, from the
# shell's view over the story's tools and its switches (state/config/profiles_recording.rs;
# after the story, whose tools it reads). The same tests, without the variable, fail in
# `make check` and `make test` while a checked-in file is stale.
.PHONY: recording
recording:
	LIFELINE_WRITE_RECORDING=1 $(CARGO) test -p lifeline-it --test it ui_recording_is_fresh
	LIFELINE_WRITE_RECORDING=1 $(CARGO) test -p lifeline-desktop --lib ui_config_recording_is_fresh
	LIFELINE_WRITE_RECORDING=1 $(CARGO) test -p lifeline-desktop --lib ui_profiles_recording_is_fresh
	LIFELINE_WRITE_RECORDING=1 $(CARGO) test -p lifeline-desktop --lib ui_trust_recording_is_fresh

# The integration tests run target/debug/lifeline and lifeline-fixture, so build every binary first.
build:
	$(CARGO) build --workspace

# No `cargo test --doc`: the workspace has no doctests (examples are tests under tests/ and
# *_tests.rs), and the doc build recompiles every dependency, which doubled `make check`.
# Inside a private, real Secret Service (scripts/with-keyring.sh: gnome-keyring on a D-Bus
# session of its own), so the keychain tests run against a real keychain, not a mock.
unit: build
ifeq ($(HAVE_NEXTEST),yes)
	scripts/with-keyring.sh $(CARGO) nextest run --workspace --no-fail-fast
else
	scripts/with-keyring.sh $(CARGO) test --workspace --no-fail-fast
endif

conformance:
	scripts/conformance.sh
	scripts/conformance-server.sh

ui:
	cd ui && npm run check && npm test && npm run build

# The UI's type check and unit tests, without the production build.
ui-unit:
	cd ui && npm run check && npm test

ui-e2e:
	cd ui && npm run e2e

app-e2e:
	src-tauri/e2e/screenshot.sh
	src-tauri/e2e/webdriver.sh || { echo "app-e2e: the WebDriver test of the app failed; see above and" \
	  "target/screenshots/webdriver-failure.png. It runs the app as built, which must embed the UI:" \
	  "cd ui && npm run build && cargo build -p lifeline-app -p lifeline-desktop -p lifeline-it" >&2; exit 1; }

# The inner loop: what catches most mistakes, in minutes. `make test` before you stop.
check:
	scripts/setup.sh check
	$(MAKE) --no-print-directory fmt-check
	$(MAKE) --no-print-directory ui-unit
	$(MAKE) --no-print-directory clippy
	$(MAKE) --no-print-directory unit

# Sequential on purpose (the steps share target/ and the machine has 2 cores); `make -j` would
# not speed this up, so the recipe calls the steps in order rather than listing prerequisites.
test:
	scripts/setup.sh
	$(MAKE) --no-print-directory ui
	$(MAKE) --no-print-directory lint
	scripts/audit.sh
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory ui-e2e
	$(MAKE) --no-print-directory app-e2e
	scripts/conformance.sh
	scripts/conformance-server.sh
	$(MAKE) --no-print-directory bench-smoke
	scripts/portability.sh --if-possible

# The app embeds ui/dist, so the UI is built before the app.
run:
	scripts/setup.sh run
	cd ui && npm run build
	$(CARGO) build -p lifeline-app -p lifeline-desktop -p lifeline-cli -p lifeline-it
	scripts/run-app.sh

# Windows from here: `cargo check` of every crate and target for x86_64-pc-windows-gnu (the
# The workspace checked and linted for Windows, then the core's and the CLI's tests for
# Windows under Wine (scripts/portability.sh; docs/packaging.md says what runs where). The
# rustup target, MinGW and wine64 come from `setup.sh portability`. `make test` runs it with
# --if-possible: where rustup cannot fetch the target (CI may reach only the package
# registries) it says so in one loud line and goes on.
portability:
	scripts/portability.sh

wine-test:
	scripts/wine-test.sh

# The workspace type-checked for aarch64-apple-darwin (C faked: no macOS SDK here; docs/packaging.md).
macos-check:
	scripts/macos-check.sh

# Packages (docs/packaging.md). Release builds, minutes long: not part of `make test`.
package:
	scripts/setup.sh
	scripts/package.sh

package-test: package
	scripts/package-test.sh

# The command-line demo against the fixture server.
demo:
	scripts/setup.sh run
	$(CARGO) build -p lifeline-cli -p lifeline-it
	scripts/demo.sh

# Benchmarks (docs/benchmarks.md). bench/ is a workspace of its own, so rmcp is compiled only
# here, never by `make build`/`make test`; it shares target/ (release) with the fixture. The
# app is built in release with the UI embedded, as a bundle would ship it (its section).
bench-build:
	scripts/setup.sh
	$(CARGO) build --release -p lifeline-it --bin lifeline-fixture --bin lifeline-tray-host \
	  --bin lifeline-system-bus
	$(CARGO) build --release -p lifeline-cli
	CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO) build --release --manifest-path bench/Cargo.toml
	cd ui && npm run build
	$(CARGO) build --release -p lifeline-app -p lifeline-desktop --features lifeline-app/custom-protocol

bench: bench-build
	python3 bench/run.py

# Only the `lifeline serve` keep-alive section (bench/serve.py): needs no bench/ workspace
# and no app; the other sections of docs/benchmarks.json are kept.
bench-serve:
	$(CARGO) build --release -p lifeline-it --bin lifeline-fixture
	$(CARGO) build --release -p lifeline-cli
	python3 bench/run.py --only serve

# The smoke run keeps the harness working in CI (`make test`): debug builds (the workspace's
# are already there; bench/ adds rmcp), seconds long, no thresholds, into target/bench-smoke/.
bench-smoke: build
	CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO) build --manifest-path bench/Cargo.toml
	python3 bench/run.py --smoke --build debug
