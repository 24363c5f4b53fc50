#!/usr/bin/env bash
# Installs the Debian 12 packages KafkaIQ needs to build, test and benchmark.
# Idempotent: asks dpkg which packages are missing and installs only those, so
# a machine that already has everything returns at once without touching apt.
set -euo pipefail

PACKAGES=(
    # toolchain and build
    build-essential make pkg-config
    # engine libraries
    luajit libluajit-5.1-dev libev-dev liblz4-dev libzstd-dev zlib1g-dev libsnappy-dev
    # unit and Lua tests
    libcmocka-dev lua-busted luarocks
    # real clients for interop tests and the benchmark
    kcat librdkafka-dev python3-confluent-kafka python3-kafka python3-pytest
    # codecs kafka-python loads optionally; without them it can only do gzip
    python3-snappy python3-lz4 python3-zstandard
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

# kafkajs for the interop tests, at the version tests/interop/js/package.json
# pins (package-lock.json holds its checksum). Only when it is missing, so the
# no-op case stays offline; without node the kafkajs tests skip themselves.
JS_DIR="$(dirname "$0")/../tests/interop/js"
if [[ ! -d "$JS_DIR/node_modules/kafkajs" ]]; then
    if command -v npm >/dev/null 2>&1; then
        echo "deps: installing kafkajs into tests/interop/js" >&2
        npm install --no-audit --no-fund --prefix "$JS_DIR"
    else
        echo "deps: npm not found; the kafkajs interop tests will be skipped" >&2
    fi
fi
