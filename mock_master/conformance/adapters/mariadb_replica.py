"""A real MariaDB replica as the client under test: its IO thread connects to the case's
master, and is judged on the wire (what it asks for, its ACKs, where it resumes).

::

    python -m mock_master.conformance.adapters.mariadb_replica HOST PORT USER PASSWORD FILE POS \\
        FLAVOR SEMI_SYNC [GTID] [HEARTBEAT] [TLS]

The replica server is named by ``CONFORMANCE_REPLICA`` (``host:port:user``; its password in
``CONFORMANCE_REPLICA_PASSWORD``), e.g. a throw-away server started by scripts/mariadb.sh.
Only the IO thread runs (``START SLAVE IO_THREAD``): the case streams have no CREATE TABLE for
an SQL thread to apply rows to. The adapter waits until the IO thread stops with an error
(printed as an ``error`` line, exit status 1) or has read nothing new for 3 s (exit status
0), then stops it. HEARTBEAT (seconds) is MASTER_HEARTBEAT_PERIOD with ``slave_net_timeout``
twice that (how a DBA makes a replica notice a silent master; the quiet wait is then longer
than the read timeout, so a reconnection is seen); without it MASTER_HEARTBEAT_PERIOD=2 and
``slave_net_timeout`` 60 (the server's default). It reports no values (run it with
``--adapter none``). TLS ``required`` is MASTER_SSL=1 with MASTER_SSL_VERIFY_SERVER_CERT=1
(MASTER_SSL=1 alone logs in over plain TCP when the master offers no TLS); otherwise the
replica's default (MASTER_SSL=0 on 10.11: plain TCP). ``CONFORMANCE_GTID_STRICT=1`` in the
environment (the runner's, for a case that wants it) sets gtid_strict_mode=ON (the IO thread
then announces @slave_gtid_strict_mode=1), else OFF.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

QUIET = 3.0
CHANNEL = "conformance"


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, default=str) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    if len(argv) < 8:
        print(__doc__, file=sys.stderr)
        return 2
    host, port, user, password, log_file, log_pos, _flavor, semi_sync = argv[:8]
    gtid = argv[8] if len(argv) > 8 and argv[8] else None
    heartbeat = float(argv[9]) if len(argv) > 9 and argv[9] else None
    net_timeout = max(1, round(2 * heartbeat)) if heartbeat else 60
    quiet = max(QUIET, net_timeout + 4.0) if heartbeat else QUIET
    # MASTER_SSL=1 alone falls back to plain TCP when the master offers no TLS (10.11, as the
    # client's --ssl): verifying the certificate is what insists
    tls = (", MASTER_SSL=1, MASTER_SSL_VERIFY_SERVER_CERT=1"
           if len(argv) > 10 and argv[10] == "required" else "")
    import pymysql

    r_host, r_port, r_user = os.environ["CONFORMANCE_REPLICA"].split(":")
    conn = pymysql.connect(host=r_host, port=int(r_port), user=r_user,
                           password=os.environ.get("CONFORMANCE_REPLICA_PASSWORD", ""),
                           autocommit=True, cursorclass=pymysql.cursors.DictCursor)
    ch = f"'{CHANNEL}'"
    with conn.cursor() as cur:
        for q in (f"STOP SLAVE {ch}", f"RESET SLAVE {ch} ALL"):
            try:
                cur.execute(q)
            except pymysql.MySQLError:
                pass
        # a server id of its own (the case streams are written by server 1)
        cur.execute("SET GLOBAL server_id = %s", (4000 + int(port) % 1000,))
        cur.execute("SET GLOBAL slave_net_timeout = %s", (net_timeout,))
        cur.execute("SET GLOBAL gtid_strict_mode = "
                    + ("ON" if os.environ.get("CONFORMANCE_GTID_STRICT") == "1" else "OFF"))
        cur.execute("SET GLOBAL rpl_semi_sync_slave_enabled = "
                    + ("ON" if semi_sync == "1" else "OFF"))
        where = (f"MASTER_LOG_FILE='{log_file}', MASTER_LOG_POS={int(log_pos)}, "
                 "MASTER_USE_GTID=no")
        if gtid:
            cur.execute("SET GLOBAL gtid_slave_pos = %s", (gtid,))
            where = "MASTER_USE_GTID=slave_pos"
        cur.execute(f"CHANGE MASTER {ch} TO MASTER_HOST=%s, MASTER_PORT=%s, MASTER_USER=%s, "
                    f"MASTER_PASSWORD=%s, MASTER_CONNECT_RETRY=1, "
                    f"MASTER_HEARTBEAT_PERIOD={heartbeat or 2:g}{tls}, "
                    f"{where}", (host, int(port), user, password))
        cur.execute(f"START SLAVE {ch} IO_THREAD")
        last: tuple[Any, ...] = ()
        changed = time.monotonic()
        status: dict[str, Any] = {}
        rc = 0
        while True:
            time.sleep(0.2)
            cur.execute(f"SHOW SLAVE {ch} STATUS")
            status = cur.fetchone() or {}
            if status.get("Slave_IO_Running") == "No":
                if status.get("Last_IO_Errno"):
                    _emit({"type": "error", "message": f"{status.get('Last_IO_Errno')}: "
                           f"{status.get('Last_IO_Error')}"})
                    rc = 1
                break
            now = (status.get("Master_Log_File"), status.get("Read_Master_Log_Pos"),
                   status.get("Last_IO_Errno"))
            if now != last:
                last, changed = now, time.monotonic()
                if status.get("Last_IO_Errno"):
                    _emit({"type": "error", "message": f"{status.get('Last_IO_Errno')}: "
                           f"{status.get('Last_IO_Error')} (the IO thread retries)"})
            elif time.monotonic() - changed > quiet and not status.get("Last_IO_Errno"):
                break
        _emit({"type": "other", "event_type": "replica status",
               "read": f"{status.get('Master_Log_File')}:{status.get('Read_Master_Log_Pos')}",
               "gtid_io_pos": status.get("Gtid_IO_Pos")})
        for q in (f"STOP SLAVE {ch}", f"RESET SLAVE {ch} ALL"):
            try:
                cur.execute(q)
            except pymysql.MySQLError:
                pass
    conn.close()
    return rc


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
