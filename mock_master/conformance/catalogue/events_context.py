"""events (continued): the statement-context events (RAND, USER_VAR of every value type and
NULL), XA transactions (MySQL's XA_PREPARE_LOG_EVENT; MariaDB's XA flags in the GTID event),
LOAD DATA (BEGIN_LOAD_QUERY, APPEND_BLOCK, EXECUTE_LOAD_QUERY), MariaDB START_ENCRYPTION,
MySQL group replication's VIEW_CHANGE and TRANSACTION_CONTEXT, INCIDENT, MySQL's
ANONYMOUS_GTID (gtid_mode=OFF), MariaDB's BINLOG_CHECKPOINT and GTID_LIST mid-file, MariaDB's
compressed UPDATE/DELETE rows, MySQL v1 rows (types 24-25) and UPDATE/DELETE with MINIMAL row
images. Every event is built with the wire encoders (``encode_*`` in
``binlogscope.wire.binlog``); tests/conformance/test_real_mariadb_events.py checks the
USER_VAR, XA and LOAD DATA events against a real MariaDB byte for byte."""

from __future__ import annotations

from binlogscope.wire.binlog.control_events import (
    BinlogCheckpointEvent,
    IncidentEvent,
    RandEvent,
    UserVarEvent,
    XaPrepareEvent,
)
from binlogscope.wire.binlog.encode_events import (
    encode_binlog_checkpoint,
    encode_event,
    encode_file_block,
    encode_gtid,
    encode_gtid_list,
    encode_incident,
    encode_mariadb_gtid,
    encode_rand,
    encode_user_var,
    encode_xa_prepare,
)
from binlogscope.wire.binlog.gtid_events import (
    FL_COMPLETED_XA,
    FL_EXTRA_MULTI_ENGINE_E1,
    FL_PREPARED_XA,
    GtidEvent,
    GtidListEvent,
    MariadbGtid,
    MariadbGtidEvent,
)
from binlogscope.wire.binlog.load_events import FileBlockEvent
from binlogscope.wire.binlog.types import EventType as E
from mock_master.conformance.catalogue.common import BOTH, SCHEMA, scenario
from mock_master.conformance.columns import ddl
from mock_master.conformance.grade import judge_values
from mock_master.conformance.model import NEEDS_VALUES, Case, ExpectedRows, Setup
from mock_master.conformance.setup import ABSENT
from mock_master.conformance.streams import CaseBuilder
from mock_master.history.sources import BinlogFile, EventStream, rebase

SPEC = [("id", "INT"), ("v", "VARCHAR(20)")]
#: USER_VAR_EVENT's value types: STRING_RESULT 0, REAL_RESULT 1, INT_RESULT 2, DECIMAL_RESULT 4
#: as MariaDB 10.11 writes them for ``SET @s='text', @r=-2.5e-3, @i=-9223372036854775808,
#: @u=18446744073709551615, @d=-12345.678, @n=NULL`` (in the order the statement reads them;
#: the string in the connection's utf8mb4_general_ci (45), the numbers with latin1 (8), the
#: flags byte - UNSIGNED_F - after INT values only): tests/conformance/
#: test_real_mariadb_events.py compares each body with the real server's byte for byte
USER_VARS = [
    UserVarEvent("i", False, 2, 8, -9223372036854775808, flags=0),
    UserVarEvent("s", False, 0, 45, "text"),
    UserVarEvent("r", False, 1, 8, -2.5e-3),
    UserVarEvent("u", False, 2, 8, 18446744073709551615, flags=1),
    UserVarEvent("d", False, 4, 8, "-12345.678"),
    UserVarEvent("n", True),
]
#: the statement they were logged for (statement format)
STATEMENT = ("INSERT INTO conf.t SELECT 3 + (@i IS NULL), "
             "CONCAT(@s, @r, @u, @d, IFNULL(@n,''), RAND())")


