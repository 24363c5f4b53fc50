#!/usr/bin/env bash
# Captures tests/corpus again: the request frames real Kafka clients send to
# a KafkaIQ broker. Starts build/kafkaiq on a free loopback port with a
# temporary data directory, runs a fixed small workload of each client
# (kcat and confluent-kafka on Debian's librdkafka, node-rdkafka's and
# @confluentinc/kafka-javascript's bundled librdkafka, kafka-python,
# kafkajs, @platformatic/kafka) while tcpdump records what goes to the
# broker's port (for one run, to a mock peer's that caps some versions), then
# scripts/corpus/extract.py splits each client's streams into frames and
# writes the index (tests/corpus/README.md).
#
#   scripts/capture_corpus.sh [OUT]      OUT: tests/corpus by default
#
# Run by hand to refresh the corpus (make test only reads it): tcpdump needs
# root or CAP_NET_RAW, and the Node clients tests/interop/js/node_modules
# (scripts/deps.sh). Review the change with git status / git diff --stat.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${1:-tests/corpus}
BIN=build/kafkaiq
JS=tests/interop/js
PY=/usr/bin/python3
STEP_TIMEOUT=120
WORK=$(mktemp -d /tmp/kiq-corpus.XXXXXX)
BROKER=
DUMP=
MOCK=

# the captures, logs and broker log stay for a look when something failed
cleanup() {
    local rc=$?
    [[ -n $DUMP ]] && kill -INT "$DUMP" 2>/dev/null && wait "$DUMP" 2>/dev/null
    [[ -n $BROKER ]] && kill -TERM "$BROKER" 2>/dev/null && wait "$BROKER" 2>/dev/null
    [[ -n $MOCK ]] && kill -TERM "$MOCK" 2>/dev/null && wait "$MOCK" 2>/dev/null
    if ((rc == 0)); then
        rm -rf "$WORK"
    else
        echo "capture_corpus: captures and logs kept in $WORK" >&2
    fi
}
trap cleanup EXIT

die() {
    echo "capture_corpus: $*" >&2
    exit 1
}

for tool in tcpdump kcat node "$PY"; do
    command -v "$tool" >/dev/null || die "$tool is missing (scripts/deps.sh)"
done
[[ -x $BIN ]] || die "$BIN is missing (make all)"
[[ -d $JS/node_modules/kafkajs ]] || die "$JS/node_modules is missing (scripts/deps.sh)"

# a port below the ephemeral range, so no outgoing connection takes it
# between this check and the broker's bind
PORT=$("$PY" - <<'EOF'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(64):
    port = random.randrange(10000, low)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    print(port)
    break
EOF
)
[[ -n $PORT ]] || die "no free port below the ephemeral range"
export B=127.0.0.1:$PORT

mkdir -p "$WORK/data"
"$BIN" serve config/server.properties --override "listeners=PLAINTEXT://$B" \
    --override "log.dirs=$WORK/data" --override "kafkaiq.http.listener=" >"$WORK/broker.log" 2>&1 &
