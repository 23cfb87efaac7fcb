# Portaria: two commands.
#   make run    build (release) and serve the demo on http://127.0.0.1:8080 (SQLite)
#   make test   every test, PostgreSQL ones included (throw-away cluster), then a short fuzz
#               run; SANITIZE=address|thread|all adds the suite under sanitizers (CI adds ASan)
#   make test-repeat N=10   the whole suite N times from a fresh clone
# Also: make ios-typecheck (the iOS shell type-checked on Linux), make build, make bench,
#   make bench-instances, make bench-tenth-year,
#   make conformance, make soak, make chaos, make sanitize, make clean, make bootstrap, make fuzz (each
#   libFuzzer target FUZZ_SECONDS, default 300), make fuzz-short (20 s each), make
#   screenshots (docs/screenshots, the README tour).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := run

# The toolchain of this machine lives in /opt/swift; elsewhere swift is on PATH.
ifneq ($(wildcard /opt/swift/usr/bin/swift),)
export PATH := /opt/swift/usr/bin:$(PATH)
endif

SWIFT ?= swift
HOST ?= 127.0.0.1
PORT ?= 8080
DATABASE ?= sqlite://./portaria.db
RELEASE_BIN := .build/release/portaria

FUZZ_SECONDS ?= 300
# How many end-to-end tests run at once (swift-testing's parallelization width). Unbounded,
# all ~120 start together: dozens of servers, browsers and coturn on 2 cores, and tests'
# deadlines measured the start storm instead of the product (docs/reliability.md).
E2E_WIDTH ?= 8
# Sanitized runs at the end of `make test` (scripts/sanitize): address, thread or all;
# empty (the default) skips them. `make test` stays under 20 minutes on 2 cores that way;
# CI (.ci/run) runs the ASan suite right after it, so every landing is still checked.
SANITIZE ?=

.PHONY: ios-typecheck run test test-repeat sanitize build bench bench-instances bench-tenth-year conformance soak chaos clean bootstrap fuzz fuzz-short screenshots

bootstrap:
	@scripts/bootstrap

build: bootstrap
	$(SWIFT) build -c release --product portaria

# The demo runs on this machine without a TURN relay, so its video calls connect directly
# (--calls-allow-direct: the visitor's page sees the resident's addresses; production
# relays every call through TURN, decision 0066).
run: build
	$(RELEASE_BIN) serve --demo --calls-allow-direct --host $(HOST) --port $(PORT) --database $(DATABASE)

# A test whose tool is missing (PostgreSQL, Chromium, WebKit, coturn, the venv…) is skipped
# on a developer's machine and fails under CI=1 or STRICT=1 (.ci/run sets both;
# Tests/PortariaTestSupport/Requirements.swift); the closing line says how many were skipped.
# swift test runs inside scripts/with-postgres, so PORTARIA_TEST_POSTGRES_URL is set;
# end-to-end tests start the portaria binary named by PORTARIA_BIN. Two phases: the
# in-process suites (whose servers live in the test process) first, then the end-to-end
# ones, which start dozens of servers, browsers and coturn at once; together, that start
# storm on 2 cores starved the in-process servers past their deadlines. The in-process
# phase runs one test at a time: its servers share the test process's two cooperative
# threads, and run in parallel they still missed deadlines on a loaded machine.
test: bootstrap
	@start=$$(date +%s); status=0; rm -f .build/test-output.log; \
	$(SWIFT) build --build-tests || status=$$?; \
	if ((status == 0)); then scripts/check-decisions-index || status=$$?; fi; \
	if ((status == 0)); then scripts/ios-typecheck --skip-build --self-check || status=$$?; fi; \
	if ((status == 0)); then \
	  export PORTARIA_BIN="$$($(SWIFT) build --show-bin-path)/portaria"; \
	  scripts/with-postgres -- bash -c '$(SWIFT) test --skip-build --no-parallel --filter "^(PortariaCoreTests|PortariaClientTests|PortariaServerTests)\." \
	    && SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(E2E_WIDTH) $(SWIFT) test --skip-build --filter "^PortariaEndToEndTests\."' 2>&1 | tee .build/test-output.log || status=$$?; \
	  if ((status != 0)); then scripts/failure-digest .build/test-output.log test; fi; \
	fi; \
	if ((status == 0)); then scripts/fuzz --seconds 20 || status=$$?; fi; \
	if ((status == 0)) && [[ -n "$(SANITIZE)" ]]; then \
	  scripts/sanitize $(SANITIZE) || status=$$?; \
	fi; \
	scripts/skipped-tests --reasons .build/test-output.log; \
	elapsed=$$(( $$(date +%s) - start )); \
	printf '\nmake test: %s in %dm%02ds; %s\n' "$$( ((status == 0)) && echo passed || echo FAILED )" \
	  $$((elapsed / 60)) $$((elapsed % 60)) "$$(scripts/skipped-tests .build/test-output.log)"; \
	exit $$status