def _statement_context(flavor: str) -> Setup:
    """A statement-based transaction whose INSERT uses user variables and RAND() (the events
    statement-format server writes before the QUERY: RAND, then a USER_VAR per variable, as
    MariaDB 10.11 does), then a row transaction."""
    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    b.begin()
    b.raw(E.RAND_EVENT, encode_rand(RandEvent(1_073_741_823, 12_345)))
    for uv in USER_VARS:
        b.raw(E.USER_VAR_EVENT, encode_user_var(uv))
    b.raw(E.QUERY_EVENT, _query(STATEMENT))
    b.commit()
    b.begin()
    b.insert(t, [(1, "after context")])
    b.commit()
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t", SPEC)),
                 expected=[ExpectedRows("insert", t, [(1, "after context")])])


def _query(sql: str) -> bytes:
    from binlogscope.wire.binlog.encode_query import encode_query, query_event

    return encode_query(query_event(sql, SCHEMA))


_XID = "X'7831',X'',1"
#: XA PREPARE 'x1' (not one-phase; format id 1, gtrid 'x1', no bqual)
XA_PREPARE = XaPrepareEvent(False, 1, b"x1", b"")


def xa_gtid(seq: int, server_id: int, *, prepared: bool) -> MariadbGtidEvent:
    """MariaDB 10.5+'s GTID of an XA transaction: XA START ... XA PREPARE has FL_PREPARED_XA |
    FL_ALLOW_PARALLEL | FL_TRANSACTIONAL (0x4c; the GTID stands for the XA START, no QUERY
    is written for it), XA COMMIT FL_COMPLETED_XA | FL_ALLOW_PARALLEL | FL_TRANSACTIONAL |
    FL_STANDALONE (0x8d); both carry the XID (format id, lengths, gtrid, bqual). MariaDB
    10.11 flags the prepared one FL_EXTRA_MULTI_ENGINE_E1 with extra_engines 255 (measured:
    the byte is its engine count minus one, an XA PREPARE's binlog-only count 0 wrapped)."""
    if prepared:
        return MariadbGtidEvent(f"0-{server_id}-{seq}", seq, 0, server_id,
                                FL_PREPARED_XA | 0x0C, xa_format_id=1, xa_gtrid=b"x1",
                                xa_bqual=b"", flags_extra=FL_EXTRA_MULTI_ENGINE_E1,
                                extra_engines=255)
    return MariadbGtidEvent(f"0-{server_id}-{seq}", seq, 0, server_id, FL_COMPLETED_XA | 0x0D,
                            xa_format_id=1, xa_gtrid=b"x1", xa_bqual=b"")


def _xa(flavor: str) -> Setup:
    """An XA transaction (XA START, rows, XA END, XA PREPARE), an ordinary transaction, then
    XA COMMIT, as each flavour writes it: MySQL 5.7.7+ a GTID + QUERY 'XA START' ... QUERY 'XA
    END' + XA_PREPARE_LOG_EVENT, then a GTID + QUERY 'XA COMMIT'; MariaDB 10.5+ a GTID with
    FL_PREPARED_XA and the XID (no XA START query), the rows, QUERY 'XA END' +
    XA_PREPARE_LOG_EVENT, later a GTID with FL_COMPLETED_XA + QUERY 'XA COMMIT' (the order of
    a real MariaDB 10.11's binlog: tests/conformance/test_real_mariadb_events.py)."""
    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    if flavor == "mariadb":
        b.seq += 1
        b.raw(E.GTID_EVENT, encode_mariadb_gtid(xa_gtid(b.seq, b.server_id, prepared=True)),
              flags=0x8)
    else:
        b.gtid()
        b.raw(E.QUERY_EVENT, _query(f"XA START {_XID}"))
    b.insert(t, [(1, "xa prepared")])
    b.raw(E.QUERY_EVENT, _query(f"XA END {_XID}"))
    b.raw(E.XA_PREPARE_LOG_EVENT, encode_xa_prepare(XA_PREPARE))
    b.begin()
    b.insert(t, [(2, "plain")])
    b.commit()
    if flavor == "mariadb":
        b.seq += 1
        b.raw(E.GTID_EVENT, encode_mariadb_gtid(xa_gtid(b.seq, b.server_id, prepared=False)),
              flags=0x8)
    else:
        b.gtid()
    b.raw(E.QUERY_EVENT, _query(f"XA COMMIT {_XID}"))
    b.begin()
    b.insert(t, [(3, "after xa")])
    b.commit()
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t", SPEC)), expected=[
        ExpectedRows("insert", t, [(1, "xa prepared")]),
        ExpectedRows("insert", t, [(2, "plain")]),
        ExpectedRows("insert", t, [(3, "after xa")])])


