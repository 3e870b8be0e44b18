# talosc developer tasks. "make help" lists them; README.md explains them.
# Dev tools are pinned in tools/go.mod and run with "go tool -modfile=tools/go.mod".

SHELL         := bash
.SHELLFLAGS   := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO      ?= go
# The Go that builds, tests and releases talosc: go1.27.3, which the go
# command fetches once from the module proxy (76 MB). The machines' go1.26.8
# has standard-library vulnerabilities that govulncheck (make vuln) finds in
# code talosc calls (net/http, crypto/tls, crypto/x509; fixed in 1.26.9 and
# 1.26.10, which the proxy here does not serve).
export GOTOOLCHAIN ?= go1.27.3
TOOL    := $(GO) tool -modfile=tools/go.mod
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/talosc/talosc/pkg/version.version=$(VERSION)
# VERSION is stamped by the linker, so VCS stamping adds nothing and would
# fail in a tree without .git.
BUILDFLAGS := -trimpath -buildvcs=false
# Extra flags for the test targets, e.g. make unit TESTFLAGS=-race.
TESTFLAGS  ?=
BENCHFLAGS ?=

# make demo: where the demo cluster directory is scaffolded.
DEMO_DIR ?= bin/demo
PROVIDER ?= openstack

# make dist: release archives for krew and GitHub releases.
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DIST_BINS := kubectl-talosc tc-image tc-net tc-nodes tc-rancher tc-argocd
# krew wants a semantic version: "git describe" gives one from a v* tag;
# an untagged tree (a bare commit hash, or "dev") becomes v0.0.0-<that>.
DIST_VERSION ?= $(if $(filter v%,$(VERSION)),$(VERSION),v0.0.0-$(VERSION))
DIST_LDFLAGS := -s -w -X github.com/talosc/talosc/pkg/version.version=$(DIST_VERSION)
SHA256SUM    := $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo 'shasum -a 256')
# GNU tar can make the archives byte-for-byte reproducible; BSD tar just archives.
TAR_FLAGS    := $(shell tar --version 2>/dev/null | grep -q 'GNU tar' && \
	echo "--owner=0 --group=0 --numeric-owner --mtime=@$$(git log -1 --format=%ct 2>/dev/null || echo 0)")

VULNDB := bin/vulndb

.PHONY: help build test unit e2e lint fmt vet vuln bench fuzz mutate demo dist schema tidy tidy-check clean ci

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-11s %s\n", $$1, $$2}'

build: ## build every binary in ./cmd into bin/
	$(GO) build $(BUILDFLAGS) -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

# The E2E package runs every lab scenario, the lost-answer and kill ones
# included, on two cores in about 20 minutes: twice go test's default
# per-package timeout.
TESTTIMEOUT ?= 45m

test: kube-apiserver ## run every test, E2E and the lab's real kube-apiserver included (the README's test command)
	TALOSC_KUBE_APISERVER=$(CURDIR)/bin/kube-apiserver $(GO) test -timeout $(TESTTIMEOUT) $(TESTFLAGS) ./...

unit: ## run the fast tests only (-short)
	$(GO) test -short $(TESTFLAGS) ./...

e2e: ## run the end-to-end tests (real binaries, fake clouds)
	$(GO) test -timeout $(TESTTIMEOUT) $(TESTFLAGS) ./e2e/...

lint: ## golangci-lint with the formatters (gofumpt, goimports) as checks
	$(TOOL) golangci-lint run

fmt: ## rewrite files with gofumpt and goimports
	$(TOOL) golangci-lint fmt

vet: ## go vet
	$(GO) vet ./...

# The vulnerability database is built offline from the pinned
# golang.org/x/vulndb module: vuln.go.dev is not reachable here. It is as
# fresh as that pin, so bump it with the other tools.
$(VULNDB)/index/db.json: tools/go.mod
	rm -rf $(VULNDB)
	$(GO) mod download -modfile=tools/go.mod golang.org/x/vulndb
	$(TOOL) indexdb -out $(VULNDB) \
		-vulns "$$($(GO) list -m -modfile=tools/go.mod -f '{{.Dir}}' golang.org/x/vulndb)/data/osv"

