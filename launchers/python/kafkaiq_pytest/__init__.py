"""Start KafkaIQ from Python tests: `KafkaIQ` (a process of one broker or a
cluster, on free ports) and the pytest fixtures in `kafkaiq_pytest.plugin`."""
from .launcher import KafkaIQ, KafkaIQError, find_binary

__all__ = ["KafkaIQ", "KafkaIQError", "find_binary"]
