"""Record the pcap captures that ship in captures/ (see captures/README.md).

    python captures/make_pcap_captures.py WORKDIR        # needs root (tshark -i lo), mariadbd

Starts throw-away MariaDB servers with scripts/mariadb.sh under WORKDIR, and for each capture:
flushes the binary log (so the session reads one fresh binlog file), runs a small workload,
records the loopback traffic with tshark, then copies that binlog file next to the capture
(``<capture stem>.binlog``) so tests can compare the events seen on the wire with the file.

Captures are real traffic; only ``pcap-loss-reorder.pcap`` is edited afterwards (with scapy, see
``make_loss_reorder``). Re-running produces different timestamps/ports but the same shapes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCRIPT = REPO / "scripts" / "mariadb.sh"


def sh(*args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    res = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    if check and res.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {res.stderr}")
    return res.stdout


def start_server(d: Path) -> int:
    line = sh("bash", str(SCRIPT), "start", str(d)).split()
    return int(line[1])


def sql(port: int, stmt: str) -> str:
    return sh("mariadb", "-h127.0.0.1", f"-P{port}", "-uroot", "-N", "-e", stmt)


def fresh_binlog(port: int) -> str:
    sql(port, "FLUSH BINARY LOGS")
    return sql(port, "SHOW MASTER STATUS").split()[0]


def workload(port: int, tag: str, rows: int = 5) -> None:
    stmts = [
        "CREATE DATABASE IF NOT EXISTS shop",
        f"CREATE TABLE IF NOT EXISTS shop.orders_{tag} (id INT PRIMARY KEY AUTO_INCREMENT, "
        "customer VARCHAR(40), amount DECIMAL(10,2), created DATETIME(3), note TEXT, "
        "flags SET('a','b','c'), state ENUM('new','paid','sent'), data JSON)",
    ]
    for i in range(rows):
        stmts.append(
            f"INSERT INTO shop.orders_{tag} (customer, amount, created, note, flags, state, data)"
            f" VALUES ('cust{i}', {i}.25, '2024-05-0{1 + i % 9} 12:00:00.123', "
            f"'note {i} {'x' * (i * 7)}', 'a,c', 'new', '{{\"k\": {i}}}')")
    stmts.append(f"UPDATE shop.orders_{tag} SET state='paid', amount=amount+1 WHERE id % 2 = 1")
    stmts.append(f"DELETE FROM shop.orders_{tag} WHERE id = 2")
    for s in stmts:
        sql(port, s)


class Tshark:
    def __init__(self, out: Path, port: int, fmt: str, iface: str = "lo") -> None:
        self.out = out
        if out.exists():
            out.unlink()
        self.proc = subprocess.Popen(
            ["tshark", "-i", iface, "-f", f"tcp port {port}", "-F", fmt, "-w", str(out), "-q"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        assert self.proc.stderr is not None
        while True:  # wait until the capture really runs
            line = self.proc.stderr.readline()
            if "Capturing on" in line or not line:
                break
        time.sleep(0.5)

    def stop(self) -> None:
        time.sleep(0.5)
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=20)


def keep_binlog(srv: Path, name: str, dest: Path, port: int) -> None:
    sql(port, "FLUSH BINARY LOGS")  # closes the file (ends with a ROTATE)
    shutil.copy(srv / "binlog" / name, dest)


def cap_pymysqlrepl(work: Path, port: int) -> None:
    from pymysqlreplication import BinLogStreamReader

    out = HERE / "pcap-pymysqlrepl.pcapng"
    name = fresh_binlog(port)
    workload(port, "pmr", rows=6)
    t = Tshark(out, port, "pcapng")
    stream = BinLogStreamReader(
        connection_settings={"host": "127.0.0.1", "port": port, "user": "repl",
                             "passwd": "replpass"},
        server_id=4242, log_file=name, log_pos=4, resume_stream=True, blocking=False,
        is_mariadb=False)  # True sends an empty file name (+ a stray byte) in 1.0
    n = sum(1 for _ in stream)
    stream.close()
    t.stop()
    keep_binlog(work / "m1", name, out.with_suffix(".binlog"), port)
    print(out.name, n, "events seen by python-mysql-replication")


def cap_semisync(work: Path, port: int) -> None:
    out = HERE / "pcap-semisync.pcap"
    name = fresh_binlog(port)
    t = Tshark(out, port, "pcap")
    env = dict(os.environ, MYSQL_PWD="replpass", PYTHONPATH=str(REPO / "src"))
    live = subprocess.Popen(
        [sys.executable, "-m", "binlogscope", "live", "--port", str(port), "-u", "repl",
         "--semi-sync", "--start", f"{name}:4", "--json", "--brief", "--no-reconnect",
         "--heartbeat", "1"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(2.0)
    workload(port, "semi", rows=4)
    time.sleep(2.5)  # at least one heartbeat
    live.send_signal(signal.SIGINT)
    live.wait(timeout=20)
    t.stop()
    keep_binlog(work / "m1", name, out.with_suffix(".binlog"), port)
    print(out.name, sql(port, "SHOW STATUS LIKE 'Rpl_semi_sync_master_yes_tx'").strip())


def cap_mariadb_binlog(work: Path, port: int) -> None:
    out = HERE / "pcap-mariadb-binlog.pcap"
    name = fresh_binlog(port)
    workload(port, "mb", rows=3)
    sql(port, "FLUSH BINARY LOGS")
    raw = out.with_suffix(".raw.pcap")
    t = Tshark(raw, port, "pcap", iface="any")  # Linux cooked capture (SLL)
    sh("mariadb-binlog", "--read-from-remote-server", "-h127.0.0.1", f"-P{port}", "-urepl",
       "-preplpass", name)
    t.stop()
    # live captures are written with microseconds: rewrite as a nanosecond pcap
    sh("editcap", "-F", "nsecpcap", str(raw), str(out))
    raw.unlink()
    shutil.copy(work / "m1" / "binlog" / name, out.with_suffix(".binlog"))
    print(out.name)


def cap_replica(work: Path, port: int) -> None:
    out = HERE / "pcap-mariadb-replica.pcapng"
    rport = start_server(work / "m2")
    sql(rport, "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL server_id = 2")
    name = fresh_binlog(port)
    t = Tshark(out, port, "pcapng")
    sql(rport, f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={port}, "
        f"MASTER_USER='repl', MASTER_PASSWORD='replpass', MASTER_LOG_FILE='{name}', "
        "MASTER_LOG_POS=4, MASTER_USE_GTID=no, MASTER_HEARTBEAT_PERIOD=1; START SLAVE")
    time.sleep(2.0)
    workload(port, "rep", rows=5)
    time.sleep(2.5)
    sql(rport, "STOP SLAVE")
    t.stop()
    keep_binlog(work / "m1", name, out.with_suffix(".binlog"), port)
    print(out.name, sql(rport, "SELECT COUNT(*) FROM shop.orders_rep").strip(), "rows replicated")
    sh("bash", str(SCRIPT), "stop", str(work / "m2"))


def make_loss_reorder() -> None:
    """pcap-loss-reorder.pcap: pcap-semisync.pcap with TCP damage made by hand (scapy).

    In the source -> replica stream of flow 1 (the semi-sync replica), counting its data
    segments of more than 200 bytes (each carries one transaction's events):
    - #3 is cut in 3 pieces at payload bytes 40 and 150 and the middle piece is DROPPED (loss in
      the middle of an event: an error at the gap, resync at the next packet header);
    - #4 is cut in 2 pieces at byte 100, sent second piece first (REORDERED);
    - #5 is sent twice (a RETRANSMISSION) followed by an OVERLAPPING copy of bytes 20..80.
    Everything else is the untouched recording.
    """
    from scapy.layers.inet import IP, TCP
    from scapy.utils import rdpcap, wrpcap

    src = HERE / "pcap-semisync.pcap"
    pkts = rdpcap(str(src))
    server_port = 39041
    first = next(p for p in pkts if TCP in p and p[TCP].flags & 0x02)
    client_port = first[TCP].sport
    server_port = first[TCP].dport

    def piece(p, lo: int, hi: int):  # type: ignore[no-untyped-def]
        q = p.copy()
        data = bytes(p[TCP].payload)
        q[TCP].remove_payload()
        q[TCP].add_payload(data[lo:hi])
        q[TCP].seq = (p[TCP].seq + lo) & 0xFFFFFFFF
        del q[IP].len, q[IP].chksum, q[TCP].chksum
        r = q.__class__(bytes(q))
        r.time = p.time
        return r

    out = []
    n = 0
    for p in pkts:
        big = (TCP in p and p[TCP].sport == server_port and p[TCP].dport == client_port
               and len(p[TCP].payload) > 200)
        if big:
            n += 1
        size = len(p[TCP].payload) if TCP in p else 0
        if big and n == 3:
            out += [piece(p, 0, 40), piece(p, 150, size)]
        elif big and n == 4:
            out += [piece(p, 100, size), piece(p, 0, 100)]
        elif big and n == 5:
            out += [p, piece(p, 0, size), piece(p, 20, 80)]
        else:
            out.append(p)
    wrpcap(str(HERE / "pcap-loss-reorder.pcap"), out)
    shutil.copy(src.with_suffix(".binlog"), HERE / "pcap-loss-reorder.binlog")
    print("pcap-loss-reorder.pcap", len(pkts), "->", len(out), "frames")


def main() -> int:
    if sys.argv[1:2] == ["loss"]:
        make_loss_reorder()
        return 0
    work = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/binlogscope-captures")
    port = start_server(work / "m1")
    which = sys.argv[2:] or ["pymysqlrepl", "semisync", "mariadb-binlog", "replica"]
    for w in which:
        {"pymysqlrepl": cap_pymysqlrepl, "semisync": cap_semisync,
         "mariadb-binlog": cap_mariadb_binlog, "replica": cap_replica}[w](work, port)
    print("server:", sql(port, "SELECT VERSION(), @@binlog_checksum, @@binlog_row_metadata, "
                         "@@binlog_row_image").strip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
