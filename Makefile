# sandboxrun — build, images, tests.
#
#   make demo    build everything needed and run a real skill script in a sandbox
#   make test    unit tests, fuzz seed corpora, the Docker integration suite and
#                the Python and TypeScript clients against a real serve
#   make lint    go vet, gofmt and golangci-lint
#   make test-typescript  the TypeScript client and drop-in against a real serve
#   make test-k8s  the conformance suite on a real single-node Kubernetes (hack/)
#   make test-podnet  the test cluster's Pod network (K8S_PROFILE=podnet): eth0,
#                Service DNS, probes, the chart's deny-all NetworkPolicy enforced,
#                and the chart with its production values and two replicas:
#                uploads, sessions, snapshots and forks, egress with a secret,
#                helm test
#   make server-image  the `serve` image for the Helm chart (Dockerfile.server)
#   make test-helm  the Helm chart on the test cluster: two replicas, a session
#                across both, the owner Pod deleted mid-session, helm test;
#                then test-podnet (the production values on the Pod network);
#                and the systemd unit through systemd-analyze (verify-unit)
#   make bench-k8s  kubernetes backend latency and pods/s next to docker, cold and warm
#   make bench-k8s-podnet  the same on the Pod-network cluster (K8S_PROFILE=podnet)
#                under an enforced deny-all policy, with the isolation probe's time
#   make bench   sandboxrun (library, CLI, server) vs `docker run` latency and throughput,
#                and what a session adds to a run; file upload and download MiB/s
#   make soak    serve under mixed load at concurrency 8 for SOAK_DURATION (10m):
#                p50/p99 per operation, answers by status, RSS/fds/goroutines
#   make bench-storage  the bench on the engine's storage driver and on overlay2
#                (a second, temporary dockerd; the running engine is untouched)
#   make crun    install crun, register it in daemon.json and reload dockerd
#                with SIGHUP (never restarts it: running containers stay up)

GO            ?= go
BIN           := $(CURDIR)/bin
SANDBOXRUN    := $(BIN)/sandboxrun
INIT          := $(BIN)/sandbox-init
GOLANGCI_VER  := v2.15.0
GOLANGCI      := $(BIN)/golangci-lint-$(GOLANGCI_VER)
GO_SOURCES    := $(shell find . -name '*.go' -not -path './bin/*') go.mod go.sum Dockerfile.runner

.PHONY: all build images server-image test-helm test-podnet lint-helm verify-unit demo test unit integration test-python test-k8s test-traces bench-k8s bench-k8s-podnet bench-storage lint fuzz bench soak crun runsc test-runsc clean reap typescript test-typescript

all: build

build: $(SANDBOXRUN) $(INIT)

$(SANDBOXRUN): $(GO_SOURCES)
	$(GO) build -trimpath -o $@ ./cmd/sandboxrun

# sandbox-init runs as PID 1 inside a Debian image: it must be static.
$(INIT): $(GO_SOURCES)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ ./cmd/sandbox-init

# Builds the runner image; with no registry reachable it bootstraps the Debian
# base with debootstrap from this host's apt sources (needs root the first time).
images: build
	$(SANDBOXRUN) images build --init $(INIT)

# The server image (Dockerfile.server): a static sandboxrun and this host's
# CA bundle on scratch, so no registry or base is needed. SERVER_IMAGE
# names it; the chart's default image.repository and image.tag match.
VERSION       := $(shell sed -n 's/^const Version = "\(.*\)"$$/\1/p' version.go)
SERVER_IMAGE  ?= sandboxrun/server:$(VERSION)
SERVER_STATIC := $(BIN)/server-image/sandboxrun
$(SERVER_STATIC): $(GO_SOURCES)
	@mkdir -p $(dir $@)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ ./cmd/sandboxrun
CA_BUNDLE     ?= /etc/ssl/certs/ca-certificates.crt
server-image: $(SERVER_STATIC)
	@[ -r $(CA_BUNDLE) ] || { echo "make: server-image needs a CA bundle at $(CA_BUNDLE) (Debian's ca-certificates), or CA_BUNDLE=FILE" >&2; exit 1; }
	cp Dockerfile.server $(BIN)/server-image/Dockerfile
	cp $(CA_BUNDLE) $(BIN)/server-image/ca-certificates.crt
	docker build -q -t $(SERVER_IMAGE) $(BIN)/server-image

demo: images
	$(SANDBOXRUN) run --skills skills data-analysis scripts/stats.py \
		--args '{"columns": ["price", "quantity"]}'

test: unit integration test-python test-typescript

