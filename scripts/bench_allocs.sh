#!/usr/bin/env bash
# Heap allocations and instructions the broker spends per record of
# one-record requests (repeatable counts, whatever else the machine does):
# build/kafkaiq (or KIQ_BIN) runs under valgrind --tool=callgrind with
# journeys off, kiq_bench --rate sends RATE one-record produce requests a
# second (acks=1, one in flight) for SECONDS (after its 1 s warm-up) that a
# consumer long-polls back, and the broker's counts over that run (the
# clients' connecting and the broker's background work included) are
# divided by the records: instructions, malloc, calloc and realloc calls,
# then the call paths (CONTEXT callers deep) that allocate most often.
# With --syscalls the broker runs natively instead, strace -c -f counts its
# system calls over the same run, and each one's calls per record are
# printed.
#
#   scripts/bench_allocs.sh [--rate 100] [--seconds 5] [--context 4] [--top 30] [--syscalls]
set -euo pipefail
cd "$(dirname "$0")/.."

rate=100
seconds=5
context=4
top=30
syscalls=0
while [[ $# -gt 0 ]]; do
    case "$1" in
    --rate) rate=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --context) context=$2; shift 2 ;;
    --top) top=$2; shift 2 ;;
    --syscalls) syscalls=1; rate=500; shift ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "bench_allocs.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
bin=${KIQ_BIN:-build/kafkaiq}
. scripts/bench/common.sh
kiq_bench_build
bench=$KIQ_BENCH
work=$(mktemp -d)
pid=""
spid=""
trap 'kill $spid $pid 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
port=$(free_port)
http=$(free_port)
tool=(valgrind --tool=callgrind --separate-callers="$context" --callgrind-out-file="$work/callgrind.out")
((syscalls)) && tool=()
"${tool[@]}" "$bin" serve config/server.properties --override "listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "log.dirs=$work/data" --override kafkaiq.log.level=warn \
    --override "kafkaiq.http.listener=127.0.0.1:$http" --override kafkaiq.journey.enable=false 2>"$work/stderr" &
pid=$!
wait_port 127.0.0.1 "$port" "$pid" || { cat "$work/stderr" >&2; exit 1; }
# the topic and the broker's first requests before the count starts
"$bench" --bootstrap "127.0.0.1:$port" --topic ca --partitions 1 --rate "$rate" --seconds 1 \
    --size 100 --label warmup >/dev/null
if ((syscalls)); then
    strace -c -f -p "$pid" -o "$work/strace" 2>"$work/strace.err" &
    spid=$!
    # counting from when strace has the broker's threads
    deadline=$((SECONDS + 10))
    until grep -q attached "$work/strace.err"; do
        ((SECONDS < deadline)) || { cat "$work/strace.err" >&2; exit 1; }
        sleep 0.1
    done
else
    callgrind_control --zero "$pid" >/dev/null
fi
"$bench" --bootstrap "127.0.0.1:$port" --topic ca --partitions 1 --rate "$rate" --seconds "$seconds" \
    --size 100 --label counted | tee "$work/rows"
# the warm-up row's records and the counted row's
records=$(awk '$1 == "counted" && ($3 == "warmup" || $3 == "rate") { n += $4 } END { print n + 0 }' "$work/rows")
((records > 0)) || { echo "bench_allocs.sh: no record read back" >&2; exit 1; }
if ((syscalls)); then
    kill -INT "$spid"
    wait "$spid" || true
    kill -TERM "$pid"
    wait "$pid" || true
    awk -v n="$records" '$NF ~ /^[a-z_0-9]+$/ && $NF != "syscall" && $NF != "total" {
            calls = $4; t += calls # % time, seconds, usecs/call, calls[, errors], syscall
            printf "%8.2f  %s\n", calls / n, $NF | "sort -rn" }
        END { close("sort -rn"); printf "# %d records: %.2f system calls per record\n", n, t / n }' "$work/strace"
    exit 0
fi
callgrind_control --dump "$pid" >/dev/null
kill -TERM "$pid"
wait "$pid" || true
dump=$(ls "$work"/callgrind.out.* | sort | head -1)
callgrind_annotate --tree=caller --inclusive=yes --threshold=100 "$dump" 2>/dev/null >"$work/tree"
summary=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
awk -v ir="$summary" -v n="$records" 'BEGIN { printf "# %d records: %.0f instructions per record\n", n, ir / n }'
# a function block of the caller tree: its callers ("<" lines, each with
# its call count), then its own line ("*"); a context name is
# fn'caller'caller's caller...
awk -v n="$records" -v top="$top" '
    /^ *$/ { calls = 0; next }
    / < / { if (match($0, /\([0-9,]+x\)/)) { c = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", c); calls += c } next }
    / \* / {
        name = $0; sub(/.*\* +[^:]*:/, "", name); sub(/ .*/, "", name)
        base = name; sub(/'"'"'.*/, "", base)
        # an allocation the program asked for, not one inside libc (realloc of NULL is a malloc)
        if (base ~ /^(malloc|calloc|realloc)$/ && name !~ /^[a-z]+'"'"'(realloc|calloc|malloc|reallocarray)($|'"'"')/) {
            total[base] += calls; path[name] += calls }
        calls = 0; next }
    END {
        printf "# allocations per record: %.2f (malloc %.2f, calloc %.2f, realloc %.2f)\n",
            (total["malloc"] + total["calloc"] + total["realloc"]) / n,
            total["malloc"] / n, total["calloc"] / n, total["realloc"] / n
        printf "# allocation paths, calls per record:\n"
        for (p in path) printf "%8.3f  %s\n", path[p] / n, p | "sort -rn | head -" top
    }' "$work/tree"
