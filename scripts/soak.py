"""The hard-bounce soak: a 3-broker cluster of `kafkaiq serve` processes, an
idempotent acks=all confluent-kafka producer writing unique values, a
consumer tailing every partition, and N times the leader of a partition
SIGKILLed and started again once that partition takes writes again. Every send, acknowledgement and poll goes into
a history (kafkaiq.check's text format) that scripts/soak.sh then checks.

    /usr/bin/python3 scripts/soak.py --bounces N --dir DIR

Prints the figures (bounces, sent, acknowledged, recovery times: SIGKILL to the
partition's next acknowledged write, and to the victim back in the ISR)
and writes DIR/history.txt.
"""

import argparse
import pathlib
import statistics
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "interop"))

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402

from cluster import CLUSTER_OVERRIDES, CONTROLLER_ID, Cluster  # noqa: E402

TOPIC = "soak"
PARTITIONS = 3


class History:
    """The events, in the order they happened, guarded by one lock."""

    def __init__(self):
        self.lines = []
        self.lock = threading.Lock()
        self.acks = [0] * PARTITIONS  # acknowledged writes per partition
        self.newest = [-1] * PARTITIONS  # the latest-sent write acknowledged, per partition

    def add(self, *fields):
        with self.lock:
            self.lines.append(" ".join(str(f) for f in fields))
            if fields[0] == "ack":
                self.acks[fields[3]] += 1
                self.newest[fields[3]] = max(self.newest[fields[3]], int(fields[1][1:]))

    def write(self, path):
        with self.lock:
            path.write_text("\n".join(self.lines) + "\n")


def tail(bootstrap, history, name, stop, until_end=False, timeout=60.0):
    """Polls every partition from the start, recording each record, until
    stop is set (or, with until_end, every partition is at its end)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"soak-{name}", "enable.auto.commit": False,
                  "log_level": 0,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 100, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    at_end = set()
    deadline = time.monotonic() + timeout
    try:
        while not stop.is_set() and not (until_end and at_end == set(range(PARTITIONS))):
            if until_end and time.monotonic() > deadline:
                raise SystemExit(f"soak: the final read did not reach the end in {timeout} s")
            for m in c.consume(num_messages=1000, timeout=0.2):
                err = m.error()
                if err is None:
                    history.add("poll", name, TOPIC, m.partition(), m.offset(), m.value().decode())
                    at_end.discard(m.partition())
                elif err.code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bounces", type=int, default=10)
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    work = pathlib.Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    history = History()
    # leaderships go back to their preferred replicas soon after a restart,
    # so there is always a leader to kill besides the controller's broker
    c = Cluster(work / "cluster", overrides=CLUSTER_OVERRIDES + ("leader.imbalance.check.interval.seconds=1",))
    c.start()
    stop = threading.Event()
    try:
        c.create_topic(TOPIC, PARTITIONS)
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": True, "log_level": 0,
                      "linger.ms": 5, "message.timeout.ms": 60000, "retry.backoff.ms": 100,
                      "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500,
                      "topic.metadata.refresh.interval.ms": 1000})

        def delivered(err, msg):
            value = msg.value().decode()
            if err is not None:
                history.add("fail", value, err.name())
            else:
                # librdkafka reports some acknowledged writes without their offset
                off = msg.offset()
                history.add("ack", value, TOPIC, msg.partition(), "?" if off is None or off < 0 else off)

        seq = [0]

        def produce():
            while not stop.is_set():
                v = f"v{seq[0]}"
                part = seq[0] % PARTITIONS
                history.add("send", v, TOPIC, part)
                while True:
                    try:
                        p.produce(TOPIC, value=v.encode(), partition=part, on_delivery=delivered)
                        break
                    except BufferError:
                        p.poll(0.05)
                seq[0] += 1
                p.poll(0)
                # a steady few thousand records a second: enough to keep every
                # partition busy, not so many that a restarted follower cannot
                # catch up on two shared cores
                if seq[0] % 20 == 0:
                    time.sleep(0.005)

        producer = threading.Thread(target=produce)
        tailer = threading.Thread(target=tail, args=(c.bootstrap, history, "tail", stop))
        producer.start()
        tailer.start()
        to_ack, to_isr, stuck = [], [], []
        while len(to_ack) < args.bounces:
            i = len(to_ack)
            # the controller's broker stays up: a partition led elsewhere, this one first
            waited = time.monotonic()
            while True:
                order = [(i + k) % PARTITIONS for k in range(PARTITIONS)]
                led = [(q, c.leader(TOPIC, q)) for q in order]
                led = [(q, b) for q, b in led if b not in (CONTROLLER_ID, -1)]
                if led:
                    part, leader = led[0]
                    break
                if time.monotonic() - waited > 30:
                    raise SystemExit("soak: every partition led by the controller's broker for 30 s")
                time.sleep(0.2)
            # recovered once a write sent after the SIGKILL is acknowledged
            sent_before = seq[0]
            killed = time.monotonic()
            c[leader].kill()
            while history.newest[part] < sent_before:
                if time.monotonic() - killed > 60:
                    raise SystemExit(f"soak: no acknowledged write within 60 s of killing broker {leader}")
                time.sleep(0.01)
            to_ack.append(time.monotonic() - killed)
            c[leader].start()
            try:
                c.wait_isr(TOPIC, part, {0, 1, 2}, 90)
            except AssertionError as e:
                # a figure, not a verdict: stop bouncing, check what was written
                print(f"bounce {i + 1}: WARNING: broker {leader} not back in the ISR of {TOPIC}-{part}: {e}", flush=True)
                stuck.append(leader)
                break
            to_isr.append(time.monotonic() - killed)
            print(f"bounce {i + 1}: broker {leader} (leader of {TOPIC}-{part}) SIGKILLed; {TOPIC}-{part} acknowledged "
                  f"writes again after {to_ack[-1] * 1000:.0f} ms, the victim was back in its ISR after "
                  f"{to_isr[-1]:.1f} s", flush=True)
        stop.set()
        producer.join()
        left = p.flush(60)
        tailer.join()
        if left:
            raise SystemExit(f"soak: {left} records still undelivered after 60 s")
        tail(c.bootstrap, history, "final", threading.Event(), until_end=True)
        history.write(work / "history.txt")

        def spread(xs, unit, scale):
            if not xs:
                return "none"
            return (f"min {min(xs) * scale:.0f} {unit}, median {statistics.median(xs) * scale:.0f} {unit}, "
                    f"max {max(xs) * scale:.0f} {unit}")
        print(f"bounces {len(to_ack)}; sent {seq[0]}; acknowledged {sum(history.acks)}")
        print(f"recovery of the partition to its next acknowledged write: {spread(to_ack, 'ms', 1000)}")
        print(f"recovery of the victim into the ISR: {spread(to_isr, 'ms', 1000)}; not back within 90 s: {len(stuck)}")
    finally:
        stop.set()
        c.stop()


if __name__ == "__main__":
    main()
