#!/usr/bin/env bash
# Runs every test suite — cmocka unit binaries, busted specs on LuaJIT, the
# interop suite with real clients, the Go clients' suites (franz-go's own,
# Sarama) — showing each one's output as it runs, and
# ends with one line "N passed, M failed" summed over all of them. Exits
# non-zero if anything failed or a suite could not run (a crash, a timeout or
# output without a summary line each count as one failure).
set -uo pipefail
cd "$(dirname "$0")/.."

UNIT_TIMEOUT=${KIQ_UNIT_TIMEOUT:-300}
LUA_TIMEOUT=${KIQ_LUA_TIMEOUT:-600}
INTEROP_TIMEOUT=${KIQ_INTEROP_TIMEOUT:-2700}
CURRENT_PY_TIMEOUT=${KIQ_CURRENT_PY_TIMEOUT:-1200}
FUZZ_TIMEOUT=${KIQ_FUZZ_TIMEOUT:-900}
DIFFERENTIAL_TIMEOUT=${KIQ_DIFFERENTIAL_TIMEOUT:-900}
FUZZ_SECONDS=${KIQ_FUZZ_SECONDS:-15}
GO_TIMEOUT=${KIQ_GO_TIMEOUT:-600}    # each go suite: its build, brokers and run
KGO_RECORDS=${KIQ_KGO_RECORDS:-25000} # franz-go's ETL tests; over 20000 its transactions end twice
JAVA_TIMEOUT=${KIQ_JAVA_TIMEOUT:-900}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
skipped=0
report=()
failures=() # names of failed tests, repeated in the summary so a CI tail shows them

# record SUITE PASSED FAILED [NOTE]
record() {
    passed=$((passed + $2))
    failed=$((failed + $3))
    report+=("$(printf '%-28s %5d passed, %d failed%s' "$1" "$2" "$3" "${4:+  ($4)}")")
}

# failed_tests PREFIX: each line of stdin, a failed test, kept for the summary.
failed_tests() {
    local line
    while read -r line; do
        failures+=("$1: $line")
    done
}

banner() {
    printf '\n==== %s ====\n' "$1"
}

strip_ansi() {
    sed 's/\x1b\[[0-9;]*[A-Za-z]//g'
}

count_of() { # WORD LINE -> the number before WORD in LINE, or 0
    local n
    n=$(echo "$2" | grep -oE "[0-9]+ $1" | head -n 1 | grep -oE '^[0-9]+')
    echo "${n:-0}"
}

# A suite whose last "PREFIX: N passed, N failed, N skipped" line counts it
# (its FAILED lines name the failures).
record_counted() {
    local suite=$1 out=$2 prefix=$3 rc=$4 line p f s
    line=$(grep -E "^$prefix: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped" "$out" | tail -n 1)
    if [[ -z "$line" ]]; then
        record "$suite" 0 1 "no summary, exit $rc"
        return
    fi
    p=$(count_of passed "$line")
    f=$(count_of failed "$line")
    s=$(count_of skipped "$line")
    skipped=$((skipped + s))
    failed_tests "$suite" < <(grep -E '^FAILED ' "$out" | sed 's/^FAILED //')
    if [[ $rc -ne 0 && $f -eq 0 ]]; then
        record "$suite" "$p" 1 "exit $rc"
    else
        record "$suite" "$p" "$f" "$s skipped"
    fi
}

# ------------------------------------------------------------------ unit (cmocka)
# run_unit DIR SUITE: the binaries in DIR (build/tests, or build/san/tests
# built with ASan and UBSan, where any finding aborts the binary).
run_unit() {
    local dir=$1 suite=$2 src bin name out rc p f
    # A test source without its binary means the build did not produce it.
    for src in tests/unit/test_*.c; do
        [[ -e "$src" ]] || continue
        name=$(basename "$src" .c)
        if [[ ! -x "$dir/$name" ]]; then
            banner "$suite: $name"
            echo "$dir/$name is missing (run make unit sanitize)"
            record "$suite/$name" 0 1 "not built"
        fi
    done
    for bin in "$dir"/test_*; do
        [[ -f "$bin" && -x "$bin" ]] || continue
        name=$(basename "$bin")
        out="$work/$suite-$name.out"
        banner "$suite: $name"
        CMOCKA_MESSAGE_OUTPUT=STDOUT ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
            timeout -k 10 "$UNIT_TIMEOUT" "$bin" 2>&1 | tee "$out"
        rc=${PIPESTATUS[0]}
        p=$(strip_ansi <"$out" | awk '/^\[  PASSED  \] [0-9]+ test/ { n += $4 } END { print n + 0 }')
        f=$(strip_ansi <"$out" | awk '/^\[  FAILED  \] [0-9]+ test/ { n += $4 } END { print n + 0 }')
        failed_tests "$suite/$name" < <(strip_ansi <"$out" | grep -E '^\[  FAILED  \] [a-z]' | sed 's/^\[  FAILED  \] //')
        if ! strip_ansi <"$out" | grep -qE '^\[  (PASSED|FAILED)  \] [0-9]+ test'; then
            record "$suite/$name" "$p" $((f + 1)) "no summary, exit $rc"
        elif [[ $rc -ne 0 && $f -eq 0 ]]; then
            record "$suite/$name" "$p" 1 "exit $rc"
        else
            record "$suite/$name" "$p" "$f"
        fi
    done
}

