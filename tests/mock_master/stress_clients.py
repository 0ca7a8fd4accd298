"""The clients of the mock master's stress test (test_mm_stress.py), run in their own process so
the server's memory and descriptors can be measured apart from them.

``python stress_clients.py HOST PORT HONEST HOSTILE`` starts HOSTILE hostile connections
(garbage bytes, slowloris, huge length headers, data floods, connection churn, mid-handshake
disconnects; one kind each in turn) and, while they run, HONEST python-mysql-replication
readers (each its own server_id, non-blocking dump from the first file). It prints one JSON
line: per honest client the rows it read (or its error), and what the hostile ones saw.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import sys
import threading
import time
from typing import Any

KINDS = ("garbage", "slowloris", "huge_header", "flood", "churn", "mid_handshake")


def honest(host: str, port: int, server_id: int) -> list[Any] | str:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    try:
        s = BinLogStreamReader(connection_settings={"host": host, "port": port, "user": "repl",
                                                    "password": "replpass"},
                               server_id=server_id, blocking=False, is_mariadb=True,
                               only_events=[WriteRowsEvent])
        out: list[Any] = []
        try:
            for ev in s:
                out.extend(r["values"]["id"] for r in ev.rows)
        finally:
            s.close()
        return out
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


async def _read_some(r: asyncio.StreamReader, seconds: float) -> bytes:
    try:
        return await asyncio.wait_for(r.read(1 << 16), seconds)
    except (TimeoutError, ConnectionError):
        return b""


async def hostile(host: str, port: int, i: int, seen: dict[str, int]) -> None:
    kind = KINDS[i % len(KINDS)]
    rnd = os.urandom
    try:
        if kind == "churn":  # many short connections, closed at once
            for _ in range(10):
                _r, w = await asyncio.open_connection(host, port)
                w.close()
            seen[kind] = seen.get(kind, 0) + 1
            return
        r, w = await asyncio.open_connection(host, port)
        if kind == "garbage":
            await _read_some(r, 2)
            w.write(rnd(4096))
        elif kind == "slowloris":  # a byte every 0.5 s, never a whole packet
            await _read_some(r, 2)
            for _ in range(20):
                w.write(b"\x01")
                await w.drain()
                await asyncio.sleep(0.5)
        elif kind == "huge_header":  # a length header far over max_allowed_packet, then stall
            await _read_some(r, 2)
            w.write(b"\xff\xff\xff\x01" + rnd(1000))
        elif kind == "flood":  # bytes as fast as the server takes them, greeting unread
            for _ in range(64):
                w.write(rnd(1 << 15))
                await asyncio.wait_for(w.drain(), 10)
        elif kind == "mid_handshake":  # half a handshake response, then gone (RST)
            await _read_some(r, 2)
            w.write(struct.pack("<I", 200)[:3] + b"\x01" + rnd(60))
            await w.drain()
            sock = w.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            w.close()
            seen[kind] = seen.get(kind, 0) + 1
            return
        await w.drain()
        # wait for the server to close (max_allowed_packet, connect_timeout, a bad packet)
        while await _read_some(r, 15):
            pass
        seen[kind] = seen.get(kind, 0) + 1
        w.close()
    except (ConnectionError, TimeoutError, OSError):
        seen[kind] = seen.get(kind, 0) + 1


async def hostiles(host: str, port: int, n: int, seen: dict[str, int]) -> None:
    await asyncio.gather(*(hostile(host, port, i, seen) for i in range(n)))


def main() -> None:
    host, port, n_honest, n_hostile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
        int(sys.argv[4])
    seen: dict[str, int] = {}
    bad = threading.Thread(target=lambda: asyncio.run(hostiles(host, port, n_hostile, seen)))
    bad.start()
    time.sleep(0.3)  # the hostile ones are connected and busy when the honest ones come
    results: list[Any] = [None] * n_honest

    def run(k: int) -> None:
        results[k] = honest(host, port, 1000 + k)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_honest)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    bad.join(120)
    print(json.dumps({"honest": results, "hostile": seen}))


if __name__ == "__main__":
    main()
