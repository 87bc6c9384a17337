# `make run` and `make test` bootstrap everything they need on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test unit properties e2e e2e-loop lint typecheck contracts controlplane testcluster monitoring browser bench image clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/kai simulate examples/research

# Everything: static checks, then the tests that need no cluster, then the real control plane.
test: $(STAMP) lint typecheck contracts unit properties e2e

# The inner loop: unit, conformance and the quick property tests (no control plane); README says how long it takes.
unit: $(STAMP)
	$(BIN)/pytest -n 2 -q -m "not slow" tests/unit tests/conformance tests/properties

# The property tests at full example counts (marked slow): many cycles, single cycles, junk input.
properties: $(STAMP)
	$(BIN)/pytest -n 2 -q -m slow tests/properties

lint: $(STAMP)
	$(BIN)/ruff check src tests bench hack
	$(BIN)/ruff format --check src tests bench hack

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

# kube-apiserver + etcd (+ kubectl) for tests/e2e: $KUBEBUILDER_ASSETS, else built once into ~/.cache/kai/controlplane.
controlplane:
	bash hack/controlplane.sh

# The rest of the e2e cluster: kube-controller-manager, KWOK, the KubeRay and Kubeflow training operators (with their
# CRDs), kube-state-metrics, each built once into ~/.cache/kai/testcluster; tests/e2e starts each only for the tests
# that need it.
testcluster:
	bash hack/testcluster.sh

# A real Prometheus (Debian's package) and the Prometheus Operator's CRDs, fetched once into ~/.cache/kai/monitoring.
monitoring:
	bash hack/monitoring.sh

# The real browser of the dashboard's tests: Debian's chromium and chromium-driver, installed once with apt-get (root);
# fails with the reason when they cannot be had.
browser:
	bash hack/browser.sh

# Tests against the real cluster (built once by `controlplane` and `testcluster`).
e2e: $(STAMP) controlplane testcluster monitoring browser
	$(BIN)/pytest -q tests/e2e

# The e2e suite RUNS times in a row (default 20), stopping at the first failure; figures in build/e2e-loop/summary.
e2e-loop: $(STAMP) controlplane testcluster monitoring browser
	bash hack/e2e_loop.sh

bench: $(STAMP) browser
	$(BIN)/python bench/allocate_bench.py
	$(BIN)/python bench/allocate_bench.py --full-cycle
	$(BIN)/python bench/allocate_bench.py --usage
	$(BIN)/python bench/simulate_bench.py
	$(BIN)/python bench/simulate_cron_bench.py
	$(BIN)/python bench/reclaim_bench.py --sizes 10 50 100
	$(BIN)/python bench/properties_bench.py
	$(BIN)/python bench/dashboard_bench.py

# The Dockerfile's image, built without a Docker engine or registry (mmdebstrap + umoci, as root) into
# build/kai-image.oci.tar, then run chrooted to check it; a few minutes, so not part of `test`.
image:
	bash hack/image.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
