"""Transactions with confluent-kafka (librdkafka 2.0.2), as far as the
coordinator goes yet: init_transactions finds the transaction coordinator
(FindCoordinator key type 1) and gets a producer id and epoch
(InitProducerId with the transactional id) on one broker and on a cluster
of three, for a first producer of a transactional.id and for a second one
(the epochs and fencing themselves: tests/lua/transactions_spec.lua).
Before, init_transactions timed out.
"""

import pytest
from confluent_kafka import Producer

from conftest import EXTERNAL

pytestmark = pytest.mark.skipif(EXTERNAL is not None, reason="reads kafkaiq's own state")


def test_init_transactions(target):
    broker, n = target
    first = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"interop-tx-{n}"})
    first.init_transactions(30)
    # the same transactional.id again: the coordinator bumps the epoch
    second = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"interop-tx-{n}"})
    second.init_transactions(30)
    del first, second
