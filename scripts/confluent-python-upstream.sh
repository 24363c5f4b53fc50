#!/usr/bin/env bash
# confluent-kafka-python's own integration tests against KafkaIQ, by hand:
#
#   scripts/confluent-python-upstream.sh SRC [--brokers 3] [pytest args...]
#
# SRC: a checkout of confluent-kafka-python at the tag of the release that
# tests/interop/current/requirements.txt pins (its PyPI release leaves
# tests/ out, so `make test` runs tests/interop/current instead). The tests
# run with that release from PyPI in build/venv-upstream (pinned in
# upstream-requirements.txt), against a broker or `serve --brokers 3` that
# tests/interop/current/run_upstream.py starts and stops; it lists what it
# leaves out and why.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ -x "$root/build/kafkaiq" ]] || { echo "build/kafkaiq is missing: run make" >&2; exit 1; }
"$root/scripts/venv.sh" "$root/build/venv-upstream" "$root/tests/interop/current/upstream-requirements.txt"
exec "$root/build/venv-upstream/bin/python" "$root/tests/interop/current/run_upstream.py" "$@"
