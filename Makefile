# convexnn: two commands on a fresh Debian/Ubuntu machine with Go, git, apt and npm:
#   make notebooks   set up, then execute every notebook headless (small size) into out/notebooks/
#   make test        set up, then run every test
# Also: make jupyter (notebook server on 127.0.0.1 with the "Go (convexnn)" kernel), make setup,
#   make reproduce (every table and figure of the paper at its size, into out/), make bench
#   (side by side against cvxopt and PyTorch, into out/bench/).
SHELL := /bin/bash
REPO  := $(CURDIR)
export JUPYTER_PATH := $(REPO)/.cache/jupyter
export CONVEXNN_ASSETS := $(REPO)/.cache/assets
# Data sets: the project's shared folder when it is beside the checkout
# (tests and CI), otherwise the download cache.
SHARED_DATA := $(abspath $(wildcard $(REPO)/../shared/data))
export CONVEXNN_DATA ?= $(SHARED_DATA)

# Build tags chosen by set-up: "openblas" when libopenblas-dev is present.
TAGS = $(shell cat .cache/buildtags 2>/dev/null)
export OPENBLAS_CORETYPE ?= $(shell cat .cache/openblas-coretype 2>/dev/null)

.PHONY: setup notebooks test jupyter lint clean reproduce bench
setup:
	@bash build/setup.sh

bin/convexnn: setup
	@go build -tags "$(TAGS)" -o bin/convexnn ./cmd/convexnn

notebooks: bin/convexnn
	bin/convexnn notebooks -out out/notebooks -size $${SIZE:-small}

lint: setup
	@fmt=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$fmt" ]; then echo "gofmt needed on: $$fmt"; exit 1; fi
	go vet ./...
	@# Again with the build tags, for the packages with files behind them.
	@tagged=$$(git grep -l -E '^//go:build .*\b(openblas)\b' -- '*.go' | xargs -r -n1 dirname | sort -u | sed 's|^|./|'); \
	if [ -n "$(TAGS)" ] && [ -n "$$tagged" ]; then echo go vet -tags "$(TAGS)" $$tagged; go vet -tags "$(TAGS)" $$tagged; fi

# Every test: unit tests with the race detector, with the real-notebook and
# real-browser tests (which must not skip: CONVEXNN_REQUIRE_E2E=1); beside
# them, the numerical packages (and data's loaders) again without the race
# detector and with gonum's pure-Go BLAS: the slowest checks run in full only
# there (under -race they run a subset or skip: testenv.Race and
# testenv.SkipUnderRace; build/racefree_test.go checks that PUREGO holds
# every package whose tests do so). The numerical
# packages that start no goroutine (RACE_FREE: checked by
# build/racefree_test.go) run only there: the race detector has nothing
# to find in them and made them the race run's longest minutes. The two
# runs go side by side (the notebooks' run is the long one and leaves a
# core idle much of the time); the second's output follows the first's, and
# the target fails if either does.
RACE_FREE := solvers/certify solvers/scp solvers/general solvers/cnn solvers/backprop solvers/batchnorm solvers/twohidden solvers/gated solvers/netfile
# Both runs start their longest packages first (go test runs packages in
# the order given, two at a time): the notebooks' run, which waits on
# kernels and browsers much of its ten minutes, no longer starts last.
RACE_FIRST := notebooks cvx plots paper
PUREGO_FIRST := ./solvers/certify/ ./solvers/admm/ ./paper/
PUREGO := $(PUREGO_FIRST) ./solvers/... ./cvx/ ./paper/ ./cmd/... ./data/
# One OpenBLAS (and OpenMP: PyTorch's, in the bench tests) thread per
# process: the two runs keep four test binaries, notebook kernels and
# browsers busy on two cores, where these threads wait for each other by
# spinning (sched_yield: system time).
# Test binaries without DWARF (their stack traces keep file and line): about
# 1 s less CPU in each of the ~45 links.
TESTLD := -ldflags=-w
test: export OPENBLAS_NUM_THREADS = 1
test: export OMP_NUM_THREADS = 1
test: lint
	@mkdir -p out; \
	( go test -count=1 -timeout 30m $(TESTLD) $(PUREGO) > out/test-purego.log 2>&1; echo $$? > out/test-purego.rc ) & \
	race_pkgs="$(addprefix github.com/convexnn/convexnn/,$(RACE_FIRST)) $$(go list ./... | grep -v -x -F $(foreach p,$(RACE_FREE) $(RACE_FIRST),-e github.com/convexnn/convexnn/$(p)))"; \
	echo 'CONVEXNN_REQUIRE_E2E=1 CONVEXNN_REQUIRE_BROWSER=1 go test -race -count=1 -timeout 30m $(TESTLD) -tags "$(TAGS)" (every package but $(RACE_FREE))'; \
	CONVEXNN_REQUIRE_E2E=1 CONVEXNN_REQUIRE_BROWSER=1 go test -race -count=1 -timeout 30m $(TESTLD) -tags "$(TAGS)" $$race_pkgs; race=$$?; \
	wait; \
	echo "numerical checks without the race detector, pure-Go BLAS (run beside the above):"; \
	echo "go test -count=1 -timeout 30m $(TESTLD) $(PUREGO)"; \
	cat out/test-purego.log; \
	test $$race -eq 0 && test "$$(cat out/test-purego.rc)" -eq 0

reproduce: bin/convexnn
	bin/convexnn reproduce all

bench: bin/convexnn
	bin/convexnn bench all

jupyter: setup
	jupyter notebook --ip=127.0.0.1 --no-browser --notebook-dir=notebooks $$([ "$$(id -u)" = 0 ] && echo --allow-root)

clean:
	rm -rf out bin .cache
