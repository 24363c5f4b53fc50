#!/usr/bin/env bash
# Throughput benchmark (scripts/bench/kiq_bench.c, built on librdkafka).
#
#   scripts/bench.sh                      start build/kafkaiq on a free port with a
#                                         temporary data dir, bench it, stop it
#   scripts/bench.sh --bootstrap H:P      bench that address only (any Kafka server)
#   scripts/bench.sh --peer [--rounds N]  also bench librdkafka's mock cluster
#                                         (tests/interop/mock_peer.c), N rounds
#                                         alternating, and print per workload and
#                                         round KafkaIQ, the mock, the ratio, the
#                                         loopback's bandwidth measured in the
#                                         same run (iperf3) and each one's CPU
#                                         seconds per GB
#   scripts/bench.sh --replicated [--rounds N]  N rounds alternating one
#                                         broker with an RF 1 topic at acks=all
#                                         and serve --brokers 3 (one process)
#                                         with an RF 3 topic at acks=all, and
#                                         per workload and round both msg/s,
#                                         the ratio and each one's broker CPU
#                                         seconds per GB
#   scripts/bench.sh --kafka [--rounds N]  N rounds alternating KafkaIQ and
#                                         Apache Kafka (scripts/kafka.sh, the
#                                         pinned reference) with the same
#                                         client: one broker at acks=1 and at
#                                         acks=all, then three brokers each
#                                         (serve --brokers 3, three KRaft
#                                         nodes) with an RF 3 topic at
#                                         acks=all; per workload and round
#                                         both msg/s, the ratio and each one's
#                                         broker CPU seconds per GB, peak RSS;
#                                         then Kafka's own ProducerPerformance
#                                         (1 KiB, acks=1) and EndToEndLatency
#                                         (1 KiB, acks=1) against each
#   scripts/bench.sh --against BIN [--rounds N]  N rounds alternating
#                                         this build/kafkaiq ("this") and
#                                         another kafkaiq binary ("before",
#                                         e.g. an earlier commit's build), one
#                                         broker each, with each one's median
#                                         msg/s and CPU and the difference;
#                                         with --replicated, serve --brokers 3
#                                         each with an RF 3 topic at acks=all
#   scripts/bench.sh --tls [--rounds N]   N rounds alternating one broker whose
#                                         listener is PLAINTEXT and one whose
#                                         listener is SSL (a certificate made
#                                         for the run, OpenSSL on both sides),
#                                         and per workload and round both
#                                         msg/s, the ratio and each one's
#                                         broker CPU seconds per GB
#   scripts/bench.sh --broker-override K=V  pass --override K=V to the kafkaiq it
#                                         starts (repeatable), e.g.
#                                         kafkaiq.fetch.sendfile=false
#   scripts/bench.sh --journeys [--rounds N]  the same bench with record
#                                         journeys off, then on, N times
#                                         alternating, and each phase's median
#                                         msg/s with the difference
#   scripts/bench.sh --against BIN --journeys  both builds, journeys off
#                                         and on each (this-off, this-on,
#                                         before-off, before-on), alternating
#
# For the kafkaiq it starts, each row also shows the broker's CPU seconds
# (user + system, from /proc) spent since the previous row: the produce
# phase, then the consume phase.
# Other options go to kiq_bench: --count-small N (100 B messages, default
# 1000000), --count-large N (1 KiB, default 300000), --acks 0|1|all (default 1),
# --partitions N (default 3), --topic NAME, --no-consume (produce only).
#
#   --rate N [--seconds S] [--size B]     instead of the throughput rows, N
#                                         one-record requests/s (linger 0, one
#                                         in flight) for S seconds (default
#                                         10; after a 1 s warm-up row), read
#                                         back at once by a consumer: p50/p99
#                                         end-to-end ms and, for each broker
#                                         started here, its CPU µs per record
#                                         (produce and the consumer's fetches);
#                                         combines with --journeys, --peer,
#                                         --against and --replicated, whose
#                                         summaries then add the medians
#   --producers LIST                      instead of the throughput rows, for
#                                         each count in LIST (say 1,4,8) that
#                                         many producers at once, at acks=1
#                                         then acks=all, together producing
#                                         --count-large 1 KiB records (every
#                                         row the same bytes; 8 partitions
#                                         unless --partitions)
# The mock cluster keeps data in memory only (the last 5 MiB per partition) and
# ignores acks: compare its produce figures at acks=1 and read its consume
# figures as "of what it kept".
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench/common.sh

