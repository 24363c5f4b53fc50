#!/usr/bin/env bash
# The hard-bounce soak (scripts/soak.py): N leader SIGKILLs under an
# idempotent acks=all producer against a 3-process cluster, then the
# history checked by kafkaiq.check. Prints the figures and the anomalies;
# exits non-zero on any.
#   scripts/soak.sh [--bounces N] [--dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
bounces=10
dir=""
while [[ $# -gt 0 ]]; do
    case $1 in
    --bounces) bounces=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) echo "usage: scripts/soak.sh [--bounces N] [--dir DIR]" >&2; exit 2 ;;
    esac
done
if [[ -z "$dir" ]]; then
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
fi
/usr/bin/python3 scripts/soak.py --bounces "$bounces" --dir "$dir"
build/kafkaiq run scripts/soak_check.lua "$dir/history.txt"
