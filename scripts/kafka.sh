#!/usr/bin/env bash
# The reference broker: Apache Kafka (the version tests/reference/pom.xml
# pins) as KRaft combined nodes (broker and controller in one process) on
# free loopback ports, from the jars Maven resolved into build/kafka/lib.
#
#   scripts/kafka.sh start [--nodes N] [--dir DIR] [--acl]   # prints KAFKA_BOOTSTRAP=host:port,...
#   scripts/kafka.sh stop [--dir DIR]
#   scripts/kafka.sh fetch                           # only resolve the jars (scripts/deps.sh)
#
# One node is formatted --standalone (a one-voter quorum, KIP-853); N nodes
# form a static quorum (controller.quorum.voters). Each node's log goes to
# DIR/node-I/kafka.log, its data under DIR/node-I/data; DIR defaults to
# build/kafka/run. KAFKA_HEAP (default -Xmx384m) sizes each JVM.
#
# --acl (one node) adds a SASL_PLAINTEXT listener with PLAIN users admin,
# alice and bob (passwords <user>-secret) and StandardAuthorizer, admin and
# the PLAINTEXT listener's ANONYMOUS super users; it prints
# KAFKA_SASL=host:port too; delegation.token.secret.key is set, so the
# delegation token APIs answer.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LIB=$ROOT/build/kafka/lib
READY_TIMEOUT=${KAFKA_READY_TIMEOUT:-180}

usage() {
    echo "usage: scripts/kafka.sh start [--nodes N] [--dir DIR] [--acl] | stop [--dir DIR] | fetch" >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
cmd=$1
shift
nodes=1
acl=0
dir=$ROOT/build/kafka/run
while [[ $# -gt 0 ]]; do
    case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --acl) acl=1; shift ;;
    *) usage ;;
    esac
done

# Ports below the ephemeral range (an outgoing connection is never given
# one, so nothing takes it between the check and the bind), bindable now.
free_ports() {
    /usr/bin/python3 - "$1" <<'EOF'
import random, socket, sys
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
rng, picked = random.Random(), []
while len(picked) < int(sys.argv[1]):
    port = rng.randrange(10000, max(10001, low - 1))
    if port in picked:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        picked.append(port)
    except OSError:
        pass
    finally:
        s.close()
print(" ".join(map(str, picked)))
EOF
}

read -r -a heap <<<"${KAFKA_HEAP:--Xmx384m}"
JAVA=(java "${heap[@]}" -XX:+UseSerialGC -Djava.awt.headless=true
    -Dlog4j2.configurationFile="$ROOT/tests/reference/log4j2.properties" -cp "$LIB/*")

stop() {
    local pidfile pid
    for pidfile in "$dir"/node-*/pid; do
        [[ -f "$pidfile" ]] || continue
        pid=$(cat "$pidfile")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid"
            for _ in $(seq 1 300); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        fi
        rm -f "$pidfile"
    done
}

# The pinned Kafka's jars into $LIB, unless they are there.
fetch() {
    local version
    version=$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' tests/reference/pom.xml)
    [[ -f "$LIB/kafka_2.13-$version.jar" ]] && return
    echo "kafka.sh: resolving Apache Kafka $version into $LIB (tests/reference/pom.xml)" >&2
    rm -rf "$LIB"
    mvn -q -B -f tests/reference/pom.xml dependency:copy-dependencies -DoutputDirectory="$LIB" \
        -DincludeScope=runtime >&2
}

start() {
    fetch
    stop
    rm -rf "$dir"
    mkdir -p "$dir"
    local ports cid i voters="" bootstrap=""
    read -r -a ports <<<"$(free_ports $((2 * nodes + acl)))"
    cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c 1-22)
    for ((i = 1; i <= nodes; i++)); do
        voters+="${voters:+,}$i@127.0.0.1:${ports[2 * i - 1]}"
        bootstrap+="${bootstrap:+,}127.0.0.1:${ports[2 * i - 2]}"
    done
    for ((i = 1; i <= nodes; i++)); do
        local nd=$dir/node-$i port=${ports[2 * i - 2]} cport=${ports[2 * i - 1]}
        mkdir -p "$nd/data"
        local rf=$((nodes < 3 ? nodes : 3))
        {
            echo "process.roles=broker,controller"
            echo "node.id=$i"
            if [[ $nodes -eq 1 ]]; then
                echo "controller.quorum.bootstrap.servers=127.0.0.1:$cport"
            else
                echo "controller.quorum.voters=$voters"
            fi
            if [[ $acl -eq 1 ]]; then
                local sport=${ports[2 * nodes]}
                echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_PLAINTEXT://127.0.0.1:$sport"
                echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_PLAINTEXT://127.0.0.1:$sport"
                echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
                echo "sasl.enabled.mechanisms=PLAIN"
                echo "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";"
                echo "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
                echo "super.users=User:admin;User:ANONYMOUS"
                echo "delegation.token.secret.key=differential-secret"
            else
                echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
                echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
                echo "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
            fi
            echo "controller.listener.names=CONTROLLER"
            echo "inter.broker.listener.name=PLAINTEXT"
            echo "log.dirs=$nd/data"
            echo "num.partitions=1"
            echo "default.replication.factor=$rf"
            echo "offsets.topic.replication.factor=$rf"
            echo "transaction.state.log.replication.factor=$rf"
            echo "transaction.state.log.min.isr=1"
            echo "share.coordinator.state.topic.replication.factor=$rf"
            echo "share.coordinator.state.topic.min.isr=1"
            echo "group.initial.rebalance.delay.ms=0"
        } >"$nd/server.properties"
        if [[ $nodes -eq 1 ]]; then
            "${JAVA[@]}" kafka.tools.StorageTool format --standalone -t "$cid" -c "$nd/server.properties" \
                >"$nd/format.log" 2>&1
        else
            "${JAVA[@]}" kafka.tools.StorageTool format -t "$cid" -c "$nd/server.properties" >"$nd/format.log" 2>&1
        fi
        "${JAVA[@]}" kafka.Kafka "$nd/server.properties" >"$nd/kafka.log" 2>&1 </dev/null &
        echo $! >"$nd/pid"
    done
    echo "$bootstrap" >"$dir/bootstrap"
    # ready once Metadata through the first node lists every node
    local t0=$SECONDS listed
    while :; do
        listed=$(kcat -b "$bootstrap" -L -m 2 2>/dev/null | grep -c '^  broker ' || true)
        [[ $listed -ge $nodes ]] && break
        for ((i = 1; i <= nodes; i++)); do
            if ! kill -0 "$(cat "$dir/node-$i/pid")" 2>/dev/null; then
                echo "kafka.sh: node $i exited; its log:" >&2
                tail -n 40 "$dir/node-$i/kafka.log" >&2
                stop
                exit 1
            fi
        done
        if ((SECONDS - t0 > READY_TIMEOUT)); then
            echo "kafka.sh: $nodes node(s) not ready within $READY_TIMEOUT s" >&2
            stop
            exit 1
        fi
        sleep 0.5
    done
    echo "KAFKA_BOOTSTRAP=$bootstrap"
    [[ $acl -eq 0 ]] || echo "KAFKA_SASL=127.0.0.1:${ports[2 * nodes]}"
    echo "kafka.sh: $nodes node(s) ready in $((SECONDS - t0)) s (after formatting), data in $dir" >&2
}

case $cmd in
fetch) fetch ;;
start) start ;;
stop) stop ;;
*) usage ;;
esac
