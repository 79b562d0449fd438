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

.PHONY: attacks provision test-upstream release-check all build image run test unit lint bench conformance conformance-auth live-fleet live-fleet-releases vectors fuzz clean e2e faults release release-test

# The pinned tools are built from the Go module proxy on first use into a
# cache outside the checkout, one directory per version, so that CI's fresh
# clones and later runs on the same machine reuse them.
TOOLS       ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ironic-conductor-exporter/tools
GORELEASER_VERSION ?= v2.15.1
GORELEASER  := $(TOOLS)/goreleaser-$(GORELEASER_VERSION)/goreleaser
ACTIONLINT_VERSION ?= v1.7.12
ACTIONLINT  := $(TOOLS)/actionlint-$(ACTIONLINT_VERSION)/actionlint

# The pinned linters, installed into ./bin on first use.
GOLANGCI_LINT_VERSION := v2.15.0
GOVULNCHECK_VERSION   := v1.9.0
# The Go vulnerability database, built from the golang.org/x/vulndb module
# (vuln.go.dev need not be reachable); bump VULNDB_VERSION to refresh it.
VULNDB_VERSION        := v0.0.0-20261105234957-e22db6528018
GOLANGCI_LINT         := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
GOVULNCHECK           := $(TOOLS)/govulncheck-$(GOVULNCHECK_VERSION)/govulncheck
VULNDB_DIR            := $(TOOLS)/vulndb-$(VULNDB_VERSION)
PYTHON                ?= $(or $(ICE_PYTHON),$(shell command -v python3),python3)

# go.mod's toolchain line (the Go release with the standard library's
# security fixes) is honoured even where go.env says GOTOOLCHAIN=local.
GOTOOLCHAIN ?= auto
export GOTOOLCHAIN

# Every test target runs everything: a missing service or tool FAILS the
# test instead of skipping it (plain `go test ./...` skips, saying what to
# install).
export ICE_TEST_REQUIRE_ALL := 1

all: lint build test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ironic_conductor_exporter

# The image: the registry and name the chart and the kustomize base use; the
# tag of a build from a work tree is its git describe.
IMAGE_REPO  ?= ghcr.io/ironic-conductor-exporter/ironic-conductor-exporter
IMAGE       ?= $(IMAGE_REPO):$(VERSION)
PODMAN      ?= podman
IMAGE_PLATFORM := linux/$(shell $(GO) env GOARCH)

## image: the release image (deploy/container/Containerfile) of `make build`'s binary, built with
## podman for this machine's platform, from no registry: IMAGE=name:tag to name it.
image: build
	rm -rf dist/image && mkdir -p dist/image/$(IMAGE_PLATFORM)
	cp $(BIN) dist/image/$(IMAGE_PLATFORM)/
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) $(GO) run ./deploy/container/rootfs -o dist/image/rootfs.tar
	$(PODMAN) build --platform $(IMAGE_PLATFORM) -f deploy/container/Containerfile -t $(IMAGE) dist/image

## run: the demo: the exporter on a simulated fleet in an embedded SQLite database (ARGS: more flags).
run: build
	./$(BIN) demo $(ARGS)

## provision: what the tests need on a Debian machine (scripts/provision.sh): Debian packages,
## podman's settings, PostgreSQL and MariaDB started, the Ironic and Nova chroots, Go modules. Idempotent:
## seconds when everything is there.
provision:
	./scripts/provision.sh

## test: everything CI runs, on a machine `make provision` sets up first: lint, unit tests with
## the race detector, conformance, the release archives.
test: provision
	$(MAKE) lint unit attacks conformance conformance-auth live-fleet release-test release-check

## unit: every package's tests with the race detector. The timeout is explicit and generous: the
## Nova conformance alone takes ~6 minutes on an idle 2-core machine, and go test's default (10
## minutes per package) failed on a loaded one.
unit:
	$(GO) test -race -count=1 -timeout 45m $(PKGS)

## attacks: the attacks of issue 43 as tests, loopback only and bounded in count and time (a few
## minutes): the http_basic timing oracle (a statistical test, without the race detector, which
## slows bcrypt tenfold), idle and slowloris floods against a connection cap, an idle flood on the
## probe listener of an exporter with 1,024 descriptors, a slowloris on the telemetry listener, TLS
## handshake, GET /v1, authenticated and bcrypt floods on the API's door, a stalled BEGIN. Each
## prints FIGURES lines.
attacks:
	$(GO) test -count=1 -timeout 10m -v -run 'TestBasicTimingOracle|TestConnsFlood|TestAttack|TestBeginStalled' \
	  ./auth ./internal/limit ./faults

## lint: gofmt, go vet, golangci-lint (.golangci.yml) and govulncheck, at pinned versions.
lint: $(GOLANGCI_LINT) $(GOVULNCHECK) $(VULNDB_DIR)/index/db.json
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GOLANGCI_LINT) run $(PKGS)
	$(GOVULNCHECK) -db file://$(VULNDB_DIR) $(PKGS)

$(GOLANGCI_LINT):
	GOBIN=$(dir $@) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(GOVULNCHECK):
	GOBIN=$(dir $@) $(GO) install golang.org/x/vuln/cmd/govulncheck@$(GOVULNCHECK_VERSION)