# ------------------------------------------------------------------ fuzz (libFuzzer)
# Each target briefly, then the planted-bug build, which must be caught;
# scripts/fuzz.sh prints one "fuzz/NAME: ok|..." line per check.
run_fuzz() {
    local out="$work/fuzz.out" line name
    banner "fuzz"
    timeout -k 10 "$FUZZ_TIMEOUT" scripts/fuzz.sh test "$FUZZ_SECONDS" 2>&1 | tee "$out"
    while read -r line; do
        name=${line%%:*}
        case $line in
        *": ok"*) record "$name" 1 0 ;;
        *) record "$name" 0 1 "${line#*: }" ;;
        esac
    done < <(strip_ansi <"$out" | grep -E '^fuzz/[a-z]+: ')
    strip_ansi <"$out" | grep -qE '^fuzz/planted: ' || record fuzz 0 1 "no summary"
}

# ------------------------------------------------------------------ lua (busted)
run_lua() {
    local out="$work/busted.out" rc line p f e pend
    if ! compgen -G 'tests/lua/*_spec.lua' >/dev/null; then
        return
    fi
    banner "lua: busted tests/lua"
    timeout -k 10 "$LUA_TIMEOUT" luajit /usr/bin/busted --lpath='lua/?.lua;lua/?/init.lua' --cpath='build/lua/?.so' \
        tests/lua 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    line=$(strip_ansi <"$out" |
        grep -E '[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending' | tail -n 1)
    if [[ -z "$line" ]]; then
        record "lua/busted" 0 1 "no summary, exit $rc"
        return
    fi
    p=$(count_of success "$line")
    f=$(count_of failure "$line")
    e=$(count_of error "$line")
    pend=$(count_of pending "$line")
    skipped=$((skipped + pend))
    # busted: "Failure -> FILE @ LINE" (or Error), the test's name on the next line
    failed_tests lua < <(strip_ansi <"$out" | grep -A1 -E '^(Failure|Error) (→|->) ' | grep -vE '^--$' | paste -d' ' - -)
    if [[ $rc -ne 0 && $((f + e)) -eq 0 ]]; then
        record "lua/busted" "$p" 1 "exit $rc"
    else
        record "lua/busted" "$p" $((f + e)) "${pend} pending"
    fi
}

# ------------------------------------------------------------------ interop (pytest)
# record_pytest SUITE OUT RC: the counts of pytest's closing line in OUT,
# e.g. "2 failed, 95 passed, 3 skipped, 1 error in 99.35s", and its failed
# tests' names.
record_pytest() {
    local suite=$1 out=$2 rc=$3 line p f e s
    line=$(strip_ansi <"$out" | grep -E '([0-9]+ (passed|failed|errors?|skipped)|no tests ran).* in [0-9.]+s' |
        tail -n 1)
    if [[ -z "$line" ]]; then
        record "$suite" 0 1 "no summary, exit $rc"
        return
    fi
    p=$(count_of passed "$line")
    f=$(count_of failed "$line")
    e=$(count_of error "$line")
    s=$(count_of skipped "$line")
    skipped=$((skipped + s))
    failed_tests "$suite" < <(strip_ansi <"$out" | grep -E '^(FAILED|ERROR) ')
    if [[ $((p + f + e)) -eq 0 ]]; then
        record "$suite" 0 1 "no test ran, exit $rc"
    elif [[ $rc -ne 0 && $((f + e)) -eq 0 ]]; then
        record "$suite" "$p" 1 "exit $rc"
    else
        record "$suite" "$p" $((f + e)) "$s skipped, $e errors"
    fi
}

