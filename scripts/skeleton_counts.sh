#!/usr/bin/env bash
# The figures the skeleton is watched by (issue notes compare them before
# and after a change):
#   scripts/skeleton_counts.sh [REV]   (REV: a commit; default the work tree)
# raw thread creations outside the loops that need their own thread, places
# that open a connection to another broker, reads of the broker struct
# (`b->`) by the read side, the longest function and the largest files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n "$rev" ]]; then
    git -C "$root" archive "$rev" engine | tar -x -C "$tmp"
else
    cp -r "$root/engine" "$tmp/"
fi
cd "$tmp"
# the loops that own a thread by design: the worker, acceptor, processors,
# I/O threads and the purgatory's
threads=$(grep -rn --include='*.c' 'pthread_create' engine |
    grep -vE '^engine/(core/worker|net/acceptor|net/processor|server/purgatory)\.c' |
    grep -vE 'handler_main' || true)
conns=$(grep -rn --include='*.c' 'kiq_client_connect(' engine | grep -vE '^engine/net/client\.c' || true)
# what the read side (HTTP, Prometheus text, Lua) takes straight from the broker
reads=$(grep -rn --include='*.c' -E '\bb->[a-z_]+' engine/http engine/metrics engine/lua | grep -oE '\bb->[a-z_]+' || true)
printf 'raw thread creations (outside worker, acceptor, processors, I/O, purgatory): %d\n' "$(grep -c . <<<"$threads" || true)"
[[ -n "$threads" ]] && sed 's/^/    /; s/:.*pthread_create.*//' <<<"$threads"
printf 'places that connect to another broker: %d\n' "$(grep -c . <<<"$conns" || true)"
[[ -n "$conns" ]] && sed 's/^/    /; s/:[^:]*$//' <<<"$conns" | sed 's/:.*//' | sort | uniq -c
printf 'b-> reads in http/, metrics/, lua/: %d (%d fields)\n' "$(grep -c . <<<"$reads" || true)" \
    "$(sort -u <<<"$reads" | grep -c . || true)"
# a function: from a column-0 "{" to the next column-0 "}"
awk 'FNR == 1 { start = 0 }
     /^\{/ { start = FNR; name = prev }
     /^\}/ && start { n = FNR - start + 1; if (n > best) { best = n; where = FILENAME ":" start; what = name } start = 0 }
     { prev = $0 }
     END { printf "longest function: %d lines, %s (%s)\n", best, where, what }' $(find engine -name '*.c' | sort)
find engine -name '*.c' -o -name '*.h' -o -name '*.lua' | xargs wc -l | grep -v ' total$' | sort -rn | head -3 |
    awk 'NR == 1 { printf "largest files: " } { printf "%s %d%s", $2, $1, NR < 3 ? ", " : "\n" }'
awk '/^\{/ { start = FNR } /^\}/ && start { if (FNR - start + 1 > 120) n++; start = 0 } END { printf "functions over 120 lines: %d\n", n }' \
    $(find engine -name '*.c' | sort)
