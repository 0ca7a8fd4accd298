"""pcap benchmark: `binlogscope pcap --json` against tshark's MySQL dissector, in one run.

    python bench/pcap.py                    # 1,000,000 MySQL packets (~120 MB, bench/data/pcap)
    python bench/pcap.py --packets 200000   # quicker
    python bench/pcap.py --repeat 3         # alternate the two 3 times, compare the fastest runs

The capture is generated once into bench/data/pcap (gitignored) and reused while the generator
and its source are unchanged (``--regenerate`` forces it): the real semi-sync session of
captures/pcap-semisync.pcap (handshake, setup queries, COM_BINLOG_DUMP, every byte as recorded,
minus the replication connection's teardown) followed by its first binlog transaction (GTID,
ANNOTATE_ROWS, TABLE_MAP, WRITE_ROWS, XID) repeated with rewritten log_pos and CRC32, one
transaction per TCP segment, each answered by the replica's semi-sync ACK. Then, each in its
own child process (so peak RSS is per run):

  binlogscope   binlogscope pcap --json FILE > /dev/null
  tshark        tshark -r FILE -d tcp.port==PORT,mysql -T fields -e mysql.packet_length
  half          binlogscope on the first half of the capture (memory must not depend on size)
  scapy         cost per frame of scapy's full dissection (Ether(frame)) vs parse_frame

The ratio is wall time (and CPU time) of binlogscope over tshark measured in the same run.
Benchmarks are not tests: nothing here asserts; the target (issue 4) is binlogscope/tshark <= 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bytecode import ensure_bytecode

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))

SOURCE = REPO / "captures" / "pcap-semisync.pcap"
BINLOG = REPO / "captures" / "pcap-semisync.binlog"
#: bump when generate() changes what it writes (a cached capture is then made again)
GENERATOR_VERSION = 2


def _records(path: Path) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    data = path.read_bytes()
    out, pos = [], 24
    while pos < len(data):
        n = struct.unpack_from("<I", data, pos + 8)[0]
        out.append((data[pos : pos + 16], data[pos + 16 : pos + 16 + n]))
        pos += 16 + n
    return data[:24], out


def _frame(src: tuple[bytes, int], dst: tuple[bytes, int], seq: int, ack: int,
           payload: bytes) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 0x50,
                      0x18, 65535, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 20 + len(payload), 0, 0x4000, 64, 6, 0,
                     src[0], dst[0])
    return b"\0" * 12 + b"\x08\x00" + ip + tcp + payload


def generate(out: Path, packets: int) -> tuple[int, int]:
    """Write the capture; returns (server port, MySQL packets written)."""
    sys.path.insert(0, str(REPO / "src"))
    from binlogscope.drivers.capture.pcap import parse_frame

    head, recs = _records(SOURCE)
    # the real prefix: everything up to the end of the first binlog transaction
    seg0 = [parse_frame(1, f) for _, f in recs]
    first = next(s for s in seg0 if s is not None)
    cli = (first.src, first.sport)
    srv = (first.dst, first.dport)
    raw = BINLOG.read_bytes()
    events = []
    pos = 4
    while pos < len(raw):
        size = struct.unpack_from("<I", raw, pos + 9)[0]
        events.append(raw[pos : pos + size])
        pos += size
    from binlogscope.wire.binlog.types import EventType as E

    # one transaction: the first GTID .. XID with rows (GTID, ANNOTATE, TABLE_MAP, WRITE, XID)
    codes = [e[4] for e in events]
    g = next(i for i in range(len(codes))
             if codes[i] == E.GTID_EVENT and E.WRITE_ROWS_EVENT_V1 in codes[i:i + 5])
    x = codes.index(E.XID_EVENT, g)
    trx = events[g : x + 1]
    # find the stream's last seq/ack numbers from the recorded prefix
    cseq = sseq = 0
    last_pos = 0
    written = 0
    with out.open("wb") as fh:
        fh.write(head)
        ts = 1_700_000_000
        closing = False  # the recorded replication connection's teardown is left out
        for rh, f in recs:
            s = parse_frame(1, f)
            if s is None:
                continue
            if (s.src, s.sport) == cli and s.dport == srv[1]:
                closing = closing or bool(s.flags & 0x05)  # FIN/RST: the stream goes on instead
                if closing:
                    continue
                cseq = s.seq + len(s.payload)
            elif (s.src, s.sport) == srv and s.dport == cli[1]:
                closing = closing or bool(s.flags & 0x05)
                if closing:
                    continue
                sseq = s.seq + len(s.payload)
            fh.write(rh + f)
            ts = struct.unpack_from("<I", rh, 0)[0] + 1
        last_pos = len(raw)
        pkt_seq = 1
        usec = 0
        while written < packets:
            body = b""
            ack_pos = 0
            for ev in trx:
                e = bytearray(ev)
                last_pos += len(e)
                struct.pack_into("<I", e, 13, last_pos)
                struct.pack_into("<I", e, len(e) - 4, zlib.crc32(bytes(e[:-4])) & 0xFFFFFFFF)
                want_ack = ev is trx[-1]
                payload = b"\x00\xef" + (b"\x01" if want_ack else b"\x00") + bytes(e)
                body += len(payload).to_bytes(3, "little") + bytes((pkt_seq,)) + payload
                pkt_seq = (pkt_seq + 1) & 0xFF
                written += 1
                ack_pos = last_pos
            usec += 50
            frame = _frame(srv, cli, sseq, cseq, body)
            sseq += len(body)
            fh.write(struct.pack("<IIII", ts + usec // 1_000_000, usec % 1_000_000, len(frame),
                                 len(frame)) + frame)
            name = b"mysql-bin.000004"
            ackp = b"\xef" + struct.pack("<Q", ack_pos) + name
            ack = len(ackp).to_bytes(3, "little") + b"\x00" + ackp
            pkt_seq = 1  # MariaDB restarts the stream's sequence ids after an ACK
            written += 1
            usec += 30
            frame = _frame(cli, srv, cseq, sseq, ack)
            cseq += len(ack)
            fh.write(struct.pack("<IIII", ts + usec // 1_000_000, usec % 1_000_000, len(frame),
                                 len(frame)) + frame)
    return srv[1], written


def _iter_records(path: Path, limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:
    """(record header, frame) of a little-endian microsecond pcap file, streamed."""
    with path.open("rb") as fh:
        fh.read(24)
        n = 0
        while limit is None or n < limit:
            rh = fh.read(16)
            if len(rh) < 16:
                return
            yield rh, fh.read(struct.unpack_from("<I", rh, 8)[0])
            n += 1


def truncate_half(src: Path, dst: Path) -> None:
    """The first half of the capture's records (by bytes: half the MySQL packets)."""
    size = src.stat().st_size
    with dst.open("wb") as fh:
        fh.write(src.read_bytes()[:24] if size < 24 else src.open("rb").read(24))
        written = 24
        for rh, f in _iter_records(src):
            if written >= size // 2:
                break
            fh.write(rh + f)
            written += len(rh) + len(f)


