# offloader: build, test against a real Kafka broker and Azurite, demo, benchmark.
# Targets that need the services start them (scripts/with-services.sh) and stop
# them afterwards, also when the tests fail.

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# The Dockerfile builds with `make build` too.
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BUILDFLAGS := -trimpath -ldflags "$(LDFLAGS)"
# The package timeout is a last resort, far above the integration
# package's 11-13 minutes: when it fires Go panics and every running test
# reports "(unknown)".
TESTFLAGS ?= -count=1 -timeout 45m -parallel 4
# gotestsum renders go test's JSON as it comes: a line per test with its
# result and time, then the totals; it exits as go test does.
GOTESTSUM ?= $(GO) run gotest.tools/gotestsum@v1.13.0

.PHONY: build demo bench bench-release test test-busy java-deps unit integration fuzz cover vet fmt-check services-start services-stop services-status docker clean

build:
	CGO_ENABLED=1 $(GO) build $(BUILDFLAGS) -o bin/offloader ./cmd/offloader

## demo: the pipeline on an in-process broker with a report; BOOTSTRAP=host:port
## runs it against a real cluster instead.
## bin/offloader-demo is offloader with the in-process broker linked in (the
## demo build tag); bin/offloader, the daemon, links only librdkafka's client
## (built too: the getting-started guide goes on with it).
demo: build
	CGO_ENABLED=1 $(GO) build $(BUILDFLAGS) -tags demo -o bin/offloader-demo ./cmd/offloader
	bin/offloader-demo demo $(if $(BOOTSTRAP),--brokers $(BOOTSTRAP)) $(DEMO_FLAGS)

## bench: the engine's own work per record and the offload path's CPU per GB
## (in process), then throughput of
## the pipeline beside a plain copy loop on the real local broker, beside the
## raw stores and beside Kafka Streams with bakdata's serde, and the daemon's
## peak RSS (docs/benchmarks.md has figures).
bench:
	$(GO) test -run '^$$' -bench PerRecord -benchtime 10x ./pipeline/engine/
	$(GO) test -run '^$$' -bench OffloadPath -benchtime 2s ./transforms/
	scripts/with-services.sh $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./integration/
	@if [ -n "$(RELEASE)" ] || git describe --tags --abbrev=0 --match 'v*' HEAD >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory bench-release; \
	else echo "bench-release skipped: no release tag (v*) to compare with; make bench-release RELEASE=<rev> names one"; fi

## bench-release: the release guard. Builds RELEASE (default: the newest
## release tag; any tag or commit) into .cache/release and runs it and this
## tree alternately on the same broker, records and stores, quiet and beside
## busy processes (docs/benchmarks.md, "The release guard"). RELEASE_ROUNDS
## rounds per workload (4), RELEASE_LOAD quiet, busy or quiet,busy,
## RELEASE_BENCH a -bench pattern to pick workloads.
RELEASE        ?=
RELEASE_ROUNDS ?= 4
RELEASE_LOAD   ?= quiet,busy
RELEASE_BENCH  ?= Release
bench-release:
	@bin=$$(scripts/release-build.sh $(RELEASE)) && \
	RELEASE_GUARD_BINARY=$$bin RELEASE_GUARD_ROUNDS=$(RELEASE_ROUNDS) RELEASE_GUARD_LOAD=$(RELEASE_LOAD) \
	  scripts/with-services.sh $(GO) test -run '^$$' -bench '$(RELEASE_BENCH)' -benchtime 1x -timeout 240m ./integration/

## test: vet, format check, unit and integration tests with real Kafka (a
## single broker, and a 3-node cluster for the cluster tests) + Azurite
## (a line per test with its time), then the coverage of the packages tested
## without the services (cover), then each fuzz target for 10,000 inputs.
## Whatever fails, all of it runs, and the summary at the end gives the
## totals, each failed test with its first failure line, the ten slowest
## tests and what failed after them; the exit status is the first failure's.
## On a loaded machine the tests wait longer (TEST_SLOWDOWN, from
## the load unless set: internal/slowdown).
test: vet fmt-check java-deps
	@mkdir -p .cache
	@rc=0; \
	WITH_SERVICES="kafka azurite s3 cluster" scripts/with-services.sh $(GOTESTSUM) --format testname --jsonfile .cache/test-report.json -- $(TESTFLAGS) ./... ./integration/... || rc=$$?; \
	cover=ok; $(MAKE) --no-print-directory cover || { cover=FAILED; [ $$rc -ne 0 ] || rc=1; }; \
	fuzz=ok; $(MAKE) --no-print-directory fuzz FUZZTIME=10000x || { fuzz=FAILED; [ $$rc -ne 0 ] || rc=1; }; \
	echo; python3 scripts/test-summary.py .cache/test-report.json; \
	echo "coverage: $$cover; fuzz: $$fuzz"; \
	exit $$rc

