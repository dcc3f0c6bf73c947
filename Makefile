# Lifeline's entry points. CI runs `.ci/run`, which runs `make test`.
#
#   make setup        install the non-Rust test tools (scripts/setup.sh; idempotent, fast when done)
#   make test         setup, fmt check, clippy -D warnings, build, tests, conformance suite
#   make run          setup, build, demo against the fixture server (scripts/demo.sh)
#   make fmt          cargo fmt --all
#   make lint         fmt check + clippy -D warnings
#   make build        cargo build --workspace
#   make unit         the Rust tests only (nextest if installed, else cargo test)
#   make conformance  scripts/conformance.sh (needs target/debug/lifeline)

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test

CARGO ?= cargo
HAVE_NEXTEST := $(shell $(CARGO) nextest --version >/dev/null 2>&1 && echo yes)

.PHONY: test run setup fmt fmt-check lint clippy build unit conformance help

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

lint: fmt-check clippy

# The integration tests run target/debug/lifeline and lifeline-fixture, so build every binary first.
build:
	$(CARGO) build --workspace

unit: build
ifeq ($(HAVE_NEXTEST),yes)
	$(CARGO) nextest run --workspace --no-fail-fast
	$(CARGO) test --workspace --doc
else
	$(CARGO) test --workspace --no-fail-fast
endif

conformance:
	scripts/conformance.sh

# Sequential on purpose (the steps share target/ and the machine has 2 cores); `make -j` would
# not speed this up, so the recipe calls the steps in order rather than listing prerequisites.
test:
	scripts/setup.sh
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory unit
	scripts/conformance.sh

run:
	scripts/setup.sh
	$(CARGO) build -p lifeline-cli -p lifeline-it
	scripts/demo.sh
