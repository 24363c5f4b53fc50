#!/usr/bin/env bash
# librdkafka's own integration tests against KafkaIQ, by hand:
#
#   scripts/rdkafka-suite.sh SRC [TESTS...]
#
# SRC: a librdkafka source checkout (a 2.x tag, v2.15.0 say). Its library
# and tests/test-runner are built when missing (./configure, make libs,
# make -C tests build: some minutes). TESTS: test numbers (default the
# consumer group ones: 0029 0030 0113). They run one after another against
# one broker this script starts on free ports (num.partitions=4 and topic
# auto-creation, as librdkafka's trivup clusters have them) and stops.
# Environment: TEST_CONSUMER_GROUP_PROTOCOL (default consumer; classic for
# the classic protocol), TEST_KAFKA_VERSION (default 4.0.0), KIQ_BIN.
# Each test's output goes to build/rdkafka-suite/NNNN.log; a line per test
# and a count at the end.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(cd "${1:?usage: $0 LIBRDKAFKA_SRC [TESTS...]}" && pwd) || exit 2
shift
tests=("$@")
[[ ${#tests[@]} -gt 0 ]] || tests=(0029 0030 0113)
bin=${KIQ_BIN:-$root/build/kafkaiq}
[[ -x "$bin" ]] || { echo "$bin is missing: run make" >&2; exit 2; }

if [[ ! -x "$src/tests/test-runner" ]]; then
    (cd "$src" && ./configure --disable-ssl --disable-gssapi --disable-sasl --disable-curl &&
        make -j2 libs && make -C tests build) || { echo "building librdkafka failed" >&2; exit 2; }
fi

out=$root/build/rdkafka-suite
rm -rf "$out"
mkdir -p "$out"
read -r port http < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
"$bin" serve "$root/config/server.properties" --override "listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "log.dirs=$out/data" --override "kafkaiq.http.listener=127.0.0.1:$http" \
    --override num.partitions=4 --override auto.create.topics.enable=true >"$out/broker.log" 2>&1 &
broker=$!
trap 'kill "$broker" 2>/dev/null; wait "$broker" 2>/dev/null' EXIT
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done

printf 'bootstrap.servers=127.0.0.1:%s\n' "$port" >"$out/test.conf"
passed=0 failed=0
for t in "${tests[@]}"; do
    (cd "$src/tests" && env LD_LIBRARY_PATH="$src/src:$src/src-cpp" TESTS="$t" RDKAFKA_TEST_CONF="$out/test.conf" \
        TEST_KAFKA_VERSION="${TEST_KAFKA_VERSION:-4.0.0}" \
        TEST_CONSUMER_GROUP_PROTOCOL="${TEST_CONSUMER_GROUP_PROTOCOL:-consumer}" ./test-runner) >"$out/$t.log" 2>&1
    rc=$?
    # the runner's summary table: "| NNNN_name | PASSED |"
    sed 's/\x1b\[[0-9;]*m//g; s/\x1b([A-Z]//g' "$out/$t.log" | grep -E "^\| [0-9]{4}_" | tr -s ' '
    if [[ $rc -eq 0 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "$t: failed (exit $rc), see $out/$t.log"; fi
done
echo "$passed passed, $failed failed (TEST_CONSUMER_GROUP_PROTOCOL=${TEST_CONSUMER_GROUP_PROTOCOL:-consumer})"
[[ $failed -eq 0 ]]
