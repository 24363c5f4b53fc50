"""Start-to-first-ack through the pytest launcher: `kafkaiq serve` started,
its ready file read, a new topic's first record acknowledged (acks=all) by
confluent-kafka; one broker and three, each N times, medians printed.

  KAFKAIQ_BIN=build/kafkaiq PYTHONPATH=launchers/python \\
    /usr/bin/python3 launchers/python/startup_times.py [N]"""
import statistics
import sys
import time

from confluent_kafka import Producer

from kafkaiq_pytest import KafkaIQ


def once(brokers):
    t0 = time.monotonic()
    with KafkaIQ(brokers=brokers) as k:
        ready = time.monotonic() - t0
        acked = []
        p = Producer({"bootstrap.servers": k.bootstrap, "acks": "all", "linger.ms": 0})
        p.produce("first-%d" % brokers, b"v", on_delivery=lambda err, msg: acked.append(err))
        p.flush(30)
        assert acked == [None], acked
        return ready, time.monotonic() - t0


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print("brokers  ready_ms(median)  first_ack_ms(median)  first_ack_ms(all)")
    for brokers in (1, 3):
        runs = [once(brokers) for _ in range(n)]
        print("%7d  %16.1f  %20.1f  %s" % (brokers, statistics.median(r[0] for r in runs) * 1000,
                                           statistics.median(r[1] for r in runs) * 1000,
                                           " ".join("%.0f" % (r[1] * 1000) for r in runs)))


if __name__ == "__main__":
    main()
