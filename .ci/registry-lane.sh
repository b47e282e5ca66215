#!/usr/bin/env bash
# The ACP Registry's own check, on what this checkout builds: `python -m build` makes the sdist and the wheel; the
# wheel installs into a fresh venv with nothing but PyPI dependencies and its two commands run; then uv (from PyPI)
# runs it as the registry does, `uvx --from <wheel> hermes-acp-server` in a fresh cache and a fresh home: with empty
# stdin it must exit cleanly, and its answer to `initialize` must list an `agent` or `terminal` auth method
# (registry/launch_check.py). Needs .venv (`make venv`) and PyPI; leaves nothing behind.
#
# Usage: bash .ci/registry-lane.sh     Env: UV_VERSION (default 0.9.5)
set -euo pipefail
cd "$(dirname "$0")/.."

UV_VERSION="${UV_VERSION:-0.9.5}"
PY=.venv/bin/python
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
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