# Every Swift file of the iOS shell (PortariaClientApple, Apps/iOS) type-checked in Swift 6
# mode against stand-ins for Apple's frameworks (docs/ios.md); `make test` runs it first,
# with a self-check that a planted type error in each folder fails it.
ios-typecheck:
	@scripts/ios-typecheck --self-check

# The whole suite N times from a fresh clone of HEAD (a flaky test is a failing test).
N ?= 10
test-repeat:
	@scripts/repeat-test $(N)

# The suite under AddressSanitizer (+LeakSanitizer) and ThreadSanitizer, each in its own
# scratch path (.build-asan, .build-tsan); one of them: scripts/sanitize address|thread.
sanitize: bootstrap
	@scripts/sanitize all

# PNGs of the main screens at a phone's size (412×915, the browser tests' window) into
# docs/screenshots/, taken by the Chromium tests as they walk through them (the README's tour).
screenshots: bootstrap
	$(SWIFT) build --build-tests
	PORTARIA_BIN="$$($(SWIFT) build --show-bin-path)/portaria" PORTARIA_SCREENSHOT_DIR="$(CURDIR)/docs/screenshots" \
	  $(SWIFT) test --skip-build --filter 'GateBrowserTests|ResidentAppBrowserTests|ResidentAppScreensTests|VideoCallBrowserTests|AccessibilityBrowserTests|AdminPanelBrowserTests'

# libFuzzer targets (fuzz/targets), one after another; non-zero exit on any crash.
fuzz:
	scripts/fuzz --seconds $(FUZZ_SECONDS)

fuzz-short:
	scripts/fuzz --seconds 20

bench: build
	@if grep -q '"portaria-bench"' Package.swift; then \
	  $(SWIFT) build -c release --product portaria-bench; fi
	bench/run

# Gate POST/s and realtime p99 with 1, 2 and 3 instances on one PostgreSQL.
bench-instances: build
	$(SWIFT) build -c release --product portaria-bench
	bench/instances

# A building's tenth year: gate POST, resolve and the visit lists on a SQLite database with
# 1,000,000 visits (BENCH_HISTORY_VISITS) as retention leaves them, beside one with a week's.
bench-tenth-year: build
	$(SWIFT) build -c release --product portaria-bench
	bench/tenth-year

# WebSocket conformance (Autobahn|Testsuite fuzzingclient against /v1/bench/ws/echo of the
# debug binary, whose assertions are on). Needs Python 2.7 (pyenv); not part of make test.
conformance: bootstrap
	$(SWIFT) build --product portaria
	PORTARIA_BIN="$$($(SWIFT) build --show-bin-path)/portaria" scripts/conformance

# Mixed load against the release binary for SOAK_SECONDS (default 600); prints throughput,
# latency percentiles, errors, RSS and descriptors per minute.
soak: build
	$(SWIFT) build -c release --product portaria-bench
	scripts/soak

# Faults under a mixed load against the release binary (scripts/chaos): kill -9 and restart,
# PostgreSQL restarted, SQLite's disk filled, on SQLite and PostgreSQL; prints faults,
# answers by status, answered writes, lost writes (must be 0) and recovery times.
# CHAOS_FAULTS (120 in all), CHAOS_SECONDS (540 at most). Runs as root (a tmpfs mount).
chaos: build
	scripts/chaos

clean:
	$(SWIFT) package clean
	rm -rf bench/results
