"""events: event types beyond the plain row transaction (annotate/rows-query, an unknown
ignorable type, intvar, heartbeats mid-stream, MySQL's TRANSACTION_PAYLOAD, MariaDB's dummy
events)."""

from __future__ import annotations

from binlogscope.wire.binlog.control_events import (
    AnnotateRowsEvent,
    HeartbeatEvent,
    IntvarEvent,
    RowsQueryEvent,
)
from binlogscope.wire.binlog.encode_events import (
    encode_annotate_rows,
    encode_heartbeat_v2,
    encode_intvar,
    encode_rows_query,
)
from binlogscope.wire.binlog.types import EventType as E
from mock_master.conformance.catalogue.common import BOTH, SCHEMA, scenario, txn_stream
from mock_master.conformance.columns import ddl
from mock_master.conformance.grade import judge_clean_end, judge_values
from mock_master.conformance.model import (
    NEEDS_VALUES,
    Case,
    Check,
    ExpectedRows,
    Setup,
    Verdict,
)
from mock_master.conformance.observe import Observation
from mock_master.conformance.streams import CaseBuilder, event_number
from mock_master.history.sources import BinlogFile, rebase
from mock_master.scenario.faults import Action

IGNORABLE_F = 0x80


def _with_before_rows(flavor: str, what: str) -> Setup:
    """One transaction whose rows event is preceded by an extra event of kind ``what``."""
    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", [("id", "INT"), ("v", "VARCHAR(20)")])
    b.begin()
    if what == "annotate":
        b.raw(E.ANNOTATE_ROWS_EVENT,
              encode_annotate_rows(AnnotateRowsEvent("INSERT INTO t VALUES (1, 'a')")))
    elif what == "rows_query":
        b.raw(E.ROWS_QUERY_LOG_EVENT,
              encode_rows_query(RowsQueryEvent("INSERT INTO t VALUES (1, 'a')")),
              flags=IGNORABLE_F)
    elif what == "unknown":
        b.raw(222, b"future event body \x00\x01\x02", flags=IGNORABLE_F)
    b.insert(t, [(1, "a")])
    b.commit()
    b.begin()
    if what == "intvar":
        b.raw(E.INTVAR_EVENT, encode_intvar(IntvarEvent(2, 42)))
    b.insert(t, [(2, "b")])
    b.commit()
    return Setup(scenario(flavor, b.build()), expected=[
        ExpectedRows("insert", t, [(1, "a")]), ExpectedRows("insert", t, [(2, "b")])])


def _heartbeats(flavor: str) -> Setup:
    b, exp = txn_stream(flavor)
    at = event_number(b, E.TABLE_MAP_EVENT, 2)
    return Setup(scenario(flavor, b.build(), actions=[
        Action("heartbeat", at=at, count=3), Action("heartbeat_storm", at=at + 1, count=200)]),
        expected=exp)


def _payload(flavor: str) -> Setup:
    b, exp = txn_stream(flavor)
    return Setup(scenario(flavor, b.build(), actions=[Action("compress_transaction")]),
                 expected=exp)


def _dummies(flavor: str) -> Setup:
    b, exp = txn_stream(flavor)
    return Setup(scenario(flavor, b.build(), actions=[Action("mariadb_dummy_events", types=[162])]),
                 expected=exp)


def _ddl(flavor: str) -> Setup:
    b = CaseBuilder(flavor)
    b.query("CREATE TABLE t2 (id INT PRIMARY KEY, v VARCHAR(20))", schema=SCHEMA)
    b.query("ALTER TABLE t2 ADD COLUMN w INT", schema=SCHEMA)
    t = b.table_of(SCHEMA, "t2", [("id", "INT"), ("v", "VARCHAR(20)"), ("w", "INT")])
    b.begin()
    b.insert(t, [(1, "x", 5)])
    b.commit()
    return Setup(scenario(flavor, b.build()), expected=[ExpectedRows("insert", t,
                                                                     [(1, "x", 5)])])


def _no_checksum(flavor: str) -> Setup:
    b, exp = txn_stream(flavor, 3, b=CaseBuilder(flavor, checksum=False))
    return Setup(scenario(flavor, b.build(), variables={"binlog_checksum": "NONE"}),
                 expected=exp)


