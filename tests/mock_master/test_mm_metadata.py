"""Metadata answers of the mock master against a real MariaDB holding the same tables.

The test creates tables on its own MariaDB (the session's ``mariadb`` fixture) with DDL that is
later altered, renamed and dropped, takes the server's binlog files and serves copies with the
mock master, which knows the tables only from the DDL in those files. Then the same client
queries go to both: information_schema COLUMNS / TABLES / STATISTICS / KEY_COLUMN_USAGE,
SHOW CREATE TABLE, SHOW [FULL] COLUMNS, ``binlog_gtid_pos()`` at every event boundary, and
prepared statements (mysql-connector-python's prepared cursor, and the raw COM_STMT_* packets
through pymysql's connection). Column definitions (every field) and values must be equal.

Allowed differences (documented in mock_master/README.md): the statistics columns of
information_schema.TABLES (rows, lengths, times, VERSION) and STATISTICS.CARDINALITY - the mock
master has no table data; prepared statement ids (MariaDB numbers them server-wide).
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from mock_master.scenario.scenarios import BinlogSource, Scenario
from mock_master.serve.server import ThreadedMockMaster

pytestmark = [pytest.mark.mysql, pytest.mark.network]

DB = "mm_meta"
DDL = [
    f"DROP DATABASE IF EXISTS {DB}",
    f"CREATE DATABASE {DB}",
    f"USE {DB}",
    """CREATE TABLE kinds (
      id INT UNSIGNED NOT NULL AUTO_INCREMENT,
      ti TINYINT, tu TINYINT UNSIGNED DEFAULT 7, si SMALLINT NOT NULL DEFAULT -1,
      mi MEDIUMINT UNSIGNED, mis MEDIUMINT, bi BIGINT UNSIGNED, bs BIGINT, i5 INT(5) ZEROFILL,
      bo BOOL DEFAULT 1, de DECIMAL(10,2) UNSIGNED DEFAULT 1.5, de2 DECIMAL(5,0), fl FLOAT,
      db DOUBLE, bt BIT(5), e ENUM('x','y z','it''s') NOT NULL DEFAULT 'x', s SET('a','b','c'),
      bl BLOB, tb TINYBLOB, mb MEDIUMBLOB, lb LONGBLOB, vb VARBINARY(10), bn BINARY(4),
      la VARCHAR(10) CHARACTER SET latin1, lc CHAR(3) CHARACTER SET latin1 COLLATE latin1_bin,
      vbin VARCHAR(7) BINARY, v VARCHAR(20) COMMENT 'a comment', c CHAR(5), tx TEXT,
      tt TINYTEXT, mt MEDIUMTEXT, lt LONGTEXT, j JSON, dt DATETIME, dt3 DATETIME(3),
      ts TIMESTAMP NULL DEFAULT NULL,
      ts6 TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
      d DATE DEFAULT '2020-01-02', tm TIME(2), y YEAR, g GEOMETRY, u UUID, i4 INET4,
      PRIMARY KEY (id), KEY k_ti (ti, si), UNIQUE KEY u_v (v)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='all the types'""",
    "CREATE TABLE lat (a INT NOT NULL, b VARCHAR(5) NOT NULL, c TEXT, PRIMARY KEY (b, a))"
    " DEFAULT CHARSET=latin1",
    "CREATE TABLE nokey (x INT, y VARCHAR(3))",
    "INSERT INTO lat VALUES (1, 'x', 'y')",
    "INSERT INTO nokey VALUES (1, 'a')",
    "ALTER TABLE nokey ADD COLUMN z INT AFTER x, MODIFY y VARCHAR(8) NOT NULL, ADD KEY kz (z)",
    "RENAME TABLE nokey TO nokey2",
    "ALTER TABLE nokey2 CHANGE z zz BIGINT UNSIGNED DEFAULT 3",
    "CREATE TABLE gone (q INT)",
    "DROP TABLE gone",
    "CREATE TABLE `odd name` (`key` INT PRIMARY KEY, `select` VARCHAR(4) DEFAULT 'a;b')",
    "INSERT INTO `odd name` VALUES (1, 'x')",
]
DB2 = "mm_meta2"  # DDL the reader must follow: options, keys, conversions, MariaDB syntax
DDL += [
    f"DROP DATABASE IF EXISTS {DB2}", f"CREATE DATABASE {DB2} CHARACTER SET latin1",
    f"USE {DB2}",
    "CREATE TABLE a (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, name VARCHAR(30) NOT NULL, "
    "c CHAR(2)) ENGINE=InnoDB ROW_FORMAT=COMPACT",
    "CREATE TABLE b (id INT, a_id BIGINT UNSIGNED, amount DECIMAL(12,3) NOT NULL DEFAULT "
    "'0.5', note TEXT CHARACTER SET utf8mb4, g INT AS (id * 2) VIRTUAL, s INT AS (id + 1) "
    "PERSISTENT, KEY (a_id), CONSTRAINT fk FOREIGN KEY (a_id) REFERENCES a (id), UNIQUE "
    "(note(10)), PRIMARY KEY (id)) DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci",
    "CREATE TABLE c (x SERIAL, y DOUBLE(8,2), z FLOAT(5,1) UNSIGNED ZEROFILL, w BOOLEAN NOT "
    "NULL DEFAULT TRUE, v VARCHAR(5) BINARY, u NCHAR(3), t TIME DEFAULT '10:00:00', "
    "d DATETIME DEFAULT NOW(), b BIT(1) DEFAULT b'1')",
    "CREATE TABLE d LIKE a",
    "ALTER TABLE d ADD COLUMN extra INT NOT NULL DEFAULT 4 FIRST, ADD INDEX ix_name (name), "
    "ALTER COLUMN c SET DEFAULT 'zz'",
    "ALTER TABLE d DROP PRIMARY KEY, ADD PRIMARY KEY (extra, id), MODIFY COLUMN id BIGINT "
    "UNSIGNED NOT NULL",
    "ALTER TABLE a CONVERT TO CHARACTER SET utf8mb4",
    "ALTER TABLE b DROP FOREIGN KEY fk",
    "ALTER TABLE b DROP INDEX note, ADD FULLTEXT KEY ft (note)",
    "ALTER TABLE b CHANGE amount total DECIMAL(12,3) NOT NULL DEFAULT 1",
    "ALTER TABLE b ALTER total DROP DEFAULT",
    "CREATE TABLE e (k INT) PARTITION BY HASH (k) PARTITIONS 2",
    "ALTER TABLE c ADD COLUMN IF NOT EXISTS nn INT, ADD COLUMN IF NOT EXISTS y INT",
    "CREATE TABLE `MiXeD` (`Col` INT COMMENT 'it''s', `dash-col` INT) COMMENT 'tab'",
    "ALTER TABLE e ENGINE=MyISAM, COMMENT='now MyISAM'",
    "CREATE TEMPORARY TABLE tmp1 (q INT)",
    "DROP TEMPORARY TABLE tmp1",
    "CREATE OR REPLACE TABLE g (p INT PRIMARY KEY)",
    "CREATE OR REPLACE TABLE g (p2 INT)",
]
TABLES = ("kinds", "lat", "nokey2", "odd name", "gone")


@pytest.fixture(scope="module")
def pair(mariadb: Any, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[Any, ThreadedMockMaster, list[Path]]]:
    conn = mariadb.connect()
    with conn.cursor() as cur:
        for stmt in DDL:
            cur.execute(stmt)
        cur.execute("FLUSH BINARY LOGS")
    conn.close()
    files = mariadb.binlog_files()[:-1]
    copy = tmp_path_factory.mktemp("mm-meta-binlogs")
    served = []
    for f in files:
        shutil.copy(f, copy / f.name)
        served.append(copy / f.name)
    mm = ThreadedMockMaster(Scenario(sources=[BinlogSource(served)])).start()
    try:
        yield mariadb, mm, served
    finally:
        mm.stop()


def _pymysql(host: str, port: int) -> Any:
    return pymysql.connect(host=host, port=port, user="repl", password="replpass",
                           charset="utf8mb4", database=DB2)  # DATABASE(), SHOW TABLES


def _fields(cur: Any) -> list[tuple[Any, ...]]:
    return [(f.catalog, f.db, f.table_name, f.org_table, f.name, f.org_name, f.charsetnr,
             f.length, f.type_code, f.flags, f.scale) for f in cur._result.fields]


def _both(pair: Any, query: str) -> tuple[Any, Any]:
    """(fields, rows, status) or the error, from MariaDB and from the mock master."""
    server, mm, _ = pair
    out = []
    for host, port in ((server.host, server.port), (mm.host, mm.port)):
        c = _pymysql(host, port)
        try:
            with c.cursor() as cur:
                cur.execute(query)
                out.append((_fields(cur), cur.fetchall(), cur._result.server_status))
        except pymysql.err.MySQLError as exc:
            out.append(exc.args)
        finally:
            c.close()
    return out[0], out[1]


IS_QUERIES = [
    f"SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{DB2}' "
    "ORDER BY TABLE_NAME, ORDINAL_POSITION",
    "SELECT TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, NULLABLE, SUB_PART, "
    f"INDEX_TYPE FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '{DB2}' "
    "ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
    "SELECT TABLE_NAME, ENGINE, TABLE_COLLATION, TABLE_COMMENT FROM information_schema.TABLES "
    f"WHERE TABLE_SCHEMA = '{DB2}' ORDER BY TABLE_NAME",
    f"SELECT * FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = '{DB2}' "
    "AND CONSTRAINT_NAME <> 'fk' ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION",
    "SELECT TABLE_NAME, CREATE_OPTIONS, ROW_FORMAT FROM information_schema.TABLES WHERE "
    f"TABLE_SCHEMA = '{DB2}' ORDER BY TABLE_NAME",
    f"SELECT COUNT(*) AS n, COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
    f"'{DB2}'",
    "SELECT DISTINCT DATA_TYPE, COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA "
    f"= '{DB2}' ORDER BY DATA_TYPE, COLUMN_KEY LIMIT 6",
    f"SHOW FULL TABLES IN {DB2} WHERE Table_Type = 'BASE TABLE'",
    f"SHOW TABLE STATUS FROM {DB2}",
    f"SHOW CREATE TABLE {DB2}.a",
    "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
    "DATABASE() ORDER BY 1, 2",
    f"SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{DB}' "
    "ORDER BY TABLE_NAME, ORDINAL_POSITION",
    f"select column_name, c.Data_Type AS dt, COLUMN_TYPE from information_schema.columns c "
    f"where table_schema='{DB}' and table_name IN ('lat', 'nokey2') order by 1 desc limit 3",
    f"SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{DB}' "
    "AND TABLE_NAME = 'gone'",
    "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, ENGINE, ROW_FORMAT, "
    "TABLE_COLLATION, CREATE_OPTIONS, TABLE_COMMENT, TEMPORARY FROM information_schema.TABLES "
    f"WHERE TABLE_SCHEMA = '{DB}' ORDER BY TABLE_NAME",
    "SELECT TABLE_CATALOG, TABLE_SCHEMA, TABLE_NAME, NON_UNIQUE, INDEX_SCHEMA, INDEX_NAME, "
    "SEQ_IN_INDEX, COLUMN_NAME, COLLATION, SUB_PART, PACKED, NULLABLE, INDEX_TYPE, COMMENT, "
    f"INDEX_COMMENT, IGNORED FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = '{DB}' "
    "ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX",
    f"SELECT * FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = '{DB}' "
    "ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION",
    f"SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM "
    f"information_schema.SCHEMATA WHERE SCHEMA_NAME = '{DB}'",
    "SELECT nope FROM information_schema.COLUMNS",
    "SELECT 1 FROM information_schema.NOPE",
    f"SHOW CREATE TABLE {DB}.nope",
    "SELECT * FROM information_schema.TABLE_NAMES",
    f"SHOW DATABASES LIKE '{DB[:3]}%'",
    f"SHOW TABLES FROM {DB}",
    f"SHOW FULL TABLES FROM {DB} WHERE Table_type = 'BASE TABLE'",
    f"SHOW TABLES FROM {DB} LIKE 'k%'",
    "SHOW TABLES FROM nope_db",
    "SHOW TABLES",
    f"SHOW KEYS FROM kinds FROM {DB}",
    f"SHOW FIELDS FROM {DB}.lat",
    f"DESCRIBE {DB}.nokey2",
    f"SHOW COLUMNS FROM {DB}.nope",
] + [q for t in TABLES for q in (f"SHOW CREATE TABLE {DB}.`{t}`",
                                  f"SHOW FULL COLUMNS FROM `{t}` FROM {DB}",
                                  f"SHOW COLUMNS FROM {DB}.`{t}`",
                                  f"SHOW INDEX FROM {DB}.`{t}`")]


@pytest.mark.parametrize("query", IS_QUERIES)
def test_metadata_queries_answer_as_mariadb(pair: Any, query: str) -> None:
    real, mock = _both(pair, query)
    if query.startswith("SHOW INDEX") and isinstance(real[1], tuple):
        # Cardinality counts rows: an allowed difference (the mock master has no table data)
        real, mock = ((f, tuple((*r[:6], None, *r[7:]) for r in rows), st)
                      for f, rows, st in (real, mock))
    if query.startswith("SHOW TABLE STATUS") and isinstance(real[1], tuple):
        # the statistics (version, rows, lengths, times): allowed differences as in TABLES
        keep = (0, 1, 3, 14, 16, 17, 19)
        real, mock = ((f, tuple(tuple(r[i] for i in keep) for r in rows), st)
                      for f, rows, st in (real, mock))
    assert mock == real


def test_the_mock_knows_the_tables_from_the_streams_ddl(pair: Any) -> None:
    _, mm, _ = pair
    k = mm.master.knowledge()
    assert all(k.find(DB, t) is None or k.find(DB, t).origin == "stream DDL"
                            for t in TABLES)
    assert not [n for n in mm.log.notes if DB in n and n.startswith("schema:")]
    assert not [n for n in mm.log.notes if n.startswith("schema:")], mm.log.notes
    assert not mm.log.unknown_queries


def test_binlog_gtid_pos_at_every_boundary(pair: Any) -> None:
    files = pair[2]
    queries = []
    for f in files[-2:]:
        data = f.read_bytes()
        pos = 4
        bounds = [0, 4]
        while pos + 19 <= len(data):
            size = struct.unpack_from("<I", data, pos + 9)[0]
            pos += size
            bounds.append(pos)
        bounds += [5, bounds[-1] + 1, bounds[len(bounds) // 2] + 1]
        queries += [f"binlog_gtid_pos('{f.name}', {p})" for p in bounds[:120]]
    queries.append("binlog_gtid_pos('no-such-file.000001', 4)")
    for i in range(0, len(queries), 40):
        real, mock = _both(pair, "SELECT " + ", ".join(queries[i:i + 40]))
        assert mock == real
        assert any(v not in (None, "") for v in real[1][0])


def _raw_prepared(host: str, port: int, query: str, params: list[bytes]) -> list[bytes]:
    """COM_STMT_PREPARE + COM_STMT_EXECUTE (string parameters) + CLOSE: every reply payload."""
    c = _pymysql(host, port)
    out: list[Any] = []
    try:
        c._execute_command(0x16, query)
        try:
            first = c._read_packet()._data
        except pymysql.err.MySQLError as exc:
            return [exc.args]
        out.append(first[:1] + b"\0\0\0\0" + first[5:])  # the id: numbered server-wide
        sid, ncol, npar = struct.unpack_from("<IHH", first, 1)
        for _ in range(npar + ncol + (1 if npar else 0) + (1 if ncol else 0)):
            out.append(c._read_packet()._data)
        body = struct.pack("<IBI", sid, 0, 1)
        if npar:
            body += bytes((npar + 7) // 8) + b"\x01" + b"\xfd\x00" * npar
            body += b"".join(bytes([len(p)]) + p for p in params)
        c._next_seq_id = 0
        c.write_packet(b"\x17" + body)
        eofs = 0
        while True:
            try:
                p = c._read_packet()._data
            except pymysql.err.MySQLError as exc:
                out.append(exc.args)
                break
            out.append(p)
            if p[0] == 0xFF or (p[0] == 0x00 and len(out) == npar + ncol + 3):
                break
            if p[0] == 0xFE and len(p) < 9:
                eofs += 1
                if eofs == 2:
                    break
        c._next_seq_id = 0
        c.write_packet(b"\x19" + struct.pack("<I", sid))
        c._next_seq_id = 0
        c.write_packet(b"\x19" + struct.pack("<I", sid + 100))  # unknown id: no reply either
        c.ping()
    finally:
        c.close()
    return out


PREPARED = [
    ("SELECT COLUMN_NAME, ORDINAL_POSITION, COLUMN_DEFAULT, COLUMN_TYPE, DATA_TYPE, "
     "CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND "
     "TABLE_NAME = ? ORDER BY ORDINAL_POSITION", [DB.encode(), b"kinds"]),
    # (a total order: rows that tie on the ORDER BY come from MariaDB in no fixed order - a
    # table's PRIMARY and UNIQUE keys both have a column at position 1)
    ("SELECT * FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? "
     "ORDER BY TABLE_NAME, CONSTRAINT_NAME, ORDINAL_POSITION", [DB.encode()]),
    ("SELECT @@binlog_format AS f, @@server_id, @@log_bin", []),
    (f"SHOW CREATE TABLE {DB}.nope", []),
]


@pytest.mark.parametrize(("query", "params"), PREPARED)
def test_prepared_statement_packets_are_mariadbs(pair: Any, query: str,
                                                 params: list[bytes]) -> None:
    server, mm, _ = pair
    real = _raw_prepared(server.host, server.port, query, params)
    mock = _raw_prepared(mm.host, mm.port, query, params)
    assert mock == real


#: the client session both pairings run: mysql-connector-python's prepared cursor over
#: information_schema.COLUMNS, then a text query over STATISTICS; prints repr() of what it read
_CONNECTOR_CLIENT = """
import sys
if sys.argv[1] == "cext":
    # the wheel's C extension links its own libssl.so.3 (3.2+); it must be loaded before
    # Python's ssl module binds the system's libssl.so.3 (Debian 12: 3.0), as an application
    # that imports mysql.connector first does
    import _mysql_connector  # noqa: F401
import mysql.connector as mysql_connector
use_pure = sys.argv[1] == "pure"
if not use_pure and not mysql_connector.HAVE_CEXT:
    sys.exit("mysql-connector-python's C extension did not load")
out = []
for hostport in sys.argv[2:]:
    host, port = hostport.rsplit(":", 1)
    c = mysql_connector.connect(host=host, port=int(port), user="repl", password="replpass",
                                use_pure=use_pure, charset="utf8mb4")
    assert type(c).__name__ == ("MySQLConnection" if use_pure else "CMySQLConnection"), c
    cur = c.cursor(prepared=True)
    cur.execute("SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, "
                "NUMERIC_PRECISION, CHARACTER_OCTET_LENGTH FROM "
                "information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND "
                "TABLE_NAME IN (%s, %s) ORDER BY TABLE_NAME, ORDINAL_POSITION",
                ("mm_meta", "kinds", "odd name"))
    rows = cur.fetchall()
    out.append((cur.description, rows))
    cur.close()
    text = c.cursor()
    text.execute("SELECT TABLE_NAME, NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, "
                 "SUB_PART, NULLABLE FROM information_schema.STATISTICS WHERE "
                 "TABLE_SCHEMA = 'mm_meta' ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX")
    out.append((text.description, text.fetchall()))
    c.close()
print(repr(out))
"""


@pytest.mark.parametrize("mode", ["pure", "cext"])
def test_mysql_connector_prepared_cursor_reads_information_schema(pair: Any, mode: str) -> None:
    """Both of mysql-connector-python's implementations (pure Python, and the C extension over
    libmysqlclient) read the same descriptions and rows from the mock as from MariaDB. The
    client runs in its own process, so the C extension loads as it does in an application."""
    import subprocess
    import sys

    assert DB == "mm_meta"
    server, mm, _ = pair
    proc = subprocess.run([sys.executable, "-c", _CONNECTOR_CLIENT, mode,
                           f"{server.host}:{server.port}", f"{mm.host}:{mm.port}"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = eval(proc.stdout, {"Decimal": __import__("decimal").Decimal})  # (repr above)
    assert len(results[0][1]) > 40
    assert results[2] == results[0]
    assert results[3] == results[1]


def test_schema_from_a_live_server_answers_as_that_server(pair: Any, monkeypatch: Any) -> None:
    """``schema_from``: the tables of a live server (its SHOW CREATE TABLE texts), served with
    a stream that holds no DDL at all."""
    from mock_master import EventBuilder, StreamSource

    server, _, _ = pair
    monkeypatch.setenv("MOCK_MASTER_SCHEMA_PASSWORD", server.password)
    sc = Scenario(sources=[StreamSource(EventBuilder("mariadb").build())],
                  schema_from=f"mysql://{server.user}@{server.host}:{server.port}/{DB},{DB2}")
    mm = ThreadedMockMaster(sc).start()
    try:
        for q in [q for q in IS_QUERIES if "information_schema" in q and "'" in q
                  and "TABLE_NAMES" not in q] + [f"SHOW CREATE TABLE {DB}.kinds"]:
            real, mock = _both((server, mm, []), q)
            assert mock == real, q
        found = mm.master.knowledge().find(DB, "kinds")
        assert found is not None and found.origin == "server"
    finally:
        mm.stop()


class _MariaDBClient:
    """A bare client that asks for MariaDB's EXTENDED_METADATA and CACHE_METADATA (pymysql
    and mysql-connector never do); every server payload is kept as sent."""

    def __init__(self, host: str, port: int, mariadb_caps: int) -> None:
        import socket

        from binlogscope.wire import auth
        from binlogscope.wire.constants import CapabilityFlag as C
        from binlogscope.wire.handshake import (
            HandshakeResponse41,
            decode_handshake_v10,
            encode_handshake_response41,
        )
        from binlogscope.wire.reader import ByteReader

        self.sock = socket.create_connection((host, port), timeout=10)
        greeting = decode_handshake_v10(ByteReader(self.read()))
        caps = (C.CLIENT_PROTOCOL_41 | C.CLIENT_SECURE_CONNECTION | C.CLIENT_PLUGIN_AUTH
                | C.CLIENT_LONG_FLAG | C.CLIENT_TRANSACTIONS | C.CLIENT_MULTI_RESULTS
                | C.CLIENT_PS_MULTI_RESULTS)  # no CLIENT_LONG_PASSWORD: MariaDB caps are read
        nonce = greeting.auth_plugin_data.rstrip(b"\0")[:20]
        self.write(encode_handshake_response41(HandshakeResponse41(
            int(caps), "repl", auth.scramble_native(b"replpass", nonce),
            client_plugin_name="mysql_native_password", character_set=45,
            mariadb_capabilities=mariadb_caps)), 1)
        assert self.read()[0] == 0x00, "login failed"

    def read(self) -> bytes:
        head = self._exactly(4)
        return self._exactly(int.from_bytes(head[:3], "little"))

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def write(self, payload: bytes, seq: int = 0) -> None:
        self.sock.sendall(len(payload).to_bytes(3, "little") + bytes([seq]) + payload)

    def close(self) -> None:
        self.write(b"\x01")
        self.sock.close()


def _result(c: _MariaDBClient, cache: bool) -> list[bytes]:
    """One result set, every payload: column count, definitions (unless cached), EOF, rows,
    EOF."""
    head = c.read()
    out = [head]
    if head[0] in (0x00, 0xFF):
        return out
    if not cache or head[1]:
        out += [c.read() for _ in range(head[0])]
    eofs = 0
    while eofs < 2:  # after the definitions (no CLIENT_DEPRECATE_EOF here), after the rows
        p = c.read()
        out.append(p)
        eofs += p[0] == 0xFE and len(p) < 9
    return out


@pytest.mark.parametrize("mariadb_caps", [0x18, 0x08, 0x10, 0x00])
def test_mariadb_metadata_capabilities_as_mariadb(pair: Any, mariadb_caps: int) -> None:
    """EXTENDED_METADATA (0x08) and CACHE_METADATA (0x10): a text result set, and a prepared
    statement executed twice (the second EXECUTE leaves the definitions out with the cache)."""
    server, mm, _ = pair
    cache = bool(mariadb_caps & 0x10)
    got = []
    for host, port in ((server.host, server.port), (mm.host, mm.port)):
        c = _MariaDBClient(host, port, mariadb_caps)
        out: list[bytes] = []
        try:
            c.write(b"\x03SELECT COLUMN_NAME, ORDINAL_POSITION FROM information_schema.COLUMNS "
                    b"WHERE TABLE_SCHEMA = 'mm_meta' AND TABLE_NAME = 'lat'")
            out += _result(c, cache)
            c.write(b"\x16SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
                    b"WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'lat' ORDER BY ORDINAL_POSITION")
            prep = c.read()
            out.append(prep[:1] + prep[5:])  # the statement id is numbered server-wide
            out += [c.read() for _ in range(1 + 1 + 2 + 1)]  # param, EOF, 2 columns, EOF
            for bound in (1, 0):
                body = prep[1:5] + b"\x00\x01\x00\x00\x00" + b"\x00" + bytes([bound])
                body += (b"\xfd\x00" if bound else b"") + b"\x07mm_meta"
                c.write(b"\x17" + body)
                out += _result(c, cache)
        finally:
            c.close()
        got.append(out)
    assert len(got[0]) > 20
    if cache:  # the second EXECUTE: column count 2, "metadata follows" 0
        assert b"\x02\x00" in got[0]
    assert got[1] == got[0]


def _cursor_session(host: str, port: int, table: str) -> list[Any]:
    """PREPARE, EXECUTE with CURSOR_TYPE_READ_ONLY, COM_STMT_FETCH 2 rows at a time until the
    cursor is closed, one FETCH more and one of an unknown statement: every reply payload."""
    c = _pymysql(host, port)
    out: list[Any] = []

    def read() -> Any:
        try:
            return c._read_packet()._data
        except pymysql.err.MySQLError as exc:
            return exc.args

    try:
        c._execute_command(0x16, "SELECT COLUMN_NAME, ORDINAL_POSITION FROM "
                           f"information_schema.COLUMNS WHERE TABLE_SCHEMA = '{DB}' AND "
                           f"TABLE_NAME = '{table}' ORDER BY ORDINAL_POSITION LIMIT 4")
        sid = struct.unpack_from("<I", read(), 1)[0]
        for _ in range(2 + 1):
            read()
        c._next_seq_id = 0
        c.write_packet(b"\x17" + struct.pack("<IBI", sid, 1, 1))
        out += [read() for _ in range(1 + 2 + 1)]
        for _ in range(4):
            c._next_seq_id = 0
            c.write_packet(b"\x1c" + struct.pack("<II", sid, 2))
            while True:
                p = read()
                out.append(p)
                if not isinstance(p, bytes) or p[0] == 0xFE:
                    break
        c._next_seq_id = 0
        c.write_packet(b"\x1c" + struct.pack("<II", sid + 1000, 2))
        err = read()
        out.append(err[0])  # the id in the text is numbered server-wide
    finally:
        c.close()
    return [x.replace(f"({sid})".encode(), b"(N)") if isinstance(x, bytes) else
            (x[0], x[1].replace(f"({sid})", "(N)")) if isinstance(x, tuple) else x
            for x in out]


@pytest.mark.parametrize("table", ["kinds", "lat", "nothing"])
def test_prepared_statement_cursor_fetch_as_mariadb(pair: Any, table: str) -> None:
    server, mm, _ = pair
    real = _cursor_session(server.host, server.port, table)
    assert _cursor_session(mm.host, mm.port, table) == real
