# agent-worker — run `make help` for the targets.

GO       ?= go
BIN      := bin
PLUGINS  := plugins.d
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILT    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
API      := github.com/agent-worker/agent-worker/host/api
LDFLAGS  := -X $(API).Version=$(VERSION) -X $(API).Commit=$(COMMIT) -X $(API).BuildTime=$(BUILT)
# Binaries are built as the release archives are (dist): without cgo. A
# cgo build links libc dynamically and confines a run's threads through
# libpsx's signals instead of the runtime's AllThreadsSyscall, which costs
# every run's plugin process about 2 ms more CPU (docs/performance.md).
# make run keeps its state beside the checkout unless told otherwise.
RUN_HOME ?= $(CURDIR)/.run-home
AW       := AGENT_WORKER_HOME=$(RUN_HOME) ./$(BIN)/agent-worker
# Per test binary: the host package takes about 3 minutes alone with the
# race detector and up to 7 beside the others on 2 cores, too close to go
# test's default of 10 for a loaded machine; cmd/agent-worker, the end-to-
# end tests, is the long one and ran past 20 minutes on a busy 2-core
# machine. A hung test still fails, and its daemons end with it.
TEST_TIMEOUT ?= 40m
# make test lists the tests slower than this at the end.
SLOW_TEST ?= 30s
# gotestsum (pinned in tools/go.mod) runs go test for make test: a line
# per package as it ends, failures in full, a summary at the end.
GOTESTSUM := $(GO) tool -modfile=$(CURDIR)/tools/go.mod gotestsum
# (TEST_FORMAT=standard-verbose shows every test's output, skip reasons
# included; the summary leaves out the skipped, which it only counts.)
TEST_FORMAT ?= pkgname-and-test-fails
# The main module's packages make test runs (e.g. TEST_PKGS=./workflow/...).
TEST_PKGS ?= ./...
# apt needs root: sudo unless make already runs as root.
SUDO     := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.DEFAULT_GOAL := all
.PHONY: all help build plugins run test test-e2e test-pg e2e-deps screenshot bench bench-go soak lint cross dist proto proto-check clean check-deps docs

all: build plugins ## build bin/agent-worker and every first-party plugin into plugins.d/

help: ## show this help
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/agent-worker
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/agent-worker ./cmd/agent-worker

plugins: ## build the first-party plugins into plugins.d/
	@for d in $(wildcard cmd/agent-worker-backend-* cmd/agent-worker-docs-*); do \
		echo "build $$d"; CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(PLUGINS)/$$(basename $$d) ./$$d || exit 1; \
	done

# What make run builds, as output:package: the CLI and the one plugin the
# example uses (its documents use the file provider built into the daemon).
RUN_BUILDS := $(BIN)/agent-worker:./cmd/agent-worker $(PLUGINS)/agent-worker-backend-mock:./cmd/agent-worker-backend-mock