def _heartbeat_v2(flavor: str) -> Setup:
    """MySQL 8.0.26+'s HEARTBEAT_LOG_EVENT_V2 (type 41: TLV file name and position) between
    transactions, as a source sends it after a quiet period."""
    b = CaseBuilder(flavor)
    t = b.table_of(SCHEMA, "t", [("id", "INT"), ("v", "VARCHAR(20)")])
    b.begin()
    b.insert(t, [(1, "a")])
    b.commit()
    end = 4 + sum(len(e) for e in b.files[0].events)
    b.raw(E.HEARTBEAT_LOG_EVENT_V2, encode_heartbeat_v2(HeartbeatEvent(b.files[0].name, end)),
          flags=0x20)
    b.begin()
    b.insert(t, [(2, "b")])
    b.commit()
    return Setup(scenario(flavor, b.build()), expected=[
        ExpectedRows("insert", t, [(1, "a")]), ExpectedRows("insert", t, [(2, "b")])])


TAG = "mytag"


def _tagged(flavor: str) -> Setup:
    """MySQL 8.3+ tagged GTIDs (SET gtid_next='AUTOMATIC:mytag'): an untagged transaction,
    two tagged ones (GTID_TAGGED_LOG_EVENT, uuid:mytag:1 and :2), a ROTATE, and in the next
    file - whose PREVIOUS_GTIDS is in the tagged format, uuid:1:mytag:1-2 - an untagged one
    (as the MySQL 9.6 fixture's PREVIOUS_GTIDS is written)."""
    b = CaseBuilder(flavor, server_version="9.6.0")
    b, exp = txn_stream(flavor, 1, b=b)
    b.tag = TAG
    b, exp2 = txn_stream(flavor, 2, b=b, table="t_tagged")
    b.tag = ""
    b.rotate()
    b, exp3 = txn_stream(flavor, 1, b=b, table="t_after")
    st = b.build()
    tagged_previous_gtids(st.files[1], str(b.server_uuid), [(1, 2)], {TAG: [(1, 3)]},
                          checksum=b.checksum, timestamp=b.timestamp, server_id=b.server_id)
    rebase(st)
    return Setup(scenario(flavor, st), expected=exp + exp2 + exp3)


def tagged_previous_gtids(f: BinlogFile, sid: str, untagged: list[tuple[int, int]],
                          tags: dict[str, list[tuple[int, int]]], *, checksum: bool,
                          timestamp: int, server_id: int) -> None:
    """Replace file ``f``'s PREVIOUS_GTIDS with a set in MySQL 8.3+'s tagged format (as a 9.6
    server writes it once a tagged GTID was logged; intervals end-exclusive)."""
    from binlogscope.wire.binlog.encode_events import encode_event, encode_previous_gtids
    from binlogscope.wire.binlog.gtid_events import (
        GtidInterval,
        GtidSetEntry,
        PreviousGtidsEvent,
    )

    entries = [GtidSetEntry(sid, "", [GtidInterval(a, z) for a, z in untagged])]
    entries += [GtidSetEntry(sid, t, [GtidInterval(a, z) for a, z in ivs])
                for t, ivs in sorted(tags.items())]
    text = f"{sid}:" + ":".join(
        [",".join(f"{a}-{z - 1}" for a, z in untagged)]
        + [f"{t}:" + ",".join(f"{a}-{z - 1}" for a, z in ivs) for t, ivs in sorted(tags.items())])
    i = next(k for k, ev in enumerate(f.events) if ev[4] == E.PREVIOUS_GTIDS_LOG_EVENT)
    f.events[i] = encode_event(E.PREVIOUS_GTIDS_LOG_EVENT, encode_previous_gtids(
        PreviousGtidsEvent(text, entries, tagged=True)), timestamp=timestamp,
        server_id=server_id, flags=0x80, checksum=checksum)


