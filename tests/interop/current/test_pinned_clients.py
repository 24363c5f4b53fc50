"""build/venv holds the clients requirements.txt pins, at those versions."""

import importlib.metadata
import pathlib

import confluent_kafka

PINS = dict(line.split("==") for line in
            (pathlib.Path(__file__).parent / "requirements.txt").read_text().splitlines()
            if line and not line.startswith("#"))


def test_every_pin_installed():
    assert {name: importlib.metadata.version(name) for name in PINS} == PINS


def test_confluent_kafka_bundles_a_current_librdkafka():
    # 2.16.x wheels bundle librdkafka 2.16.x, not Debian's 2.0.2
    assert confluent_kafka.libversion()[1] >= 0x02100000
