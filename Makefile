# The one entry point. CI calls these targets only.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
CLUSTER ?= local
RUN_DIR ?= run
TOOLS ?=
PYTEST_ARGS ?=
# Kueue version of the embedded cluster for e2e (v0.17.1, v0.18.2, v0.19.2; empty: each
# scenario's kueue:, else v0.19.2). `make binaries` builds every one of them.
KUEUE_VERSION ?=
# What e2e runs (suite folders or files).
E2E_PATHS ?= suites

.PHONY: all venv binaries test own-tests version-tests durations unit e2e examples e2e-twice bench docs-img lint fmt typecheck tools clean

all: test

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

venv: $(VENV)/.installed

## binaries: build (or reuse) the pinned upstream binaries and the in-process Kueue (the sim),
## with progress, for every Kueue version the suites run (v0.19.2 first; each version's Kueue
## before its sim, which reuses its compiled packages): ahead of the tests, so no test worker
## waits minutes for a build while its queue of scenarios waits behind it
binaries: venv
	$(PY) -m harness build binaries sim --kueue-version all

## test: the gate (what CI runs): own-tests, then every suite on the embedded cluster, once
## (e2e with E2E_WORKERS clusters). Each pass prints its 10 slowest items (scenarios with
## where their time went) and records every item's duration in $(RUN_DIR)/durations-*.json.
test: own-tests
	$(MAKE) --no-print-directory e2e CLUSTER=local RUN_DIR=$(RUN_DIR)

## own-tests: the unit tests, every suite on the fit model and on in-process Kueue (sim), the
## examples, and the harness's own cluster tests (lifecycle, signals, live cluster, fixtures).
## Builds (or reuses) the binaries and the CLI tools the tests drive (kind, helm, kubectl,
## kueuectl, actionlint), so only the tests that need Docker are skipped. The tests that need another
## Kueue version built are `make version-tests` (GitHub's version-matrix job runs them).
## OWN_WORKERS pytest-xdist workers share them: most of the cluster tests wait on Kueue's and
## Kubernetes' timers, and each starts clusters of its own (own run dirs and loopback ports).
OWN_WORKERS ?= 3
own-tests: binaries tools
	mkdir -p $(RUN_DIR)
	$(PY) -m pytest tests suites examples --cluster=sim --cluster-tests -m "not kueue_versions" \
		-n $(OWN_WORKERS) --durations=10 --junitxml=$(RUN_DIR)/junit-test.xml \
		--kth-report=$(RUN_DIR)/report-test.html --store-durations=$(RUN_DIR)/durations-test.json \
		$(PYTEST_ARGS)

## version-tests: the cluster tests that run Kueue v0.18.2 beside v0.19.2 (version start,
## upgrade), after building v0.18.2 (~9 min on 2 cores the first time)
version-tests: binaries
	mkdir -p $(RUN_DIR)
	$(PY) -m harness build binaries sim --kueue-version v0.18.2
	$(PY) -m pytest tests -m kueue_versions --cluster-tests --junitxml=$(RUN_DIR)/junit-versions.xml \
		$(PYTEST_ARGS)

## unit: tests that need neither Go builds nor a cluster, and every suite on the fit model
unit: venv
	mkdir -p $(RUN_DIR)
	$(PY) -m pytest tests suites -m "not cluster and not sim" --junitxml=$(RUN_DIR)/junit-unit.xml \
		$(PYTEST_ARGS)

# pytest-xdist workers for e2e, each with an embedded cluster of its own (-n; 0 = serial, in
# one process). auto on local: as many clusters as the record of each scenario's wall and CPU
# seconds (bench/durations/e2e.json, e2e-cpu.json; `make durations` keeps it) says the cores
# can feed: scenarios that mostly wait on Kueue's and Kubernetes' timers run on clusters of
# their own beside the busy ones (harness/plugin/worker_classes.py); without a CPU record, one
# per core. kind and existing have one cluster: serial.
E2E_WORKERS ?= $(if $(filter local,$(CLUSTER)),auto,0)
WORKER_RECORD ?= bench/durations/e2e.json