_DOCS = [{"age": 24, "name": "Joe"}, {"age": 32, "name": "Sue"}, {"age": 40, "name": "Pete"}]
#: per row of the PARTIAL_UPDATE_ROWS: its JSON diff (None: a whole document) and what the
#: document is after it
_PARTIAL_ROWS: list[tuple[list[tuple[int, str, object]] | None, object]] = [
    ([(0, "$.age", 25)], {"age": 25, "name": "Joe"}),
    (None, {"age": 33}),
    ([(0, "$.age", 41), (1, "$.x", 1)], {"age": 41, "name": "Pete", "x": 1}),
]
_OPS = {0: "REPLACE", 1: "INSERT", 2: "REMOVE"}


def _partial_json(flavor: str) -> Setup:
    """MySQL 8.0 binlog_row_value_options=PARTIAL_JSON, binlog_row_image=MINIMAL: an insert,
    then one PARTIAL_UPDATE_ROWS: row 1's JSON column a one-operation diff, row 2's a whole
    document (value_options set, its partial bit clear), row 3's a two-operation diff. The
    layout of the 8.0.22 fixture json.binlog.000001's event, which the wire encoder re-encodes
    byte for byte (tests/wire/test_encode_partial_rows.py)."""
    import json

    from binlogscope.wire.binlog.encode_rows import JsonDiff

    b = CaseBuilder(flavor)
    spec = [("id", "INT"), ("j", "JSON"), ("name", "VARCHAR(20)")]
    t = b.table_of(SCHEMA, "t_json", spec)
    names = [str(d["name"]) for d in _DOCS]
    inserted = [(i + 1, json.dumps(d), names[i]) for i, d in enumerate(_DOCS)]
    b.begin()
    b.insert(t, inserted)
    b.commit()
    b.begin()
    b.partial_update(t, [({"id": i + 1}, {"j": JsonDiff(list(ops)) if ops is not None
                                          else json.dumps(doc), "name": names[i]})
                         for i, (ops, doc) in enumerate(_PARTIAL_ROWS)])
    b.commit()
    return Setup(scenario(flavor, b.build(), ddl_text=ddl(SCHEMA, "t_json", spec)),
                 expected=[ExpectedRows("insert", t, inserted)])


def _field(img: object, name: str, pos: int) -> object:
    if isinstance(img, dict):
        for k in (name, f"@{pos + 1}"):
            if k in img:
                return img[k]
        return _ABSENT
    if isinstance(img, list) and pos < len(img):
        return img[pos]
    return _ABSENT


_ABSENT = object()


def _as_json(v: object) -> object:
    import json

    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return _ABSENT
    return v


def _diff_ok(v: object, ops: list[tuple[int, str, object]], doc: object) -> str | None:
    """How a partial JSON value was reported, when it is a right form (None: it is not)."""
    import json

    from binlogscope.wire.binlog.json_binary import render_json_diff

    if isinstance(v, str):
        norm = " ".join(v.split())
        for col in ("j", "@2", "`j`"):
            if norm == render_json_diff(col, [(op, path, json.dumps(val))
                                              for op, path, val in ops]):
                return "the diff in mysqlbinlog's form"
    if _as_json(v) == doc:
        return "the updated document"
    items = v if isinstance(v, list) else [v]
    dicts = [x for x in items if isinstance(x, dict)]
    if len(dicts) == len(items) == len(ops):
        same = all(str(x.get("op", x.get("operation", ""))).upper() in (_OPS[op], str(op))
                   and x.get("path") == path and (op == 2 or _as_json(x.get("value"))
                                                  in (val, str(val)))
                   for x, (op, path, val) in zip(dicts, ops, strict=True))
        if same:
            return "the diff as operations"
    return None


