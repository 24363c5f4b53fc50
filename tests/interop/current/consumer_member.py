"""One consumer protocol (KIP-848) group member in a process of its own, for
tests that kill it: it logs each record it reads ("value partition offset")
before committing it synchronously, each failed commit ("uncommitted
value") and each new assignment ("reset", where a consumer may
start a partition again from its committed offset), line-buffered, so a
SIGKILL loses at most the last line's commit.
SIGTERM closes it cleanly.

    python consumer_member.py BOOTSTRAP GROUP TOPIC NAME LOGFILE
"""

import signal
import sys

from confluent_kafka import Consumer, KafkaException


def main():
    bs, group, topic, name, path = sys.argv[1:6]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": name})
    with open(path, "a", buffering=1) as log:
        def reset(consumer, partitions):
            log.write("reset\n")

        c.subscribe([topic], on_assign=reset)
        while not stop:
            m = c.poll(0.1)
            if m is None or m.error():
                continue
            log.write(f"{m.value().decode()} {m.partition()} {m.offset()}\n")
            try:
                c.commit(message=m, asynchronous=False)
            except KafkaException as e:
                # a commit refused in a rebalance (a stale epoch): its record may be read again
                log.write(f"uncommitted {m.value().decode()} {e}\n")
    c.close()


if __name__ == "__main__":
    main()
