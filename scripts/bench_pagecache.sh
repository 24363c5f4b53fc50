#!/usr/bin/env bash
# What this machine charges for new page-cache pages, the cost under every
# byte a broker stores: kernel CPU seconds per GB for writing a new file
# (dd from /dev/zero, no sync) three ways:
#   idle     after the memory was left alone for --idle seconds
#   recycled right after the same amount was freed (the freed pages are
#            taken again before anything gives them back)
#   double   twice the size at once, after the recycled write was freed
#            (past what was freed, pages come from the idle pool again)
# On a VM whose balloon reports free memory to the host (Linux free page
# reporting, shown below when the kernel has it), a page the host took back
# faults in again on first touch and "idle" costs several times "recycled".
# A broker's CPU per GB (bench.sh) includes this once per replica written.
#
#   scripts/bench_pagecache.sh [--mb 1024] [--idle 10] [--dir DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

mb=1024
idle=10
dir=build
while [[ $# -gt 0 ]]; do
    case "$1" in
    --mb) mb=$2; shift 2 ;;
    --idle) idle=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "bench_pagecache.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $mb =~ ^[1-9][0-9]*$ && $idle =~ ^[0-9]+$ ]] || { echo "bench_pagecache.sh: --mb and --idle take whole numbers" >&2; exit 2; }
mkdir -p "$dir"
work=$(mktemp -d "$dir/pagecache.XXXXXX")
trap 'rm -rf "$work"' EXIT

params=/sys/module/page_reporting/parameters
if [[ -d $params ]]; then
    line="# free page reporting: on"
    for p in "$params"/*; do
        [[ -r $p ]] && line+=" $(basename "$p")=$(cat "$p")"
    done
    echo "$line"
else
    echo "# free page reporting: not in this kernel"
fi

# Kernel CPU seconds of writing $2 MB into the new file $1.
write_sys() {
    local TIMEFORMAT=%S
    { time dd if=/dev/zero of="$1" bs=1M count="$2" status=none; } 2>&1
}

per_gb() { awk -v s="$1" -v mb="$2" 'BEGIN { printf "%.2f", s / (mb * 1048576 / 1e9) }'; }

echo "# $mb MB per write into $work; CPU-s/GB = kernel CPU seconds per 10^9 bytes"
printf '%-9s %8s %10s %10s\n' write MB "sys s" "CPU-s/GB"
sleep "$idle"
s=$(write_sys "$work/idle" "$mb")
printf '%-9s %8d %10s %10s\n' idle "$mb" "$s" "$(per_gb "$s" "$mb")"
rm -f "$work/idle"
s=$(write_sys "$work/recycled" "$mb")
printf '%-9s %8d %10s %10s\n' recycled "$mb" "$s" "$(per_gb "$s" "$mb")"
rm -f "$work/recycled"
s=$(write_sys "$work/double" $((2 * mb)))
printf '%-9s %8d %10s %10s\n' double $((2 * mb)) "$s" "$(per_gb "$s" $((2 * mb)))"
