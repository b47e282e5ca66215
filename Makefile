# hermes_acp — every target sets itself up: `make test` and `make demo` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: all venv test quick lint typecheck workflows layers acp-schema pytest portable release-check demo bench bench-against clean

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

# The three systems the package runs on, each checked by its own `--platform` run (each keeps its own cache).
# probes/typecheck.py runs them and fails on any error.
typecheck: $(STAMP)
	$(PY) -m probes.typecheck linux darwin win32

layers: $(STAMP)
	$(VENV)/bin/lint-imports

# Every CI workflow file: those of .github/workflows/ and the examples of docs/examples/ (docs/ci.md). GitHub's are
# checked against GitHub's workflow schema and by zizmor's audits, GitLab's against GitLab's CI schema; the schemas are
# check-jsonschema's vendored copies and zizmor runs offline, so nothing is fetched.
GITLAB_CI        := $(wildcard .gitlab-ci.yml docs/examples/*.gitlab-ci.yml)
GITHUB_WORKFLOWS := $(filter-out $(GITLAB_CI),$(wildcard .github/workflows/*.yml .github/workflows/*.yaml docs/examples/*.yml))
workflows: $(STAMP)
	$(if $(GITHUB_WORKFLOWS),$(VENV)/bin/check-jsonschema --builtin-schema vendor.github-workflows $(GITHUB_WORKFLOWS))
	$(if $(GITHUB_WORKFLOWS),$(VENV)/bin/zizmor --offline --persona regular --quiet $(GITHUB_WORKFLOWS))
	$(if $(GITLAB_CI),$(VENV)/bin/check-jsonschema --builtin-schema vendor.gitlab-ci $(GITLAB_CI))

# The official ACP schema every recorded frame is checked against (fetched with npm; skipped without it).
acp-schema:
	@if command -v npm >/dev/null 2>&1; then bash .ci/acp-schema-setup.sh; \
	else echo "acp-schema: npm not found, so frames are not checked against the ACP schema"; fi

# The suite runs on every core, with two workers more than there are cores (pytest-xdist; tests are independent:
# each has its own home, ports and processes). Many tests wait on a process they started or on a bounded timer, and
# the two extra workers use the cores meanwhile: on 2 cores the suite took 405 s with 2 workers, 328 s with 4.
# PYTEST_ARGS adds to it, e.g. `make pytest PYTEST_ARGS="-n 0 tests/unit"` to run one folder in this process.
PYTEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(len(os.sched_getaffinity(0)) + 2 if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1) + 2)")
pytest: $(STAMP)
	$(PY) -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS)

# The ACP Registry entry and the package agree (versions, names, the entry's schema, the icon): registry/release_check.py.
release-check: $(STAMP)
	$(PY) -m registry.release_check

# The portable paths Linux does not need, forced, so their code runs in every CI here: psutil's process tree and the
# threaded stdio transport (Windows' two), in this process and in every agent, front door and host the tests start
# (tests/fakes pass HERMES_ACP_PORTABLE on): the terminal's and the MCP servers' tests, the real process's stdio,
# lifecycle and turns, the probe's whole flow (e2e) and the shared front door's relay.
PORTABLE_TESTS := tests/tools/test_terminal.py tests/test_process_platform.py tests/mcp tests/test_stdio.py \
	tests/test_stdio_threaded.py tests/test_process_lifecycle.py tests/test_process_turns.py tests/test_process_probe.py \
	tests/host/test_shared_platform.py
portable: $(STAMP)
	HERMES_ACP_PORTABLE=tree,stdio $(PY) -m pytest -n $(PYTEST_WORKERS) $(PORTABLE_TESTS)

test: lint typecheck workflows layers acp-schema pytest

# A first look, in a minute or two (tests/README.md, "A first look"): ruff, mypy for Linux, the layers, and the tests
# that start no process of their own (units, the turn loop, sessions, commands, ACP rendering, the public surface).
# `make test` is what counts.
QUICK_TESTS := tests/unit tests/core tests/turns tests/sessions tests/commands tests/protocol tests/test_public_api.py
quick: lint layers
	$(PY) -m probes.typecheck linux
	$(PY) -m pytest -n $(PYTEST_WORKERS) -q $(QUICK_TESTS)

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