#: the file a LOAD DATA case loads: two blocks (a server cuts the file in blocks of its IO
#: buffer - MariaDB 10.11 16 KiB - into one BEGIN_LOAD_QUERY and APPEND_BLOCKs)
LOAD_ROWS = [(i, f"row {i}") for i in range(1, 2001)]
LOAD_BLOCK = 16384


def load_statement(path: str) -> tuple[str, int, int]:
    """The LOAD DATA text a server logs (as MariaDB 10.11 rewrites it) and where the
    `` LOCAL INFILE '...' IGNORE INTO`` part a replica replaces with its temp file is."""
    head = "LOAD DATA"
    part = f" LOCAL INFILE '{path}' IGNORE INTO"
    sql = (head + part + " TABLE `conf`.`t` FIELDS TERMINATED BY '\\t' ENCLOSED BY '' "
           "ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (`id`, `v`)")
    return sql, len(head), len(head) + len(part)


def _load_data(flavor: str) -> Setup:
    """LOAD DATA in statement format: the file's blocks (BEGIN_LOAD_QUERY, APPEND_BLOCK) and
    the statement that consumes them (EXECUTE_LOAD_QUERY: file id, where the file name is in
    the text, the duplicate handling), then a row transaction."""
    from binlogscope.wire.binlog.encode_query import encode_query, query_event
    from binlogscope.wire.binlog.query_event import ExecuteLoadQueryEvent

    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    data = "".join(f"{i}\t{v}\n" for i, v in LOAD_ROWS).encode()
    blocks = [data[k:k + LOAD_BLOCK] for k in range(0, len(data), LOAD_BLOCK)]
    b.begin()
    for k, block in enumerate(blocks):
        b.raw(E.APPEND_BLOCK_EVENT if k else E.BEGIN_LOAD_QUERY_EVENT,
              encode_file_block(FileBlockEvent(1, block)))
    sql, start, end = load_statement("/tmp/load.txt")
    q = query_event(sql, SCHEMA)
    ex = ExecuteLoadQueryEvent(q.thread_id, q.exec_time, q.schema_length, q.error_code,
                               q.status_vars_length, q.status_vars, q.schema, q.query,
                               file_id=1, start_pos=start, end_pos=end, dup_handling=1)
    b.raw(E.EXECUTE_LOAD_QUERY_EVENT, encode_query(ex))
    b.commit()
    b.begin()
    b.insert(t, [(9999, "after load")])
    b.commit()
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t", SPEC)),
                 expected=[ExpectedRows("insert", t, [(9999, "after load")])])


def _incident(flavor: str) -> Setup:
    """INCIDENT (LOST_EVENTS: the source could not log a change, e.g. a non-transactional
    statement failed half-way) between two transactions, as MySQL writes it (then a ROTATE;
    a replica SQL thread stops on it, a CDC reader must at least not lose its place)."""
    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    b.begin()
    b.insert(t, [(1, "before")])
    b.commit()
    b.raw(E.INCIDENT_EVENT, encode_incident(IncidentEvent(1, "error writing to the binlog")))
    b.rotate()
    b.begin()
    b.insert(t, [(2, "after")])
    b.commit()
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t", SPEC)), expected=[
        ExpectedRows("insert", t, [(1, "before")]), ExpectedRows("insert", t, [(2, "after")])])


