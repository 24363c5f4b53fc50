"""pytest fixtures: `kafkaiq` (one broker, for the session), `kafkaiq_cluster`
(three brokers, for the session) and `kafkaiq_factory` (start your own; each
is stopped when the test ends, also when it fails). Options: --kafkaiq-bin."""
import pytest

from .launcher import KafkaIQ, find_binary


def pytest_addoption(parser):
    parser.addoption("--kafkaiq-bin", default=None,
                     help="the kafkaiq binary (default: $KAFKAIQ_BIN, else kafkaiq on PATH)")


def _binary(config):
    return config.getoption("--kafkaiq-bin") or find_binary()


@pytest.fixture(scope="session")
def kafkaiq(request):
    """One broker on free ports, with its control API."""
    with KafkaIQ(brokers=1, binary=_binary(request.config)) as k:
        yield k


@pytest.fixture(scope="session")
def kafkaiq_cluster(request):
    """Three brokers in one process (RF 3 by default), on free ports."""
    with KafkaIQ(brokers=3, binary=_binary(request.config)) as k:
        yield k


@pytest.fixture
def kafkaiq_factory(request):
    """start(brokers=1, overrides={...}, controllers=0) -> KafkaIQ; all stopped after the test."""
    started = []

    def start(brokers=1, overrides=None, controllers=0):
        k = KafkaIQ(brokers=brokers, overrides=overrides, binary=_binary(request.config), controllers=controllers)
        started.append(k)
        return k

    yield start
    for k in started:
        k.stop()