# timed NAME CMD...: runs CMD and prints how long it took; `go test` prints
# each package's own time on its ok/FAIL line. CMD holds no comma ($(call) splits
# its arguments there).
timed = began=$$(date +%s); $(2); status=$$?; \
	echo "make: $(1) $$([ $$status = 0 ] && echo passed || echo FAILED) in $$(( $$(date +%s) - began )) s"; exit $$status

unit:
	@$(call timed,unit,$(GO) test -race -count=1 ./...)

# Integration tests mostly wait on the engine, so most run in parallel
# (integration/main_test.go says which may not): INTEGRATION_PARALLEL of
# them at once, on any number of CPUs.
INTEGRATION_PARALLEL ?= 4
integration: images
	@$(call timed,integration,$(GO) test -tags integration -race -count=1 -timeout 45m -parallel $(INTEGRATION_PARALLEL) ./integration/ ./images/ ./client/)

# The TypeScript client (clients/typescript) is compiled to dist/ (.js and
# .d.ts) by Debian's tsc, which is installed first when missing (root).
TSC ?= tsc
typescript:
	@command -v $(TSC) >/dev/null || { echo "make: tsc is missing; installing Debian's node-typescript"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q node-typescript; }
	cd clients/typescript && $(TSC) -p .

# Its tests (node's built-in runner) start `sandboxrun serve` on loopback and
# run on the real engine; they need the runner image (make images).
test-typescript: images typescript
	@docker info >/dev/null 2>&1 || { echo "make: test-typescript needs the Docker engine, and docker info cannot reach it" >&2; exit 1; }
	@$(call timed,test-typescript,cd clients/typescript && SANDBOXRUN_BIN=$(SANDBOXRUN) node --test test/*.test.mjs)

# The Python client (clients/python): unittest on the host's python3 against a
# real `sandboxrun serve` on loopback and the real engine; no Docker, no pass.
PYTHON ?= python3
test-python: images
	@docker version --format '{{.Server.Version}}' >/dev/null 2>&1 || { echo "make test-python: Docker is unreachable; these tests run on the real engine" >&2; exit 1; }
	@$(call timed,test-python,cd clients/python && SANDBOXRUN_BIN=$(SANDBOXRUN) $(PYTHON) -m unittest discover -s tests)

# Builds Kubernetes from the Go module proxy into /var/cache/sandboxrun-k8s
# the first time (about five minutes), starts a cluster, runs the suite on
# it with the kubernetes backend, and stops the cluster (root needed).
# The loopback profile of hack/k8s-up.sh: its Pods see lo alone, which is
# the isolation the backend proves today before a run without network.
test-k8s: images
	K8S_PROFILE=loopback hack/with-k8s.sh $(GO) test -tags kube -race -count=1 -timeout 20m ./integration/kube/

# The podnet profile: a bridge CNI, kube-proxy, CoreDNS and
# kube-network-policies (hack/net-build.sh builds the last two once into
# /var/cache/sandboxrun-net), and the checks of integration/kube/podnet.
# Then the chart with its production values on the same cluster
# (integration/helm, TestPodnet*).
test-podnet: images server-image
	SANDBOXRUN_HELM=$$(hack/helm-build.sh | tail -n 1) K8S_PROFILE=podnet \
	SANDBOXRUN_KUBECTL=$${SANDBOXRUN_K8S_CACHE:-/var/cache/sandboxrun-k8s}/v$(K8S_VERSION)/bin/kubectl \
	K8S_IMAGES="$(RUNNER_IMAGE) $(SERVER_IMAGE)" SANDBOXRUN_SERVER_IMAGE=$(SERVER_IMAGE) \
		hack/with-k8s.sh sh -c '$(GO) test -tags podnet -count=1 -timeout 10m -v ./integration/kube/podnet/ && \
			$(GO) test -tags helm -count=1 -timeout 10m -run "^TestPodnet" -v ./integration/helm/'

# The Helm chart (deploy/helm/sandboxrun): helm built once from the Go module
# proxy into /var/cache/sandboxrun-helm (hack/helm-build.sh); lint and
# template with the default, a full and the test values (lint-helm, no
# cluster); then a cluster with both images loaded, two replicas installed
# and one session followed across them and through the loss of its owner,
# helm test, and an uninstall that leaves nothing (integration/helm), on the
# loopback profile with the test-only hostNetwork values; then test-podnet,
# the production values on a Pod network.
K8S_VERSION ?= 1.36.3
RUNNER_IMAGE ?= $(or $(SANDBOXRUN_RUNNER_IMAGE),sandboxrun/runner:$(VERSION))
lint-helm:
	SANDBOXRUN_HELM=$$(hack/helm-build.sh | tail -n 1) $(GO) test -tags helm -count=1 -run '^TestChart' ./integration/helm/
test-helm: images server-image lint-helm verify-unit
	SANDBOXRUN_HELM=$$(hack/helm-build.sh | tail -n 1) \
	SANDBOXRUN_KUBECTL=$${SANDBOXRUN_K8S_CACHE:-/var/cache/sandboxrun-k8s}/v$(K8S_VERSION)/bin/kubectl \
	K8S_IMAGES="$(RUNNER_IMAGE) $(SERVER_IMAGE)" SANDBOXRUN_SERVER_IMAGE=$(SERVER_IMAGE) K8S_PROFILE=loopback \
		hack/with-k8s.sh $(GO) test -tags helm -count=1 -timeout 20m -run '^TestCluster' -v ./integration/helm/
	$(MAKE) test-podnet

# The systemd unit (deploy/systemd) through systemd-analyze verify, with
# ExecStart pointed at this checkout's binary (verify wants it to exist).
# verify only warns about an unknown key: any message fails the target.
verify-unit: build
	@command -v systemd-analyze >/dev/null || { echo "make: verify-unit needs systemd-analyze (Debian's systemd package)" >&2; exit 1; }
	@d=$$(mktemp -d); sed 's#/usr/local/bin/sandboxrun#$(SANDBOXRUN)#' deploy/systemd/sandboxrun.service >$$d/sandboxrun.service; \
		out=$$(systemd-analyze verify $$d/sandboxrun.service 2>&1); s=$$?; rm -rf $$d; \
		if [ $$s != 0 ] || [ -n "$$out" ]; then echo "$$out" >&2; echo "make: deploy/systemd/sandboxrun.service does not verify" >&2; exit 1; fi; \
		echo "make: deploy/systemd/sandboxrun.service verified"

# Latency and pods/s of the kubernetes backend next to the docker one, each
# cold and with a warm pool (bench/kube).
bench-k8s: images
	hack/with-k8s.sh $(GO) run ./bench/kube -n $(BENCH_N)

# The same on the podnet cluster, where sandbox Pods have eth0: a deny-all
# NetworkPolicy on sandbox Pods and a listening Pod as the isolation
# probe's target next to the cluster DNS (hack/bench-podnet.sh), so every
# kubernetes runner proves isolation by the connect probe; its time is the
# last line.
bench-k8s-podnet: images
	K8S_PROFILE=podnet RUNNER_IMAGE=$(RUNNER_IMAGE) GO=$(GO) \
	SANDBOXRUN_KUBECTL=$${SANDBOXRUN_K8S_CACHE:-/var/cache/sandboxrun-k8s}/v$(K8S_VERSION)/bin/kubectl \
		hack/with-k8s.sh hack/bench-podnet.sh -n $(BENCH_N)

# Builds Jaeger from the Go module proxy into /var/cache/sandboxrun-jaeger the
# first time (several minutes), starts it on loopback and checks the traces
# a `sandboxrun --trace serve` sends it (integration/traces).
test-traces: images
	SANDBOXRUN_JAEGER=$$(hack/jaeger-build.sh | tail -n 1) SANDBOXRUN_BIN=$(SANDBOXRUN) \
		$(GO) test -tags traces -count=1 -timeout 10m ./integration/traces/

lint: $(GOLANGCI)
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) vet -tags kube ./...
	$(GO) vet -tags traces ./integration/traces/
	$(GO) vet -tags helm ./integration/helm/
	$(GO) vet -tags podnet ./integration/kube/podnet/
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GOLANGCI) run --allow-serial-runners ./...

$(GOLANGCI):
	@mkdir -p $(BIN)
	GOBIN=$(BIN)/.golangci $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VER)
	mv $(BIN)/.golangci/golangci-lint $@

# Runs each fuzz target for FUZZTIME, every one hack/fuzz.sh finds in the
# sources (the seed corpora already run in `make unit`).
FUZZTIME ?= 30s
fuzz:
	GO=$(GO) hack/fuzz.sh $(FUZZTIME)

# BENCH_N samples per method; BENCH_C the concurrencies of the throughput
# table. The machine's other work shows up as noise: the table prints the
# load average before and after.
BENCH_N ?= 40
BENCH_C ?= 1,2,8
# BENCH_SESSIONS_N runs per row of the sessions bench (its 100 MiB rows
# take seconds a run).
BENCH_SESSIONS_N ?= 10
BENCH_RUNTIME ?=
# The storage driver as an operator lever: the same bench on this engine's
# driver and on overlay2, through a second dockerd started for it and
# removed afterwards (bench/storage-driver.sh).
bench-storage: images
	N=$(BENCH_N) bench/storage-driver.sh

# The oci backend's rows (sandbox/oci: the runtime driven directly, root
# only) unpack the runner image into OCI_STATE once; OCI_STATE= skips them.
OCI_STATE ?= /var/lib/sandboxrun/oci
bench: images
	$(GO) run ./bench -n $(BENCH_N) -c $(BENCH_C) -cli $(SANDBOXRUN) -oci-runtime "$(BENCH_RUNTIME)" -oci-state "$(OCI_STATE)"
	N=$(BENCH_N) SANDBOXRUN=$(SANDBOXRUN) ./bench/workspace-write.sh
	$(GO) run ./bench/server -n $(BENCH_N) -bin $(SANDBOXRUN) -oci-state "$(OCI_STATE)"
	$(GO) run ./bench/sessions -n $(BENCH_SESSIONS_N) -bin $(SANDBOXRUN)
	$(GO) test ./egress/ -run '^$$' -bench . -benchtime 3000x
	$(GO) test ./server/ -run '^$$' -bench Forward -benchtime 200x
	$(GO) run ./bench/tracing -n $(BENCH_N)

# A soak of serve (bench/soak), not in CI: mixed operations at concurrency
# SOAK_C for SOAK_DURATION; docs/operating.md ("Faults") has its figures.
SOAK_DURATION ?= 10m
SOAK_C ?= 8
soak: images
	$(GO) run ./bench/soak -bin $(SANDBOXRUN) -d $(SOAK_DURATION) -c $(SOAK_C)

# crun can start containers faster than runc (how it fared on this machine:
# docs/speed.md, "Usr volumes"). This installs Debian's crun package when
# missing and adds it to the engine's runtimes in ENGINE_CONFIG (other
# settings and the default runtime are left as they are), then sends dockerd
# SIGHUP, which reloads the runtimes. It never restarts the engine: running
# containers are untouched. Needs root.
# Use it with `sandboxrun run --oci-runtime crun`, SANDBOXRUN_OCI_RUNTIME=crun,
# a policy's `runtime: crun`, or `make bench BENCH_RUNTIME=crun`.
ENGINE_CONFIG ?= /etc/docker/daemon.json
ENGINE_PIDFILE ?= /var/run/docker.pid
# A crun that cannot start containers here (crun refuses a hybrid cgroup
# layout with controllers on the v2 hierarchy) is taken out again.
crun: images
	@command -v crun >/dev/null || apt-get install -y --no-install-recommends crun
	$(GO) run ./bench/addruntime -name crun -path $$(command -v crun) -config $(ENGINE_CONFIG)
	kill -HUP $$(cat $(ENGINE_PIDFILE))
	@for i in 1 2 3 4 5 6 7 8 9 10; do docker info --format '{{json .Runtimes}}' | grep -q '"crun"' && break; sleep 1; done
	@if ! out=$$($(SANDBOXRUN) run --skills skills --oci-runtime crun hello scripts/echo.py 2>&1); then \
		echo "crun cannot start containers on this engine: $$out" >&2; \
		$(GO) run ./bench/addruntime -remove -name crun -path $$(command -v crun) -config $(ENGINE_CONFIG); \
		kill -HUP $$(cat $(ENGINE_PIDFILE)); exit 1; fi
	@echo "crun works: sandboxrun run --oci-runtime crun ..., or make bench BENCH_RUNTIME=crun"

# Installs Debian's gVisor (runsc) and registers it with the Docker engine as
# the runtime "runsc" (for --oci-runtime runsc, or runtime: runsc in the
# policy). Needs root: it edits /etc/docker/daemon.json, adding
# runtimes.runsc and keeping the rest (a backup is left next to it), and
# reloads the engine with SIGHUP, which re-reads runtimes without a restart:
# running containers are untouched. It never restarts the engine.
runsc:
	command -v runsc >/dev/null || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q runsc)
	./tools/register-runsc.sh

# The gVisor tests (the core cases and the doctor under runsc) after
# `make runsc`. SANDBOXRUN_TEST_RUNSC=1 says runsc is expected: an engine
# without it fails them instead of skipping them.
test-runsc: runsc images
	@$(call timed,test-runsc,SANDBOXRUN_TEST_RUNSC=1 $(GO) test -tags integration -race -count=1 -timeout 20m -parallel $(INTEGRATION_PARALLEL) -run 'GVisor' ./integration/)

# Removes sandbox containers whose owner process is gone.
reap: build
	$(SANDBOXRUN) reap

clean:
	rm -rf $(BIN)