BENCH_DIR=build/bench
BENCH_BIN=$KIQ_BENCH
MOCK_SRC=tests/interop/mock_peer.c
MOCK_BIN=$BENCH_DIR/mock_peer
READY_TIMEOUT=10
JOURNEY_FILL=6000 # one-record batches: more than the default ring holds (4000)

bootstrap=""
peer=0
partitions=3
topic="kiq-bench-$$"
pass=()
broker_overrides=()
journeys=0
against=""
kiq_bin=build/kafkaiq
replicated=0
kafka=0
tls=0
listener_proto=PLAINTEXT # the listener bench_kafkaiq starts
rounds=1
rate=0
producers=0
partitions_set=0
while [[ $# -gt 0 ]]; do
    case "$1" in
    --bootstrap) bootstrap=$2; shift 2 ;;
    --peer) peer=1; shift ;;
    --partitions) partitions=$2; partitions_set=1; shift 2 ;;
    --topic) topic=$2; shift 2 ;;
    --broker-override) broker_overrides+=(--override "$2"); shift 2 ;;
    --journeys) journeys=1; shift ;;
    --against) against=$2; shift 2 ;;
    --replicated) replicated=1; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --count-small | --count-large | --acks) pass+=("$1" "$2"); shift 2 ;;
    --no-consume) pass+=("$1"); shift ;;
    --rate) rate=1; pass+=("$1" "$2"); shift 2 ;;
    --seconds | --size) pass+=("$1" "$2"); shift 2 ;;
    --producers) producers=1; pass+=("$1" "$2"); shift 2 ;;
    --kafka) kafka=1; shift ;;
    --tls) tls=1; shift ;;
    -h | --help) sed -n '2,85p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

if ((producers && !partitions_set)); then
    partitions=8
fi

kiq_bench_build

pids=()
tmpdirs=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    for d in "${tmpdirs[@]}"; do
        rm -rf "$d"
    done
}
trap cleanup EXIT

# free_ports N: the first of N consecutive free ports, below the kernel's
# ephemeral range (where clients' ports would come to sit on port + i).
free_ports() {
    /usr/bin/python3 -c '
import random, socket, sys
n = int(sys.argv[1])
while True:
    base, held = random.randint(20000, 32000 - n), []
    try:
        for i in range(n):
            s = socket.socket()
            held.append(s)
            s.bind(("127.0.0.1", base + i))
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in held:
            s.close()' "$1"
}


header=()
bench_extra=() # kiq_bench options of the run at hand (they win over pass's)
run_bench() { # LABEL BOOTSTRAP
    "$BENCH_BIN" --bootstrap "$2" --label "$1" --topic "$topic" --partitions "$partitions" \
        "${pass[@]}" "${bench_extra[@]}" "${header[@]}"
    header=(--no-header)
}

# cpu_ns PID...: the processes' CPU time (user + system), in ns. A live
# thread's comes from its schedstat (ns); /proc's tick counts (10 ms) made a
# phase of half a second read 5 ticks, give or take one. What exited
# threads spent is the process's ticks less its live threads' ticks. The
# command name (field 2 of stat) may hold spaces: fields count after ')'.
cpu_ns() {
    local pid hz
    hz=$(getconf CLK_TCK)
    for pid in "$@"; do
        {
            cat "/proc/$pid/task/"*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "live_ns %.0f\n", s }'
            cat "/proc/$pid/task/"*/stat 2>/dev/null | awk '{ sub(/.*\) /, ""); t += $12 + $13 } END { printf "live_ticks %d\n", t }'
            awk '{ sub(/.*\) /, ""); printf "all_ticks %d\n", $12 + $13 }' "/proc/$pid/stat"
        } | awk -v hz="$hz" '{ v[$1] = $2 } END {
            dead = v["all_ticks"] - v["live_ticks"]
            printf "%.0f\n", v["live_ns"] + (dead > 0 ? dead * 1e9 / hz : 0) }'
    done | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# with_cpu PID...: copies kiq_bench's rows, adding the brokers' CPU seconds
