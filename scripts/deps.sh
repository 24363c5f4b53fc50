#!/usr/bin/env bash
# Installs the Debian 12 packages KafkaIQ needs to build, test and benchmark.
# Idempotent: asks dpkg which packages are missing and installs only those, so
# a machine that already has everything returns at once without touching apt.
set -euo pipefail

PACKAGES=(
    # toolchain and build
    build-essential make pkg-config
    # engine libraries (libmicrohttpd and jansson for the HTTP listener)
    luajit libluajit-5.1-dev libev-dev liblz4-dev libzstd-dev zlib1g-dev libsnappy-dev
    libmicrohttpd-dev libjansson-dev
    # regex subscriptions of KIP-848 consumer groups (RE2/J syntax)
    libpcre2-dev
    # TLS listeners and SASL/SCRAM (OpenSSL 3); openssl makes the tests' certificates
    libssl-dev openssl
    # OAUTHBEARER tokens signed by a JWKS's keys (JOSE on OpenSSL and jansson)
    libcjose-dev
    # the CRC-32C of record batches (Intel's ISA-L)
    libisal-dev
    # unit and Lua tests; clang with libFuzzer for the fuzz targets
    libcmocka-dev lua-busted luarocks clang libclang-rt-14-dev
    # prlimit for the open-files test
    util-linux
    # the Prometheus server the metrics tests scrape with
    prometheus
    # the browser the live page's test drives (headless) and its driver
    chromium chromium-driver python3-selenium
    # real clients for interop tests and the benchmark; iperf3 measures the
    # loopback the benchmark compares produce throughput with
    kcat librdkafka-dev python3-confluent-kafka python3-kafka python3-pytest iperf3 valgrind
    # what the librdkafka the Node clients bundle links against when built here
    libssl-dev
    # codecs kafka-python loads optionally; without them it can only do gzip
    python3-snappy python3-lz4 python3-zstandard
    # what scripts/capture_corpus.sh records the clients' requests with
    tcpdump
    # the virtual environment of the newest Python clients (below)
    python3-venv
)

# One dpkg-query for all names keeps the no-op case fast; names dpkg has never
# heard of are simply absent from its output.
installed=" $(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "${PACKAGES[@]}" 2>/dev/null |
    awk '$2 == "installed" { printf "%s ", $1 }' || true)"
missing=()
for pkg in "${PACKAGES[@]}"; do
    if [[ "$installed" != *" $pkg "* ]]; then
        missing+=("$pkg")
    fi
done
# kafkajs runs on Node.js; Debian's is taken only where no node/npm is on
# PATH already (a machine may have its own).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    missing+=(nodejs npm)
fi
# The reference broker (Apache Kafka 4, Java 17+) and the JVM clients'
# suites: a JDK and Maven, Debian's where the machine has none of its own.
if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
    missing+=(openjdk-17-jdk-headless)
fi
if ! command -v mvn >/dev/null 2>&1; then
    missing+=(maven)
fi

