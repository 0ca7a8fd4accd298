"""``explain`` on the lines a real MariaDB replica and real clients print, against the real
primary's binlog files: the event found is the one that failed (checked through its bytes: the
row that broke the replica is in it)."""

from __future__ import annotations

import io
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli.main import main
from tests.ci_support import unavailable
from tests.mariadb_server import MariaDB, ServerStartError, replica_status, sql, start, stop

pytestmark = [pytest.mark.mysql, pytest.mark.network]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(list(argv), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    d = tmp_path_factory.mktemp("diag-replica")
    try:
        server = start(d)
    except ServerStartError as exc:
        unavailable(f"MariaDB could not be started: {exc}")
    try:
        sql(server, "SET GLOBAL server_id = 72")
        yield server
    finally:
        stop(d)


def _replicate_from_here(primary: MariaDB, replica: MariaDB) -> None:
    sql(replica, "STOP SLAVE")
    sql(replica, "RESET SLAVE ALL")
    f, pos = sql(primary, "SHOW MASTER STATUS")[0][:2]
    sql(replica, f"CHANGE MASTER TO MASTER_HOST='{primary.host}', MASTER_PORT={primary.port}, "
                 f"MASTER_USER='{primary.repl_user}', MASTER_PASSWORD='{primary.repl_password}',"
                 f" MASTER_CONNECT_RETRY=1, MASTER_LOG_FILE='{f}', MASTER_LOG_POS={pos}, "
                 "MASTER_USE_GTID=no")
    sql(replica, "START SLAVE")


def _wait_error(replica: MariaDB) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    st: dict[str, Any] = {}
    while time.monotonic() < deadline:
        st = replica_status(replica)
        if st.get("Last_SQL_Error") or st.get("Last_IO_Error"):
            return st
        time.sleep(0.1)
    raise AssertionError(f"the replica did not fail: {st}")


def _binlog_dir(primary: MariaDB) -> str:
    return str(primary.binlog_dir)


def test_duplicate_key_on_the_replica(mariadb: MariaDB, replica: MariaDB) -> None:
    """Last_SQL_Error quotes end_log_pos: the event found ENDS there and holds the row."""
    sql(mariadb, "CREATE DATABASE IF NOT EXISTS diag")
    sql(mariadb, "CREATE TABLE IF NOT EXISTS diag.dup (id INT PRIMARY KEY, v VARCHAR(20))")
    sql(replica, "CREATE DATABASE IF NOT EXISTS diag")
    sql(replica, "CREATE TABLE IF NOT EXISTS diag.dup (id INT PRIMARY KEY, v VARCHAR(20))")
    sql(replica, "INSERT INTO diag.dup VALUES (4242, 'replica')")
    _replicate_from_here(mariadb, replica)
    sql(mariadb, "INSERT INTO diag.dup VALUES (1, 'ok')")
    sql(mariadb, "INSERT INTO diag.dup VALUES (4242, 'primary')")
    line = _wait_error(replica)["Last_SQL_Error"]
    assert "end_log_pos" in line  # the real line, as the server wrote it
    end = int(line.rsplit("end_log_pos", 1)[1].strip())

    rc, out, err = run("explain", line, "--source", _binlog_dir(mariadb), "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["clue"]["position_kind"] == "end"
    found = doc["found"]
    assert found["log_pos"] == end
    assert found["offset"] + found["event_size"] == end
    assert found["event_type"] == "WRITE_ROWS_EVENT_V1"
    assert (found["schema"], found["table"]) == ("diag", "dup")
    assert found["rows"] == [{"before": None, "after": {"id": 4242, "v": "primary"}}]
    assert "agrees" in doc["agrees"]
    kinds = [s["event_type"] for s in doc["transaction"]]
    assert kinds[0] == "GTID_EVENT" and kinds[-1] == "XID_EVENT"
    assert doc["table_map"]["table"] == "dup"
    assert [c["name"] for c in doc["table_map"]["columns"]] == ["id", "v"]
    assert doc["format_description"]["checksum"] == "CRC32"
    assert doc["unusual"] == []

    rc, text, _ = run("explain", line, "--source", _binlog_dir(mariadb))
    assert rc == 0
    assert f"..{end} WRITE_ROWS_EVENT_V1 diag.dup 1 row" in text
    assert "END position" in text
    assert "body.row[0].after_image.id = 4242" in text  # the annotated bytes


def test_missing_table_status_paste(mariadb: MariaDB, replica: MariaDB) -> None:
    """Last_SQL_Error without a position: pasted with SHOW SLAVE STATUS, Exec_Master_Log_Pos
    gives the START of the failing transaction, whose row event is on the missing table."""
    sql(mariadb, "CREATE DATABASE IF NOT EXISTS diag")
    sql(mariadb, "CREATE TABLE IF NOT EXISTS diag.gone (id INT PRIMARY KEY)")
    _replicate_from_here(mariadb, replica)  # the CREATE TABLE is not replayed
    sql(mariadb, "INSERT INTO diag.gone VALUES (7)")
    st = _wait_error(replica)
    assert "doesn't exist" in st["Last_SQL_Error"]
    text = "\n".join(f"{k}: {st[k]}" for k in (
        "Relay_Master_Log_File", "Last_SQL_Errno", "Last_SQL_Error", "Exec_Master_Log_Pos"))
    rc, out, err = run("explain", text, "--source", _binlog_dir(mariadb), "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["clue"]["pattern"] == "replica-status-exec"
    assert doc["found"]["offset"] == int(st["Exec_Master_Log_Pos"])
    assert doc["found"]["event_type"] == "GTID_EVENT"
    tables = [s["line"] for s in doc["transaction"] if "WRITE_ROWS" in s["event_type"]]
    assert tables and "diag.gone" in tables[0]
    sql(replica, "STOP SLAVE")


def test_a_start_inside_an_event(mariadb: MariaDB) -> None:
    """python-mysql-replication asked to start inside an event: the real server's ERR 1236
    (through pymysql's traceback) names the position; explain says which event it cuts."""
    from pymysqlreplication import BinLogStreamReader

    sql(mariadb, "CREATE DATABASE IF NOT EXISTS diag")
    sql(mariadb, "CREATE TABLE IF NOT EXISTS diag.cut (id INT PRIMARY KEY)")
    f, pos = sql(mariadb, "SHOW MASTER STATUS")[0][:2]
    sql(mariadb, "INSERT INTO diag.cut VALUES (1)")
    inside = int(pos) + 7  # in the GTID event that starts the insert's transaction
    import traceback

    text = ""
    stream = BinLogStreamReader(
        connection_settings={"host": mariadb.host, "port": mariadb.port,
                             "user": mariadb.repl_user, "password": mariadb.repl_password},
        server_id=4711, blocking=False, log_file=f, log_pos=inside, resume_stream=True)
    try:
        for _ in stream:
            pass
    except Exception:
        text = traceback.format_exc()
    finally:
        stream.close()
    assert "1236" in text, text
    rc, out, err = run("explain", text, "--source", _binlog_dir(mariadb), "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["found"] is None
    assert doc["clue"]["position"] == inside and doc["clue"]["error_code"] == 1236
    assert "not an event boundary" in doc["answer"][0]
    assert f"at {pos}.." in doc["answer"][0]
    assert doc["near"][-1]["offset"] == int(pos)


def test_a_damaged_event_is_named(mariadb: MariaDB, tmp_path: Path) -> None:
    """A byte flipped in a row event's body (a copy of the real file): the event is found by
    its end position and its checksum mismatch is said."""
    sql(mariadb, "CREATE DATABASE IF NOT EXISTS diag")
    sql(mariadb, "CREATE TABLE IF NOT EXISTS diag.crc (id INT PRIMARY KEY, v VARCHAR(30))")
    sql(mariadb, "INSERT INTO diag.crc VALUES (99, 'checksum me')")
    f = mariadb.binlog_files()[-1]
    rows = sql(mariadb, f"SHOW BINLOG EVENTS IN '{f.name}'")
    write = [r for r in rows if r[2] == "Write_rows_v1"][-1]
    start_pos, end_pos = int(write[1]), int(write[4])
    copy = tmp_path / f.name
    shutil.copy(f, copy)
    data = bytearray(copy.read_bytes())
    data[end_pos - 8] ^= 0xFF  # a value byte, before the CRC32
    copy.write_bytes(bytes(data))
    rc, out, _ = run("explain", f"end:{f.name}:{end_pos}", "--source", str(copy), "--json")
    assert rc == 0
    doc = json.loads(out)
    assert doc["found"]["offset"] == start_pos
    assert any(u.startswith("checksum mismatch") for u in doc["unusual"]), doc["unusual"]


def test_explain_over_the_live_server(mariadb: MariaDB, monkeypatch: pytest.MonkeyPatch
                                      ) -> None:
    """--source mysql://...: the binlog read as a replica reads it gives the event the files
    give; the password (MYSQL_PWD, as live takes it) is never shown."""
    monkeypatch.setenv("MYSQL_PWD", mariadb.repl_password)
    sql(mariadb, "CREATE DATABASE IF NOT EXISTS diag")
    sql(mariadb, "CREATE TABLE IF NOT EXISTS diag.lv (id INT PRIMARY KEY)")
    sql(mariadb, "INSERT INTO diag.lv VALUES (31337)")
    f = mariadb.binlog_files()[-1].name
    rows = sql(mariadb, f"SHOW BINLOG EVENTS IN '{f}'")
    write = [r for r in rows if r[2] == "Write_rows_v1"][-1]
    url = f"mysql://{mariadb.repl_user}@{mariadb.host}:{mariadb.port}"
    rc, out, err = run("explain", f"end:{f}:{write[4]}", "--source", url, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["found"]["offset"] == int(write[1])
    assert doc["found"]["rows"] == [{"before": None, "after": {"id": 31337}}]
    rc, text, err = run("explain", f"end:{f}:{write[4]}", "--source", url)
    assert mariadb.repl_password not in text + err + out


def test_a_corrupted_event_on_the_wire(replica: MariaDB) -> None:
    """A real replica of the mock master that sends one event with a wrong CRC32: the IO
    thread's error and status, pasted, lead to that event in the served binlog."""
    from mock_master.scenario.faults import Action
    from mock_master.scenario.scenarios import BinlogSource, Scenario
    from mock_master.serve.server import ThreadedMockMaster

    src = Path(__file__).resolve().parents[2] / "captures" / "mariadb-10.11-workload.000001"
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource([src])],
                                     actions=[Action("corrupt_checksum_at", at=12)])).start()
    try:
        sql(replica, "STOP SLAVE")
        sql(replica, "RESET SLAVE ALL")
        sql(replica, f"CHANGE MASTER TO MASTER_HOST='{mm.host}', MASTER_PORT={mm.port}, "
                     "MASTER_USER='repl', MASTER_PASSWORD='replpass', MASTER_CONNECT_RETRY=1, "
                     "MASTER_LOG_FILE='mysql-bin.000001', MASTER_LOG_POS=4, "
                     "MASTER_USE_GTID=no")
        sql(replica, "START SLAVE")
        st = _wait_error(replica)
        sql(replica, "STOP SLAVE")
    finally:
        mm.stop()
    assert st["Last_IO_Errno"] == 1595, st
    text = "\n".join(f"{k}: {st[k]}" for k in (
        "Master_Log_File", "Read_Master_Log_Pos", "Relay_Master_Log_File",
        "Exec_Master_Log_Pos", "Last_IO_Errno", "Last_IO_Error"))
    rc, out, err = run("explain", text, "--source", str(src), "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["clue"]["pattern"] == "replica-status-read"
    assert doc["found"]["offset"] == int(st["Read_Master_Log_Pos"])
    # the 12th event the mock master sent (1 = its fake ROTATE): the served file's 11th
    from binlogscope.drivers.binlog_file import read_binlog_file

    served = [ev.offset for ev in read_binlog_file(src, record=False)]
    assert doc["found"]["offset"] == served[10]
    assert "replica-io-queue" in [c["pattern"] for c in doc["other_clues"]]