# spent since the previous row (kiq_bench flushes each row as its phase ends);
# after a fixed-rate row, a comment with the CPU µs per record.
with_cpu() {
    local mark now line
    mark=$(cpu_ns "$@")
    while IFS= read -r line; do
        if [[ $line == '#'* ]]; then
            echo "$line; cpu s = broker user+system CPU seconds of the phase"
        elif [[ $line == target* ]]; then
            printf '%s %9s\n' "$line" "cpu s"
        else
            now=$(cpu_ns "$@")
            awk -v l="$line" -v t="$((now - mark))" 'BEGIN {
                printf "%s %9.3f\n", l, t / 1e9
                split(l, f)
                if (f[3] == "rate" && f[4] > 0)
                    printf "# %s: broker CPU %.1f us per record, %.2f cores busy\n", f[1],
                        t / 1e3 / f[4], t / 1e9 / f[5]
            }'
            mark=$now
        fi
    done
}

# peak_rss_mib PID...: the processes' peak resident memory added up, in MiB.
peak_rss_mib() {
    local pid
    for pid in "$@"; do cat "/proc/$pid/status"; done | awk '/VmHWM/ { k += $2 } END { printf "%.1f", k / 1024 }'
}

# http_get PORT PATH: the body of a plain HTTP/1.0 GET to 127.0.0.1.
http_get() {
    local body
    exec 4<>"/dev/tcp/127.0.0.1/$1"
    printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&4
    body=$(cat <&4)
    exec 4<&-
    printf '%s\n' "${body#*$'\r\n\r\n'}"
}

# bench_kafkaiq LABEL FILL [SERVE OPTION ...]: starts $kiq_bin with a
# temporary data dir (the options, e.g. --override K=V or --brokers N, go to
# serve; with N brokers broker i listens on the port + i), benches it,
# reports its peak memory and journey ring, and stops it. FILL > 0 first
# produces FILL one-record batches to another topic, so the memory reported
# is the journey ring's when full.
bench_kafkaiq() {
    local label=$1 fill=$2 data port http kiq_pid
    shift 2
    data=$(mktemp -d)
    tmpdirs+=("$data")
    # with --brokers N, broker i listens on port + i and http + i
    local nodes=1 prev=""
    for a in "$@"; do
        [[ $prev == --brokers ]] && nodes=$a
        prev=$a
    done
    port=$(free_ports "$nodes")
    http=$(free_ports "$nodes")
    "$kiq_bin" serve config/server.properties \
        --override "listeners=$listener_proto://127.0.0.1:$port" --override "log.dirs=$data/data" \
        --override kafkaiq.log.level=warn --override "kafkaiq.http.listener=127.0.0.1:$http" \
        "$@" >"$data/broker.stdout" 2>"$data/broker.stderr" &
    kiq_pid=$!
    pids+=("$kiq_pid")
    if ! wait_port 127.0.0.1 "$port" "$kiq_pid" "$READY_TIMEOUT"; then
        echo "bench.sh: kafkaiq not ready on port $port" >&2
        cat "$data/broker.stderr" >&2
        exit 1
    fi
    # this runs in a pipeline's subshell, where cleanup's trap does not
    if ! run_bench "$label" "127.0.0.1:$port" | with_cpu "$kiq_pid"; then
        kill -TERM "$kiq_pid"
        wait "$kiq_pid" || true
        exit 1
    fi
    header=(--no-header) # run_bench ran in the pipeline's subshell
    if ((fill > 0)); then
        "$BENCH_BIN" --bootstrap "127.0.0.1:$port" --label ring-fill --topic "$topic-fill" \
            --partitions "$partitions" --count-small "$fill" --count-large 0 \
            --batch-messages 1 --no-header | sed 's/^/# /'
    fi
    local rss kept bytes
    rss=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$kiq_pid/status")
    read -r kept bytes < <(http_get "$http" /metrics |
        awk '$1 == "kafkaiq_journeys_kept" { k = $2 } $1 == "kafkaiq_journeys_bytes" { b = $2 }
             END { print k + 0, b + 0 }')
    printf '# %s: peak RSS %s MiB; journeys kept %s, ring at most %.1f MiB\n' \
        "$label" "$rss" "$kept" "$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')"
    kill -TERM "$kiq_pid"
    if ! wait "$kiq_pid"; then
        echo "bench.sh: kafkaiq did not exit cleanly" >&2
        cat "$data/broker.stderr" >&2
        exit 1
    fi
    pids=()
    # the next broker should not pay for writing this one's data back
    rm -rf "$data"
}

# summary FILE: per target and phase, the median msg/s and broker CPU
# seconds over the rounds, and each target's difference from the first one.
summary() {
    awk '$1 !~ /^#/ && $1 != "target" && NF >= 8 {
            k = $2 " " $3; i = ++n[$1, k]; rate[$1, k, i] = $6; cpu[$1, k, i] = $NF
            if (!(k in seenk)) { seenk[k] = 1; keys[++nk] = k }
            if (!($1 in seent)) { seent[$1] = 1; targets[++nt] = $1 }
        }
        function median(v, t, k,   m, i, j, a, x) {
            m = n[t, k]
            for (i = 1; i <= m; i++) a[i] = v[t, k, i]
            for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                x = a[j]; a[j] = a[j - 1]; a[j - 1] = x
            }
            return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
        }
        function diff(m, base) { return base > 0 ? sprintf("%+6.1f %%", (m - base) * 100 / base) : "" }
        END {
            printf "# medians over %d round(s):%-14s %12s %9s %9s %9s\n", n[targets[1], keys[1]], "", "msg/s", "", "cpu s", ""
            for (i = 1; i <= nk; i++) {
                r0 = median(rate, targets[1], keys[i]); c0 = median(cpu, targets[1], keys[i])
                for (t = 1; t <= nt; t++) {
                    r = median(rate, targets[t], keys[i]); c = median(cpu, targets[t], keys[i])
                    printf "# %-16s %-14s %12.0f %9s %9.2f %9s\n", targets[t], keys[i], r,
                        (t > 1 ? diff(r, r0) : ""), c, (t > 1 ? diff(c, c0) : "")
                }
            }
        }' "$1"
}

