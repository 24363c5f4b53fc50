"""A Lua cluster's brokers are one broker set, as serve --brokers N's are:
each one's HTTP control API pauses, kills, restarts and cuts any of them."""
import json
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import BROKER_BIN

SCRIPT = """
local kiq = require "kafkaiq"
local c = assert(kiq.cluster{ brokers = 3, ["kafkaiq.http.listener"] = "127.0.0.1:0",
  ["broker.session.timeout.ms"] = 1500, ["broker.heartbeat.interval.ms"] = 200 })
local http = {}
for id = 0, 2 do http[#http + 1] = '"' .. c:broker(id).http .. '"' end
io.write("[", table.concat(http, ","), "]\\n")
io.stdout:flush()
io.read("*l") -- until the test closes stdin
c:stop()
print("stopped")
"""


def call(address, method, path, body=None, timeout=30):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://{address}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture
def lua_cluster(tmp_path):
    script = tmp_path / "cluster.lua"
    script.write_text(SCRIPT)
    p = subprocess.Popen([str(BROKER_BIN), "run", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, cwd=tmp_path)
    try:
        line = p.stdout.readline()
        assert line.startswith("["), "the script printed no addresses"
        yield json.loads(line)
        p.stdin.close()
        assert p.stdout.readline().strip() == "stopped"
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_each_broker_of_a_lua_cluster_controls_the_others_over_http(lua_cluster):
    h0, h1, _ = lua_cluster
    status, listed = call(h1, "GET", "/api/brokers")
    assert status == 200
    assert [b["id"] for b in listed["brokers"]] == [0, 1, 2]
    assert call(h0, "POST", "/api/brokers/2/pause")[0] == 200
    assert [b["paused"] for b in call(h1, "GET", "/api/brokers")[1]["brokers"]] == [False, False, True]
    assert call(h0, "POST", "/api/brokers/2/resume")[0] == 200
    status, cut = call(h1, "POST", "/api/links", {"from": 0, "to": 1, "action": "cut"})
    assert (status, cut["action"]) == (200, "cut")
    assert {"from": 0, "to": 1} in call(h0, "GET", "/api/brokers")[1]["links"]
    assert call(h1, "POST", "/api/links", {"from": 0, "to": 1, "action": "heal"})[0] == 200
    status, killed = call(h0, "POST", "/api/brokers/1/kill")
    assert (status, killed["queued"]) == (202, True)
    assert call(h0, "GET", "/api/wait?broker=1&state=stopped&timeout_ms=10000")[0] == 200
    assert call(h0, "POST", "/api/brokers/1/restart")[0] == 202
    assert call(h0, "GET", "/api/wait?broker=1&state=ready&timeout_ms=20000")[0] == 200
    # the controller is broker 0's, reached from broker 1's listener too
    assert call(h1, "POST", "/api/leaders", {"preferred": True})[0] == 200
    status, refused = call(h1, "POST", "/api/leaders", {"topic": "nothing", "partition": 0, "to": 1})
    assert (status, refused["error"]) == (404, "no partition nothing-0")
