"""The mock master's MySQL flavour against real MySQL servers' answers.

There is no MySQL server on this machine; the fixture captures (mysql_captures.py) hold real
MySQL 8.0.21-9.0 servers answering the queries the ``mysql`` client sends (``select
@@version_comment limit 1``, ``SELECT DATABASE()``, SHOW DATABASES, SHOW TABLES, DESC ...). Each
test serves a mock master with the captured server's version, the tables the capture shows, and
its ``@@version_comment``, runs the same query with PyMySQL at the same connection charset, and
compares the answer packet by packet: every column definition field, every row value, the final
status flags. Allowed differences (the only ones, listed where they apply): the value of
``USER()`` (another client host) and of ``NOW()`` (the clock), and in one 8.0.32 session the
SERVER_SESSION_STATE_CHANGED status bit its server set on every answer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pymysql
import pytest

from binlogscope.session.events import Peer
from mock_master.diff.compare import decode
from mock_master.diff.run import record
from mock_master.history.builder import EventBuilder
from mock_master.scenario.scenarios import Scenario, StreamSource, User
from mock_master.serve.server import ThreadedMockMaster
from tests.mock_master.mysql_captures import (
    COLUMN_FIELDS,
    DEEPFLOW,
    ZEEK,
    Answered,
    greeting_of,
    load,
)

pytestmark = pytest.mark.network

_COLLATION = {33: "utf8mb3_general_ci", 255: "utf8mb4_0900_ai_ci", 45: "utf8mb4_general_ci"}


def _mock(version: str, comment: str, ddl: str = "") -> ThreadedMockMaster:
    b = EventBuilder("mysql")
    b.rotate()
    sc = Scenario(flavor="mysql", server_version=version, sources=[StreamSource(b.build())],
                  users=[User("root", "rootpw")], variables={"version_comment": comment},
                  schema_ddl=ddl or None)
    return ThreadedMockMaster(sc)


def _ask(mm: ThreadedMockMaster, queries: list[str], charset: int,
         database: str | None = None) -> list[Answered]:
    """Each query's answer; ``FIELD_LIST t`` sends COM_FIELD_LIST for table t."""
    def session(host: str, port: int) -> None:
        conn = pymysql.connect(host=host, port=port, user="root", password="rootpw",
                               database=database, charset=_COLLATION[charset].split("_")[0],
                               collation=_COLLATION[charset], autocommit=True)
        try:
            with conn.cursor() as cur:
                for q in queries:
                    if q.startswith("FIELD_LIST "):
                        conn._execute_command(0x04, q.split(" ", 1)[1] + "\0")
                        while not conn._read_packet().is_eof_packet():
                            pass
                        continue
                    cur.execute(q)
                    cur.fetchall()
        finally:
            conn.close()

    run = record(session, mm.host, mm.port)
    assert run.error is None, run.error
    out: list[Answered] = []
    for p in decode(run.conversations[0]):
        if p.kind == "com_query" and p.value.query in queries:
            out.append(Answered(p.value.query))
        elif p.kind == "command" and p.value.command == 0x04:  # COM_FIELD_LIST
            out.append(Answered("FIELD_LIST " + bytes(p.value.arguments).split(b"\0")[0]
                                .decode()))
        elif p.kind == "com_query":
            out.append(Answered(""))  # the client's own SET NAMES: not compared
        elif not out or p.direction is not Peer.SERVER:
            continue
        elif p.kind == "column_definition41":
            out[-1].columns.append({k: getattr(p.value, k) for k in COLUMN_FIELDS})
            out[-1].payload_lengths.append(p.payload_length)
        elif p.kind == "text_row":
            out[-1].rows.append(list(p.value.values))
        elif p.kind in ("ok", "eof"):
            out[-1].status = p.value.status_flags
        elif p.kind == "err":
            out[-1].error = (p.value.error_code, p.value.error_message)
    return [a for a in out if a.query]


def _same(real: Answered, mock: Answered, *,
          allowed_values: Callable[[int, int], bool] = lambda r, c: False,
          status_mask: int = 0xFFFF) -> None:
    """Every column definition field, every row value (except allowed (row, column) cells),
    the final status flags."""
    assert mock.error is None, mock.error
    assert len(mock.columns) == len(real.columns), (real.columns, mock.columns)
    for i, (r, m) in enumerate(zip(real.columns, mock.columns, strict=True)):
        diff = {k: (r[k], m[k]) for k in COLUMN_FIELDS if r[k] != m[k]}
        assert not diff, f"{real.query!r} column {i} {r['name']!r}: (real, mock) {diff}"
    if real.query.startswith("FIELD_LIST "):  # each definition's default value, by length
        assert mock.payload_lengths == real.payload_lengths, (real.payload_lengths,
                                                              mock.payload_lengths)
    assert len(mock.rows) == len(real.rows), (real.rows, mock.rows)
    for ri, (rr, mr) in enumerate(zip(real.rows, mock.rows, strict=True)):
        for ci, (rv, mv) in enumerate(zip(rr, mr, strict=True)):
            if not allowed_values(ri, ci):
                assert rv == mv, f"{real.query!r} row {ri} column {ci}: real {rv!r} mock {mv!r}"
    assert real.status is not None and mock.status is not None
    assert mock.status & status_mask == real.status & status_mask, (real.status, mock.status)