def _anonymous(flavor: str) -> Setup:
    """MySQL gtid_mode=OFF: an empty PREVIOUS_GTIDS, then ANONYMOUS_GTID (type 34, SID and
    GNO zero, with the logical clock) before each transaction, as the 8.0.40 fixture
    minimal_row_metadata.000001 has them."""
    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    exp = []
    for i in (1, 2):
        b.seq += 1
        b.raw(E.ANONYMOUS_GTID_LOG_EVENT, encode_gtid(GtidEvent(
            "ANONYMOUS", 1, "00000000-0000-0000-0000-000000000000", 0, lt_type=2,
            last_committed=b.seq - 1, sequence_number=b.seq)))
        b.raw(E.QUERY_EVENT, _query("BEGIN"))
        b.insert(t, [(i, f"anonymous {i}")])
        b.commit()
        exp.append(ExpectedRows("insert", t, [(i, f"anonymous {i}")]))
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t", SPEC)), expected=exp)


def _checkpoint_list(flavor: str) -> Setup:
    """MariaDB: a BINLOG_CHECKPOINT naming the previous file and a GTID_LIST mid-file (as a
    server writes them after a FLUSH BINARY LOGS once the old file's transactions are
    durable), between transactions."""
    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    b.begin()
    b.insert(t, [(1, "one")])
    b.commit()
    b.rotate()
    b.raw(E.BINLOG_CHECKPOINT_EVENT,
          encode_binlog_checkpoint(BinlogCheckpointEvent(b.files[1].name)))
    b.begin()
    b.insert(t, [(2, "two")])
    b.commit()
    st = b.build()
    # the new file opens with a checkpoint naming the old one (not yet durable), the one
    # naming the new file follows mid-file
    _replace(st.files[1], E.BINLOG_CHECKPOINT_EVENT, encode_binlog_checkpoint(
        BinlogCheckpointEvent(st.files[0].name)), b)
    return Setup(scenario(flavor, st, ddl_text=ddl(SCHEMA, "t", SPEC)), expected=[
        ExpectedRows("insert", t, [(1, "one")]), ExpectedRows("insert", t, [(2, "two")])])


def _gtid_list_multi(flavor: str) -> Setup:
    """MariaDB: a file whose GTID_LIST holds three domains (a multi-source or re-homed
    server), then rows."""
    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    gl = [MariadbGtid(0, 1, 7), MariadbGtid(1, 2, 100), MariadbGtid(4294967295, 3, 2**63)]
    b.begin()
    b.insert(t, [(1, "one")])
    b.commit()
    st = b.build()
    _replace(st.files[0], E.GTID_LIST_EVENT,
             encode_gtid_list(GtidListEvent(",".join(map(str, gl)), gl, 0)), b)
    return Setup(scenario(flavor, st, ddl_text=ddl(SCHEMA, "t", SPEC)),
                 expected=[ExpectedRows("insert", t, [(1, "one")])])


def _replace(f: BinlogFile, type_code: int, body: bytes, b: CaseBuilder) -> None:
    """Replace the first event of ``type_code`` in file ``f`` with one of ``body`` and set
    every event's log_pos anew."""
    stream = EventStream([f])
    i = next(k for k, ev in enumerate(f.events) if ev[4] == type_code)
    f.events[i] = encode_event(type_code, body, timestamp=b.timestamp, server_id=b.server_id,
                               checksum=b.checksum)
    rebase(stream)


def _start_encryption(flavor: str) -> Setup:
    """MariaDB encrypt_binlog=ON: each file has START_ENCRYPTION right after its
    FORMAT_DESCRIPTION; the events after it are encrypted in the file, but a master decrypts
    them before it sends them (measured on MariaDB 10.11 with file_key_management: the dump
    carries START_ENCRYPTION, then the events in plain text - tests/conformance/
    test_real_mariadb_events.py). A client reads them as usual."""
    from binlogscope.wire.binlog.control_events import StartEncryptionEvent
    from binlogscope.wire.binlog.encode_events import encode_start_encryption

    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    b.begin()
    b.insert(t, [(1, "secret row")])
    b.commit()
    st = b.build()
    f = st.files[0]
    f.events.insert(1, encode_event(
        E.START_ENCRYPTION_EVENT,
        encode_start_encryption(StartEncryptionEvent(1, 1, bytes(range(1, 13)))),
        timestamp=b.timestamp, server_id=b.server_id, checksum=b.checksum))
    rebase(EventStream([f]))
    return Setup(scenario(flavor, st, ddl_text=ddl(SCHEMA, "t", SPEC)),
                 expected=[ExpectedRows("insert", t, [(1, "secret row")])])