if [[ ${#missing[@]} -gt 0 ]]; then
    echo "deps: installing ${missing[*]}" >&2
    SUDO=()
    if [[ $(id -u) -ne 0 ]]; then
        SUDO=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -q
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Node clients for the interop tests, at the versions tests/interop/js/
# package.json pins (package-lock.json holds their checksums): kafkajs,
# @platformatic/kafka, node-rdkafka and @confluentinc/kafka-javascript, whose
# installs build the librdkafka they bundle (2.12 and 2.15.1; about three
# minutes on two cores) against the headers of the Node on PATH, the latter
# with CKJS_LINKING=dynamic so that it links Debian's zlib, zstd, lz4 and
# OpenSSL instead of downloading their sources. Only when one is missing, so
# the no-op case stays offline; without node the JS interop tests skip
# themselves.
JS_DIR="$(dirname "$0")/../tests/interop/js"
js_installed() {
    [[ -d "$JS_DIR/node_modules/kafkajs" && -d "$JS_DIR/node_modules/@platformatic/kafka" &&
        -f "$JS_DIR/node_modules/node-rdkafka/build/Release/node-librdkafka.node" &&
        -f "$JS_DIR/node_modules/@confluentinc/kafka-javascript/build/Release/confluent-kafka-javascript.node" ]]
}
if ! js_installed; then
    if command -v npm >/dev/null 2>&1; then
        # node-gyp wants the prefix whose include/node/ holds node.h
        nodedir=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
        if [[ ! -f "$nodedir/include/node/node.h" && -f /etc/debian_version ]]; then
            echo "deps: installing libnode-dev (Node headers for node-rdkafka)" >&2
            SUDO=()
            [[ $(id -u) -ne 0 ]] && SUDO=(sudo)
            "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
                apt-get install -y -q --no-install-recommends libnode-dev
        fi
        echo "deps: installing the Node clients into tests/interop/js (two of them build librdkafka)" >&2
        CKJS_LINKING=dynamic npm ci --no-audit --no-fund --nodedir="$nodedir" --prefix "$JS_DIR"
    else
        echo "deps: npm not found; the JS interop tests will be skipped" >&2
    fi
fi

# Apache Kafka, the reference broker (scripts/kafka.sh; the version
# tests/reference/pom.xml pins), resolved by Maven into build/kafka/lib once.
"$(dirname "$0")/kafka.sh" fetch

# Go clients for tests/interop/go (Sarama, and franz-go, whose own pkg/kgo
# tests run against kafkaiq), at the versions its go.mod pins (go.sum holds
# their checksums), into Go's module cache; the tests then run offline
# (GOPROXY=off). Only when one is missing: the offline download is the check.
# Go itself (1.26, as go.mod says) is the machine's.
GO_DIR="$(dirname "$0")/../tests/interop/go"
if command -v go >/dev/null 2>&1; then
    if ! (cd "$GO_DIR" && GOPROXY=off go mod download >/dev/null 2>&1); then
        echo "deps: downloading the Go modules tests/interop/go/go.mod pins" >&2
        (cd "$GO_DIR" && go mod download)
    fi
else
    echo "deps: go not found; the Go interop suites (franz-go, Sarama) will fail" >&2
fi

# The newest Python clients, pinned in tests/interop/current/requirements.txt
# (confluent-kafka-python, whose wheel bundles a current librdkafka, and
# kafka-python 3), in build/venv: Debian's older ones, which the rest of the
# interop suite uses, stay as they are. Only when missing or re-pinned.
"$(dirname "$0")/venv.sh" "$(dirname "$0")/../build/venv" "$(dirname "$0")/../tests/interop/current/requirements.txt"

# The Java interop suite (tests/interop/java): kafka-clients, Kafka Streams and
# kafka-tools at the version its pom pins, JUnit 5 and Maven's plugins, into
# Maven's local repository (~/.m2). Resolved by running the suite's test goal
# with a filter that selects no test: surefire fetches its JUnit Platform
# provider only when it starts the tests, and scripts/run-tests.sh runs Maven
# offline. Only when an artefact is missing, so the no-op case stays offline.
JAVA_POM="$(dirname "$0")/../tests/interop/java/pom.xml"
java_deps_installed() {
    local m2=$HOME/.m2/repository kafka surefire a
    kafka=$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' "$JAVA_POM")
    surefire=$(grep -A1 '<artifactId>maven-surefire-plugin</artifactId>' "$JAVA_POM" |
        sed -n 's|.*<version>\(.*\)</version>.*|\1|p')
    for a in kafka-clients kafka-streams kafka-tools; do
        [[ -f "$m2/org/apache/kafka/$a/$kafka/$a-$kafka.jar" ]] || return 1
    done
    [[ -f "$m2/org/apache/maven/surefire/surefire-junit-platform/$surefire/surefire-junit-platform-$surefire.jar" ]]
}
if ! java_deps_installed; then
    echo "deps: resolving the Java interop suite's Maven artefacts (tests/interop/java/pom.xml)" >&2
    mvn -B -q -ntp -f "$JAVA_POM" test -Dtest='ProducerTest#none' -Dsurefire.failIfNoSpecifiedTests=false
fi

# The launchers' own suites (launchers/): the Go package's modules (those of
# its go.mod, checked offline first), the Node module's vitest and kafkajs
# (its package-lock) and the JUnit extension's Maven artefacts.
LAUNCHERS="$(dirname "$0")/../launchers"
if command -v go >/dev/null 2>&1 &&
    ! (cd "$LAUNCHERS/go" && GOPROXY=off go mod download >/dev/null 2>&1); then
    echo "deps: downloading the Go modules launchers/go/go.mod pins" >&2
    (cd "$LAUNCHERS/go" && go mod download)
fi
if command -v npm >/dev/null 2>&1 && [[ ! -d "$LAUNCHERS/node/node_modules/vitest" ]]; then
    echo "deps: installing launchers/node's test dependencies (vitest, kafkajs)" >&2
    npm ci --no-audit --no-fund --prefix "$LAUNCHERS/node"
fi
launcher_java_installed() {
    local m2=$HOME/.m2/repository
    [[ -f $m2/org/junit/platform/junit-platform-launcher/1.11.4/junit-platform-launcher-1.11.4.jar &&
        -f $m2/org/slf4j/slf4j-simple/1.7.36/slf4j-simple-1.7.36.jar &&
        -f $m2/com/fasterxml/jackson/core/jackson-databind/2.21.7/jackson-databind-2.21.7.jar ]]
}
if command -v mvn >/dev/null 2>&1 && ! launcher_java_installed; then
    echo "deps: resolving the JUnit launcher's Maven artefacts (launchers/java/pom.xml)" >&2
    mvn -B -q -ntp -f "$LAUNCHERS/java/pom.xml" test -Dtest='PlainApiTest#none' -Dsurefire.failIfNoSpecifiedTests=false
fi