def _user_cell(col: int) -> Callable[[int, int], bool]:
    return lambda r, c: c == col


# the table the deepflow captures show (its CREATE and DESC output, MySQL 8.0.26)
YUANCHAO = ("CREATE DATABASE yuanchao; USE yuanchao; CREATE TABLE test_table ("
            "`id` int unsigned auto_increment, `name` varchar(20) not null, `age` int, "
            "primary key(`id`)) engine=innodb default charset=utf8;")


def test_desc_and_setup_queries_of_mysql_8_0_26() -> None:
    desc = load(DEEPFLOW / "mysql-table-desc.pcap")
    create = load(DEEPFLOW / "mysql-table-create.pcap")
    dbq = load(DEEPFLOW / "mysql-database.pcap")
    assert desc.server_version == "8.0.26" and desc.client_charset == 33
    queries = ["select @@version_comment limit 1", "desc test_table", "show tables",
               "FIELD_LIST test_table"]
    with _mock("8.0.26", "MySQL Community Server - GPL", YUANCHAO) as mm:
        got = _ask(mm, queries, 33, "yuanchao")
        no_db = _ask(mm, ["SELECT DATABASE()"], 33)
    _same(desc.answer(queries[0]), got[0])
    _same(desc.answer(queries[1]), got[1])
    _same(create.answer(queries[2]), got[2])
    _same(create.answer(queries[3]), got[3])
    _same(dbq.answer("SELECT DATABASE()"), no_db[0])


def test_show_databases_show_tables_user_and_charsets_of_mysql_8_0_32() -> None:
    cap = load(ZEEK / "caching_sha2_password.pcap")
    auth = load(ZEEK / "caching_sha2_password-after-auth-switch.pcapng")
    assert cap.server_version == auth.server_version == "8.0.32"
    assert cap.client_charset == auth.client_charset == 255
    ddl = "CREATE DATABASE test; CREATE TABLE test.t (a float);"
    q1 = ["show databases", "show tables", "FIELD_LIST t", "select @@version_comment limit 1"]
    q2 = ["select @@version_comment limit 1", "select DATABASE(), USER() limit 1",
          "select @@character_set_client, @@character_set_connection, "
          "@@character_set_server, @@character_set_database limit 1"]
    with _mock("8.0.32", "MySQL Community Server - GPL", ddl) as mm:
        got1 = _ask(mm, q1, 255, "test")
        got2 = _ask(mm, q2, 255)
    for q, g in zip(q1, got1, strict=True):
        _same(cap.answer(q), g)
    # that session's server set SERVER_SESSION_STATE_CHANGED (0x4000) in every answer (its
    # session tracking; the mock tracks no session state): the one status bit not compared
    tracked = ~0x4000 & 0xFFFF
    _same(auth.answer(q2[0]), got2[0], status_mask=tracked)
    # USER(): the real one was root@localhost, the mock's client is root@127.0.0.1
    _same(auth.answer(q2[1]), got2[1], allowed_values=_user_cell(1), status_mask=tracked)
    assert got2[1].rows[0][1] == b"root@127.0.0.1"
    _same(auth.answer(q2[2]), got2[2], status_mask=tracked)


def test_mysql_8_0_21_lengths_and_derived_schema() -> None:
    """8.0.21: @@version_comment sized by its value, SHOW DATABASES' schema 'mysql'."""
    cap = load(ZEEK / "selects_with_new_proto.pcap")
    assert (cap.server_version, cap.client_charset) == ("8.0.21", 33)
    queries = ["select @@version_comment limit 1", "show databases"]
    with _mock("8.0.21", "MySQL Community Server - GPL") as mm:
        got = _ask(mm, queries, 33)
    for q, g in zip(queries, got, strict=True):
        _same(cap.answer(q), g)


@pytest.mark.parametrize(("capture", "version", "comment"), [
    ("plain-amazon-rds.pcap", "8.0.28", "Source distribution"),
    ("query-attr.pcap", "8.0.29-debug", "Source distribution"),
])
def test_now_and_version_comment(capture: str, version: str, comment: str) -> None:
    cap = load(ZEEK / capture)
    assert cap.server_version == version
    queries = ["select @@version_comment limit 1", "select now()"]
    with _mock(version, comment) as mm:
        got = _ask(mm, queries, cap.client_charset)
    _same(cap.answer(queries[0]), got[0])
    _same(cap.answer(queries[1]), got[1], allowed_values=lambda r, c: True)  # the clock
    assert len(got[1].rows[0][0] or b"") == 19


def test_version_function_of_mysql_9_0() -> None:
    cap = load(ZEEK / "mysql-9.0.0-query-attributes.pcap")
    with _mock("9.0.0", "MySQL Community Server - GPL") as mm:
        got = _ask(mm, ["SELECT version()"], cap.client_charset)
    _same(cap.answer("SELECT version()"), got[0])