def _group_replication(flavor: str) -> Setup:
    """MySQL group replication: a member logs a view change as its own transaction (GTID,
    QUERY 'BEGIN', VIEW_CHANGE, QUERY 'COMMIT'); a TRANSACTION_CONTEXT (the write set the
    group certifies on - the group's message, which a member's binary log does not normally
    hold) before the next transaction's GTID; then rows. Both built with the wire encoders
    after libbinlogevents' layouts (control_events.h: VIEW_CHANGE_HEADER_LEN 52,
    TRANSACTION_CONTEXT_HEADER_LEN 18); no real binlog with them is at hand."""
    from binlogscope.wire.binlog.control_events import TransactionContextEvent, ViewChangeEvent
    from binlogscope.wire.binlog.encode_events import (
        encode_transaction_context,
        encode_view_change,
    )

    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    sid = str(b.server_uuid)
    b.gtid()
    b.raw(E.QUERY_EVENT, _query("BEGIN"))
    b.raw(E.VIEW_CHANGE_EVENT, encode_view_change(ViewChangeEvent(
        "17006543210987654:3", 0, {"group_gtid_executed": f"{sid}:1".encode()})))
    b.raw(E.QUERY_EVENT, _query("COMMIT"))
    b.raw(E.TRANSACTION_CONTEXT_EVENT, encode_transaction_context(TransactionContextEvent(
        sid, 42, False, f"{sid}:1".encode(), [b"\x8a\x11\x02\xf0\x00\x00\x00\x01"], [])))
    b.begin()
    b.insert(t, [(1, "after the view change")])
    b.commit()
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t", SPEC)),
                 expected=[ExpectedRows("insert", t, [(1, "after the view change")])])


def _rows(flavor: str, kind: str, *, compressed: bool = False, version: int | None = None,
          metadata: str | None = None) -> Setup:
    b = CaseBuilder(flavor, **({"metadata": metadata} if metadata else {}))
    spec = [("id", "INT"), ("v", "VARCHAR(20)"), ("n", "INT")]
    t = b.table_of(SCHEMA, "t_" + kind, spec)
    rows: list[object]
    if kind == "update":
        rows = [((1, "old", 5), (1, "new", None)), ((2, "b", None), (2, "b", 7))]
    else:
        rows = [(1, "gone", 5), (2, None, -1)]
    b.begin()
    b.rows(kind, t, rows, compressed=compressed, version=version)
    b.commit()
    b.begin()
    b.insert(t, [(3, "after", 0)])
    b.commit()
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t_" + kind, spec)),
                 expected=[ExpectedRows(kind, t, rows), ExpectedRows("insert", t,
                                                                     [(3, "after", 0)])])


def _minimal(flavor: str, kind: str) -> Setup:
    """binlog_row_image=MINIMAL: an UPDATE's before image holds the primary key only and its
    after image the changed columns; a DELETE's image the key only (the present-columns
    bitmaps say which), then a FULL-image row of the same table."""
    b = CaseBuilder(flavor)
    spec = [("id", "INT"), ("v", "VARCHAR(20)"), ("n", "INT")]
    name = f"t_min_{kind}"
    t = b.table_of(SCHEMA, name, spec)
    rows: list[object]
    if kind == "update":
        rows = [((1, ABSENT, ABSENT), (ABSENT, "new", ABSENT)),
                ((2, ABSENT, ABSENT), (ABSENT, None, ABSENT))]
    else:
        rows = [(1, ABSENT, ABSENT), (2, ABSENT, ABSENT)]
    b.begin()
    b.rows_images(kind, t, rows)
    b.commit()
    b.begin()
    b.insert(t, [(3, "full", 0)])
    b.commit()
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, name, spec)), expected=[
        ExpectedRows(kind, t, rows), ExpectedRows("insert", t, [(3, "full", 0)])])


