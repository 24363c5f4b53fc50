#!/usr/bin/env bash
# Instructions the broker spends per MB produced, counted by callgrind
# (repeatable for the same binary and inputs, whatever else the machine
# does): build/kafkaiq (or KIQ_BIN) runs under valgrind --tool=callgrind,
# kiq_bench produces COUNT records of SIZE bytes (produce only, acks=1) and
# the broker's total instruction count is divided by the payload MB, with
# the functions that took the most, and per record.
#
#   scripts/bench_callgrind.sh [--size 1024] [--count 100000] [--top 25]
#                              [--batch-messages N] [--override K=V]...
# --batch-messages 1 makes a batch per record (what per-batch work, such as
# a journey, costs at its worst); --override goes to the broker, e.g.
# kafkaiq.journey.enable=false.
set -euo pipefail
cd "$(dirname "$0")/.."

size=1024
count=100000
top=25
batch=100000
overrides=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --size) size=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --top) top=$2; shift 2 ;;
    --batch-messages) batch=$2; shift 2 ;;
    --override) overrides+=(--override "$2"); shift 2 ;;
    -h | --help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "bench_callgrind.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
bin=${KIQ_BIN:-build/kafkaiq}
. scripts/bench/common.sh
kiq_bench_build
bench=$KIQ_BENCH
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT
port=$(free_port)
valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
    "$bin" serve config/server.properties --override "listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "log.dirs=$work/data" --override kafkaiq.log.level=warn "${overrides[@]}" 2>"$work/stderr" &
pid=$!
wait_port 127.0.0.1 "$port" "$pid" || { cat "$work/stderr" >&2; exit 1; }
# the topic and the client's first requests before the count starts
"$bench" --bootstrap "127.0.0.1:$port" --topic cg --partitions 3 --count-small 0 --count-large 1000 \
    --no-consume --label warmup >/dev/null
callgrind_control --zero "$pid" >/dev/null
if [[ $size -le 100 ]]; then counts=(--count-small "$count" --count-large 0); else counts=(--count-small 0 --count-large "$count"); fi
"$bench" --bootstrap "127.0.0.1:$port" --topic cg --partitions 3 "${counts[@]}" \
    --batch-messages "$batch" --no-consume --label callgrind
callgrind_control --dump "$pid" >/dev/null
kill -TERM "$pid"
wait "$pid" || true
# the --dump taken right after the produce: what it cost, nothing else
dump=$(ls "$work"/callgrind.out.* | sort | head -1)
bytes=$((count * (size <= 100 ? 100 : 1024)))
summary=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
awk -v ir="$summary" -v b="$bytes" 'BEGIN { printf "# %.0f instructions for %.1f MB of payload: %.2f M instructions per MB\n", ir, b / 1e6, ir / (b / 1e6) / 1e6 }'
awk -v ir="$summary" -v n="$count" 'BEGIN { printf "# %.0f instructions per record\n", ir / n }'
# each function's own instructions (not its callees'), the most first
callgrind_annotate --inclusive=no --threshold=100 "$dump" 2>/dev/null |
    grep -E "^ *[0-9,]+ \(" | grep -v -E "PROGRAM TOTALS|:clone |:start_thread " | head -"$top"