# ------------------------------------------------------------------ differential
# The same requests to Apache Kafka (scripts/kafka.sh) and to KafkaIQ,
# compared (tests/differential). Its last line:
#   differential: S scenarios, C cases, I identical, A allowed, F different
run_differential() {
    local out="$work/differential.out" rc line i a f
    banner "differential: Apache Kafka beside KafkaIQ"
    timeout -k 30 "$DIFFERENTIAL_TIMEOUT" build/kafkaiq run tests/differential/run.lua 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    line=$(strip_ansi <"$out" | grep -E '^differential: [0-9]+ scenarios' | tail -n 1)
    if [[ -z "$line" ]]; then
        record "differential" 0 1 "no summary, exit $rc"
        return
    fi
    i=$(count_of identical "$line")
    a=$(count_of allowed "$line")
    f=$(count_of different "$line")
    failed_tests differential < <(strip_ansi <"$out" | grep -vE '^differential: ' | grep -E ' (different|DIFFERENT)( |$)' | sed 's/  */ /g')
    if [[ $rc -ne 0 && $f -eq 0 ]]; then
        record "differential" $((i + a)) 1 "exit $rc"
    else
        record "differential" $((i + a)) "$f" "$a with allowed differences"
    fi
}

# ------------------------------------------------------------------ go (go test -json)
# run_go SUITE N PACKAGE [VAR=VALUE]...: go test PACKAGE from the module in
# tests/interop/go (which pins the clients; scripts/deps.sh downloads them, so
# GOPROXY=off keeps this offline) against N brokers that with_brokers.py
# starts and stops; gotest_summary.py turns the JSON events into result
# lines and the "go test: N passed, N failed, N skipped" line counted here.
run_go() {
    local suite=$1 n=$2 pkg=$3 out rc
    shift 3
    out="$work/${suite//\//-}.out"
    banner "$suite: go test $pkg against $n broker(s)"
    if ! command -v go >/dev/null 2>&1; then
        echo "go not found (scripts/deps.sh checks for it)"
        record "$suite" 0 1 "no go"
        return
    fi
    (cd tests/interop/go && env GOPROXY=off "$@" timeout -k 30 "$GO_TIMEOUT" /usr/bin/python3 with_brokers.py "$n" \
        go test -json -count=1 -timeout "$((GO_TIMEOUT - 60))s" "$pkg" |
        /usr/bin/python3 gotest_summary.py) 2>&1 |
        tee "$out"
    rc=${PIPESTATUS[0]}
    record_counted "$suite" "$out" "go test" "$rc"
}

# franz-go's own integration tests (pkg/kgo), RF as the brokers allow; its
# SCRAM tests against the SASL_PLAINTEXT node with_brokers.py starts beside
# the brokers for KGO_TEST_SCRAM (a few seconds); OAUTHBEARER's skip
# themselves (not served).
run_kgo() {
    run_go "go/kgo-brokers-$1" "$1" github.com/twmb/franz-go/pkg/kgo \
        KGO_TEST_RF="$1" KGO_TEST_RECORDS="$KGO_RECORDS" KGO_TEST_UNSAFE=1 KGO_TEST_SCRAM=franz:franz-secret:512
}

run_interop() {
    local out="$work/pytest.out" rc
    banner "interop: pytest tests/interop"
    PYTHONDONTWRITEBYTECODE=1 timeout -k 30 "$INTEROP_TIMEOUT" \
        /usr/bin/python3 -m pytest tests/interop -q -p no:cacheprovider 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    record_pytest interop/pytest "$out" "$rc"
}

# The newest Python clients (confluent-kafka-python, kafka-python 3) from
# build/venv, which scripts/deps.sh makes: without it the suite fails.
run_current_py() {
    local out="$work/current-py.out" py=build/venv/bin/python rc
    banner "interop: newest Python clients, build/venv pytest tests/interop/current"
    if [[ ! -x $py ]]; then
        echo "$py is missing (run make deps)"
        record interop/current-py 0 1 "no build/venv"
        return
    fi
    PYTHONDONTWRITEBYTECODE=1 timeout -k 30 "$CURRENT_PY_TIMEOUT" \
        "$py" -m pytest tests/interop/current -q -p no:cacheprovider 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    record_pytest interop/current-py "$out" "$rc"
}

# ------------------------------------------------------------------ launchers
# Each launcher's own tests in its language (launchers/), against
# build/kafkaiq through KAFKAIQ_BIN, as an installed kafkaiq would be found.
run_launcher_pytest() {
    local out="$work/launcher-py.out" rc
    banner "launchers: pytest launchers/python/tests"
    KAFKAIQ_BIN="$PWD/build/kafkaiq" PYTHONPATH="$PWD/launchers/python" PYTHONDONTWRITEBYTECODE=1 \
        timeout -k 30 "$CURRENT_PY_TIMEOUT" \
        /usr/bin/python3 -m pytest launchers/python/tests -q -p no:cacheprovider 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    record_pytest launchers/pytest "$out" "$rc"
}

