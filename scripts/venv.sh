#!/usr/bin/env bash
# scripts/venv.sh DIR REQUIREMENTS: a virtual environment of Debian's python3
# at DIR with exactly the pinned packages of REQUIREMENTS from PyPI. A no-op
# (offline) when DIR was made from the same file; made anew when that file
# changed, so an upgrade never leaves an old package behind.
set -euo pipefail
dir=$1 req=$2
if cmp -s "$req" "$dir/requirements.txt"; then
    exit 0
fi
echo "deps: making $dir from $req" >&2
rm -rf "$dir"
/usr/bin/python3 -m venv "$dir"
"$dir/bin/pip" install -q --disable-pip-version-check --no-input -r "$req"
cp "$req" "$dir/requirements.txt"
