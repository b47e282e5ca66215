#!/usr/bin/env bash
# Runs a command on this machine as if bubblewrap were not installed: PATH becomes one folder of links to every
# program on the current PATH except `bwrap` (the sandbox finds bwrap through PATH, as `shutil.which` does), so the
# command sees the same tools minus the sandbox. Nothing is uninstalled; the folder is removed afterwards.
#
# Usage: bash .ci/without-bwrap.sh COMMAND [ARGS...]
set -euo pipefail

shadow="$(mktemp -d)"
trap 'rm -rf "$shadow"' EXIT
IFS=: read -r -a folders <<<"$PATH"
for folder in "${folders[@]}"; do
    [ -d "$folder" ] || continue
    for program in "$folder"/*; do
        name="${program##*/}"
        if [ "$name" != bwrap ] && [ -x "$program" ] && [ ! -e "$shadow/$name" ]; then
            ln -s "$program" "$shadow/$name"
        fi
    done
done
if PATH="$shadow" command -v bwrap >/dev/null 2>&1; then
    echo "without-bwrap: bwrap is still found" >&2
    exit 1
fi
PATH="$shadow" "$@"