# rate_summary FILE: per target, the medians over the rounds of the
# fixed-rate rows' broker CPU µs per record and end-to-end p50 and p99.
rate_summary() {
    awk '$1 !~ /^#/ && $3 == "rate" && $4 > 0 {
            i = ++n[$1]; us[$1, i] = $NF * 1e6 / $4; p50[$1, i] = $8; p99[$1, i] = $9
            if (!($1 in seen)) { seen[$1] = 1; targets[++nt] = $1 }
        }
        function median(v, t,   m, i, j, a, x) {
            m = n[t]
            for (i = 1; i <= m; i++) a[i] = v[t, i]
            for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                x = a[j]; a[j] = a[j - 1]; a[j - 1] = x
            }
            return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
        }
        END {
            if (nt == 0) exit
            printf "# fixed rate, medians:  %-16s %12s %9s %9s\n", "target", "cpu us/rec", "p50 ms", "p99 ms"
            for (t = 1; t <= nt; t++)
                printf "# %-21s %-16s %12.1f %9.3f %9.3f\n", "", targets[t], median(us, targets[t]),
                    median(p50, targets[t]), median(p99, targets[t])
        }' "$1"
}

# loopback_gbs: one TCP stream's bandwidth over 127.0.0.1 in GB/s (iperf3,
# 3 s), or "" without iperf3.
loopback_gbs() {
    command -v iperf3 >/dev/null || return 0
    local port pid
    port=$(free_port)
    # not -1 (one test): wait_port's probe would be that test
    iperf3 -s -B 127.0.0.1 -p "$port" >/dev/null 2>&1 &
    pid=$!
    if wait_port 127.0.0.1 "$port" "$pid" "$READY_TIMEOUT"; then
        iperf3 -c 127.0.0.1 -p "$port" -t 3 -J 2>/dev/null | /usr/bin/python3 -c '
import json, sys
end = json.load(sys.stdin).get("end", {})
if "sum_received" in end:
    print("%.2f" % (end["sum_received"]["bits_per_second"] / 8e9))'
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# bench_reference LABEL NODES: starts Apache Kafka (scripts/kafka.sh) with
# NODES KRaft nodes, benches it with its CPU and peak memory, stops it.
bench_reference() {
    local label=$1 nodes=$2 dir bs kpids
    dir=$(mktemp -d)
    tmpdirs+=("$dir")
    bs=$(scripts/kafka.sh start --nodes "$nodes" --dir "$dir/kafka" 2>/dev/null | sed -n 's/^KAFKA_BOOTSTRAP=//p')
    [[ -n $bs ]] || { echo "bench.sh: Apache Kafka did not start" >&2; exit 1; }
    mapfile -t kpids < <(cat "$dir"/kafka/node-*/pid)
    run_bench "$label" "$bs" | with_cpu "${kpids[@]}"
    header=(--no-header)
    printf '# %s: peak RSS %s MiB\n' "$label" "$(peak_rss_mib "${kpids[@]}")"
    scripts/kafka.sh stop --dir "$dir/kafka"
    rm -rf "$dir"
}

# kafka_tools LABEL BOOTSTRAP: Kafka's ProducerPerformance and
# EndToEndLatency (1 KiB records, acks=1) against one broker; their result
# lines, tagged. EndToEndLatency gets 20,000 round trips: with its default
# 2,000 the client's own JIT warm-up made most of the p99, for either broker.
kafka_tools() {
    local cp="build/kafka/lib/*" t="kiq-perf-$$-$1"
    java -Xmx512m -cp "$cp" org.apache.kafka.tools.ProducerPerformance --topic "$t" --num-records 200000 \
        --record-size 1024 --throughput -1 --producer-props bootstrap.servers="$2" acks=1 linger.ms=5 \
        batch.size=1048576 2>/dev/null | tail -n 1 | sed "s/^/# $1 ProducerPerformance: /"
    java -Xmx512m -cp "$cp" org.apache.kafka.tools.EndToEndLatency --bootstrap-server "$2" --topic "$t-e2e" \
        --num-records 20000 --producer-acks 1 --record-size 1024 2>/dev/null | grep -E 'Avg latency|Percentiles' |
        sed "s/^/# $1 EndToEndLatency: /"
}

# bench_mock LABEL: starts the mock cluster (one broker, the topic made up
# front: it cannot run CreateTopics), benches it with its CPU, stops it.
bench_mock() {
    local out mock_pid mock_bs deadline
    out=$(mktemp -d)
    tmpdirs+=("$out")
    "$MOCK_BIN" -t "$topic:$partitions" >"$out/stdout" 2>"$out/stderr" &
    mock_pid=$!
    pids+=("$mock_pid")
    deadline=$((SECONDS + READY_TIMEOUT))
    until mock_bs=$(grep -m1 -E '^[^ ]+:[0-9]+' "$out/stdout"); do
        if ((SECONDS >= deadline)) || ! kill -0 "$mock_pid" 2>/dev/null; then
            echo "bench.sh: mock peer did not start" >&2
            cat "$out/stderr" >&2
            exit 1
        fi
        sleep 0.05
    done
    run_bench "$1" "$mock_bs" | with_cpu "$mock_pid"
    kill -TERM "$mock_pid" 2>/dev/null || true
    wait "$mock_pid" 2>/dev/null || true
    pids=()
}

# compare FILE LOOPBACK_GBS A B: per round and workload, target A's msg/s,
# B's and the ratio; for produce A's GB/s, its share of the loopback (when
# measured) and each one's broker CPU seconds per GB of payload.
compare() {
    awk -v lb="$2" -v A="$3" -v B="$4" '$1 !~ /^#/ && $1 != "target" && NF >= 8 && ($1 == A || $1 == B) {
            k = $2 " B " $3; i = ++n[$1, k]; rate[$1, k, i] = $6; mbs[$1, k, i] = $7
            gb[$1, k, i] = $4 * $2 / 1e9; cpu[$1, k, i] = $NF
            if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
        }
        END {
            printf "# %-5s %-16s %12s %12s %7s %8s %6s %12s %12s\n", "round", "workload", A "/s", B "/s",
                "ratio", "GB/s", "of lo", A " cpu/GB", B " cpu/GB"
            for (j = 1; j <= nk; j++) {
                k = keys[j]
                for (i = 1; i <= n[A, k] && i <= n[B, k]; i++) {
                    a = rate[A, k, i]; m = rate[B, k, i]
                    g = mbs[A, k, i] / 1000
                    share = (lb > 0 && k ~ /produce/) ? sprintf("%5.0f%%", g * 100 / lb) : "     -"
                    ck = gb[A, k, i] > 0 ? cpu[A, k, i] / gb[A, k, i] : 0
                    cm = gb[B, k, i] > 0 ? cpu[B, k, i] / gb[B, k, i] : 0
                    printf "# %-5d %-16s %12.0f %12.0f %7.2f %8.2f %6s %12.2f %12.2f\n", i, k, a, m,
                        (m > 0 ? a / m : 0), g, share, ck, cm
                }
            }
        }' "$1"
}