def _partial_json_judge(obs: Observation) -> list[Check]:
    from binlogscope.wire.binlog.encode_rows import JsonDiff, encode_json_diff
    from mock_master.conformance.grade import _bytes_of, show

    checks = judge_clean_end(obs)
    got = obs.rows()
    if len(got) != 2:
        return [*checks, Check(Verdict.FAIL, "2 row events expected (an insert, then the "
                               f"PARTIAL_UPDATE_ROWS), the client reported {len(got)}")]
    ins, upd = got
    if ins.get("type") != "insert" or upd.get("type") != "update":
        return [*checks, Check(Verdict.FAIL, f"reported as {ins.get('type')!r} and "
                               f"{upd.get('type')!r}, expected an insert and an update")]
    rows = upd.get("rows") or []
    if len(rows) != len(_PARTIAL_ROWS):
        return [*checks, Check(Verdict.FAIL, f"the partial update has {len(_PARTIAL_ROWS)} "
                               f"rows, {len(rows)} reported")]
    bytes_mode = next((str(h.get("bytes", "object")) for h in obs.of_type("hello")), "object")
    for k, (row, (ops, doc)) in enumerate(zip(rows, _PARTIAL_ROWS, strict=True)):
        where = f"update row {k + 1}"
        name = str(_DOCS[k]["name"])
        before, after = (row.get("before"), row.get("after")) if isinstance(row, dict) \
            else (None, None)
        if _field(before, "id", 0) != k + 1:
            checks.append(Check(Verdict.FAIL, f"{where}: before image id "
                                f"{show(_field(before, 'id', 0))}, expected {k + 1} (the "
                                "MINIMAL before image holds the primary key only)"))
        j = _field(after, "j", 1)
        if ops is not None:
            how = _diff_ok(j, ops, doc)
            raw = _bytes_of(j, bytes_mode)
            raw_diff = encode_json_diff(JsonDiff(list(ops)))
            what = ", ".join(f"{_OPS[op]} {path} {val}" for op, path, val in ops)
            if how is not None:
                checks.append(Check(Verdict.PASS, f"{where}: j reported as {how}: {show(j)}"))
            elif raw is not None and raw in (raw_diff, raw_diff[4:]):
                checks.append(Check(Verdict.NON_STRICT, f"{where}: j reported as the raw "
                                    "diff bytes, not decoded"))
            else:
                checks.append(Check(Verdict.FAIL, f"{where}: j (a JSON diff: {what}) reported "
                                    f"as {show(j)}"))
        elif _as_json(j) != doc:
            checks.append(Check(Verdict.FAIL, f"{where}: j (a whole document, its partial bit "
                                f"clear) expected {show(doc)}, got {show(j)}"))
        if _field(after, "name", 2) != name:
            checks.append(Check(Verdict.FAIL, f"{where}: name expected {name!r}, got "
                                f"{show(_field(after, 'name', 2))} (the column after the "
                                "diff: the diff's length read wrong?)"))
    return checks


_DDL = "CREATE TABLE t3 (id INT PRIMARY KEY, note VARCHAR(200)) COMMENT 'compressed query'"


def _compressed_query(flavor: str) -> Setup:
    """MariaDB's QUERY_COMPRESSED_EVENT (log_bin_compress=ON): a DDL whose text is zlib
    compressed, then a row transaction."""
    from binlogscope.wire.binlog.encode_query import encode_query, query_event

    b = CaseBuilder(flavor)
    b.gtid(standalone=True)
    b.raw(E.QUERY_COMPRESSED_EVENT, encode_query(query_event(_DDL, SCHEMA), compressed=True))
    t = b.table_of(SCHEMA, "t3", [("id", "INT"), ("note", "VARCHAR(200)")])
    b.begin()
    b.insert(t, [(1, "after a compressed query")])
    b.commit()
    return Setup(scenario(flavor, b.build()), expected=[
        ExpectedRows("insert", t, [(1, "after a compressed query")])])


def _compressed_query_judge(obs: Observation) -> list[Check]:
    checks = judge_values(obs)
    queries = [str(q.get("query") or "") for q in obs.of_type("query")]
    if any(_DDL in q for q in queries):
        checks.append(Check(Verdict.PASS, "the compressed query reported as its text"))
    elif queries:
        checks.append(Check(Verdict.FAIL, "the compressed query is not among the queries the "
                            f"client reported ({len(queries)}): {queries[-1][:80]!r}"))
    return checks


def _case(cid: str, title: str, expect: str, build: object, flavors: tuple[str, ...] = BOTH,
          links: tuple[str, ...] = ()) -> Case:
    return Case(cid, title, expect, build, judge_values, flavors=flavors,  # type: ignore[arg-type]
                needs=(NEEDS_VALUES,), links=links)