## e2e: every scenario suite on a real cluster (CLUSTER=local|kind|existing|sim;
## KUEUE_VERSION=v0.18.2 runs the embedded cluster's Kueue at that version, built first;
## E2E_WORKERS=N runs N pytest-xdist workers, each with its own embedded cluster, 0 serial)
e2e: binaries
	mkdir -p $(RUN_DIR)
	$(if $(KUEUE_VERSION),$(PY) -m harness build binaries --kueue-version $(KUEUE_VERSION))
	$(PY) -m pytest $(E2E_PATHS) --cluster=$(CLUSTER) -n $(E2E_WORKERS) --durations=10 \
		--junitxml=$(RUN_DIR)/junit-e2e.xml --store-durations=$(RUN_DIR)/durations-e2e.json \
		--kth-report=$(RUN_DIR)/report.html $(if $(KUEUE_VERSION),--kueue-version=$(KUEUE_VERSION)) \
		$(if $(filter auto,$(E2E_WORKERS)),--worker-record=$(WORKER_RECORD)) $(PYTEST_ARGS)

## examples: the example Python tests (examples/, docs/python-tests.md) on CLUSTER=local|kind|existing
examples: binaries
	mkdir -p $(RUN_DIR)
	$(PY) -m pytest examples --cluster=$(CLUSTER) --junitxml=$(RUN_DIR)/junit-examples.xml $(PYTEST_ARGS)

## e2e-twice: `make e2e` twice in a row, proving nothing is left behind before, between and after
e2e-twice: binaries
	$(PY) -m harness leftovers
	$(MAKE) e2e RUN_DIR=$(RUN_DIR)/first
	$(PY) -m harness leftovers
	$(MAKE) e2e RUN_DIR=$(RUN_DIR)/second
	$(PY) -m harness leftovers

## durations: after `make test`, keep its per-item durations (and the scenarios' CPU seconds)
## in bench/durations/ (e2e.json is the record GitHub's e2e shards balance by, e2e-cpu.json
## sizes the worker classes) and print where each suite folder's time went
durations: venv
	$(PY) bench/durations.py $(RUN_DIR)/durations-test.json $(RUN_DIR)/durations-e2e.json
	$(PY) bench/suite_time.py

## bench: speed figures, printed as numbers (BENCH_CLUSTER_ARGS="--sample 30" for a quick one)
BENCH_CLUSTER_ARGS ?= --all --big
bench: binaries
	$(PY) bench/oracle.py
	$(PY) bench/fuzz.py
	$(PY) bench/cluster.py $(BENCH_CLUSTER_ARGS)
	$(PY) bench/cluster.py --workers 0,2,3

## docs-img: the pictures in docs/ made by the harness itself (SVG text, no binaries):
## docs/replay.md's worked --compare as a timeline
docs-img: venv
	mkdir -p docs/img
	$(PY) -m harness replay suites/streams/guide-day.jsonl --world suites/guide/guide-required-host.yaml \
		--compare examples/streams/guide-plus-one-host.yaml --format svg > docs/img/replay-compare-timeline.svg

lint: venv
	$(VENV)/bin/ruff check harness tests bench
	$(VENV)/bin/ruff format --check harness tests bench
	$(VENV)/bin/lint-imports
	@if AL=$$($(PY) -m harness.toolchain.tools which actionlint); then $$AL; else echo "actionlint not built (make tools TOOLS=actionlint): skipped"; fi

## tools: build (or reuse) kind, helm, kubectl, kueuectl and actionlint from their Go modules into
## ~/.cache/kueue-tas-harness, with progress; TOOLS="helm kind" builds only those
tools: venv
	$(PY) -m harness build $(or $(TOOLS),tools)

fmt: venv
	$(VENV)/bin/ruff format harness tests bench
	$(VENV)/bin/ruff check --fix harness tests bench

typecheck: venv
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(RUN_DIR) .pytest_cache .mypy_cache .ruff_cache
