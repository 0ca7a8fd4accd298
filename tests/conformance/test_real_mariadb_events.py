"""The events cases' statement-context and XA events checked against a real MariaDB 10.11: the
same statements run on the test server (statement format for the user variables and RAND(),
XA START ... XA PREPARE, a transaction from another connection, XA COMMIT), and the bodies the
case builds with the wire encoders compared with the server's binlog byte for byte: every
USER_VAR (each value type, NULL), the XA_PREPARE_LOG_EVENT, both XA GTIDs (flags and XID; the
sequence number taken from the server); the event order of the XA transaction too (MariaDB
writes no QUERY for XA START: its GTID stands for it); LOAD DATA LOCAL in statement format:
the blocks (BEGIN_LOAD_QUERY, APPEND_BLOCKs of the case's size), the EXECUTE_LOAD_QUERY's
text, file name span and duplicate handling the case's, its body re-encoded byte for byte."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from binlogscope.wire.binlog.encode_events import (
    encode_mariadb_gtid,
    encode_user_var,
    encode_xa_prepare,
)
from binlogscope.wire.binlog.types import EventType as E
from mock_master.conformance.catalogue import catalogue
from mock_master.conformance.catalogue.events_context import (
    LOAD_BLOCK,
    LOAD_ROWS,
    STATEMENT,
    USER_VARS,
    XA_PREPARE,
    load_statement,
    xa_gtid,
)
from mock_master.scenario.scenarios import StreamSource

pytestmark = [pytest.mark.mysql, pytest.mark.network]


def _events(data: bytes) -> list[tuple[int, bytes]]:
    """(type, body without the checksum) of every event of a CRC32 binlog file."""
    out, pos = [], 4
    while pos + 19 <= len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        out.append((data[pos + 4], data[pos + 19:pos + size - 4]))
        pos += size
    return out


@pytest.fixture(scope="module")
def real(mariadb: Any, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, bytes]]:
    load = tmp_path_factory.mktemp("load") / "load.txt"
    load.write_bytes("".join(f"{i}\t{v}\n" for i, v in LOAD_ROWS).encode())
    conn = mariadb.connect(autocommit=True, database=None, local_infile=True)
    other = mariadb.connect(autocommit=True, database=None)
    try:
        c = conn.cursor()
        c.execute("CREATE DATABASE IF NOT EXISTS conf")
        c.execute("DROP TABLE IF EXISTS conf.t")
        c.execute("CREATE TABLE conf.t (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB")
        c.execute("FLUSH BINARY LOGS")
        c.execute("XA START 'x1'")
        c.execute("INSERT INTO conf.t VALUES (1, 'xa prepared')")
        c.execute("XA END 'x1'")
        c.execute("XA PREPARE 'x1'")
        other.cursor().execute("INSERT INTO conf.t VALUES (2, 'plain')")
        c.execute("XA COMMIT 'x1'")
        c.execute("SET SESSION binlog_format=STATEMENT")
        c.execute("SET @s='text', @r=-2.5e-3, @i=-9223372036854775808, "
                  "@u=18446744073709551615, @d=-12345.678, @n=NULL")
        c.execute(STATEMENT)
        c.execute(f"LOAD DATA LOCAL INFILE '{load}' INTO TABLE conf.t")
        c.execute("SET SESSION binlog_format=ROW")
    finally:
        conn.close()
        other.close()
    return _events(mariadb.binlog_files()[-1].read_bytes())


def test_user_vars_are_the_servers(real: list[tuple[int, bytes]]) -> None:
    got = [body for t, body in real if t == E.USER_VAR_EVENT]
    assert got == [encode_user_var(uv) for uv in USER_VARS]
    types = [t for t, _ in real]
    at = types.index(E.RAND_EVENT)
    assert types[at:at + len(USER_VARS) + 2] == (
        [E.RAND_EVENT] + [E.USER_VAR_EVENT] * len(USER_VARS) + [E.QUERY_EVENT])


def test_xa_events_are_the_servers(real: list[tuple[int, bytes]]) -> None:
    gtids = [body for t, body in real if t == E.GTID_EVENT]
    prepared = next(g for g in gtids if g[12] & 0x40)
    completed = next(g for g in gtids if g[12] & 0x80)
    seq_p, seq_c = (struct.unpack_from("<Q", g)[0] for g in (prepared, completed))
    assert prepared == encode_mariadb_gtid(xa_gtid(seq_p, 1, prepared=True))
    assert completed == encode_mariadb_gtid(xa_gtid(seq_c, 1, prepared=False))
    assert [body for t, body in real if t == E.XA_PREPARE_LOG_EVENT] == [
        encode_xa_prepare(XA_PREPARE)]
    # the XA transaction's events, without the ANNOTATE_ROWS the case leaves out
    types = [t for t, body in real if t != E.ANNOTATE_ROWS_EVENT]
    start = [body for t, body in real if t != E.ANNOTATE_ROWS_EVENT].index(prepared)
    real_xa = types[start:start + 5]
    case = next(c for c in catalogue() if c.id == "events/xa")
    source = case.build("mariadb").scenario.sources[0]
    assert isinstance(source, StreamSource)
    built = [ev[4] for ev in source.stream.files[0].events]
    i = built.index(E.GTID_EVENT)
    assert real_xa == built[i:i + 5] == [E.GTID_EVENT, E.TABLE_MAP_EVENT,
                                         E.WRITE_ROWS_EVENT_V1, E.QUERY_EVENT,
                                         E.XA_PREPARE_LOG_EVENT]


def test_load_data_is_the_servers(real: list[tuple[int, bytes]]) -> None:
    from binlogscope.wire.binlog.context import DecodeContext
    from binlogscope.wire.binlog.decode import decode_event
    from binlogscope.wire.binlog.encode_events import encode_event, encode_file_block
    from binlogscope.wire.binlog.encode_query import encode_query
    from binlogscope.wire.binlog.load_events import FileBlockEvent
    from binlogscope.wire.binlog.query_event import ExecuteLoadQueryEvent

    data = "".join(f"{i}\t{v}\n" for i, v in LOAD_ROWS).encode()
    blocks = [data[k:k + LOAD_BLOCK] for k in range(0, len(data), LOAD_BLOCK)]
    assert len(blocks) > 1
    types = [t for t, _ in real]
    at = types.index(E.BEGIN_LOAD_QUERY_EVENT)
    assert types[at:at + len(blocks) + 1] == (
        [E.BEGIN_LOAD_QUERY_EVENT] + [E.APPEND_BLOCK_EVENT] * (len(blocks) - 1)
        + [E.EXECUTE_LOAD_QUERY_EVENT])
    fid = struct.unpack_from("<I", real[at][1])[0]
    assert [body for _, body in real[at:at + len(blocks)]] == [
        encode_file_block(FileBlockEvent(fid, blk)) for blk in blocks]
    body = real[at + len(blocks)][1]
    ctx = DecodeContext(verify_checksums=False)
    fde = next(b for t, b in real if t == E.FORMAT_DESCRIPTION_EVENT)
    decode_event(encode_event(E.FORMAT_DESCRIPTION_EVENT, fde), ctx)
    ex = decode_event(encode_event(E.EXECUTE_LOAD_QUERY_EVENT, body), ctx).body
    assert isinstance(ex, ExecuteLoadQueryEvent)
    path = ex.query.split("'")[1]
    sql, start, end = load_statement(path)
    assert (ex.query, ex.start_pos, ex.end_pos, ex.dup_handling, ex.file_id) == (
        sql, start, end, 1, fid)
    assert encode_query(ex) == body


def test_an_encrypted_binlog_is_sent_decrypted_after_start_encryption(
        tmp_path: Any) -> None:
    """events/start-encryption's premise: MariaDB 10.11 with encrypt_binlog=ON
    (file_key_management) writes START_ENCRYPTION after the FORMAT_DESCRIPTION and the rest of
    the file encrypted (the row's text is not in it), yet its dump sends START_ENCRYPTION
    then every event in plain text: binlogscope's replica decodes the row; `binlogscope
    file` on the file stops after START_ENCRYPTION with a clear error."""
    import json
    import os
    import subprocess
    import sys

    from tests.mariadb_server import ServerStartError, start, stop

    keys = tmp_path / "keys.txt"
    keys.write_text("1;a7addd9adea9978fda19f21e6be987880e68ac92632ca052e5bb42b1a506939a\n")
    d = tmp_path / "server"
    args = (f"--plugin-load-add=file_key_management --file-key-management-filename={keys} "
            "--encrypt-binlog=ON")
    try:
        server = start(d, extra_env={"MARIADB_EXTRA_ARGS": args})
    except ServerStartError as exc:
        stop(d)
        pytest.fail(f"MariaDB with encrypt_binlog did not start: {exc}")
    try:
        conn = server.connect(autocommit=True, database=None)
        try:
            c = conn.cursor()
            c.execute("CREATE DATABASE IF NOT EXISTS conf")
            c.execute("CREATE TABLE conf.t (id INT PRIMARY KEY, v VARCHAR(200))")
            c.execute("FLUSH BINARY LOGS")
            c.execute("INSERT INTO conf.t VALUES (1, 'secret row')")
        finally:
            conn.close()
        f = server.binlog_files()[-1]
        data = f.read_bytes()
        assert data[4 + 4] == E.FORMAT_DESCRIPTION_EVENT
        fde_size = struct.unpack_from("<I", data, 4 + 9)[0]
        assert data[4 + fde_size + 4] == E.START_ENCRYPTION_EVENT
        assert b"secret row" not in data
        r = subprocess.run(
            [sys.executable, "-m", "binlogscope", "live", "--json", "--non-blocking",
             "--host", server.host, "--port", str(server.port), "-u", server.repl_user,
             "--start", f"{f.name}:4"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "MYSQL_PWD": server.repl_password})
    finally:
        stop(d)
    assert r.returncode == 0, r.stderr
    # the file itself, read without the key: it stops at the encrypted rest, saying so
    copy = tmp_path / "encrypted.bin"
    copy.write_bytes(data)
    fr = subprocess.run([sys.executable, "-m", "binlogscope", "file", "--summary", str(copy)],
                        capture_output=True, text=True, timeout=120)
    assert fr.returncode == 1
    assert "the rest of the file is encrypted" in fr.stderr and "damaged" not in fr.stderr
    assert fr.stdout.count("\n") == 3  # the heading, FORMAT_DESCRIPTION, START_ENCRYPTION
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    types = [x["event_type"] for x in lines if x.get("event_type")]
    assert types[:4] == ["ROTATE_EVENT", "FORMAT_DESCRIPTION_EVENT", "START_ENCRYPTION_EVENT",
                         "GTID_LIST_EVENT"]
    rows = [x["rows"] for x in lines if x.get("event_type") == "WRITE_ROWS_EVENT_V1"]
    assert rows == [[{"before": None, "after": {"id": 1, "v": "secret row"}}]]


def test_a_mariadb_transaction_has_no_begin_query(real: list[tuple[int, bytes]]) -> None:
    """events/mariadb-gtid-no-begin's shape is the server's: the plain INSERT's transaction
    (the one between the XA PREPARE and the XA COMMIT) is GTID (flags 0x0c), ANNOTATE_ROWS,
    TABLE_MAP, WRITE_ROWS_V1, XID - no QUERY 'BEGIN'."""
    types = [t for t, _ in real]
    at = types.index(E.XA_PREPARE_LOG_EVENT) + 1
    shape = [E.GTID_EVENT, E.ANNOTATE_ROWS_EVENT, E.TABLE_MAP_EVENT, E.WRITE_ROWS_EVENT_V1,
             E.XID_EVENT]
    assert types[at:at + 5] == shape
    assert real[at][1][12] == 0x0C
    case = next(c for c in catalogue() if c.id == "events/mariadb-gtid-no-begin")
    source = case.build("mariadb").scenario.sources[0]
    assert isinstance(source, StreamSource)
    built = [ev[4] for ev in source.stream.files[0].events]
    i = built.index(E.GTID_EVENT)
    assert built[i:i + 5] == shape
    assert source.stream.files[0].events[i][19 + 12] == 0x0C