if [[ $peer -eq 1 && ( ! -x $MOCK_BIN || $MOCK_SRC -nt $MOCK_BIN ) ]]; then
    gcc -O2 -o "$MOCK_BIN" "$MOCK_SRC" -lrdkafka
fi

if [[ -n $bootstrap ]]; then
    run_bench target "$bootstrap"
    if [[ $peer -eq 1 ]]; then bench_mock mock-peer; fi
elif [[ $peer -eq 1 ]]; then
    [[ -x build/kafkaiq ]] || { echo "bench.sh: build/kafkaiq missing: run make" >&2; exit 1; }
    rows=$(mktemp -d)
    tmpdirs+=("$rows")
    lb=$(loopback_gbs)
    echo "# loopback: ${lb:-?} GB/s (iperf3, one TCP stream over 127.0.0.1, measured before the rounds)"
    for ((r = 1; r <= rounds; r++)); do
        bench_kafkaiq kafkaiq 0 "${broker_overrides[@]}" | tee -a "$rows/all"
        bench_mock mock-peer | tee -a "$rows/all"
    done
    lb2=$(loopback_gbs)
    echo "# loopback: ${lb2:-?} GB/s (after the rounds)"
    compare "$rows/all" "$(awk -v a="${lb:-0}" -v b="${lb2:-0}" 'BEGIN { print (a > b ? a : b) }')" \
        kafkaiq mock-peer
    rate_summary "$rows/all"
