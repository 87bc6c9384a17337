# `make run` and `make test` bootstrap everything they need on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck contracts controlplane pytest bench clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/kai simulate examples/department.yaml

test: $(STAMP) lint typecheck contracts pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

# kube-apiserver + etcd (+ kubectl) for tests/e2e: $KUBEBUILDER_ASSETS, else built once into ~/.cache/kai/controlplane.
controlplane:
	bash hack/controlplane.sh

pytest: $(STAMP) controlplane
	$(BIN)/pytest -n 2 --dist loadgroup -q

bench: $(STAMP)
	$(BIN)/python bench/allocate_bench.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
