# Shared by the bench scripts, sourced from the repository root.

KIQ_BENCH=build/bench/kiq_bench

# kiq_bench_build: builds the benchmark client when missing or older than
# its source.
kiq_bench_build() {
    mkdir -p build/bench
    if [[ ! -x $KIQ_BENCH || scripts/bench/kiq_bench.c -nt $KIQ_BENCH ]]; then
        gcc -std=c11 -O2 -Wall -Wextra -pthread -o "$KIQ_BENCH" scripts/bench/kiq_bench.c -lrdkafka
    fi
}

# free_port: a port free on 127.0.0.1 now.
free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port HOST PORT PID [SECONDS]: polls connect() until it succeeds (0),
# the process dies or SECONDS (default 60) pass (1).
wait_port() {
    local deadline=$((SECONDS + ${4:-60}))
    while ((SECONDS < deadline)); do
        kill -0 "$3" 2>/dev/null || return 1
        if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}