def child(cmd: list[str]) -> dict[str, float]:
    """Run cmd with stdout to /dev/null: wall time, CPU time (user + system) and this child's
    own peak RSS (wait4)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr is not None
    errors = p.stderr.read().decode(errors="replace").strip().splitlines()
    _, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    out: dict[str, Any] = {"seconds": round(secs, 2),
                           "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
                           "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "rc": rc}
    if rc and errors:
        out["stderr"] = errors[-1][:200]
    return out


def scapy_cost(path: Path, n: int = 20000) -> dict[str, float]:
    from scapy.layers.l2 import Ether

    from binlogscope.drivers.capture.pcap import parse_frame

    frames = [f for _, f in _iter_records(path, n)]
    t0 = time.perf_counter()
    for f in frames:
        Ether(f)
    t1 = time.perf_counter()
    for f in frames:
        parse_frame(1, f)
    t2 = time.perf_counter()
    return {"frames": len(frames), "scapy_us_per_frame": round((t1 - t0) / len(frames) * 1e6, 1),
            "parse_frame_us_per_frame": round((t2 - t1) / len(frames) * 1e6, 2)}


def capture(directory: Path, packets: int, regenerate: bool) -> tuple[Path, int, int]:
    """The generated capture for ``packets`` (made once, reused): (path, port, packets)."""
    cap = directory / f"stream-{packets}.pcap"
    meta = cap.with_suffix(".json")
    want = {"packets": packets, "generator": GENERATOR_VERSION,
            "source_bytes": SOURCE.stat().st_size}
    if not regenerate and cap.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if {k: info.get(k) for k in want} == want:
            return cap, int(info["port"]), int(info["written"])
    t0 = time.perf_counter()
    port, written = generate(cap, packets)
    meta.write_text(json.dumps({**want, "port": port, "written": written}) + "\n")
    print(f"generated {cap} ({cap.stat().st_size / 1e6:.0f} MB, {written:,} MySQL packets) in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    return cap, port, written


def real_capture(data: Path, regenerate: bool = False) -> tuple[Path, int, list[Path]]:
    """A real capture of the benchmark set (bench/make_binlog.py's, in ``data``): dumpcap on the
    loopback while ``mariadb-binlog --read-from-remote-server --raw --to-last-log`` pulls every
    file from the benchmark server (started and stopped here). Made once into
    ``data/pcap-real`` (the capture, the files mariadb-binlog wrote, a JSON note), then reused:
    (capture, server port, the pulled files)."""
    sys.path[:0] = [str(HERE), str(REPO / "tests")]
    import decode
    import mariadb_server

    out = data / "pcap-real"
    cap, meta = out / "dump.pcap", out / "dump.json"
    m = decode._load(data)
    if not regenerate and cap.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("binlog_bytes") == m["bytes"]:
            return cap, int(info["port"]), [out / "files" / f for f in info["files"]]
    shutil.rmtree(out, ignore_errors=True)
    (out / "files").mkdir(parents=True)
    server_dir = data / m["server_dir"]
    server = mariadb_server.start(server_dir)
    try:
        dumpcap = subprocess.Popen(
            [shutil.which("dumpcap") or "dumpcap", "-i", "lo", "-B", "512", "-s", "262144",
             "-f", f"tcp port {server.port}", "-P", "-w", str(cap)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(2)  # dumpcap opens the interface before the dump starts
        t0 = time.perf_counter()
        res = subprocess.run(
            [shutil.which("mariadb-binlog") or "mariadb-binlog", "--no-defaults",
             "--read-from-remote-server", "--raw", "--to-last-log", "--host=127.0.0.1",
             f"--port={server.port}", "--user=repl", "--password=replpass",
             f"--result-file={out / 'files'}/", Path(m["files"][0]).name],
            capture_output=True, text=True)
        secs = time.perf_counter() - t0
        time.sleep(1)
        dumpcap.send_signal(2)
        _, err = dumpcap.communicate(timeout=60)
    finally:
        mariadb_server.stop(server_dir)
    if res.returncode:
        raise RuntimeError(f"mariadb-binlog failed: {res.stderr.strip()[-300:]}")
    if dumpcap.returncode or not cap.exists():
        raise RuntimeError(f"dumpcap failed: {err.strip()[-300:]}")
    files = sorted(p.name for p in (out / "files").iterdir())
    meta.write_text(json.dumps({"binlog_bytes": m["bytes"], "port": server.port, "files": files,
                                "dump_seconds": round(secs, 2), "dumpcap": err.strip()[-300:]})
                    + "\n")
    print(f"captured {cap} ({cap.stat().st_size / 1e6:.0f} MB) of mariadb-binlog --raw pulling "
          f"{len(files)} file(s) in {secs:.1f} s; dumpcap: {err.strip()[-200:]}", flush=True)
    return cap, server.port, [out / "files" / f for f in files]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=1_000_000,
                    help="MySQL packets in the generated capture (default 1,000,000)")
    ap.add_argument("--dir", default=str(HERE / "data" / "pcap"),
                    help="where the generated captures live (default bench/data/pcap, "
                    "gitignored; made once, then reused)")
    ap.add_argument("--regenerate", action="store_true", help="make the capture again")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run binlogscope and tshark alternately N times; the ratio uses each "
                    "one's fastest run (the machine is shared: noise only ever adds time)")
    args = ap.parse_args()
    ensure_bytecode()  # as an installed copy has it (see bench/bytecode.py)
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    cap, port, written = capture(d, args.packets, args.regenerate)
    half = d / f"stream-{args.packets}-half.pcap"
    if not half.exists() or half.stat().st_mtime < cap.stat().st_mtime:
        truncate_half(cap, half)
    env_py = [sys.executable, "-m", "binlogscope", "pcap", "--json"]
    os.environ["PYTHONPATH"] = str(REPO / "src")
    tshark = shutil.which("tshark")
    res: dict[str, Any] = {"packets": written, "bytes": cap.stat().st_size,
                           "binlogscope": [], "tshark": []}
    for _ in range(args.repeat):
        res["binlogscope"].append(child([*env_py, str(cap)]))
        if tshark:
            res["tshark"].append(child([tshark, "-r", str(cap), "-d", f"tcp.port=={port},mysql",
                                        "-T", "fields", "-e", "mysql.packet_length"]))
    res["half"] = child([*env_py, str(half)])
    res["scapy"] = scapy_cost(cap)
    print(json.dumps(res, indent=2))
    b = min(res["binlogscope"], key=lambda r: r["seconds"])
    b_cpu = min(r["cpu_seconds"] for r in res["binlogscope"])
    h = res["half"]
    print(f"binlogscope pcap --json: {b['seconds']:.1f} s (fastest CPU time {b_cpu:.1f} s) "
          f"for {written:,} MySQL packets ({cap.stat().st_size / 1e6:.0f} MB)")
    if res["tshark"]:
        t = min(res["tshark"], key=lambda r: r["seconds"])
        t_cpu = min(r["cpu_seconds"] for r in res["tshark"])
        print(f"tshark -T fields -e mysql.packet_length: {t['seconds']:.1f} s (fastest CPU "
              f"time {t_cpu:.1f} s)")
        print(f"binlogscope/tshark ratio: wall time {b['seconds'] / t['seconds']:.2f}, CPU "
              f"time {b_cpu / t_cpu:.2f} (target <= 1.0)")
    print(f"peak RSS: full {b['peak_rss_mb']:.0f} MB, half {h['peak_rss_mb']:.0f} MB "
          f"(flat = about equal)" + (f"; tshark {t['peak_rss_mb']:.0f} MB"
                                     if res["tshark"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
