# sandboxrun — build, images, tests.
#
#   make demo    build everything needed and run a real skill script in a sandbox
#   make test    unit tests, fuzz seed corpora and the Docker integration suite
#   make lint    go vet, gofmt and golangci-lint
#   make bench   sandboxrun vs `docker run` latency and throughput

GO            ?= go
BIN           := $(CURDIR)/bin
SANDBOXRUN    := $(BIN)/sandboxrun
INIT          := $(BIN)/sandbox-init
GOLANGCI_VER  := v2.15.0
GOLANGCI      := $(BIN)/golangci-lint-$(GOLANGCI_VER)
GO_SOURCES    := $(shell find . -name '*.go' -not -path './bin/*') go.mod go.sum Dockerfile.runner

.PHONY: all build images demo test unit integration lint fuzz bench clean reap runsc

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

demo: images
	$(SANDBOXRUN) run --skills skills data-analysis scripts/stats.py \
		--args '{"columns": ["price", "quantity"]}'

test: unit integration

unit:
	$(GO) test -race -count=1 ./...

integration: images
	$(GO) test -tags integration -race -count=1 -timeout 45m ./integration/ ./images/

lint: $(GOLANGCI)
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GOLANGCI) run ./...

$(GOLANGCI):
	@mkdir -p $(BIN)
	GOBIN=$(BIN)/.golangci $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VER)
	mv $(BIN)/.golangci/golangci-lint $@

# Runs each fuzz target for FUZZTIME (the seed corpora already run in `make unit`).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./skill/ -run '^$$' -fuzz FuzzParseFrontmatter -fuzztime $(FUZZTIME)
	$(GO) test ./policy/ -run '^$$' -fuzz FuzzParseAllowedTools -fuzztime $(FUZZTIME)
	$(GO) test ./policy/ -run '^$$' -fuzz FuzzCheckCommand -fuzztime $(FUZZTIME)
	$(GO) test ./policy/ -run '^$$' -fuzz FuzzApprove -fuzztime $(FUZZTIME)
	$(GO) test ./policy/ -run '^$$' -fuzz FuzzResolveScriptWords -fuzztime $(FUZZTIME)
	$(GO) test ./policy/ -run '^$$' -fuzz FuzzParsePolicy -fuzztime $(FUZZTIME)
	$(GO) test ./skill/ -run '^$$' -fuzz FuzzParseInlineMetadata -fuzztime $(FUZZTIME)
	$(GO) test ./sandbox/frame/ -run '^$$' -fuzz FuzzReader -fuzztime $(FUZZTIME)
	$(GO) test ./sandbox/frame/ -run '^$$' -fuzz FuzzRoundTrip -fuzztime $(FUZZTIME)

BENCH_N ?= 30
bench: images
	$(GO) run ./bench -n $(BENCH_N)
	N=$(BENCH_N) SANDBOXRUN=$(SANDBOXRUN) ./bench/workspace-write.sh

# Installs Debian's gVisor (runsc) and registers it with the Docker engine as
# the runtime "runsc" (for --oci-runtime runsc, or runtime: runsc in the
# policy). Needs root: it edits /etc/docker/daemon.json, adding
# runtimes.runsc and keeping the rest (a backup is left next to it), and
# reloads the engine with SIGHUP, which re-reads runtimes without a restart:
# running containers are untouched. It never restarts the engine.
runsc:
	command -v runsc >/dev/null || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q runsc)
	./tools/register-runsc.sh

# Removes sandbox containers whose owner process is gone.
reap: build
	$(SANDBOXRUN) reap

clean:
	rm -rf $(BIN)
