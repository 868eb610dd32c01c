# pallasgw — see README.md. Every target works on a fresh clone.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
CONFIG    ?= configs/quickstart.yaml
# make run LISTEN=127.0.0.1:8300 ALIAS_PORT_OFFSET=100 (or NO_ALIAS_PORTS=1):
# another main port, and the legacy alias ports moved (or off) with it.
LISTEN            ?=
ALIAS_PORT_OFFSET ?=
NO_ALIAS_PORTS    ?=
E2E_TOOLS ?= $(CURDIR)/.tools

.PHONY: run build test vet lint deadcode e2e bench soak fuzz clean replicas replicas-stop

# run builds the binary build does (same flags, so one build cache serves
# both: `go run` without -trimpath compiled everything a second time), then
# runs it.
run: build ## run the gateway on the quickstart config (no API key needed)
	./bin/pallasgw serve --config $(CONFIG) --log-format console$(if $(LISTEN), --listen $(LISTEN))$(if $(ALIAS_PORT_OFFSET), --alias-port-offset $(ALIAS_PORT_OFFSET))$(if $(NO_ALIAS_PORTS), --no-alias-ports)

# replicas: three replicas of bin/pallasgw on one config (--listen per
# replica), redis-server as their shared store, nginx on the shipped site
# file rendered into .run/replicas/ (port 8300, no root); Ctrl-C stops them.
replicas: build ## 3 replicas behind nginx with redis-server, on 127.0.0.1:8300 (docs/deployment.md, Scaling out)
	configs/replicas/replicas.sh

replicas-stop: ## stop what make replicas started
	configs/replicas/replicas.sh stop

build: ## static binary in bin/
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/pallasgw ./cmd/pallasgw

test: ## unit and integration tests, race detector on
	$(GO) test -race -count=1 -timeout 12m ./...

vet:
	$(GO) vet ./...

lint: vet ## gofmt + vet (+ staticcheck when installed)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@if command -v staticcheck >/dev/null; then staticcheck ./...; else echo "staticcheck not installed; skipped"; fi

# deadcode: functions no path from a main package reaches, in production
# code (test helpers under test/ and agents/internal/agenttest are not).
# The tool is pinned in its own module (test/tools/deadcode), as hydra and
# jaeger are, so golang.org/x/tools stays out of the gateway's go.mod.
deadcode: ## fail on unreachable production functions (golang.org/x/tools deadcode)
	@out=$$($(GO) tool -modfile=test/tools/deadcode/go.mod deadcode ./...) || exit 1; \
	out=$$(echo "$$out" | grep -v -e '^test/' -e '^agents/internal/agenttest/' -e '/testdata/'); \
	if [ -n "$$out" ]; then echo "unreachable production code:"; echo "$$out"; exit 1; fi

e2e: ## end-to-end tests against real programs (npm, nginx, caddy, prometheus); see test/e2e/README
	PALLASGW_E2E_TOOLS=$(E2E_TOOLS) $(GO) test -race -count=1 -timeout 20m -tags e2e ./test/e2e/...
	PALLASGW_EVERYTHING_SERVER=$(E2E_TOOLS)/node_modules/@modelcontextprotocol/server-everything/dist/index.js \
	  $(GO) test -race -count=1 -run TestEverythingInterop ./agents/mcpclient/
	$(GO) test -race -count=1 -run 'TestSessionStore' ./test/integration/ # the shared session store, on redis-server (make test skips them without it)

bench: ## benchmarks; figures are printed as ratios against the direct path
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2000x -v ./test/bench/... # -v: each benchmark's whole table
	$(GO) test -run '^$$' -bench JWTVerify -benchtime 2s ./policy/ # a micro-benchmark: timed, not counted
	$(GO) test -run '^$$' -bench Allow -benchtime 2s ./policy/quota/ # quota checks: memory, and Redis when redis-server is installed
	$(GO) test -run '^$$' -bench . -benchtime 2s ./agents/toolsearch/ # search_tools over 1,000 tools (p50-µs; target 2 ms)
	$(GO) test -run '^$$' -bench Authorization -benchtime 2s ./gateway/upstreamauth/ # a connected caller's own token: what it adds per call

soak: ## bounded soak (10 minutes): calls, reloads and faults; not run by CI
	PALLASGW_SOAK=10m $(GO) test -race -count=1 -v -timeout 20m -run TestSoak ./test/soak/...

fuzz: ## each native fuzz target for 30s
	$(GO) test -run XXX -fuzz FuzzCompose -fuzztime 30s ./policy/
	$(GO) test -run XXX -fuzz FuzzSanitizeValue -fuzztime 30s ./policy/
	$(GO) test -run XXX -fuzz FuzzOpenAIStream -fuzztime 30s ./agents/llm/
	$(GO) test -run XXX -fuzz FuzzAnthropicStream -fuzztime 30s ./agents/llm/
	$(GO) test -run XXX -fuzz FuzzOpenAIBody -fuzztime 30s ./agents/llm/
	$(GO) test -run XXX -fuzz FuzzLoad -fuzztime 30s ./gateway/config/
	$(GO) test -run XXX -fuzz FuzzParseTurn -fuzztime 30s ./agents/

clean:
	rm -rf bin