# launchers/go: the package for testing.T, with franz-go, offline.
run_launcher_go() {
    local out="$work/launcher-go.out" rc line
    banner "launchers: go test launchers/go"
    if ! command -v go >/dev/null 2>&1; then
        record launchers/go 0 1 "no go"
        return
    fi
    (cd launchers/go && GOPROXY=off KAFKAIQ_BIN="$PWD/../../build/kafkaiq" timeout -k 30 "$GO_TIMEOUT" \
        go test -json -count=1 -timeout "$((GO_TIMEOUT - 60))s" ./... |
        /usr/bin/python3 ../../tests/interop/go/gotest_summary.py) 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    record_counted launchers/go "$out" "go test" "$rc"
}

# launchers/node: the module for vitest and jest, with kafkajs, under vitest.
run_launcher_node() {
    local out="$work/launcher-node.out" rc
    banner "launchers: vitest launchers/node"
    if [[ ! -d launchers/node/node_modules/vitest ]]; then
        echo "launchers/node/node_modules is missing (run make deps)"
        record launchers/node 0 1 "no node_modules"
        return
    fi
    KAFKAIQ_BIN="$PWD/build/kafkaiq" timeout -k 30 "$CURRENT_PY_TIMEOUT" node launchers/node/run-tests.mjs 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    record_counted launchers/node "$out" vitest "$rc"
}

# ------------------------------------------------------------------ java (JUnit 5 under Maven)
# A Maven project's JUnit 5 tests against build/kafkaiq: tests/interop/java
# (the Java producer, consumer groups, Admin client, transactions, Kafka
# Streams and kafka-tools' system-test clients) and launchers/java (the
# @KafkaIQ extension). Offline: scripts/deps.sh resolved the poms'
# artefacts. Counts come from surefire's XML reports.
run_java() {
    local suite=$1 pom=$2 reports=$3 out rc counts p f e s
    out="$work/${suite//\//-}.out"
    banner "$suite: mvn test ($pom)"
    if ! command -v mvn >/dev/null 2>&1; then
        echo "mvn not found (scripts/deps.sh installs Maven and a JDK)"
        record "$suite" 0 1 "mvn missing"
        return
    fi
    rm -rf "$reports"
    KAFKAIQ_BIN="$PWD/build/kafkaiq" timeout -k 30 "$JAVA_TIMEOUT" mvn -B -ntp -o -f "$pom" test 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    # "passed failed errors skipped" summed over the reports; failed tests' names into java.failed
    counts=$(/usr/bin/python3 - "$reports" "$work/java.failed" <<'EOF'
import glob, sys, xml.etree.ElementTree as ET
tot = [0, 0, 0, 0]
names = []
for path in sorted(glob.glob(sys.argv[1] + "/TEST-*.xml")):
    for case in ET.parse(path).getroot().iter("testcase"):
        kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), None)
        tot[{None: 0, "failure": 1, "error": 2, "skipped": 3}[kind]] += 1
        if kind in ("failure", "error"):
            names.append(case.get("classname", "").rsplit(".", 1)[-1] + "." + case.get("name", ""))
open(sys.argv[2], "w").write("".join(n + "\n" for n in names))
print(*tot)
EOF
    )
    read -r p f e s <<<"$counts"
    skipped=$((skipped + ${s:-0}))
    failed_tests "$suite" <"$work/java.failed"
    if [[ $((${p:-0} + ${f:-0} + ${e:-0})) -eq 0 ]]; then
        record "$suite" 0 1 "no test ran, exit $rc"
    elif [[ $rc -ne 0 && $((f + e)) -eq 0 ]]; then
        record "$suite" "$p" 1 "exit $rc"
    else
        record "$suite" "$p" $((f + e)) "$s skipped, $e errors"
    fi
}

run_unit build/tests unit
run_unit build/san/tests unit-asan
run_fuzz
run_lua
run_differential
run_interop
run_kgo 1
run_kgo 3
# the module's own tests: the Sarama scenario, and franz-go's cells of the
# security client matrix against the secured nodes KIQ_TEST_SECURITY adds
run_go go/sarama 1 ./... KIQ_TEST_SECURITY=1
run_current_py
run_launcher_pytest
run_launcher_go
run_launcher_node
run_java java/junit tests/interop/java/pom.xml build/interop-java/surefire-reports
run_java launchers/junit5 launchers/java/pom.xml build/launcher-java/surefire-reports

banner "summary"
printf '%s\n' "${report[@]}"
[[ ${#failures[@]} -gt 0 ]] && printf 'failed: %s\n' "${failures[@]}"
[[ $skipped -gt 0 ]] && echo "($skipped skipped or pending, not counted)"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