elif [[ $kafka -eq 1 ]]; then
    [[ -x build/kafkaiq ]] || { echo "bench.sh: build/kafkaiq missing: run make" >&2; exit 1; }
    scripts/kafka.sh fetch
    rows=$(mktemp -d)
    tmpdirs+=("$rows")
    for ((r = 1; r <= rounds; r++)); do
        for acks in 1 all; do
            bench_extra=(--acks "$acks" --replication-factor 1)
            bench_kafkaiq "kafkaiq-acks$acks" 0 "${broker_overrides[@]}" | tee -a "$rows/all"
            bench_reference "kafka-acks$acks" 1 | tee -a "$rows/all"
        done
        bench_extra=(--acks all --replication-factor 3)
        bench_kafkaiq kafkaiq-rf3 0 --brokers 3 "${broker_overrides[@]}" | tee -a "$rows/all"
        bench_reference kafka-rf3 3 | tee -a "$rows/all"
    done
    for acks in 1 all; do compare "$rows/all" 0 "kafkaiq-acks$acks" "kafka-acks$acks"; done
    compare "$rows/all" 0 kafkaiq-rf3 kafka-rf3
    # Kafka's own tools, one broker each
    data=$(mktemp -d)
    tmpdirs+=("$data")
    port=$(free_port)
    build/kafkaiq serve config/server.properties --override "listeners=PLAINTEXT://127.0.0.1:$port" \
        --override "log.dirs=$data/data" --override kafkaiq.log.level=warn >/dev/null 2>&1 &
    pids+=($!)
    wait_port 127.0.0.1 "$port" "$!" "$READY_TIMEOUT" || { echo "bench.sh: kafkaiq not ready" >&2; exit 1; }
    kafka_tools kafkaiq "127.0.0.1:$port"
    kill -TERM "${pids[@]}"
    wait "${pids[@]}" || true
    pids=()
    bs=$(scripts/kafka.sh start --dir "$data/kafka" 2>/dev/null | sed -n 's/^KAFKA_BOOTSTRAP=//p')
    kafka_tools kafka "$bs"
    scripts/kafka.sh stop --dir "$data/kafka"
