# Portaria: two commands.
#   make run    build (release) and serve the demo on http://127.0.0.1:8080 (SQLite)
#   make test   every test, PostgreSQL ones included (throw-away cluster)
# Also: make build, make bench, make conformance, make soak, make clean, make bootstrap.

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

.PHONY: run test build bench conformance soak clean bootstrap

bootstrap:
	@scripts/bootstrap

build: bootstrap
	$(SWIFT) build -c release --product portaria

run: build
	$(RELEASE_BIN) serve --demo --host $(HOST) --port $(PORT) --database $(DATABASE)

# swift test runs inside scripts/with-postgres, so PORTARIA_TEST_POSTGRES_URL is set;
# end-to-end tests start the portaria binary named by PORTARIA_BIN.
test: bootstrap
	@start=$$(date +%s); status=0; \
	$(SWIFT) build --build-tests || status=$$?; \
	if ((status == 0)); then \
	  export PORTARIA_BIN="$$($(SWIFT) build --show-bin-path)/portaria"; \
	  scripts/with-postgres -- $(SWIFT) test --skip-build || status=$$?; \
	fi; \
	elapsed=$$(( $$(date +%s) - start )); \
	printf '\nmake test: %s in %dm%02ds\n' "$$( ((status == 0)) && echo passed || echo FAILED )" \
	  $$((elapsed / 60)) $$((elapsed % 60)); \
	exit $$status

bench: build
	@if grep -q '"portaria-bench"' Package.swift; then \
	  $(SWIFT) build -c release --product portaria-bench; fi
	bench/run

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

clean:
	$(SWIFT) package clean
	rm -rf bench/results
