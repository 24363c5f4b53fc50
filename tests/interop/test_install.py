"""An installed kafkaiq works from anywhere: `make install` and the Debian package.

`make install DESTDIR=... PREFIX=/usr` into a temporary root, and the .deb
that scripts/deb.sh (`make deb`) builds, unpacked with `dpkg-deb -x`: from a
working directory outside the repository, each tree's `usr/bin/kafkaiq
serve` takes a record from confluent-kafka and exits 0 on SIGTERM, and its
`kafkaiq run` loads the kafkaiq Lua modules of that tree (never the
repository's lua/) and starts a broker in-process. No broker fixture: each
test starts its own binary.
"""

import json
import os
import pathlib
import signal
import subprocess
import time

import confluent_kafka
import pytest

from conftest import ROOT, terminate

READY_TIMEOUT = 15.0
# Nothing from the environment may point the installed command at the repository.
SCRUB = ("LUA_PATH", "LUA_CPATH", "LUA_INIT", "LUA_PATH_5_1", "LUA_CPATH_5_1", "LUA_INIT_5_1",
         "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "KAFKAIQ_BIN")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in SCRUB}
    env.update(extra)
    return env


def run(cmd, cwd, timeout=120, **extra_env):
    """Runs cmd, asserting exit 0 (its output in the message); its stdout."""
    p = subprocess.run(cmd, cwd=cwd, env=clean_env(**extra_env), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    assert p.returncode == 0, (f"{' '.join(map(str, cmd))} exited {p.returncode}\n"
                               f"stdout:\n{p.stdout[-4000:]}\nstderr:\n{p.stderr[-4000:]}")
    return p.stdout


def under(path, root):
    return pathlib.Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))


def check_serve(root, work):
    """`serve` of the tree at root, run from work: ready, takes a record, exits 0 on SIGTERM."""
    kafkaiq = root / "usr" / "bin" / "kafkaiq"
    ready = work / "ready.json"
    data = work / "data"
    err_path = work / "serve.stderr"
    cmd = [str(kafkaiq), "serve", "--ready-file", str(ready),
           "--override", "listeners=PLAINTEXT://127.0.0.1:0",
           "--override", "kafkaiq.http.listener=127.0.0.1:0",
           "--override", f"log.dirs={data}"]
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=work, env=clean_env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)

    def stderr_tail():
        return err_path.read_bytes()[-4000:].decode(errors="replace")

    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while not ready.exists():
            assert proc.poll() is None, f"{kafkaiq} serve exited {proc.returncode}\n{stderr_tail()}"
            assert time.monotonic() < deadline, f"no ready file in {READY_TIMEOUT} s\n{stderr_tail()}"
            time.sleep(0.02)
        info = json.loads(ready.read_text())
        assert info["pid"] == proc.pid
        assert info["http"], info  # the HTTP listener (live page built in) is up

        delivered = []
        p = confluent_kafka.Producer({"bootstrap.servers": info["bootstrap"], "acks": "all",
                                      "message.timeout.ms": 10000})
        p.produce("installed", key=b"k", value=b"from an installed kafkaiq",
                  on_delivery=lambda e, m: delivered.append((e, m.offset() if m else None)))
        assert p.flush(15) == 0, "the record was not delivered"
        assert delivered == [(None, 0)], delivered
        assert any(d.name.startswith("installed-") for d in data.iterdir()), "no partition under log.dirs"
    finally:
        terminate(proc, f"{kafkaiq} serve", stderr_tail)


LUA_SMOKE = """
local kiq = require "kafkaiq"
print("kafkaiq=" .. package.searchpath("kafkaiq", package.path))
print("client=" .. package.searchpath("kafkaiq.client", package.path))
kiq.log_level("error")
local b = assert(kiq.broker{ dir = arg[1] })
print("broker=" .. b.bootstrap .. " version=" .. kiq.version)
b:stop()
"""


def check_run(root, work):
    """`kafkaiq run` of the tree at root, from work, loads that tree's Lua modules."""
    kafkaiq = root / "usr" / "bin" / "kafkaiq"
    script = work / "smoke.lua"
    script.write_text(LUA_SMOKE)
    out = run([str(kafkaiq), "run", str(script), str(work / "lua-broker")], cwd=work, timeout=60)
    got = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    for mod in ("kafkaiq", "client"):
        assert mod in got, out
        assert under(got[mod], root / "usr" / "share" / "lua" / "5.1"), f"{mod} from {got[mod]}"
        assert not under(got[mod], ROOT), f"the installed command loaded the repository's {got[mod]}"
    assert got["broker"].startswith("127.0.0.1:"), out
    version = run([str(kafkaiq), "version"], cwd=work).split()[-1]
    assert got["broker"].endswith(" version=" + version), out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("install") / "root"
    run(["make", "-s", "--no-print-directory", "install", f"DESTDIR={root}", "PREFIX=/usr"], cwd=ROOT, timeout=600)
    return root


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    out = tmp_path_factory.mktemp("deb")
    path = pathlib.Path(run([str(ROOT / "scripts" / "deb.sh")], cwd=ROOT, timeout=600,
                            KIQ_DEB_OUT=str(out)).split()[-1])
    assert path.is_file() and path.parent == out, path
    return path


@pytest.mark.timeout(120)
def test_make_install_works_outside_the_repository(installed, tmp_path):
    assert (installed / "usr/bin/kafkaiq").is_file()
    assert (installed / "usr/lib/lua/5.1/kafkaiq/core.so").is_file()
    assert (installed / "usr/share/kafkaiq/examples/labs/01_record_journey.lua").is_file()
    assert (installed / "usr/share/kafkaiq/server.properties").is_file()
    check_serve(installed, tmp_path)
    check_run(installed, tmp_path)


@pytest.mark.timeout(120)
def test_deb_fields(deb):
    fields = run(["dpkg-deb", "-f", str(deb), "Package", "Version", "Architecture", "Depends"], cwd=deb.parent)
    f = dict(line.split(": ", 1) for line in fields.splitlines())
    arch = run(["dpkg", "--print-architecture"], cwd=deb.parent).strip()
    version = (ROOT / "engine/core/version.h").read_text().split('KIQ_VERSION "', 1)[1].split('"')[0]
    assert f["Package"] == "kafkaiq"
    assert f["Version"] == version
    assert f["Architecture"] == arch
    assert deb.name == f"kafkaiq_{version}_{arch}.deb"
    for lib in ("libc6", "libev4", "libluajit", "liblz4-1", "libzstd1", "zlib1g", "libsnappy1v5",
                "libmicrohttpd12", "libjansson4"):
        assert lib in f["Depends"], f["Depends"]


@pytest.mark.timeout(120)
def test_deb_works_unpacked(deb, tmp_path):
    root = tmp_path / "root"
    run(["dpkg-deb", "-x", str(deb), str(root)], cwd=tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    check_serve(root, work)
    check_run(root, work)
    # core.so where Debian's luajit looks for C modules, for a plain `require "kafkaiq"`
    sos = [p.relative_to(root) for p in root.glob("usr/lib/**/kafkaiq/core.so")]
    assert len(sos) == 1, sos
    cpath = run(["luajit", "-e", "io.write(package.cpath)"], cwd=work)
    assert f"/{sos[0].parent.parent}/?.so" in cpath.split(";"), (sos, cpath)
