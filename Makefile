# hermes_acp — every target sets itself up: `make test` and `make demo` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: all venv test lint typecheck layers acp-schema pytest release-check demo bench bench-against clean

all: test

# (Re)create the virtual environment when it is missing or pyproject.toml changed.
# The editable install is a plain path entry (compat mode), not an import hook: the hook costs every start of the
# server ~30 ms, which an installed wheel does not pay, and start-up is measured (`make bench`).
$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	@touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

layers: $(STAMP)
	$(VENV)/bin/lint-imports

# The official ACP schema every recorded frame is checked against (fetched with npm; skipped without it).
acp-schema:
	@if command -v npm >/dev/null 2>&1; then bash .ci/acp-schema-setup.sh; \
	else echo "acp-schema: npm not found, so frames are not checked against the ACP schema"; fi

# The suite runs on every core (pytest-xdist; tests are independent: each has its own home, ports and processes).
# PYTEST_ARGS adds to it, e.g. `make pytest PYTEST_ARGS="-n 0 tests/unit"` to run one folder in this process.
PYTEST_WORKERS ?= auto
pytest: $(STAMP)
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The ACP Registry entry and the package agree (versions, names, the entry's schema, the icon): registry/release_check.py.
release-check: $(STAMP)
	$(PY) -m registry.release_check

test: lint typecheck layers acp-schema pytest

demo: $(STAMP)
	$(PY) -m probes.demo

bench: $(STAMP)
	$(PY) -m probes.bench

# The goal rows of `make bench` for this checkout and another, side by side, several runs (probes/bench_against.py):
# e.g. `git worktree add ../main-base main && make bench-against BASE=../main-base BENCH_ARGS="--runs 7"`.
bench-against: $(STAMP)
	$(PY) -m probes.bench_against $(BASE) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
