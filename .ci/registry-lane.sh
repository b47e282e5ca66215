#!/usr/bin/env bash
# The ACP Registry's own check, on what this checkout builds: `python -m build` makes the sdist and the wheel; the
# wheel installs into a fresh venv with nothing but PyPI dependencies and its two commands run; then uv (from PyPI)
# runs it as the registry does, `uvx --from <wheel> hermes-acp-server` in a fresh cache and a fresh home: with empty
# stdin it must exit cleanly, and its answer to `initialize` must list an `agent` or `terminal` auth method
# (registry/launch_check.py). Then `uvx --from <wheel> hermes-acp exec` runs a task as a CI job would (docs/ci.md):
# against the scripted model server it prints the answer's JSON and exits 0; with nothing at the provider's address
# it exits 1. Needs .venv (`make venv`) and PyPI; leaves nothing behind.
#
# Usage: bash .ci/registry-lane.sh     Env: UV_VERSION (default 0.9.5)
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION="${UV_VERSION:-0.9.5}"
PY=.venv/bin/python
work="$(mktemp -d)"
model_pid=""
trap '[ -n "$model_pid" ] && kill "$model_pid" 2>/dev/null; rm -rf "$work"' EXIT
quietly() { "$@" >"$work/step.log" 2>&1 || { cat "$work/step.log"; exit 1; }; }

"$PY" -m registry.release_check
quietly "$PY" -m build --outdir "$work/dist" .
wheel="$(ls "$work"/dist/*.whl)"
sdist="$(ls "$work"/dist/*.tar.gz)"
echo "registry-lane: built $(basename "$sdist") and $(basename "$wheel")"

python3 -m venv "$work/fresh"
quietly "$work/fresh/bin/pip" install --disable-pip-version-check "$wheel"
"$work/fresh/bin/hermes-acp-server" --version
"$work/fresh/bin/hermes-acp" --version
# --check fails while no model can work, and passes with the quick start's provider (not asked: no --probe).
if HERMES_ACP_HOME="$work/fresh-home" "$work/fresh/bin/hermes-acp-server" --check >/dev/null; then
    echo "registry-lane: --check passed without any provider"; exit 1
fi
HERMES_ACP_HOME="$work/fresh-home" HERMES_ACP_BASE_URL=http://127.0.0.1:9/v1 HERMES_ACP_MODEL=m \
    "$work/fresh/bin/hermes-acp-server" --check >/dev/null

python3 -m venv "$work/uv"
quietly "$work/uv/bin/pip" install --disable-pip-version-check "uv==$UV_VERSION"
mkdir -p "$work/home" "$work/run"
# As the registry runs it: a bare environment, a home of its own, a cache nothing has filled yet.
(cd "$work/run" && env -i PATH="/usr/local/bin:/usr/bin:/bin" HOME="$work/home" TERM=dumb \
    UV_CACHE_DIR="$work/uv-cache" UV_PYTHON_DOWNLOADS=never UV_NO_CONFIG=1 \
    ${SSL_CERT_FILE:+SSL_CERT_FILE="$SSL_CERT_FILE"} \
    "$OLDPWD/$PY" -m registry.launch_check --timeout 300 -- "$work/uv/bin/uvx" --from "$wheel" hermes-acp-server)
echo "registry-lane: uvx --from $(basename "$wheel") hermes-acp-server passes the registry's check"

# exec from the wheel, as a CI job runs it (docs/ci.md): the scripted model server answers; a dead address exits 1.
"$PY" -m fixtures.model_server --scenario fixtures/model_server/scenarios/plain_text.json \
    --ready-file "$work/model.json" >"$work/model.log" 2>&1 &
model_pid=$!
for _ in $(seq 300); do [ -s "$work/model.json" ] && break; sleep 0.1; done
port="$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["port"])' "$work/model.json")"
exec_in_ci() {
    (cd "$work/run" && env -i PATH="/usr/local/bin:/usr/bin:/bin" HOME="$work/home" TERM=dumb \
        UV_CACHE_DIR="$work/uv-cache" UV_PYTHON_DOWNLOADS=never UV_NO_CONFIG=1 \
        ${SSL_CERT_FILE:+SSL_CERT_FILE="$SSL_CERT_FILE"} HERMES_ACP_MODEL=fixture-model "$@")
}
exec_in_ci HERMES_ACP_BASE_URL="http://127.0.0.1:$port/v1" \
    "$work/uv/bin/uvx" --from "$wheel" hermes-acp exec --json --approve edits "Say hello" >"$work/exec.ndjson"
"$PY" -c '
import json, sys
result = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert (result["outcome"], result["exitCode"]) == ("finished", 0), result
assert result["answer"].startswith("Hello!"), result
' "$work/exec.ndjson"
status=0
exec_in_ci HERMES_ACP_BASE_URL="http://127.0.0.1:9/v1" HERMES_ACP_PROVIDERS__CUSTOM__MAX_RETRIES=0 \
    "$work/uv/bin/uvx" --from "$wheel" hermes-acp exec "Say hello" >/dev/null 2>"$work/exec.err" || status=$?
if [ "$status" != 1 ]; then
    cat "$work/exec.err"; echo "registry-lane: exec with nothing at the provider's address exited $status, not 1"; exit 1
fi
echo "registry-lane: uvx --from $(basename "$wheel") hermes-acp exec answers (exit 0) and fails visibly (exit 1)"
