#!/usr/bin/env bash
# The libFuzzer targets in tests/fuzz, built with clang against the engine
# compiled for fuzzing (ASan, UBSan, coverage) in build/fuzzlib.
#   scripts/fuzz.sh build          builds the targets and writes the seeds
#   scripts/fuzz.sh run SECONDS    runs each target that long (make fuzz)
#   scripts/fuzz.sh test SECONDS   what make test runs: each target briefly,
#                                  then the planted-bug build must be caught
# Seeds: what tests/fuzz/fuzz_seeds generates (every API and version, every
# codec, every data message) and the client frames in tests/corpus.
# Findings are kept under build/fuzz/findings; the corpus grows in
# build/fuzz/corpus between runs.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=build/fuzz
LIB=build/fuzzlib
CORPUS=tests/corpus
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
CFLAGS="-std=c11 -D_GNU_SOURCE -O1 -g -Iengine -I$LIB/gen -I/usr/include/luajit-2.1"
LIBS="-lev -llz4 -lzstd -lz -lsnappy -lmicrohttpd -ljansson -lpcre2-8 -lcjose -lisal -lssl -lcrypto -lpthread -lm -lluajit-5.1 -ldl"
TARGETS=(request batch data lua sasl otlp)

seeds_of() { # TARGET -> the read-only seed dirs it starts from
    case $1 in
    request | lua) echo "$OUT/seeds/request $CORPUS" ;;
    sasl) echo "tests/fuzz/sasl_seeds" ;;
    otlp) echo "tests/fuzz/otlp_seeds" ;;
    *) echo "$OUT/seeds/$1" ;;
    esac
}

build() {
    make --no-print-directory BUILD=$LIB CC=clang CFLAGS="-O1 -g -fsanitize=fuzzer-no-link $SAN" \
        "$LIB/libkiq.a" "$LIB/obj/gen/messages_sample.o" >"$OUT.build.log" 2>&1 ||
        { tail -30 "$OUT.build.log"; return 1; }
    mkdir -p "$OUT"
    local t
    for t in "${TARGETS[@]}"; do
        clang $CFLAGS -fsanitize=fuzzer $SAN -o "$OUT/fuzz_$t" "tests/fuzz/fuzz_$t.c" "$LIB/libkiq.a" $LIBS || return 1
    done
    clang $CFLAGS -fsanitize=fuzzer $SAN -DKIQ_FUZZ_PLANTED -o "$OUT/fuzz_request_planted" tests/fuzz/fuzz_request.c \
        "$LIB/libkiq.a" $LIBS || return 1
    clang $CFLAGS $SAN -o "$OUT/fuzz_seeds" tests/fuzz/fuzz_seeds.c "$LIB/obj/gen/messages_sample.o" \
        "$LIB/libkiq.a" $LIBS -fsanitize=fuzzer-no-link || return 1
    rm -rf "$OUT/seeds"
    "$OUT/fuzz_seeds" "$OUT/seeds"
}

# fuzz TARGET SECONDS [BINARY [OPTION...]]: 0 when nothing was found
fuzz() {
    local t=$1 secs=$2 bin=${3:-$OUT/fuzz_$1}
    shift $(($# < 3 ? $# : 3))
    mkdir -p "$OUT/corpus/$t" "$OUT/findings/$t"
    # shellcheck disable=SC2046
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$@" \
        -artifact_prefix="$OUT/findings/$t/" "$OUT/corpus/$t" $(seeds_of "$t")
}

case ${1:-} in
build) build ;;
run)
    build || exit 1
    rc=0
    for t in "${TARGETS[@]}"; do fuzz "$t" "${2:-60}" || rc=1; done
    exit $rc
    ;;
test)
    # one "fuzz/NAME: ok|FOUND ..." line per target for run-tests.sh
    if ! build; then
        echo "fuzz/build: FAILED"
        exit 1
    fi
    for t in "${TARGETS[@]}"; do
        if fuzz "$t" "${2:-15}" >"$OUT/$t.log" 2>&1; then
            echo "fuzz/$t: ok, $(grep -oE 'stat::number_of_executed_units: [0-9]+' "$OUT/$t.log" | grep -oE '[0-9]+') runs, no findings"
        else
            tail -40 "$OUT/$t.log"
            echo "fuzz/$t: FOUND something (see $OUT/findings/$t)"
        fi
    done
    # the planted bug (a heap overflow behind a Produce request from
    # client id "b00m") must be found from the Produce seeds: how long a
    # search takes varies (a second to a minute here), so up to four
    # searches of 60 s, each from its own random seed
    rm -rf "$OUT/seeds/planted" && mkdir -p "$OUT/seeds/planted" && cp "$OUT"/seeds/request/Produce-v* "$OUT/seeds/planted/"
    found=
    for attempt in 1 2 3 4; do
        rm -rf "$OUT/corpus/planted"
        fuzz planted 60 "$OUT/fuzz_request_planted" -seed="$attempt" >"$OUT/planted.log" 2>&1 && continue
        grep -q "heap-buffer-overflow" "$OUT/planted.log" || break
        found="found after $(grep -oE '^#[0-9]+' "$OUT/planted.log" | tail -1) runs (search $attempt)"
        break
    done
    if [ -n "$found" ]; then
        echo "fuzz/planted: ok, $found"
    elif grep -q "heap-buffer-overflow\|ERROR:" "$OUT/planted.log"; then
        tail -20 "$OUT/planted.log"
        echo "fuzz/planted: FAILED (it stopped without the planted finding)"
    else
        echo "fuzz/planted: FAILED (the planted bug was not found in four searches of 60 s)"
    fi
    ;;
*)
    echo "usage: scripts/fuzz.sh build | run SECONDS | test SECONDS" >&2
    exit 2
    ;;
esac
