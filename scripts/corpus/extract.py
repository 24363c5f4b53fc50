"""Turns the loopback captures of scripts/capture_corpus.sh into the corpus:
each client->broker TCP stream reassembled, split at the 4-byte size prefix
of Kafka's framing, every request frame (header and body, prefix removed)
written to OUT/FOLDER/API-vVERSION-N.bin, and OUT/index.tsv listing them.

    python3 scripts/corpus/extract.py STEPS OUT

STEPS is a tab-separated file of "folder, client, port, pcap": one capture
per client run, of what went to that port. Within a folder, a frame equal to
one kept before but for its correlation id is dropped (fetch and heartbeat
loops repeat themselves), and at most KEEP frames per API and version are
kept (the first ones sent), so a refresh gives much the same files: how
often a client refreshes metadata or fetches varies with timing, and
timestamps, ids and member names differ.
"""

import pathlib
import re
import struct
import sys

KEEP = 3
SCHEMA = pathlib.Path(__file__).resolve().parents[2] / "engine" / "proto" / "schema"
INDEX_COLUMNS = ("file", "api_key", "api_version", "correlation_id", "bytes", "client")

PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">"}  # byte order
LINKTYPE_ETHERNET = 1  # what tcpdump -i lo writes
ETHERTYPE_IPV4 = 0x0800
IPPROTO_TCP = 6
TCP_FIN, TCP_SYN, TCP_RST = 0x01, 0x02, 0x04


def api_names():
    """API key -> name, from the message schemas (engine/proto/schema)."""
    names = {}
    for path in SCHEMA.glob("*.lua"):
        m = re.search(r'key\s*=\s*(\d+),\s*name\s*=\s*"(\w+)"', path.read_text())
        if m:
            names[int(m.group(1))] = m.group(2)
    return names


def packets(path):
    """(time, ipv4 TCP segment bytes) for every packet of a pcap file."""
    data = path.read_bytes()
    order = PCAP_MAGIC.get(data[:4])
    if order is None:
        raise SystemExit(f"{path}: not a pcap file")
    linktype = struct.unpack(order + "I", data[20:24])[0]
    if linktype != LINKTYPE_ETHERNET:
        raise SystemExit(f"{path}: link type {linktype}, expected Ethernet (tcpdump -i lo)")
    at = 24
    while at + 16 <= len(data):
        sec, usec, caplen, origlen = struct.unpack(order + "IIII", data[at:at + 16])
        frame = data[at + 16:at + 16 + caplen]
        at += 16 + caplen
        if caplen != origlen:
            raise SystemExit(f"{path}: a packet was cut at {caplen} of {origlen} bytes (snap length)")
        if len(frame) < 14 + 20 or struct.unpack(">H", frame[12:14])[0] != ETHERTYPE_IPV4:
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        if ip[9] != IPPROTO_TCP:
            continue
        yield (sec, usec), (ip[12:16], ip[16:20], ip[ihl:total])


def streams(path, port):
    """The bytes the client sent on each connection to PORT, in the order
    the connections opened."""
    conns = {}
    for when, (src, dst, tcp) in packets(path):
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        if dport != port:
            continue
        key = (src, sport)
        payload = tcp[(tcp[12] >> 4) * 4:]
        if tcp[13] & TCP_SYN:
            conns[key] = {"start": when, "isn": seq, "segs": {}, "fin": None, "rst": False}
            continue
        conn = conns.get(key)
        if conn is None:
            # an earlier run's connection being reset is no loss; its data is
            if payload:
                raise SystemExit(f"{path}: data from port {sport} before its SYN (start the capture first)")
            continue
        at = (seq - conn["isn"] - 1) % 2**32
        if payload:
            conn["segs"].setdefault(at, payload)
        if tcp[13] & TCP_FIN:
            conn["fin"] = at + len(payload)
        conn["rst"] |= bool(tcp[13] & TCP_RST)
    for (_, sport), conn in sorted(conns.items(), key=lambda kv: kv[1]["start"]):
        # the client's FIN (or RST): the capture saw the end of what it sent
        if conn["fin"] is None and not conn["rst"]:
            raise SystemExit(f"{path}: port {sport} was still open when the capture stopped")
        data = bytearray()
        for off, seg in sorted(conn["segs"].items()):
            if off > len(data):
                raise SystemExit(f"{path}: port {sport} misses bytes {len(data)}..{off} (dropped packets?)")
            data += seg[len(data) - off:]  # a retransmission overlaps what is there
        if conn["fin"] is not None and conn["fin"] != len(data):
            raise SystemExit(f"{path}: port {sport} misses bytes {len(data)}..{conn['fin']} (dropped packets?)")
        yield bytes(data)


def frames(data):
    """The request frames of one stream, size prefix removed."""
    at = 0
    while at < len(data):
        size = struct.unpack(">i", data[at:at + 4])[0] if at + 4 <= len(data) else -1
        if size < 0 or at + 4 + size > len(data):
            raise SystemExit(f"a stream ends inside a frame, at byte {at} of {len(data)}")
        yield data[at + 4:at + 4 + size]
        at += 4 + size


def uvarint(data, at):
    """An unsigned varint at data[at:]: (value, offset after it)."""
    value = shift = 0
    while True:
        b = data[at]
        value |= (b & 0x7F) << shift
        at += 1
        if not b & 0x80:
            return value, at
        shift += 7


def software_version(frame):
    """The client_software_version of an ApiVersions v3+ request."""
    at = 10 + struct.unpack(">h", frame[8:10])[0]  # past the client id
    tags, at = uvarint(frame, at)
    for _ in range(tags):
        _, at = uvarint(frame, at)
        size, at = uvarint(frame, at)
        at += size
    for field in range(2):  # name, then version
        size, at = uvarint(frame, at)
        if field:
            return frame[at:at + size - 1].decode()
        at += size - 1


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    steps, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    names = api_names()
    rows = []
    for line in steps.read_text().splitlines():
        folder, client, port, pcap = line.split("\t")
        seen, counts, kept = set(), {}, []
        for frame in (f for data in streams(pathlib.Path(pcap), int(port)) for f in frames(data)):
            key, version, corr = struct.unpack(">hhi", frame[:8])
            if key not in names:
                raise SystemExit(f"{folder}: api key {key}, which the schemas do not declare")
            # a client that names itself must be the one the step says
            if names[key] == "ApiVersions" and version >= 3 and \
                    not software_version(frame).endswith(client.rsplit("-", 1)[1]):
                raise SystemExit(f"{folder}: the client calls itself {software_version(frame)}, not {client}")
            same = frame[:4] + frame[8:]
            n = counts.get((key, version), 0)
            if same in seen or n == KEEP:
                continue
            seen.add(same)
            counts[(key, version)] = n + 1
            rel = f"{folder}/{names[key]}-v{version}-{n + 1}.bin"
            (out / folder).mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(frame)
            kept.append(((key, version, n), (rel, key, version, corr, len(frame), client)))
        if not counts:
            raise SystemExit(f"{folder}: no request captured from {pcap}")
        # by API and version within a folder, so a refresh's diff lines up
        rows += [row for _, row in sorted(kept)]
    with open(out / "index.tsv", "w") as idx:
        idx.write("\t".join(INDEX_COLUMNS) + "\n")
        for row in rows:
            idx.write("\t".join(map(str, row)) + "\n")
    print(f"{len(rows)} frames, {sum(r[4] for r in rows)} bytes, in {out}")


if __name__ == "__main__":
    main()
