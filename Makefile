# ironic-conductor-exporter
GO          ?= go
BIN         := ironic_conductor_exporter
PKGS        := ./...
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS     := -s -w \
  -X github.com/prometheus/common/version.Version=$(VERSION) \
  -X github.com/prometheus/common/version.Revision=$(REVISION) \
  -X github.com/prometheus/common/version.Branch=$(shell git rev-parse --abbrev-ref HEAD 2>/dev/null) \
  -X github.com/prometheus/common/version.BuildUser=$(shell whoami)@$(shell hostname) \
  -X github.com/prometheus/common/version.BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)

.PHONY: all build run test unit lint bench conformance vectors fuzz clean e2e faults

all: lint build test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ironic_conductor_exporter

## run: the demo: the exporter on a simulated fleet in an embedded SQLite database (ARGS: more flags).
run: build
	./$(BIN) demo $(ARGS)

## test: everything CI runs: lint, unit tests with the race detector, conformance.
test: lint unit conformance

unit:
	$(GO) test -race -count=1 $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## e2e: the alerting path end to end: the sidecar on a real PostgreSQL, real Prometheus (rules,
## dashboard queries), real Alertmanager (example config), a webhook. `make unit` runs it too.
e2e:
	$(GO) test -race -count=1 -v ./e2e

## faults: the fault suite of the binary (issue 11) on PostgreSQL, MariaDB and SQLite: a TCP proxy
## that black-holes, drops or slows the database, server faults, hostile HTTP clients, a fuzzer;
## prints FIGURES lines per fault. `make unit` (so `make test`) runs it too.
faults:
	$(GO) test -count=1 -v ./faults

## bench: benchmarks, each printed next to the baseline measured in the same run.
bench:
	./scripts/bench.sh

## conformance: the sidecar against real Ironic 16.0, 21.4, 29.0 and the newest (Debian chroots) on PostgreSQL, MariaDB and SQLite.
conformance: build
	./conformance/run.sh ./$(BIN)

## vectors: regenerate ring/testdata from the real tooz (Debian python3-tooz).
vectors:
	/usr/bin/python3 scripts/gen-ring-vectors.py

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRing -fuzztime 60s ./ring

clean:
	rm -f $(BIN)