## test-busy: make test beside CPU-bound load, 3 busy processes per core at
## normal priority, for the whole run: the suite must pass on a busy
## machine (a shared CI runner, a laptop doing other work) as on a quiet one.
test-busy:
	@n=$$(( 3 * $$(nproc) )); echo "test-busy: $$n busy processes beside make test"; \
	pids=""; for i in $$(seq $$n); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	start=$$(date +%s); rc=0; $(MAKE) --no-print-directory test || rc=$$?; \
	echo "test-busy: make test ended with $$rc after $$(( $$(date +%s) - start )) s beside $$n busy processes"; \
	exit $$rc

## java-deps: fetch what clients/java builds and tests with (Maven Central),
## before the tests' clocks run; the integration suite builds it with mvn
## verify (its JUnit tests) and runs the interoperability tests on it.
java-deps:
	@echo "java-deps: resolving what clients/java builds and tests with (the first run fetches it: a few minutes)"
	mvn -B -q -Dstyle.color=never -f clients/java/pom.xml dependency:go-offline

# Packages tested without the services (on fakes, the in-process broker or
# an answerer of the store's protocol), each with the statement coverage it
# must keep (PACKAGE:PERCENT).
COVER_PKGS := ./pipeline/engine:90 ./dlt:90 ./daemon:80 ./gc:80 ./migration:80 ./limits:80 ./stores/s3:80 ./stores/azblob:80

## cover: the statement coverage of COVER_PKGS, each checked against its
## minimum.
cover:
	@out=$$($(GO) test -count=1 -cover $(foreach p,$(COVER_PKGS),$(firstword $(subst :, ,$(p))))) || { echo "$$out"; exit 1; }; \
	echo "$$out"; \
	echo "$$out" | awk -v mins="$(COVER_PKGS)" 'BEGIN { n = split(mins, m, " "); for (i = 1; i <= n; i++) { split(m[i], kv, ":"); sub("^\\./", "", kv[1]); min[kv[1]] = kv[2] } } \
	  /coverage:/ { pkg = $$2; sub("^github.com/offloader/offloader/", "", pkg); c = $$5; sub("%", "", c); \
	  if (c + 0 < min[pkg]) { print "coverage of " pkg " is " c "%, under the " min[pkg] "% it must keep"; bad = 1 } } END { exit bad }'

# Fuzz targets and their packages; their seeds (the hostile inputs found so
# far) are in each package's testdata/fuzz and run with every go test.
# make test gives each target a count of inputs, not a duration: on Go 1.26 a
# -fuzztime duration can end in a bare "context deadline exceeded" failure with
# no failing input written, a race in the fuzz coordinator when the deadline
# falls during a worker's call on a loaded machine (golang/go#75804, fixed in
# Go 1.27). A count has no deadline to race.
FUZZ_TARGETS := FuzzDecode:./pointer FuzzResolve:./resolver FuzzAdmit:./dlt FuzzLoad:./config
FUZZTIME ?= 2m

## fuzz: each fuzz target for FUZZTIME (default 2m, or a count such as
## 1000000x); a failing input is written to the package's testdata/fuzz.
fuzz:
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz: $${t%%:*} in $${t#*:} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:} || exit 1; \
	done

## unit: the tests that need no broker and no store emulator.
unit:
	$(GO) test $(TESTFLAGS) ./...

integration:
	WITH_SERVICES="kafka azurite s3 cluster" scripts/with-services.sh $(GO) test $(TESTFLAGS) ./integration/...

# integration/ is a module of its own (go.work joins the two): its Kubernetes,
# kustomize and PromQL modules stay out of the daemon's go.mod. ./... is the
# daemon's module; ./integration/... the suite.
vet:
	$(GO) vet ./... ./integration/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

services-start:
	scripts/services.sh start all
	@scripts/services.sh env

services-stop:
	scripts/services.sh stop all
	scripts/services.sh stop cluster

services-status:
	scripts/services.sh status

# IMAGE is the reference the manifests name: see deploy/overlays/*/kustomization.yaml.
IMAGE     ?= offloader:$(VERSION)

docker:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) .

clean:
	rm -rf bin demo-data
	scripts/services.sh wipe all