run: ## build the CLI and the mock backend only, then run the code-review example team on them (daemon home: .run-home)
	@echo "make run builds the $(words $(RUN_BUILDS)) binaries the example needs; the first build takes a few minutes (it compiles their dependencies), later ones seconds."
	@n=0; for b in $(RUN_BUILDS); do n=$$((n+1)); \
		echo "[$$n/$(words $(RUN_BUILDS))] build $${b%%:*}"; \
		CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $${b%%:*} $${b#*:} || exit 1; \
	done
	@$(AW) run examples/code-review/review.yaml
	@echo
	@echo "The review is a real file: examples/code-review/.workflow/code-review/main/documents/notes.md"
	@echo "The daemon keeps running in the background (log: $(RUN_HOME)/logs/daemon.log)."
	@echo "Try: AGENT_WORKER_HOME=$(RUN_HOME) ./$(BIN)/agent-worker status"
	@echo "Watch and steer it in your browser: AGENT_WORKER_HOME=$(RUN_HOME) ./$(BIN)/agent-worker console"
	@echo "  (prints a one-time login link to the web console, valid 60 s, and opens it when there is a browser)"
	@echo "Stop it with: AGENT_WORKER_HOME=$(RUN_HOME) ./$(BIN)/agent-worker stop --all"

# E2E=1 also runs the end-to-end tests that need the pinned agent CLIs, the
# TypeScript MCP SDK, chromium and PostgreSQL (installed by e2e-deps); they
# skip, saying why, without it. CI runs the suite once, with E2E=1.
E2E_ON  = PATH="$(E2E_BIN):$$PATH" AGENT_WORKER_E2E_CLIS=1 AGENT_WORKER_E2E_NODE_MODULES=$(E2E_CACHE)/node_modules AGENT_WORKER_E2E_BROWSER=1 AGENT_WORKER_E2E_POSTGRES=1 AGENT_WORKER_E2E_JAEGER=$(JAEGER)
E2E_ENV = $(if $(filter 1,$(E2E)),$(E2E_ON))

# make test: the tests of the daemon's module, of the SDK's (sdk/ is a
# module of its own: the root's ./... does not include it) and of the
# example plugin's, each package's line as it ends, then the tests slower
# than SLOW_TEST; its exit status is the tests'.
test: ## run all tests, end-to-end ones included (race detector on), a line per package, the slowest tests at the end; E2E=1 adds those needing the real CLIs, chromium and PostgreSQL (make e2e-deps)
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && status=0 && \
	 echo "go test -race -count=1 -timeout $(TEST_TIMEOUT): a line per package as it ends; cmd/agent-worker (the end-to-end tests) takes longest" && \
	 { $(E2E_ENV) $(GOTESTSUM) --format $(TEST_FORMAT) --hide-summary=skipped --jsonfile "$$dir/main.json" -- -race -count=1 -timeout $(TEST_TIMEOUT) $(TEST_PKGS) || status=$$?; } && \
	 { (cd sdk && $(GOTESTSUM) --format $(TEST_FORMAT) --hide-summary=skipped --jsonfile "$$dir/sdk.json" -- -race -count=1 -timeout $(TEST_TIMEOUT) ./...) || status=$$?; } && \
	 { cd examples/backend-echo && $(GOTESTSUM) --format $(TEST_FORMAT) --hide-summary=skipped --jsonfile "$$dir/echo.json" -- -race -count=1 -timeout $(TEST_TIMEOUT) ./... || status=$$?; } && \
	 echo && echo "tests slower than $(SLOW_TEST):" && \
	 cat "$$dir/main.json" "$$dir/sdk.json" "$$dir/echo.json" | $(GOTESTSUM) tool slowest --threshold $(SLOW_TEST) && \
	 exit $$status

# The real agent CLIs, pinned, installed from npm into a cache outside the
# repository for the end-to-end tests (reference/real-clis.md).
E2E_CACHE           ?= $(HOME)/.cache/agent-worker-e2e
CLAUDE_CODE_VERSION := 2.1.197
CODEX_VERSION       := 0.169.0
# The official TypeScript MCP client, for the e2e tests that call our MCP
# server as an outside client does (the bench pins the same version).
TS_MCP_SDK_VERSION  := 1.32.2
# The ACP agents of the acp backend's e2e tests (docs/backends-and-plugins.md
# "ACP agents"): Gemini CLI in ACP mode and Zed's adapters of Claude Code
# and Codex.
GEMINI_CLI_VERSION  := 0.61.0
CLAUDE_ACP_VERSION  := 0.23.1
CODEX_ACP_VERSION   := 0.16.0
E2E_BIN             := $(E2E_CACHE)/node_modules/.bin
# Jaeger's all-in-one (v2: OTLP in, the query API out) for the traces e2e
# test, built once from its Go module into the same cache. Its go.mod has
# replace directives, so `go install` refuses it: it is built as the main
# module of a copy of its source.
JAEGER_VERSION      := v1.76.0
JAEGER              := $(E2E_CACHE)/bin/jaeger-$(JAEGER_VERSION)

e2e-deps: ## install the pinned claude, codex and gemini CLIs, the ACP adapters and the MCP SDK (cache outside the repo), build Jaeger's all-in-one there, Debian's chromium and postgresql when absent
	@if [ "$$($(E2E_BIN)/claude --version 2>/dev/null)" != "$(CLAUDE_CODE_VERSION) (Claude Code)" ] || \
	    [ "$$($(E2E_BIN)/codex --version 2>/dev/null)" != "codex-cli $(CODEX_VERSION)" ] || \
	    ! grep -qs '"version": "$(TS_MCP_SDK_VERSION)"' $(E2E_CACHE)/node_modules/@modelcontextprotocol/sdk/package.json || \
	    ! grep -qs '"version": "$(GEMINI_CLI_VERSION)"' $(E2E_CACHE)/node_modules/@google/gemini-cli/package.json || \
	    ! grep -qs '"version": "$(CLAUDE_ACP_VERSION)"' $(E2E_CACHE)/node_modules/@zed-industries/claude-agent-acp/package.json || \
	    ! grep -qs '"version": "$(CODEX_ACP_VERSION)"' $(E2E_CACHE)/node_modules/@zed-industries/codex-acp/package.json; then \
		mkdir -p $(E2E_CACHE) && echo "installing claude-code $(CLAUDE_CODE_VERSION), codex $(CODEX_VERSION), the MCP SDK $(TS_MCP_SDK_VERSION), gemini-cli $(GEMINI_CLI_VERSION), claude-agent-acp $(CLAUDE_ACP_VERSION) and codex-acp $(CODEX_ACP_VERSION) into $(E2E_CACHE)" && \
		npm install --prefix $(E2E_CACHE) --no-audit --no-fund --loglevel=error \
			@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION) @modelcontextprotocol/sdk@$(TS_MCP_SDK_VERSION) \
			@google/gemini-cli@$(GEMINI_CLI_VERSION) @zed-industries/claude-agent-acp@$(CLAUDE_ACP_VERSION) @zed-industries/codex-acp@$(CODEX_ACP_VERSION); \
	fi
	@test -x $(JAEGER) || { echo "building Jaeger $(JAEGER_VERSION) (all-in-one) into $(E2E_CACHE)/bin, once: a few minutes"; \
		dir=$$(cd /tmp && $(GO) mod download -json github.com/jaegertracing/jaeger@$(JAEGER_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
		src=$$(mktemp -d) && cp -r "$$dir/." "$$src" && chmod -R u+w "$$src" && mkdir -p $(E2E_CACHE)/bin && \
		(cd "$$src" && GOFLAGS=-mod=mod $(GO) build -o $(JAEGER) ./cmd/jaeger); status=$$?; rm -rf "$$src"; exit $$status; }
	@command -v chromium >/dev/null || { echo "installing Debian's chromium for the console's browser test"; \
		$(SUDO) apt-get update -q >/dev/null && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "installing Debian's postgresql for the store's PostgreSQL tests (store/pgtest)"; \
		$(SUDO) apt-get update -q >/dev/null && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null; }

test-pg: ## the store's suite on PostgreSQL (make e2e-deps)
	AGENT_WORKER_E2E_POSTGRES=1 AGENT_WORKER_TEST_STORE=postgres $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./store/...

test-e2e: e2e-deps ## the end-to-end tests with the real CLIs, chromium and PostgreSQL, the postgres documents provider's tests and the store's suite on PostgreSQL
	$(E2E_ON) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -run 'E2E' ./cmd/... ./plugins/...
	$(E2E_ON) $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./docs-provider/postgres/... ./cmd/agent-worker-docs-postgres/... ./host/docs/...
	$(MAKE) test-pg

screenshot: ## run the dev-team example on mock backends, open its team page in chromium and save it to docs/console.png (the README's picture)
	AGENT_WORKER_E2E_BROWSER=1 AGENT_WORKER_SCREENSHOT=$(CURDIR)/docs/console.png $(GO) test -count=1 -run 'TestE2EConsoleScreenshot$$' ./cmd/agent-worker

# A checkout of the TypeScript system the bench runs beside ours when it is
# there (docs/performance.md says how to make one); never in this repository.
BENCH_COMPARE ?= $(HOME)/.cache/agent-worker-bench/moniro

bench: build plugins ## a real daemon beside its ceilings (raw SQLite, the bare MCP SDK) and the TypeScript system (when BENCH_COMPARE is a checkout), then a PostgreSQL cluster of 1-3 daemons beside the embedded store; both tables also written to docs/performance.md, the main one to the README too
	CGO_ENABLED=0 $(GO) build -o $(BIN)/agent-worker-bench ./internal/cmd/agent-worker-bench
	./$(BIN)/agent-worker-bench -bin $(BIN)/agent-worker -plugins $(PLUGINS) -doc docs/performance.md,README.md \
		$(if $(wildcard $(BENCH_COMPARE)/packages/agent-worker/package.json),-compare $(BENCH_COMPARE))

bench-go: ## the Go micro-benchmarks (go test -bench) of the store, the MCP server and runs, and of the SDK's module
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...
	cd sdk && $(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...

soak: ## 20,000 MCP calls + 200 runs against a real daemon; fails if its fds or memory grow
	AGENT_WORKER_SOAK=1 $(GO) test -count=1 -run 'TestE2ESoak' -v -timeout 60m ./cmd/agent-worker

# Crash and outage scenarios against real daemons (internal/cmd/agent-worker-chaos);
# CHAOS_FLAGS passes more, e.g. -seed N to repeat a run's kill moments.
.PHONY: chaos
chaos: build plugins ## kill -9 daemons and stop PostgreSQL under load (about 3 min); prints lost, duplicated and stuck, fails on any
	$(GO) build -o $(BIN)/agent-worker-chaos ./internal/cmd/agent-worker-chaos
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null || \
		echo "no PostgreSQL server binaries: only sqlite-kill runs; install Debian's postgresql ($(SUDO) apt-get install postgresql) for pg-outage and pg-kill"
	./$(BIN)/agent-worker-chaos -bin $(BIN)/agent-worker -plugins $(PLUGINS) $(CHAOS_FLAGS)

# The native Go fuzz targets (go test -fuzz), as package:target: go test
# fuzzes one target per run, so they run one after another, FUZZTIME each.
# Their seed corpora (testdata/fuzz/) run as ordinary tests in make test.
# New inputs are minimized for at most 1s, not go's 60, which would eat the
# budget; a crasher is written to the package's testdata/fuzz/ and stops it.
# Go 1.26's coordinator may end a clean run with "context deadline exceeded"
# and no failing input (golang/go#75804): that is not a crash.
FUZZTIME ?= 20s
FUZZ_TARGETS := ./host/api:FuzzParseTarget ./host/team:FuzzMentions ./host/mcpserver:FuzzDecodeArgs \
	./workflow:FuzzParse ./workflow:FuzzInterpolate ./workflow:FuzzRenderTrigger ./workflow:FuzzSandbox \
	./plugins/mock:FuzzScript ./plugins/mock:FuzzYAMLScript

.PHONY: fuzz
fuzz: ## run each fuzz target for FUZZTIME (default 20s), one after another; stops at the first crash
	@log=$$(mktemp) && trap 'rm -f "$$log"' EXIT && for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; echo "fuzz $$fn in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s $$pkg 2>&1 | tee "$$log"; \
		grep -q '^ok' "$$log" && continue; \
		if grep -q 'context deadline exceeded' "$$log" && ! grep -q 'Failing input written' "$$log"; then \
			echo "(no failing input: go's own deadline race, golang/go#75804, not a crash)"; continue; \
		fi; \
		exit 1; \
	done

lint: check-deps cross ## gofmt, go vet of both modules (here and for macOS) and the dependency checks
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd sdk && $(GO) vet ./...
	@for d in cmd/agent-worker $(wildcard cmd/agent-worker-backend-* cmd/agent-worker-docs-*); do \
		grep -q "main: ./$$d$$" .goreleaser.yaml || { echo ".goreleaser.yaml has no build of $$d (make dist has)"; exit 1; }; \
	done

# The systems a release is built for (docs/platforms.md). cross vets the
# others than Linux: vet type-checks every package with its tests, so a
# Linux-only call outside a _linux.go file fails here, not on a Mac.
CROSS     := darwin/amd64 darwin/arm64
PLATFORMS := linux/amd64 linux/arm64 $(CROSS)

cross: ## go vet every package of both modules, tests included, for macOS on amd64 and arm64
	@for p in $(CROSS); do \
		echo "GOOS=$${p%/*} GOARCH=$${p#*/} go vet ./... (and in sdk/)"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./... || exit 1; \
		(cd sdk && GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) vet ./...) || exit 1; \
	done

# make dist: one archive per platform, agent-worker_<version>_<os>_<arch>.tar.gz,
# holding one folder with the CLI, every first-party plugin beside it (the
# daemon finds them there), README.md and LICENSE; and dist/SHA256SUMS.
# Pure Go (CGO off, SQLite is modernc's), -trimpath, stripped.
# .goreleaser.yaml describes the same release for a pushed tag.
DIST         := dist
DIST_VERSION  = $(patsubst v%,%,$(VERSION))
DIST_CMDS    := ./cmd/agent-worker $(addprefix ./,$(wildcard cmd/agent-worker-backend-* cmd/agent-worker-docs-*))
SHA256SUM    := $(shell command -v sha256sum >/dev/null 2>&1 && echo sha256sum || echo 'shasum -a 256')

dist: ## release archives for linux and darwin on amd64 and arm64 in dist/, with SHA256SUMS (checked)
	rm -rf $(DIST) && mkdir -p $(DIST)
	@for p in $(PLATFORMS); do \
		name=agent-worker_$(DIST_VERSION)_$${p%/*}_$${p#*/}; echo "build $(DIST)/$$name.tar.gz"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' \
			-o $(DIST)/$$name/ $(DIST_CMDS) || exit 1; \
		cp README.md LICENSE $(DIST)/$$name/ && \
		tar -C $(DIST) -czf $(DIST)/$$name.tar.gz $$name && rm -rf $(DIST)/$$name || exit 1; \
	done
	cd $(DIST) && $(SHA256SUM) *.tar.gz > SHA256SUMS && $(SHA256SUM) -c SHA256SUMS

# modernc.org/libc must be exactly the version modernc.org/sqlite asks for
# (reference/go-libraries.md §3); a blind `go get -u` breaks the database.
check-deps:
	@want=$$($(GO) mod graph | awk '$$1 ~ /^modernc.org\/sqlite@/ && $$2 ~ /^modernc.org\/libc@/ {print $$2; exit}'); \
	 have=modernc.org/libc@$$($(GO) list -m -f '{{.Version}}' modernc.org/libc); \
	 if [ "$$want" != "$$have" ]; then echo "modernc.org/libc is $$have but modernc.org/sqlite needs $$want"; exit 1; fi

# buf is pinned in tools/go.mod (kept apart: its module graph is large); the
# protoc plugins are `tool` directives in go.mod. The first run builds buf.
BUF := $(GO) tool -modfile=tools/go.mod buf

proto: ## lint proto/ and regenerate sdk/wire/pluginv1 with the pinned tools
	$(BUF) lint
	$(BUF) generate

proto-check: ## fail if the committed generated code differs from proto/
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	 $(BUF) lint && $(BUF) generate -o "$$tmp" && \
	 if ! diff -r -x doc.go "$$tmp/sdk/wire/pluginv1" sdk/wire/pluginv1; then \
		echo "sdk/wire/pluginv1 is stale: run make proto"; exit 1; \
	 fi

# docs/cli.md is generated from the command tree; a test (TestCLIDocIsCurrent,
# in make test) fails when it is stale.
docs: ## regenerate the CLI reference docs/cli.md from the command tree
	@tmp=$$(mktemp) && trap 'rm -f "$$tmp"' EXIT && \
	 $(GO) run ./cmd/agent-worker __docs > "$$tmp" && cp "$$tmp" docs/cli.md && echo "wrote docs/cli.md"

clean: ## remove build output and make-run state
	rm -rf $(BIN) $(DIST) $(RUN_HOME)
	find $(PLUGINS) -maxdepth 1 -type f -name 'agent-worker-*' -delete
