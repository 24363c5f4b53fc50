#!/usr/bin/env bash
# Locks the broker takes per record, counted (not timed, so the same
# whatever else the machine does): perf's uprobes on libc's
# pthread_mutex_lock, pthread_rwlock_rdlock and pthread_rwlock_wrlock count
# every call while kiq_bench sends one-record requests at a fixed rate (one
# in flight, read back by a consumer), with the call sites that took the
# most. With --against BIN the same for another kafkaiq binary, side by
# side. Needs perf and the right to add uprobes (root, or
# perf_event_paranoid and tracefs access that allow it).
#
#   scripts/bench_locks.sh [--against BIN] [--rate 2000] [--seconds 2] [--top 15]
#                          [--override KEY=VALUE]...  (to serve, e.g. kafkaiq.journey.enable=false)
set -euo pipefail
cd "$(dirname "$0")/.."

against=""
rate=2000
seconds=2
top=15
overrides=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --against) against=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --top) top=$2; shift 2 ;;
    --override) overrides+=(--override "$2"); shift 2 ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench_locks.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
. scripts/bench/common.sh
kiq_bench_build
bench=$KIQ_BENCH
libc=$(ldd build/kafkaiq | awk '/libc\.so/ { print $3 }')
work=$(mktemp -d)
pid=""
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null || true
    perf probe -q -d 'probe_kiqlocks:*' 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
for fn in pthread_mutex_lock pthread_rwlock_rdlock pthread_rwlock_wrlock; do
    perf probe -q -x "$libc" "probe_kiqlocks:$fn=$fn" 2>/dev/null ||
        perf probe -q -x "$libc" "probe_kiqlocks:$fn=$fn" || {
        echo "bench_locks.sh: cannot add a uprobe on $fn (perf probe needs root or tracefs access)" >&2
        exit 1
    }
done

# count LABEL BIN: one broker, a warm-up second, then the counted run.
count() {
    local label=$1 bin=$2 port
    port=$(free_port)
    rm -rf "$work/data"
    "$bin" serve config/server.properties --override "listeners=PLAINTEXT://127.0.0.1:$port" \
        --override "log.dirs=$work/data" --override kafkaiq.log.level=warn \
        --override kafkaiq.http.listener= "${overrides[@]}" 2>"$work/stderr" >/dev/null &
    pid=$!
    wait_port 127.0.0.1 "$port" "$pid" 30 || { cat "$work/stderr" >&2; exit 1; }
    "$bench" --bootstrap "127.0.0.1:$port" --topic warm --rate "$rate" --seconds 1 >/dev/null 2>&1
    perf record -q -e 'probe_kiqlocks:*' --call-graph dwarf,2048 -p "$pid" -o "$work/$label.data" \
        -- sleep $((seconds + 2)) >/dev/null 2>&1 &
    local rec=$!
    sleep 0.5
    local records
    records=$("$bench" --bootstrap "127.0.0.1:$port" --topic counted --rate "$rate" --seconds "$seconds" \
        --no-header 2>/dev/null | awk '$3 == "rate" { n = $4 } END { print n + 0 }')
    wait "$rec" || true
    kill "$pid"
    wait "$pid" || true
    pid=""
    # each sample's second frame is the function that took the lock, its
    # third that function's caller
    perf script -i "$work/$label.data" 2>/dev/null | awk -v label="$label" -v records="$records" -v top="$top" '
        /^[^ \t]/ { n = 0; kind = $0 ~ /rwlock_rd/ ? "rd" : $0 ~ /rwlock_wr/ ? "wr" : "mutex"; total++; next }
        /^[ \t]+[0-9a-f]+ / {
            n++; s = $2; sub(/\+0x.*/, "", s)
            if (n == 2) site = s
            if (n == 3) sites[kind " " site " <- " s]++
        }
        END {
            printf "# %s: %d locks over %d records (warm-up excluded, whole broker, every thread): %.1f per record\n",
                label, total, records, records ? total / records : 0
            m = 0
            for (k in sites) keys[++m] = k
            for (i = 2; i <= m; i++) for (j = i; j > 1 && sites[keys[j - 1]] < sites[keys[j]]; j--) {
                t = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = t
            }
            for (i = 1; i <= m && i <= top; i++)
                printf "#   %8.2f per record  %s\n", records ? sites[keys[i]] / records : 0, keys[i]
        }'
}

count this build/kafkaiq
if [[ -n $against ]]; then
    [[ -x $against ]] || { echo "bench_locks.sh: $against is not an executable" >&2; exit 1; }
    count before "$against"
fi