vuln: $(VULNDB)/index/db.json ## govulncheck against the offline database
	$(TOOL) govulncheck -db file://$(CURDIR)/$(VULNDB) ./...

# Every parser of user or network input has a fuzz target; make fuzz runs
# each for FUZZTIME, one after the other. A crasher lands in the package's
# testdata/fuzz and fails every later go test until it is fixed.
FUZZTIME    ?= 10m
FUZZTARGETS := ./pkg/config:FuzzLoad ./pkg/state:FuzzParse ./pkg/talos/identity:FuzzParse \
	./pkg/talos/identity:FuzzClientFiles ./pkg/ui:FuzzPlan

fuzz: ## fuzz every parser of user or network input, FUZZTIME (10m) each
	@for t in $(FUZZTARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

# Mutation testing of the packages that hold the safety guards, with
# gremlins (pinned in tools/go.mod): each package's -short tests run
# against every mutant of its covered code; a LIVED mutant is a change no
# test noticed. -count=1: gremlins times each mutant by a coverage run,
# which the test cache would answer at once (every mutant then "times
# out"). Slow (hours on two cores), so not part of test or ci. The report
# goes to bin/mutate.txt; MUTATE_PKGS picks the packages.
MUTATE_PKGS ?= ./pkg/phase/nodes ./pkg/phase/preflight ./pkg/talos/talosapi ./pkg/provider/...
MUTATEFLAGS ?= --workers 1 --timeout-coefficient 10

mutate: ## mutation testing of the guard packages (gremlins, -short tests; slow); report in bin/mutate.txt
	@mkdir -p bin
	@: > bin/mutate.txt
	@for p in $(MUTATE_PKGS); do \
		echo "mutate: $$p" | tee -a bin/mutate.txt; \
		GOFLAGS="$${GOFLAGS:-} -short -count=1" $(TOOL) gremlins unleash $(MUTATEFLAGS) $${p%/...} 2>&1 | tee -a bin/mutate.txt; \
	done
	@echo "mutation report: bin/mutate.txt"

# The converge benchmarks report wall time over the converge's lower bound
# (x-bound), over the lab's busy time (x-lab-busy, idle gaps only) and, at
# 50 nodes, over the 3+3 cluster's (x-wall-of-6nodes); the bound's own
# table test runs first.
bench: kube-apiserver ## run the benchmarks; the report goes to bin/bench.txt
	@mkdir -p bin
	TALOSC_KUBE_APISERVER=$(CURDIR)/bin/kube-apiserver $(GO) test -run '^TestConvergeBound$$' -bench . -benchmem $(BENCHFLAGS) ./... | tee bin/bench.txt
	@grep -E 'x-bound' bin/bench.txt | awk '{line = $$1; for (i = 2; i <= NF; i++) if ($$i ~ /^(wall-s\/op|bound-s\/op|x-bound|lab-busy-s\/op|x-lab-busy|x-wall-of-6nodes)$$/) line = line "  " $$(i-1) " " $$i; print line}'
	@echo "benchmark report: bin/bench.txt"

# The demo runs on talosc-lab: a 3 control plane + 2 worker cluster is planned,
# converged and shown, on OpenStack or (PROVIDER=proxmox) Proxmox VE. The
# lab's kube-apiserver is built on first use.
demo: build kube-apiserver ## start the lab (PROVIDER=openstack|proxmox), converge the cluster in DEMO_DIR, show it, stop the lab
	TALOSC_KUBE_APISERVER=$(CURDIR)/bin/kube-apiserver hack/demo.sh '$(DEMO_DIR)' '$(PROVIDER)'

dist: ## release archives, checksums and the krew manifest in dist/
	rm -rf dist
	mkdir -p dist
	for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=talosc_$(DIST_VERSION)_$${os}_$${arch}; stage=dist/$$name; \
		echo "dist: $$os/$$arch"; \
		mkdir -p $$stage; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build $(BUILDFLAGS) -ldflags '$(DIST_LDFLAGS)' \
			-o $$stage/ $(addprefix ./cmd/,$(DIST_BINS)); \
		cp LICENSE README.md $$stage/; \
		tar $(TAR_FLAGS) -C $$stage -cf - $(DIST_BINS) LICENSE README.md | gzip -n > dist/$$name.tar.gz; \
		rm -rf $$stage; \
	done
	cd dist && $(SHA256SUM) *.tar.gz > checksums.txt
	$(GO) run ./hack/krewmanifest -version '$(DIST_VERSION)' -template krew/talosc.yaml \
		-checksums dist/checksums.txt -o dist/talosc.yaml
	@ls -l dist

# The lab's real Kubernetes API (kube-apiserver + embedded etcd) is its own
# module in lab/kube-apiserver: k8s.io/kubernetes needs a replace block that
# would pin the product's client-go. The version it reports comes from the
# linker; without it /version says v0.0.0-master. Cold: 3-10 min, ~2 GB of
# GOCACHE; warm: seconds. Built without -trimpath, which would make its
# compiles of the standard library differ from vet's, lint's and test's: so
# the 209 standard packages both use are compiled once (96 CPU-s cold).
KAS_VERSION = $(shell awk '$$1 == "k8s.io/kubernetes" {print $$2}' lab/kube-apiserver/go.mod)
KAS_VERPKG  := k8s.io/component-base/version
.PHONY: kube-apiserver
kube-apiserver: ## build the lab's kube-apiserver (with etcd) into bin/
	$(GO) -C lab/kube-apiserver build -buildvcs=false -o $(CURDIR)/bin/kube-apiserver \
		-ldflags "-s -w -X $(KAS_VERPKG).gitVersion=$(KAS_VERSION) \
		-X $(KAS_VERPKG).gitMajor=$(word 1,$(subst ., ,$(KAS_VERSION:v%=%))) \
		-X $(KAS_VERPKG).gitMinor=$(word 2,$(subst ., ,$(KAS_VERSION:v%=%))) \
		-X $(KAS_VERPKG).gitTreeState=clean" .

# The schema tests rewrite schema/*.json under UPDATE_GOLDEN (and may fail
# once to say so); the second run checks the result.
SCHEMA_PKGS := ./pkg/config ./pkg/state ./schema
schema: ## regenerate schema/*.json from the Go types
	UPDATE_GOLDEN=1 $(GO) test -count=1 -run Schema $(SCHEMA_PKGS) || true
	$(GO) test -count=1 -run Schema $(SCHEMA_PKGS)

tidy: ## go mod tidy, for the product and for tools/
	$(GO) mod tidy
	cd tools && $(GO) mod tidy

tidy-check: ## fail when go.mod or go.sum (or tools') are not tidy
	$(GO) mod tidy -diff
	cd tools && $(GO) mod tidy -diff

clean: ## remove bin/ and dist/
	rm -rf bin dist

# make ci is the one CI definition: .ci/run runs these targets as its timed
# steps (lint and vuln beside the tests, at low priority). Its vet step runs
# every vet analyser over every package, test files included; go test's own
# vet pass is a subset of it and would only analyse the same files (and
# every dependency, for its facts) again, so the test step turns it off. CI_TESTFLAGS can be set from the
# environment, e.g. CI_TESTFLAGS="-vet=off -parallel=4" to try more E2E
# scripts at once.
CI_STEPS     := tidy-check vet lint test vuln
CI_TESTFLAGS ?= -vet=off
ci: TESTFLAGS += $(CI_TESTFLAGS)
ci: $(CI_STEPS) ## what CI checks (.ci/run): tidy check, vet, lint, every test, govulncheck

# make print-VAR prints a variable: .ci/run reads CI_STEPS and CI_TESTFLAGS.
print-%:
	@echo '$($*)'
