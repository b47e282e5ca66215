#!/usr/bin/env bash
# Fetches the official ACP JSON schema, idempotently: the npm package @agentclientprotocol/sdk (pinned) packed with
# `npm pack` (no install, no global state) and unpacked under the git-ignored .ci-tools/acp-schema/. The test suite
# validates every frame it records against schema/v1/schema.json (schema.unstable.json for what is still unstable);
# without it that check skips itself (and fails instead under HERMES_REQUIRE_LANES=1, as in CI).
#
# Usage: bash .ci/acp-schema-setup.sh
# Env:   ACP_SDK_VERSION (default 2.4.0), ACP_SCHEMA_TOOLS (default .ci-tools)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="${ACP_SDK_VERSION:-2.4.0}"
TOOLS="${ACP_SCHEMA_TOOLS:-.ci-tools}"
DEST="$TOOLS/acp-schema"

if [ -f "$DEST/version" ] && [ "$(cat "$DEST/version")" = "$VERSION" ] && [ -f "$DEST/package/schema/v1/schema.json" ]; then
    echo "acp-schema: $DEST/package/schema/v1 (@agentclientprotocol/sdk $VERSION)"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "acp-schema-setup: npm is needed (apt-get install npm)" >&2
    exit 1
fi
rm -rf "$DEST"
mkdir -p "$DEST"
tarball="$(cd "$DEST" && npm pack --silent --loglevel=error "@agentclientprotocol/sdk@$VERSION")"
tar -xzf "$DEST/$tarball" -C "$DEST" package/schema
rm -f "$DEST/$tarball"
echo "$VERSION" > "$DEST/version"
echo "acp-schema: $DEST/package/schema/v1 (@agentclientprotocol/sdk $VERSION)"