# MySQL 9.0's system tables the capture lists with COM_FIELD_LIST (scripts/mysql_system_
# tables.sql's definitions: ascii Host, utf8mb3_bin names, ENUM/SET privileges, a TIMESTAMP
# with ON UPDATE, TEXT; keys)
SYSTEM = """CREATE DATABASE mysql; USE mysql;
CREATE TABLE columns_priv (Host char(255) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL
 DEFAULT '', Db char(64) NOT NULL DEFAULT '', User char(32) NOT NULL DEFAULT '',
 Table_name char(64) NOT NULL DEFAULT '', Column_name char(64) NOT NULL DEFAULT '',
 Timestamp timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
 Column_priv set('Select','Insert','Update','References') CHARACTER SET utf8mb3 COLLATE
 utf8mb3_general_ci NOT NULL DEFAULT '', PRIMARY KEY (Host,User,Db,Table_name,Column_name))
 ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_bin;
CREATE TABLE component (component_id int unsigned NOT NULL AUTO_INCREMENT,
 component_group_id int unsigned NOT NULL, component_urn text NOT NULL,
 PRIMARY KEY (component_id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE db (Host char(255) CHARACTER SET ascii COLLATE ascii_general_ci NOT NULL
 DEFAULT '', Db char(64) NOT NULL DEFAULT '', User char(32) NOT NULL DEFAULT '', """ + \
    ", ".join(f"{p}_priv enum('N','Y') CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci "
              "NOT NULL DEFAULT 'N'" for p in (
                  "Select", "Insert", "Update", "Delete", "Create", "Drop", "Grant",
                  "References", "Index", "Alter", "Create_tmp_table", "Lock_tables",
                  "Create_view", "Show_view", "Create_routine", "Alter_routine", "Execute",
                  "Event", "Trigger")) + """, PRIMARY KEY (Host,Db,User), KEY User (User))
 ENGINE=InnoDB DEFAULT CHARSET=utf8mb3 COLLATE=utf8mb3_bin;"""


def test_field_list_of_mysql_9_0_system_tables() -> None:
    cap = load(ZEEK / "many-query-attrs.pcap")
    assert (cap.server_version, cap.client_charset) == ("9.0.0", 255)
    queries = ["FIELD_LIST columns_priv", "FIELD_LIST component", "FIELD_LIST db"]
    with _mock("9.0.0", "MySQL Community Server - GPL", SYSTEM) as mm:
        got = _ask(mm, queries, 255, "mysql")
    for q, g in zip(queries, got, strict=True):
        _same(cap.answer(q), g)


#: capability bits a real MySQL 8 offers and the mock master does not (it does not implement
#: them): CLIENT_OPTIONAL_RESULTSET_METADATA, CLIENT_ZSTD_COMPRESSION_ALGORITHM,
#: CLIENT_QUERY_ATTRIBUTES, MULTI_FACTOR_AUTHENTICATION; and TLS (CLIENT_SSL,
#: CLIENT_SSL_VERIFY_SERVER_CERT) where the captured server had it and the mock has no cert
NOT_IMPLEMENTED = (1 << 25) | (1 << 26) | (1 << 27) | (1 << 28)
TLS = 0x800 | (1 << 30)


@pytest.mark.parametrize("capture", [
    ZEEK / "selects_with_new_proto.pcap", DEEPFLOW / "mysql-table-desc.pcap",
    ZEEK / "caching_sha2_password.pcap", ZEEK / "change-user-success.pcap",
    ZEEK / "mysql-9.0.0-query-attributes.pcap"])
def test_greeting_as_mysql_8_sends_it(capture: Path) -> None:
    """The handshake packet: version, character set (utf8mb4_0900_ai_ci), status, the
    capability bits except NOT_IMPLEMENTED and TLS, its length (auth data, reserved bytes)."""
    real = greeting_of(capture)
    b = EventBuilder("mysql")
    b.rotate()
    plugin = real["auth_plugin_name"]
    # the 8.0.21 and 8.0.26 servers ran with default_authentication_plugin =
    # mysql_native_password: the mock is given the same setting
    sc = Scenario(flavor="mysql", server_version=real["server_version"],
                  sources=[StreamSource(b.build())], users=[User("repl", "replpass", plugin)],
                  variables={"default_authentication_plugin": plugin})
    with ThreadedMockMaster(sc) as mm:
        run = record(lambda h, p: pymysql.connect(host=h, port=p, user="repl",
                                                  password="replpass").close(),
                     mm.host, mm.port)
    assert run.error is None, run.error
    g = decode(run.conversations[0])[0]
    assert g.kind == "handshake_v10"
    mine = g.value
    assert (mine.server_version, mine.character_set, mine.status_flags,
            mine.auth_plugin_name) == (real["server_version"], real["character_set"],
                                       real["status_flags"], plugin)
    mask = ~(NOT_IMPLEMENTED | TLS) & 0xFFFFFFFF
    # the mock offers CLIENT_COMPRESS as MySQL does; MySQL 8.0.21-8.0.26 offered it too
    assert mine.capability_flags & mask == real["capability_flags"] & mask, (
        hex(mine.capability_flags), hex(real["capability_flags"]))
    assert g.payload_length == real["payload_length"]