CASES: list[Case] = [
    _case("events/annotate-rows", "ANNOTATE_ROWS before the rows event (MariaDB)",
          "the annotate event passed over or shown; the rows decoded",
          lambda f: _with_before_rows(f, "annotate"), ("mariadb",)),
    _case("events/rows-query", "ROWS_QUERY (ignorable) before the rows event (MySQL)",
          "the rows-query event passed over or shown; the rows decoded",
          lambda f: _with_before_rows(f, "rows_query"), ("mysql",)),
    _case("events/unknown-ignorable", "an unknown event type flagged LOG_EVENT_IGNORABLE_F",
          "an event type the client does not know, flagged ignorable, is skipped (not an "
          "error): the rows around it decoded",
          lambda f: _with_before_rows(f, "unknown")),
    _case("events/intvar", "INTVAR before a row transaction", "passed over; rows decoded",
          lambda f: _with_before_rows(f, "intvar")),
    _case("events/heartbeats-mid-stream", "heartbeats (3, then a storm of 200) inside a "
          "transaction", "heartbeats are not data: skipped, the rows decoded once each",
          _heartbeats),
    _case("events/transaction-payload", "MySQL TRANSACTION_PAYLOAD (zstd, "
          "binlog_transaction_compression=ON)",
          "the compressed transaction's inner events decoded: every row reported",
          _payload, ("mysql",),
          links=("https://github.com/zendesk/maxwell/pull/2254",
                 "https://github.com/block/spirit/pull/1064",
                 "https://github.com/go-mysql-org/go-mysql/issues/533")),
    _case("events/mariadb-dummy-events", "MariaDB dummy events in place of GTID/"
          "checkpoint/GTID_LIST (an old @mariadb_slave_capability)",
          "the dummy events (QUERY '# Dummy event ...' / USER_VAR) skipped; rows decoded",
          _dummies, ("mariadb",)),
    _case("events/checksum-none", "binlog_checksum=NONE: events without a CRC32",
          "no checksum expected when the FORMAT_DESCRIPTION says NONE: the rows decoded (the "
          "last 4 bytes are data)", _no_checksum),
    _case("events/heartbeat-v2", "MySQL 8.0.26+ HEARTBEAT_LOG_EVENT_V2 between transactions",
          "the v2 heartbeat (TLV body) skipped: the rows decoded", _heartbeat_v2, ("mysql",)),
    Case("events/mariadb-compressed-query", "MariaDB QUERY_COMPRESSED_EVENT (a zlib "
         "compressed DDL), then rows", "the query inflated and reported as its text; the rows "
         "after it decoded", _compressed_query, _compressed_query_judge, flavors=("mariadb",),
         needs=(NEEDS_VALUES,)),
    _case("events/gtid-tagged", "MySQL 8.3+ tagged GTIDs (GTID_TAGGED_LOG_EVENT, "
          "uuid:mytag:N) between untagged transactions",
          "the tagged GTID event and the tagged PREVIOUS_GTIDS of the next file decoded (or "
          "passed over): every transaction's rows reported",
          _tagged, ("mysql",),
          links=("https://dev.mysql.com/doc/refman/8.4/en/replication-gtids-concepts.html",)),
    Case("events/partial-json-update", "MySQL PARTIAL_UPDATE_ROWS (binlog_row_value_options="
         "PARTIAL_JSON, MINIMAL images): a JSON diff and a whole document in one event",
         "the diff reported (mysqlbinlog's JSON_REPLACE(...) text, a list of operations, or "
         "the updated document), the whole document as JSON, the columns after them intact",
         _partial_json, _partial_json_judge, flavors=("mysql",), needs=(NEEDS_VALUES,),
         links=("https://dev.mysql.com/doc/refman/8.0/en/replication-options-binary-log.html"
                "#sysvar_binlog_row_value_options",)),
    _case("events/ddl-then-rows", "CREATE TABLE and ALTER TABLE, then rows of the new shape",
          "the DDL passed through; the rows decoded with the new column", _ddl),
]
