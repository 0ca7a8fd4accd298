"""The LOAD DATA INFILE family: how a statement-logged LOAD DATA ships its file.

MySQL 5.0+ writes BEGIN_LOAD_QUERY (17, first block of the file), APPEND_BLOCK (9, more blocks),
then EXECUTE_LOAD_QUERY (18, in :mod:`query_event`) or DELETE_FILE (11, on error). MySQL 4.x
used LOAD (6) / NEW_LOAD (12) and CREATE_FILE (8) + APPEND_BLOCK + EXEC_LOAD (10); those are
decoded best effort from the MySQL source layout (no fixture exists).

Layout of LOAD/NEW_LOAD (and the front of CREATE_FILE)::

    post-header  thread_id<4> exec_time<4> skip_lines<4> table_name_len<1> db_len<1>
                 num_fields<4>          [CREATE_FILE: + file_id<4>]
    body         sql_ex  field_lens<num_fields>  field names (NUL each)  table<NUL>  db<NUL>
                 file_name<EOF>         [CREATE_FILE: file_name<NUL> block_data<EOF>]

``sql_ex`` is 7 single bytes in LOAD (6) and five length-prefixed strings + opt_flags<1> in
NEW_LOAD and CREATE_FILE.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.header import EventHeader
from binlogscope.wire.binlog.registry import decodes
from binlogscope.wire.binlog.types import EventType
from binlogscope.wire.reader import ByteReader, DecodeError


@dataclass(slots=True)
class FileBlockEvent:
    """BEGIN_LOAD_QUERY or APPEND_BLOCK: one block of the loaded file."""

    file_id: int
    block_data: bytes


@dataclass(slots=True)
class FileIdEvent:
    """DELETE_FILE or EXEC_LOAD: an action on a file by id."""

    file_id: int


@dataclass(slots=True)
class LoadEvent:
    """LOAD / NEW_LOAD / CREATE_FILE (MySQL 4.x LOAD DATA)."""

    thread_id: int
    exec_time: int
    skip_lines: int
    table: str
    schema: str
    fields: list[str]
    file_name: str
    field_term: bytes = b""
    enclosed: bytes = b""
    line_term: bytes = b""
    line_start: bytes = b""
    escaped: bytes = b""
    opt_flags: int = 0
    empty_flags: int = 0
    file_id: int | None = None
    block_data: bytes = field(default=b"")


def _file_id(r: ByteReader) -> int:
    return r.u32("file_id", doc="id tying the blocks of one LOAD DATA file together "
                 "(unique per source run)")


@decodes(EventType.BEGIN_LOAD_QUERY_EVENT,
         doc="BEGIN_LOAD_QUERY: first block of a file for LOAD DATA; the replica writes it to "
         "a temp file")
def decode_begin_load_query(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> FileBlockEvent:
    fid = _file_id(r)
    data = r.rest("block_data", doc="raw bytes of the loaded file (this block)")
    return FileBlockEvent(fid, data)


@decodes(EventType.APPEND_BLOCK_EVENT,
         doc="APPEND_BLOCK: another block of a LOAD DATA file (files are cut into blocks)")
def decode_append_block(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> FileBlockEvent:
    fid = _file_id(r)
    data = r.rest("block_data", doc="raw bytes of the loaded file (this block)")
    return FileBlockEvent(fid, data)


@decodes(EventType.DELETE_FILE_EVENT,
         doc="DELETE_FILE: LOAD DATA failed on the source; the replica drops the temp file")
def decode_delete_file(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> FileIdEvent:
    return FileIdEvent(_file_id(r))


@decodes(EventType.EXEC_LOAD_EVENT,
         doc="EXEC_LOAD (MySQL 4.x): run the LOAD DATA of the CREATE_FILE with this file id")
def decode_exec_load(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> FileIdEvent:
    return FileIdEvent(_file_id(r))


def _len_bytes(r: ByteReader, name: str, doc: str) -> bytes:
    p = r.pos
    n = r.take(1, name)[0]
    try:
        v = r.take(n, name)
    except DecodeError:
        r.pos = p
        raise
    r.leaf(name, p, v, wire="string<len1>", doc=doc, display=repr(v) if r.record else "")
    return v


def _nul_fixed(r: ByteReader, name: str, n: int, doc: str) -> str:
    p = r.pos
    b = r.take(n + 1, name)
    if b[-1] != 0:
        r.pos = p
        raise DecodeError(r.base + r.pos - 1, f"{name}: no NUL after {n} bytes")
    s = b[:-1].decode("utf-8", "replace")
    r.leaf(name, p, s, wire="string<NUL>", doc=doc)
    return s


def _decode_load(r: ByteReader, ctx: DecodeContext, h: EventHeader, *, old_ex: bool,
                 create_file: bool) -> LoadEvent:
    r.begin("post_header", doc="fixed part of a LOAD event")
    tid = r.u32("thread_id", doc="connection id on the source")
    et = r.u32("exec_time", doc="seconds the LOAD took on the source")
    skip = r.u32("skip_lines", doc="IGNORE n LINES")
    tl = r.u8("table_name_len", doc="length of the table name")
    dl = r.u8("db_len", doc="length of the database name")
    nf = r.u32("num_fields", doc="number of columns listed in the statement")
    fid: int | None = None
    if create_file:
        fid = _file_id(r)
    r.end_group()
    ev = LoadEvent(tid, et, skip, "", "", [], "", file_id=fid)
    r.begin("sql_ex", doc="the FIELDS/LINES clauses of the LOAD DATA statement")
    if old_ex:
        ev.field_term = r.raw("field_term", 1, doc="FIELDS TERMINATED BY (1 char)")
        ev.enclosed = r.raw("enclosed", 1, doc="ENCLOSED BY (1 char)")
        ev.line_term = r.raw("line_term", 1, doc="LINES TERMINATED BY (1 char)")
        ev.line_start = r.raw("line_start", 1, doc="LINES STARTING BY (1 char)")
        ev.escaped = r.raw("escaped", 1, doc="ESCAPED BY (1 char)")
        ev.opt_flags = r.u8("opt_flags", doc="OPTIONALLY ENCLOSED, REPLACE, IGNORE bits")
        ev.empty_flags = r.u8("empty_flags", doc="which of the five strings are empty")
    else:
        ev.field_term = _len_bytes(r, "field_term", "FIELDS TERMINATED BY")
        ev.enclosed = _len_bytes(r, "enclosed", "ENCLOSED BY")
        ev.line_term = _len_bytes(r, "line_term", "LINES TERMINATED BY")
        ev.line_start = _len_bytes(r, "line_start", "LINES STARTING BY")
        ev.escaped = _len_bytes(r, "escaped", "ESCAPED BY")
        ev.opt_flags = r.u8("opt_flags", doc="OPTIONALLY ENCLOSED, REPLACE, IGNORE bits")
    r.end_group()
    lens = list(r.raw("field_lens", nf, doc="length of each column name that follows"))
    r.begin("fields", doc="column names of the statement, NUL-terminated each")
    for i, n in enumerate(lens):
        ev.fields.append(_nul_fixed(r, f"field_{i}", n, "column name"))
    r.end_group()
    ev.table = _nul_fixed(r, "table_name", tl, "table loaded into")
    ev.schema = _nul_fixed(r, "db", dl, "database of the table")
    if create_file:
        ev.file_name = r.nul_str("file_name", doc="file name on the source")
        ev.block_data = r.rest("block_data", doc="first block of the file's contents")
    else:
        ev.file_name = r.rest_str("file_name", doc="file name on the source (LOCAL: client "
                                  "side)")
    return ev


@decodes(EventType.LOAD_EVENT, doc="LOAD (MySQL 3.23/4.0): LOAD DATA with single-char options")
def decode_load(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> LoadEvent:
    return _decode_load(r, ctx, h, old_ex=True, create_file=False)


@decodes(EventType.NEW_LOAD_EVENT, doc="NEW_LOAD (MySQL 4.x): LOAD DATA with string options")
def decode_new_load(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> LoadEvent:
    return _decode_load(r, ctx, h, old_ex=False, create_file=False)


@decodes(EventType.CREATE_FILE_EVENT,
         doc="CREATE_FILE (MySQL 4.x): LOAD DATA statement plus the first file block")
def decode_create_file(r: ByteReader, ctx: DecodeContext, h: EventHeader) -> LoadEvent:
    return _decode_load(r, ctx, h, old_ex=False, create_file=True)
