"""A short hard-bounce soak (scripts/soak.sh): three leader SIGKILLs under an
idempotent acks=all producer and a tailing consumer, the history checked
by kafkaiq.check: no lost write, no duplicate, no anomaly of any kind."""

import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def test_three_hard_bounces_lose_and_duplicate_nothing(tmp_path):
    r = subprocess.run([str(ROOT / "scripts" / "soak.sh"), "--bounces", "3", "--dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr[-4000:]
    assert "bounces 0;" not in out
    assert "not back within 90 s: 0" in out, out
    for line in ("lost-write            0", "duplicate             0", "unseen                0", "ok: no anomaly"):
        assert line in out, out