def _previous_gtids(flavor: str) -> Setup:
    """MySQL: a file whose PREVIOUS_GTIDS holds three server UUIDs, one with several
    intervals (a server that was a replica of two sources and had gaps from purged or skipped
    transactions), then rows."""
    from binlogscope.wire.binlog.encode_events import encode_previous_gtids
    from binlogscope.wire.binlog.gtid_events import (
        GtidInterval,
        GtidSetEntry,
        PreviousGtidsEvent,
    )

    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    b.begin()
    b.insert(t, [(1, "one")])
    b.commit()
    st = b.build()
    sets = [("1e2b3c4d-0000-11ee-8000-000000000001", [(1, 101)]),
            ("3e11fa47-71ca-11e1-9e33-c80aa9429562", [(1, 6), (8, 11), (20, 2**62)]),
            ("ffffffff-ffff-ffff-ffff-ffffffffffff", [(7, 8)])]
    entries = [GtidSetEntry(u, "", [GtidInterval(a, z) for a, z in ivs]) for u, ivs in sets]
    text = ",".join(f"{u}:" + ":".join(f"{a}-{z - 1}" if z - a > 1 else str(a)
                                       for a, z in ivs) for u, ivs in sets)
    _replace(st.files[0], E.PREVIOUS_GTIDS_LOG_EVENT,
             encode_previous_gtids(PreviousGtidsEvent(text, entries)), b)
    return Setup(scenario(flavor, st, ddl_text=ddl(SCHEMA, "t", SPEC)),
                 expected=[ExpectedRows("insert", t, [(1, "one")])])


def _mariadb_no_begin(flavor: str) -> Setup:
    """MariaDB 10.x writes no QUERY 'BEGIN': the GTID event (without FL_STANDALONE) opens the
    transaction, as the real 10.11 binlog of tests/conformance/test_real_mariadb_events.py
    has it (GTID, ANNOTATE_ROWS, TABLE_MAP, WRITE_ROWS, XID). Two such transactions, with
    ANNOTATE_ROWS as the server writes by default."""
    from binlogscope.wire.binlog.control_events import AnnotateRowsEvent, XidEvent
    from binlogscope.wire.binlog.encode_events import encode_annotate_rows, encode_xid

    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", SPEC)
    exp = []
    for i in (1, 2):
        b.gtid()
        b.raw(E.ANNOTATE_ROWS_EVENT, encode_annotate_rows(AnnotateRowsEvent(
            f"INSERT INTO conf.t VALUES ({i}, 'no begin {i}')")))
        b.rows("insert", t, [(i, f"no begin {i}")])
        b.raw(E.XID_EVENT, encode_xid(XidEvent(100 + i)))
        exp.append(ExpectedRows("insert", t, [(i, f"no begin {i}")]))
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t", SPEC)), expected=exp)


def _case(cid: str, title: str, expect: str, build: object,
          flavors: tuple[str, ...] = BOTH, links: tuple[str, ...] = ()) -> Case:
    return Case(cid, title, expect, build, judge_values, flavors=flavors,  # type: ignore[arg-type]
                needs=(NEEDS_VALUES,), links=links)