BROKER=$!

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.1 s
wait_for() {
    local secs=$1 what=$2
    shift 2
    for ((i = 0; i < secs * 10; i++)); do
        "$@" 2>/dev/null && return 0
        sleep 0.1
    done
    die "no $what within $secs s"
}
accepts() { (: <"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }
wait_for 10 "broker on $B" accepts

# capture FOLDER CLIENT PORT COMMAND...: the requests COMMAND's client
# sends to PORT, recorded while it runs; CLIENT names the client library and
# its version
capture() {
    local folder=$1 client=$2 port=$3 pcap=$WORK/$1.pcap
    shift 3
    echo "capture_corpus: $folder ($client)"
    tcpdump -i lo -U --immediate-mode -s 0 -Z "$(id -un)" -w "$pcap" "tcp dst port $port" \
        2>"$WORK/$folder.tcpdump" &
    DUMP=$!
    wait_for 10 "tcpdump listening" grep -q "listening on" "$WORK/$folder.tcpdump"
    # a bash under timeout, so COMMAND may be one of the functions below
    if ! timeout "$STEP_TIMEOUT" bash -ec '"$@"' "$folder" "$@" >"$WORK/$folder.log" 2>&1; then
        tail -30 "$WORK/$folder.log" >&2
        die "$folder: $* failed"
    fi
    kill -INT "$DUMP"
    wait "$DUMP" || true
    DUMP=
    printf '%s\t%s\t%s\t%s\n' "$folder" "$client" "$port" "$pcap" >>"$WORK/steps.tsv"
}

# ---- librdkafka through kcat (Debian's librdkafka) ----
RDKAFKA=librdkafka-$(kcat -V | grep -oE 'librdkafka [0-9.]+' | cut -d' ' -f2)

# 20 records "1".."20", key "k", header hdr=val, in one batch
# (tests/unit/test_batch.c reads them back)
kcat_produce() { # CODEC
    seq 1 20 | kcat -b "$B" -P -t "corpus-kcat-$1" -z "$1" -k k -H hdr=val \
        -X "client.id=kcat-$1" -X linger.ms=200
}
export -f kcat_produce
for codec in none gzip snappy lz4 zstd; do
    capture "kcat-$codec" "$RDKAFKA" "$PORT" kcat_produce "$codec"
done

kcat_session() {
    kcat -b "$B" -L
    kcat -b "$B" -C -t corpus-kcat-none -o beginning -e -q
    kcat -b "$B" -G corpus-kcat-group corpus-kcat-gzip -e -q -X auto.offset.reset=earliest
    kcat -b "$B" -Q -t corpus-kcat-none:0:-1
    seq 1 3 | kcat -b "$B" -P -t corpus-kcat-txn -X transactional.id=corpus-kcat-txn
}
export -f kcat_session
capture rdkafka "$RDKAFKA" "$PORT" kcat_session

# ---- confluent-kafka (Python, Debian's librdkafka) ----
for op in admin produce transact consume; do
    capture "confluent-$op" "$RDKAFKA" "$PORT" "$PY" scripts/corpus/confluent.py "$op" "$B"
done

# ---- current librdkafkas, as the Node modules bundle them: js/rdkafka.js
# drives the producer, consumer and topic admin, tests/interop/rdkafka_admin.c
# (built here against each) the admin calls their Node API lacks ----
echo '[{"k": "k0", "v": "v0"}, {"k": "k1", "v": "v1"}]' >"$WORK/records.json"
# ok COMMAND...: runs it, failing on an admin call's {"error": ...} answer
# (rdkafka.js and rdkafka_admin exit 0 with one)
ok() {
    local out
    out=$("$@")
    echo "$out"
    [[ $out != *'{"error"'* ]]
}
rdkafka_current() { # MODULE ADMIN_TOOL
    local t=corpus-$1 js=(ok node "$JS/rdkafka.js")
    t=${t//[@\/]/-}
    export KIQ_RDKAFKA_MODULE=$1
    "${js[@]}" create-topic --bootstrap "$B" --topic "$t" --partitions 2
    "${js[@]}" create-topic --bootstrap "$B" --topic "$t-gone" --partitions 1
    "${js[@]}" create-partitions --bootstrap "$B" --topic "$t" --total 3
    "${js[@]}" metadata --bootstrap "$B"
    "${js[@]}" produce --bootstrap "$B" --topic "$t" --input "$WORK/records.json" --codec zstd --idempotent
    "${js[@]}" produce --bootstrap "$B" --topic "$t" --input "$WORK/records.json" --codec snappy --acks 1
    "${js[@]}" consume-group --bootstrap "$B" --topic "$t" --group "$t-group" --count 4
    ok "$2" "$B" describe-configs topic "$t"
    ok "$2" "$B" alter-configs topic "$t" set:retention.ms=86400000
    ok "$2" "$B" describe-cluster
    ok "$2" "$B" describe-topics "$t"
    ok "$2" "$B" list-groups
    ok "$2" "$B" describe-groups "$t-group"
    ok "$2" "$B" group-offsets "$t-group"
    ok "$2" "$B" list-offsets latest "$t:0"
    "${js[@]}" delete-topic --bootstrap "$B" --topic "$t-gone"
}
export -f ok rdkafka_current
export WORK JS
NEWEST=@confluentinc/kafka-javascript
# build_against MODULE OUT SOURCE: SOURCE built against MODULE's
# librdkafka
build_against() {
    local deps=$JS/node_modules/$1/build/deps
    cc -std=c11 -D_GNU_SOURCE -O1 -o "$2" "$3" "-I$deps/include" "-L$deps" -lrdkafka \
        "-Wl,-rpath,$(realpath "$deps")"
}
librdkafka_of() { (cd "$JS" && node -e "console.log(require('$1').librdkafkaVersion)"); }
for module in node-rdkafka "$NEWEST"; do
    version=$(librdkafka_of "$module")
    build_against "$module" "$WORK/rdkafka_admin-$version" tests/interop/rdkafka_admin.c
    capture "rdkafka-$version" "librdkafka-$version" "$PORT" rdkafka_current "$module" \
        "$WORK/rdkafka_admin-$version"
done

# ---- the newest against a peer that caps Produce at v9, Fetch at v12 and
# OffsetFetch at v6 (librdkafka's mock cluster, tests/interop/mock_peer.c):
# the versions it sends an older broker ----
capped_session() { # MODULE BOOTSTRAP
    local js=(node "$JS/rdkafka.js")
    export KIQ_RDKAFKA_MODULE=$1
    "${js[@]}" produce --bootstrap "$2" --topic corpus-capped --input "$WORK/records.json" --codec gzip
    "${js[@]}" consume-group --bootstrap "$2" --topic corpus-capped --group corpus-capped-group --count 2
}
export -f capped_session
version=$(librdkafka_of "$NEWEST")
build_against "$NEWEST" "$WORK/mock_peer" tests/interop/mock_peer.c
coproc PEER { exec "$WORK/mock_peer" -c 0:9 -c 1:12 -c 9:6 2>"$WORK/mock_peer.log"; }
MOCK=$PEER_PID # bash unsets PEER_PID once it exits
read -r peer <&"${PEER[0]}" || die "the mock peer did not start: $(cat "$WORK/mock_peer.log")"
capture "rdkafka-$version-capped" "librdkafka-$version" "${peer##*:}" capped_session "$NEWEST" "$peer"
kill -TERM "$MOCK"
wait "$MOCK" || die "the mock peer exited $? on SIGTERM"
MOCK=

# ---- kafka-python ----
KAFKA_PYTHON=kafka-python-$("$PY" -c 'import kafka; print(kafka.__version__)')
for op in admin produce consume; do
    capture "kafka-python-$op" "$KAFKA_PYTHON" "$PORT" "$PY" scripts/corpus/kafka_python.py "$op" "$B"
done

# ---- kafkajs ----
js_version() { node -p "require('./$JS/node_modules/$1/package.json').version"; }
KAFKAJS=kafkajs-$(js_version kafkajs)
for op in admin produce consume; do
    capture "kafkajs-$op" "$KAFKAJS" "$PORT" env NODE_PATH="$JS/node_modules" node scripts/corpus/kafkajs.js "$op" "$B"
done

# ---- @platformatic/kafka ----
PLATFORMATIC=platformatic-kafka-$(js_version @platformatic/kafka)
platformatic() {
    local js=(node "$JS/platformatic.mjs")
    "${js[@]}" create-topic --bootstrap "$B" --topic corpus-platformatic --partitions 2
    "${js[@]}" produce --bootstrap "$B" --topic corpus-platformatic --count 2
    "${js[@]}" produce --bootstrap "$B" --topic corpus-platformatic --count 2 --compression lz4
    "${js[@]}" consume --bootstrap "$B" --topic corpus-platformatic --group corpus-platformatic-group --count 4
}
export -f platformatic
capture platformatic "$PLATFORMATIC" "$PORT" platformatic

kill -TERM "$BROKER"
wait "$BROKER" || die "the broker exited $? on SIGTERM: $(tail -20 "$WORK/broker.log")"
BROKER=

# every folder is the capture's: a refresh replaces them all
mkdir -p "$OUT"
find "$OUT" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
"$PY" scripts/corpus/extract.py "$WORK/steps.tsv" "$OUT"