elif [[ $tls -eq 1 ]]; then
    [[ -x build/kafkaiq ]] || { echo "bench.sh: build/kafkaiq missing: run make" >&2; exit 1; }
    rows=$(mktemp -d)
    tmpdirs+=("$rows")
    # a certificate for 127.0.0.1, its own CA
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$rows/key.pem" -out "$rows/cert.pem" -days 1 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
    cat "$rows/key.pem" "$rows/cert.pem" >"$rows/store.pem"
    for ((r = 1; r <= rounds; r++)); do
        listener_proto=PLAINTEXT
        bench_extra=()
        bench_kafkaiq plaintext 0 "${broker_overrides[@]}" | tee -a "$rows/all"
        listener_proto=SSL
        bench_extra=(-X security.protocol=ssl -X "ssl.ca.location=$rows/cert.pem")
        bench_kafkaiq tls 0 "${broker_overrides[@]}" --override ssl.keystore.type=PEM \
            --override "ssl.keystore.location=$rows/store.pem" | tee -a "$rows/all"
    done
    compare "$rows/all" 0 tls plaintext
elif [[ $replicated -eq 1 ]]; then
    [[ -x build/kafkaiq ]] || { echo "bench.sh: build/kafkaiq missing: run make" >&2; exit 1; }
    rows=$(mktemp -d)
    tmpdirs+=("$rows")
    if [[ -n $against ]]; then
        # the replicated path of this build beside another's
        [[ -x $against ]] || { echo "bench.sh: $against is not an executable" >&2; exit 1; }
        bench_extra=(--acks all --replication-factor 3)
        for ((r = 1; r <= rounds; r++)); do
            kiq_bin=build/kafkaiq
            bench_kafkaiq this 0 --brokers 3 "${broker_overrides[@]}" | tee -a "$rows/all"
            kiq_bin=$against
            bench_kafkaiq before 0 --brokers 3 "${broker_overrides[@]}" | tee -a "$rows/all"
        done
        summary "$rows/all"
        rate_summary "$rows/all"
    else
        for ((r = 1; r <= rounds; r++)); do
            bench_extra=(--acks all --replication-factor 1)
            bench_kafkaiq rf1-acksall 0 "${broker_overrides[@]}" | tee -a "$rows/all"
            bench_extra=(--acks all --replication-factor 3)
            bench_kafkaiq rf3-acksall 0 --brokers 3 "${broker_overrides[@]}" | tee -a "$rows/all"
        done
        compare "$rows/all" 0 rf3-acksall rf1-acksall
        rate_summary "$rows/all"
    fi
else
    [[ -x build/kafkaiq ]] || { echo "bench.sh: build/kafkaiq missing: run make" >&2; exit 1; }
    if [[ -n $against ]]; then
        [[ -x $against ]] || { echo "bench.sh: $against is not an executable" >&2; exit 1; }
        rows=$(mktemp -d)
        tmpdirs+=("$rows")
        # with --journeys each of the two off then on: this-off, this-on, before-off, before-on
        runs=(this:build/kafkaiq: before:$against:)
        ((journeys == 0)) || runs=(this-off:build/kafkaiq:false this-on:build/kafkaiq:true
            before-off:$against:false before-on:$against:true)
        for ((r = 1; r <= rounds; r++)); do
            for run in "${runs[@]}"; do
                IFS=: read -r label kiq_bin enable <<<"$run"
                extra=()
                [[ -z $enable ]] || extra=(--override "kafkaiq.journey.enable=$enable")
                bench_kafkaiq "$label" 0 "${broker_overrides[@]}" "${extra[@]}" >"$rows/one"
                cat "$rows/one" >>"$rows/all"
                cat "$rows/one"
            done
        done
        summary "$rows/all"
        rate_summary "$rows/all"
    elif [[ $journeys -eq 1 ]]; then
        rows=$(mktemp -d)
        tmpdirs+=("$rows")
        # the last round fills the ring after its bench, for the memory figure
        for ((r = 1; r <= rounds; r++)); do
            fill=0
            ((r < rounds)) || fill=$JOURNEY_FILL
            bench_kafkaiq journeys-off "$fill" "${broker_overrides[@]}" \
                --override kafkaiq.journey.enable=false >"$rows/one"
            cat "$rows/one" >>"$rows/all"
            cat "$rows/one"
            bench_kafkaiq journeys-on "$fill" "${broker_overrides[@]}" \
                --override kafkaiq.journey.enable=true >"$rows/one"
            cat "$rows/one" >>"$rows/all"
            cat "$rows/one"
        done
        summary "$rows/all"
        rate_summary "$rows/all"
    else
        bench_kafkaiq kafkaiq 0 "${broker_overrides[@]}"
    fi
fi