CASES: list[Case] = [
    _case("events/statement-context", "USER_VAR (string, real, signed and unsigned int, "
          "decimal, NULL) and RAND before a statement, then rows",
          "the context events passed over or decoded (each value type, NULL's short body); "
          "the following rows decoded", _statement_context),
    _case("events/xa", "an XA transaction prepared, another committed, then XA COMMIT "
          "(MySQL XA_PREPARE_LOG_EVENT; MariaDB FL_PREPARED_XA/FL_COMPLETED_XA GTIDs)",
          "the prepared transaction's rows reported, XA_PREPARE (and the XA GTID flags) "
          "passed over or decoded; every later row decoded", _xa),
    _case("events/load-data", "LOAD DATA in statement format: BEGIN_LOAD_QUERY, "
          "APPEND_BLOCK, EXECUTE_LOAD_QUERY, then rows", "the file blocks and the LOAD "
          "statement passed over or decoded (EXECUTE_LOAD_QUERY's post-header is 13 bytes "
          "longer than a QUERY's); the rows after them decoded", _load_data),
    _case("events/start-encryption", "MariaDB encrypt_binlog=ON: START_ENCRYPTION after "
          "the FORMAT_DESCRIPTION, the events after it (decrypted by the master) in plain "
          "text", "START_ENCRYPTION passed over or decoded; the plain events after it decoded "
          "(a client must not treat the stream as encrypted: only the file is)",
          _start_encryption, ("mariadb",)),
    _case("events/group-replication", "MySQL group replication: a VIEW_CHANGE transaction "
          "(GTID, BEGIN, VIEW_CHANGE, COMMIT) and a TRANSACTION_CONTEXT before a transaction",
          "VIEW_CHANGE and TRANSACTION_CONTEXT passed over or decoded (the view change is a "
          "transaction without rows); the rows after them decoded", _group_replication,
          ("mysql",)),
    _case("events/incident", "INCIDENT (LOST_EVENTS) then ROTATE between transactions",
          "the incident passed over or surfaced; the rows before and after it decoded",
          _incident),
    _case("events/anonymous-gtid", "MySQL gtid_mode=OFF: ANONYMOUS_GTID before each "
          "transaction", "the anonymous GTIDs passed over; the rows decoded", _anonymous,
          ("mysql",)),
    _case("events/previous-gtids", "MySQL PREVIOUS_GTIDS of three server UUIDs, one with "
          "three intervals (up to 2^62)", "decoded or passed over; the rows decoded",
          _previous_gtids, ("mysql",)),
    _case("events/mariadb-gtid-no-begin", "MariaDB transactions as 10.x writes them: the "
          "GTID opens the transaction, no QUERY 'BEGIN' (GTID, ANNOTATE_ROWS, TABLE_MAP, "
          "WRITE_ROWS, XID)", "each transaction's rows reported once (a client that waits "
          "for a BEGIN query misses them)", _mariadb_no_begin, ("mariadb",)),
    _case("events/binlog-checkpoint", "MariaDB BINLOG_CHECKPOINT mid-file (after a rotate)",
          "passed over; rows on both sides decoded", _checkpoint_list, ("mariadb",)),
    _case("events/gtid-list-domains", "MariaDB GTID_LIST with three domains (up to domain "
          "2^32-1, seq 2^63)", "decoded or passed over; the rows decoded", _gtid_list_multi,
          ("mariadb",)),
    _case("events/mariadb-compressed-update", "MariaDB UPDATE_ROWS_COMPRESSED_EVENT_V1",
          "inflated: before and after images reported",
          lambda f: _rows(f, "update", compressed=True), ("mariadb",)),
    _case("events/mariadb-compressed-delete", "MariaDB DELETE_ROWS_COMPRESSED_EVENT_V1",
          "inflated: the deleted rows reported",
          lambda f: _rows(f, "delete", compressed=True), ("mariadb",)),
    _case("events/mysql-v1-rows-write", "MySQL v1 rows (types 23-25: "
          "log_bin_use_v1_row_events=ON on 5.6, 5.7 and 8.0; deprecated in 8.0.18, WL#12926): "
          "WRITE_ROWS_EVENT_V1", "the v1 rows event (no extra-data field) decoded",
          lambda f: _rows(f, "insert", version=1), ("mysql",),
          links=("https://dev.mysql.com/worklog/task/?id=12926",)),
    _case("events/mysql-v1-rows-update", "MySQL v1 UPDATE_ROWS_EVENT_V1",
          "the v1 rows event (no extra-data field) decoded", lambda f: _rows(
              f, "update", version=1), ("mysql",)),
    _case("events/mysql-v1-rows-delete", "MySQL v1 DELETE_ROWS_EVENT_V1",
          "the v1 rows event decoded", lambda f: _rows(f, "delete", version=1), ("mysql",)),
    _case("events/update-minimal-image", "UPDATE with binlog_row_image=MINIMAL (before: the "
          "key; after: the changed column, one set to NULL)", "only the columns in each image "
          "reported (a column left out is missing, not NULL); the full row after decoded",
          lambda f: _minimal(f, "update")),
    _case("events/delete-minimal-image", "DELETE with binlog_row_image=MINIMAL (the key "
          "only)", "the key reported, the other columns missing (not NULL); the full row "
          "after decoded", lambda f: _minimal(f, "delete")),
]