$(VULNDB_DIR)/index/db.json:
	$(GO) mod download golang.org/x/vulndb@$(VULNDB_VERSION)
	mkdir -p $(TOOLS)
	rm -rf $(VULNDB_DIR).tmp
	$(GO) run golang.org/x/vulndb/cmd/indexdb@$(VULNDB_VERSION) \
	  -vulns $$($(GO) env GOMODCACHE)/golang.org/x/vulndb@$(VULNDB_VERSION)/data/osv -out $(VULNDB_DIR).tmp
	mv $(VULNDB_DIR).tmp $(VULNDB_DIR)

## e2e: the alerting path end to end: the sidecar on a real PostgreSQL, real Prometheus (rules,
## dashboard queries), real Alertmanager (example config), a webhook. `make unit` runs it too.
e2e:
	$(GO) test -race -count=1 -v ./e2e

## faults: the fault suite of the binary (issue 11) on PostgreSQL, MariaDB and SQLite: a TCP proxy
## that black-holes, drops or slows the database, server faults, hostile HTTP clients, a fuzzer;
## prints FIGURES lines per fault. `make unit` (so `make test`) runs it too.
faults:
	$(GO) test -count=1 -timeout 30m -v ./faults

## test-upstream: the deploy tests that run an installer's own code from its source tree
## (ICE_KOLLA_ANSIBLE, ICE_KAYOBE, ICE_OPENSTACK_HELM, ICE_OPERATOR_OUTPUT: deploy/README.md); each
## fails when its tree is not given. Not part of `make test`: no Debian package or Go module holds them.
test-upstream:
	$(GO) test -tags upstream -count=1 -run 'TestKollaAnsible|TestOpenstackHelmChartSecrets|TestOperatorModel|TestMetal3TopLevel' ./deploy

## bench: the performance contract at 100k and 1M nodes: Go benchmarks, the binary in a steady
## state on real PostgreSQL fleets, lookups under wrk, alone and next to real Ironic 21.4's API: one
## table, written into docs/performance.md. About 25 minutes; not part of `make test`.
bench:
	./scripts/bench.sh

## conformance: the sidecar against real Ironic 16.0, 21.4, 29.0 and the newest (Debian chroots) on PostgreSQL, MariaDB and SQLite.
conformance: build
	./conformance/run.sh ./$(BIN)

## live-fleet: real ironic-api and three ironic-conductors beside the sidecar: the host's 21.4 on
## MariaDB and PostgreSQL through SIGTERM/SIGKILL/SIGUSR1 scenarios, 29.0 (trixie chroot) with
## HOST:PORT names, a deploy storm into max_concurrent_deploy and a power failure (21.4, PostgreSQL) and the stale
## conductor cleanup of 39.0 (sid chroot); the single-conductor SQLite case (21.4, restarts) and
## 39.0's cleanup on SQLite; every comparison within its documented lag (docs/live-fleet.md).
## About 22 minutes.
live-fleet: build
	./conformance/live/run.sh ./$(BIN)

## live-fleet-releases: every live-fleet scenario (SIGTERM, SIGKILL, SIGUSR1, takeover, deploy
## storm, group emptied, SIGUSR2 drain) on 29.0 (trixie) and 39.0 (sid), on MariaDB and
## PostgreSQL: twelve fleets, about 35 minutes, so NOT part of make test (.ci/run must stay under
## 75 minutes). LIVE_RELEASES, LIVE_REL_BACKENDS, LIVE_REL_FLEETS narrow it (conformance/live/run.sh).
live-fleet-releases: build
	./conformance/live/run.sh ./$(BIN) releases

## conformance-auth: keystone and http_basic modes against real Keystone and Ironic 21.4.
conformance-auth: build
	./conformance/auth/run.sh ./$(BIN)

## vectors: regenerate ring/testdata from the real tooz (Debian python3-tooz).
vectors:
	$(PYTHON) scripts/gen-ring-vectors.py

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzRing -fuzztime 60s ./ring

$(GORELEASER):
	GOBIN=$(dir $@) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

## release: a snapshot of the release into dist/, offline, nothing published: the linux
## amd64/arm64/ppc64le/s390x archives and sha256sums.txt. The image (dockers_v2) needs a
## container engine and is skipped.
release: $(GORELEASER)
	REVISION=$(REVISION) BRANCH=$(shell git rev-parse --abbrev-ref HEAD) SHORT_REVISION=$(shell git rev-parse --short HEAD) \
	  $(GORELEASER) release --snapshot --clean --skip=docker,publish,announce,sign,sbom

$(ACTIONLINT):
	GOBIN=$(dir $@) $(GO) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

## release-check: the release as a tag would run it, checked offline: actionlint on the
## workflows, `goreleaser check` on .goreleaser.yaml.
release-check: $(ACTIONLINT) $(GORELEASER)
	$(ACTIONLINT) .github/workflows/*.yml
	$(GORELEASER) check

## release-test: extracts the amd64 archive of `make release` and runs its binary.
release-test: release
	$(GO) test -count=1 -tags release -run TestReleaseArchives ./deploy

clean:
	rm -rf $(BIN) dist
