"""Make ``captures/pcap-compressed-catchup-zlib.pcapng``: a zlib-compressed binlog dump that
catches up, so that (almost) every compressed frame starts inside a packet.

A throw-away MariaDB (``tests/mariadb_server.py``) gets 120 one-row transactions with 4-13 KB
BLOBs (and an UPDATE of every third row); then, under ``dumpcap -i lo`` on its port,
``binlogscope live --compression-algorithms=zlib --start FIRST:4 --non-blocking --json`` reads
the whole file. The dump thread writes its 16 KiB net buffer as one frame whenever it is full,
cutting the packet that did not fit, and the rest of that packet begins the next frame: 98 of
the 116 server frames start inside a packet. The script checks that ``binlogscope pcap`` of
the capture gives the binlog events ``live`` printed (type and position, in order).

    python captures/make_compressed_catchup.py [OUT.pcapng]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.mariadb_server import start, stop  # noqa: E402
from tests.watch_support import CLI, ENV, LoopbackCapture  # noqa: E402


def _events(text: str) -> list[tuple[str, int]]:
    out = []
    for line in text.splitlines():
        d = json.loads(line)
        if d.get("event_type"):
            out.append((d["event_type"], d.get("log_pos") or 0))
    return out


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "server"
        srv = start(d)
        try:
            c = srv.connect()
            with c.cursor() as cur:
                cur.execute("CREATE TABLE big (id INT PRIMARY KEY, b MEDIUMBLOB, "
                            "note VARCHAR(40))")
                for i in range(120):
                    size = 4000 + (i * 2711) % 9000
                    cur.execute("INSERT INTO big VALUES (%s, SUBSTRING(REPEAT(SHA2(%s, 256), "
                                "400), 1, %s), %s)", (i, i, size, f"row{i}"))
                    c.commit()
                cur.execute("UPDATE big SET note = CONCAT(note, '-u') WHERE id % 3 = 0")
                c.commit()
            c.close()
            first = srv.binlog_files()[0].name
            cap = LoopbackCapture(out, [srv.port])
            time.sleep(1)
            live = subprocess.run(
                [*CLI, "live", "--host", srv.host, "--port", str(srv.port), "-u",
                 srv.repl_user, "--compression-algorithms=zlib", "--start", f"{first}:4",
                 "--non-blocking", "--json"], capture_output=True, text=True, timeout=300,
                env={**ENV, "MYSQL_PWD": srv.repl_password})
            cap.stop()
            decoded = subprocess.run([*CLI, "pcap", str(out), "--json"], capture_output=True,
                                     text=True, timeout=300, env=ENV).stdout
            same = _events(live.stdout) == _events(decoded)
            print(f"live exit {live.returncode}, {len(_events(live.stdout))} events; server "
                  f"port {srv.port}; pcap of {out} gives the same events: {same}")
        finally:
            stop(d)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else
         REPO / "captures" / "pcap-compressed-catchup-zlib.pcapng")
