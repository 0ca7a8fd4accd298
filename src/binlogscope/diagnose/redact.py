"""``redact``: a shareable reproducer - binlog files with row values, statements and names
scrubbed, every event's type, length, header, metadata and structure kept, checksums
recomputed - plus a mock-master scenario that serves them.

Each event is decoded with its tree (the one decoder); what is private is rewritten in place,
byte for byte, so every length and every ``log_pos`` stays right:

- row images: every value is replaced by a value of the same column type that encodes to the
  same number of bytes (text by as many ``x``, integers by a keyed hash in the type's range,
  decimals by 0, times by 2000-01-01 00:00:00 with the same fraction digits, JSON by the same
  document with its strings ``x``-ed and numbers 0); the event body is written again by the
  wire encoders and must come out the same length (else the event is refused, not leaked);
  NULLs, the columns-present bitmaps, ENUM/SET member numbers stay;
- names (schema, table, column, ENUM/SET members in TABLE_MAP metadata, a QUERY's database):
  one keyed, same-length name each, the same everywhere in the bundle (statements too);
- statements (QUERY, ANNOTATE_ROWS, ROWS_QUERY): string literals ``x``-ed, identifiers renamed
  by the same map, SQL keywords kept (sqlglot's tokenizer keyword list), numbers zeroed in data
  statements (kept in DDL, where they are types: ``VARCHAR(255)``); USER_VAR names and values.

The key is random per bundle and not kept: names cannot be mapped back.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import os
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.drivers.binlog_file import read_binlog_file
from binlogscope.wire.binlog.context import ColumnInfo, DecodeContext, TableMap
from binlogscope.wire.binlog.control_events import FormatDescriptionEvent
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.encode_values import encode_value
from binlogscope.wire.binlog.header import BINLOG_MAGIC
from binlogscope.wire.binlog.rows import RowsEvent
from binlogscope.wire.binlog.types import ColumnType as T
from binlogscope.wire.binlog.types import EventType as E
from binlogscope.wire.binlog.values import effective_type, string_max_length
from binlogscope.wire.node import Node


class RedactError(Exception):
    """An event could not be scrubbed without changing its length (nothing is written)."""


_INT_BYTES: dict[int, int] = {T.MYSQL_TYPE_TINY: 1, T.MYSQL_TYPE_SHORT: 2, T.MYSQL_TYPE_INT24: 3,
              T.MYSQL_TYPE_LONG: 4, T.MYSQL_TYPE_LONGLONG: 8}
_TEXT = frozenset((T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING,
                   T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
                   T.MYSQL_TYPE_LONG_BLOB))
_QUERY_TYPES = frozenset((int(E.QUERY_EVENT), int(E.QUERY_COMPRESSED_EVENT),
                          int(E.EXECUTE_LOAD_QUERY_EVENT)))
_STATEMENTS = frozenset((int(E.ANNOTATE_ROWS_EVENT), int(E.ROWS_QUERY_LOG_EVENT)))
_DATA_WORDS = (b"INSERT", b"UPDATE", b"DELETE", b"REPLACE", b"SELECT", b"LOAD", b"SET")
_SQL = re.compile(rb"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|`(?:[^`]|``)*`"
                  rb"|/\*.*?\*/|\b\d+(?:\.\d+)?\b|[A-Za-z_][A-Za-z0-9_$]*", re.S)


def _keywords() -> frozenset[str]:
    from sqlglot.tokens import Tokenizer

    words = {k.upper() for k in Tokenizer.KEYWORDS if k.replace("_", "").isalpha()}
    # words sqlglot reads as identifiers but every MySQL statement needs as they are
    words |= {"ENGINE", "CHARSET", "COLLATE", "DEFAULT", "AUTO_INCREMENT", "UNSIGNED",
              "ZEROFILL", "SIGNED", "TINYINT", "SMALLINT", "MEDIUMINT", "BIGINT", "INT",
              "INTEGER", "VARCHAR", "CHAR", "TEXT", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT",
              "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "DATETIME", "TIMESTAMP", "DATE",
              "TIME", "YEAR", "DECIMAL", "NUMERIC", "FLOAT", "DOUBLE", "REAL", "BIT", "BINARY",
              "VARBINARY", "ENUM", "JSON", "GEOMETRY", "POINT", "VECTOR", "KEY", "INDEX",
              "PRIMARY", "UNIQUE", "NOT", "NULL", "COMMENT", "COLUMN", "ADD", "DROP", "MODIFY",
              "CHANGE", "AFTER", "FIRST", "IF", "EXISTS", "BEGIN", "COMMIT", "ROLLBACK", "XA",
              "START", "TRANSACTION", "NOW", "CURRENT_TIMESTAMP", "ROW_FORMAT", "INVISIBLE",
              "VISIBLE", "STORED", "VIRTUAL", "GENERATED", "ALWAYS", "TRUE", "FALSE",
              "UTF8MB4", "UTF8", "LATIN1", "ASCII", "MB4", "SAVEPOINT", "TEMPORARY", "TRUNCATE",
              "FLUSH", "ANALYZE", "OPTIMIZE", "GRANT", "REVOKE", "BY", "AS", "ON", "IN", "IS",
              "OR", "TO", "OF", "AT", "DO", "NO", "GO", "ALL", "AND", "ANY", "ASC", "DESC",
              "FOR", "USE", "SET", "END", "DIV", "MOD", "XOR",
              "CALL", "LIKE", "LIMIT", "WHERE", "FROM", "INTO", "VALUES", "TABLE", "FULL",
              "INNODB", "MYISAM", "ARIA", "MEMORY", "ROCKSDB", "LINESTRING", "POLYGON",
              "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON", "GEOMETRYCOLLECTION", "INET4",
              "INET6", "UUID", "CHARACTER", "NATIONAL", "NCHAR", "NVARCHAR", "BOOL", "BOOLEAN",
              "SERIAL", "FIXED", "PRECISION", "LONG", "SPATIAL", "FULLTEXT", "FOREIGN",
              "REFERENCES", "CONSTRAINT", "CHECK", "CASCADE", "RESTRICT", "PARTITION",
              "SCHEMA", "DATABASE", "ALTER", "CREATE", "RENAME", "INSERT", "UPDATE", "DELETE",
              "REPLACE", "IGNORE", "DUPLICATE", "LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY"}
    return frozenset(words)


@dataclass
class Redactor:
    """One bundle's scrubbing: its key and its name map."""

    key: bytes = field(default_factory=lambda: os.urandom(32))
    names: dict[str, str] = field(default_factory=dict)
    keywords: frozenset[str] = field(default_factory=_keywords)
    counts: dict[str, int] = field(default_factory=dict)

    def _count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def _digest(self, data: bytes) -> bytes:
        return hmac.new(self.key, data, hashlib.sha256).digest()

    def name(self, original: str) -> str:
        """The same-length stand-in of a name (the same for every use in the bundle)."""
        got = self.names.get(original)
        if got is not None:
            return got
        n = len(original.encode("utf-8"))
        taken = set(self.names.values())
        salt = 0
        while True:
            d = self._digest(f"{salt}:{original}".encode())
            while len(d) < n:
                d += self._digest(d)
            out = "".join(chr(97 + b % 26) for b in d[:n])
            if out.upper() not in self.keywords and out not in taken and out != original:
                break
            salt += 1
        self.names[original] = out
        return out

    def integer(self, v: int, size: int, unsigned: bool) -> int:
        h = int.from_bytes(self._digest(str(v).encode())[:8], "little")
        return h % (1 << (8 * size - (0 if unsigned else 1)))

    # ------------------------------------------------------------------ values
    def value(self, col: ColumnInfo, v: Any) -> Any:
        if v is None:
            return None
        t = col.type
        real = effective_type(col)
        if real in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
            return v  # a member number; the members' names are scrubbed in the TABLE_MAP
        size = _INT_BYTES.get(t)
        if size is not None:
            return self.integer(int(v), size, col.unsigned)
        if t in (T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE):
            return 0.0
        if t == T.MYSQL_TYPE_NEWDECIMAL:
            return "0"
        if t in _TEXT:
            if isinstance(v, bytes | bytearray):
                return b"x" * len(v)
            return "x" * (len(encode_value(col, v)) - len(encode_value(col, "")))
        if t == T.MYSQL_TYPE_JSON:
            return _json_scrub(json.loads(v) if isinstance(v, str) else v)
        if t == T.MYSQL_TYPE_GEOMETRY:
            return b"\0" * len(bytes(v))
        if t == T.MYSQL_TYPE_VECTOR:
            return [0.0] * len(v)
        if t == T.MYSQL_TYPE_BIT:
            return 0
        if t == T.MYSQL_TYPE_YEAR:
            return 2000 if v else 0
        return _temporal(v)

    # ------------------------------------------------------------------ statements
    def sql(self, data: bytes) -> bytes:
        """A statement with its literals and names scrubbed, byte for byte the same length."""
        head = data.lstrip()[:8].upper()
        dml = head.startswith(_DATA_WORDS)
        out = bytearray(data)
        for m in _SQL.finditer(data):
            a, b = m.span()
            tok = m.group(0)
            c = tok[:1]
            if c in (b"'", b'"'):
                out[a + 1 : b - 1] = self._literal(tok[1:-1])
            elif c == b"`":
                out[a + 1 : b - 1] = self._ident(tok[1:-1])
            elif tok.startswith(b"/*"):
                inner = re.sub(rb"[A-Za-z0-9]", b"x", tok[2:-2])
                out[a + 2 : b - 2] = inner
            elif c.isdigit():
                if dml:
                    out[a:b] = self._number(tok)
            elif tok.decode("ascii").upper() not in self.keywords:
                out[a:b] = self._ident(tok)
        self._count("statements")
        return bytes(out)

    def _literal(self, raw: bytes) -> bytes:
        """A string literal's inside: the same stand-in as the same text gets everywhere
        (ENUM members in a CREATE TABLE and in the TABLE_MAP stay distinct and equal)."""
        if not raw or b"\\" in raw or b"''" in raw:
            return b"x" * len(raw)
        return self._ident(raw)

    def _number(self, tok: bytes) -> bytes:
        """Digits by keyed digits (distinct numbers stay distinct, mostly; 0 stays 0)."""
        d = self._digest(b"n:" + tok)
        out = bytearray(tok)
        k = 0
        for i, ch in enumerate(tok):
            if 48 <= ch <= 57:
                digit = d[k % len(d)] % 10
                if i == 0 and ch != 48 and len(tok) > 1 and tok[1:2] != b".":
                    digit = 1 + d[k % len(d)] % 9
                out[i] = 48 + digit if tok != b"0" else 48
                k += 1
        return bytes(out)

    def _ident(self, raw: bytes) -> bytes:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return b"x" * len(raw)
        new = self.name(text).encode()
        return new if len(new) == len(raw) else b"x" * len(raw)


def _json_scrub(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _json_scrub(x) for k, x in v.items()}  # keys: structure, kept
    if isinstance(v, list):
        return [_json_scrub(x) for x in v]
    if isinstance(v, str):
        return "x" * len(v.encode("utf-8"))
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return 0 if abs(v) < (1 << 15) else (1 << 20) if abs(v) < (1 << 31) else (1 << 40)
    if isinstance(v, float):
        return 0.5
    return v


_TIME = re.compile(r"^-?\d+:\d\d:\d\d(\.\d+)?$")
_DATE = re.compile(r"^\d{4}-\d\d-\d\d$")
_DATETIME = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?$")


def _temporal(v: Any) -> Any:
    if isinstance(v, _dt.datetime):
        return v.replace(year=2000, month=1, day=1, hour=0, minute=0, second=0,
                         microsecond=0)
    if isinstance(v, _dt.date):
        return _dt.date(2000, 1, 1)
    if isinstance(v, _dt.timedelta):
        return _dt.timedelta(0)
    if isinstance(v, int):
        return 946684800  # 2000-01-01 00:00:00 UTC (a TIMESTAMP as seconds)
    if isinstance(v, str):
        frac = v.split(".", 1)[1] if "." in v else None
        tail = "." + "0" * len(frac) if frac is not None else ""
        if _TIME.match(v):
            return "00:00:00" + tail
        if _DATE.match(v):
            return "2000-01-01"
        if _DATETIME.match(v):
            return "2000-01-01 00:00:00" + tail
        return v  # a zero date ('0000-00-00'): nothing private
    return v


@dataclass(slots=True)
class Bundle:
    out: Path
    files: list[Path]
    events: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    scenario: Path | None = None


def _leaves(node: Node) -> list[Node]:
    return [n for _, n in node.walk() if not n.children]


def _text_span(buf: bytearray, ev: DecodedEvent, n: Node) -> tuple[int, int]:
    """Where a text leaf's characters are in ``buf`` (its span may hold a length prefix in
    front or a NUL after them)."""
    a = n.offset - ev.offset
    raw = bytes(buf[a : a + n.length])
    v = n.value
    enc = v.encode("utf-8", "surrogateescape") if isinstance(v, str) else bytes(v or b"")
    if enc and raw.endswith(enc):
        return a + len(raw) - len(enc), a + len(raw)
    if enc and raw.startswith(enc):
        return a, a + len(enc)
    return a, a + n.length


def _put(buf: bytearray, span: tuple[int, int], new: bytes, where: str) -> None:
    a, b = span
    if len(new) != b - a:
        raise RedactError(f"{where} would change length")
    buf[a:b] = new


def _fix_checksum(buf: bytearray, ev: DecodedEvent) -> None:
    if ev.checksum_ok is not None:
        buf[-4:] = (zlib.crc32(bytes(buf[:-4])) & 0xFFFFFFFF).to_bytes(4, "little")


def _prefix(col: ColumnInfo) -> int:
    """Bytes of the length prefix in front of a value of ``col`` (0: fixed width)."""
    t = col.type
    if effective_type(col) in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
        return 0
    if t == T.MYSQL_TYPE_STRING:
        return 2 if string_max_length(col) > 255 else 1
    if t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        return 2 if col.meta > 255 else 1
    if t in (T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
             T.MYSQL_TYPE_LONG_BLOB, T.MYSQL_TYPE_JSON, T.MYSQL_TYPE_GEOMETRY,
             T.MYSQL_TYPE_VECTOR):
        return col.meta or 4
    return 0


def _encode(r: Redactor, col: ColumnInfo, value: Any, ev: DecodedEvent, *,
            mariadb: bool = False) -> bytes:
    try:
        return encode_value(col, r.value(col, value), mariadb=mariadb)
    except Exception as exc:  # a value the encoders cannot write again: refused, not leaked
        raise RedactError(f"event at {ev.offset}: column {col.label}: the value cannot be "
                          f"scrubbed ({exc}); nothing is written") from None


def _scrub_rows(r: Redactor, ev: DecodedEvent, ctx: DecodeContext, buf: bytearray) -> bool:
    """Row values scrubbed in place, each within its own bytes (False: not a rows event)."""
    body = ev.body
    if not isinstance(body, RowsEvent) or ev.node is None:
        return False
    tm: TableMap | None = ctx.tables.get(body.table_id)
    if tm is None or body.compressed:
        why = ("its TABLE_MAP is not in the input" if tm is None
               else "its rows are compressed")
        raise RedactError(f"event at {ev.offset}: {why}: the row values cannot be told "
                          "apart, nothing is written")
    cols = {c.label: c for c in tm.columns}
    n_rows = 0
    rows = body.rows
    images = []
    for _, row in ev.node.walk():
        if row.name.startswith("row[") and row.name.endswith("]"):
            i = int(row.name[4:-1])
            images += [(img, rows[i].get("before" if img.name == "before_image" else "after")
                        if i < len(rows) else None)
                       for img in row.children if img.name in ("before_image", "after_image")]
    for img, values in images:
        n_rows += img.name == "after_image" or body.kind == "delete"
        for n in img.children:
            col = cols.get(n.name)
            if col is None or n.length == 0:
                continue  # the NULL bitmap; a NULL
            value = (values or {}).get(n.name, n.value)
            a = n.offset - ev.offset
            p = _prefix(col)
            if p:
                t = col.type
                if t == T.MYSQL_TYPE_JSON and not ctx.is_mariadb:
                    new = _encode(r, col, value, ev)
                    if len(new) != n.length:
                        raise RedactError(f"event at {ev.offset}: JSON column {col.label}: "
                                          "the scrubbed document has another length")
                    buf[a : a + n.length] = new
                else:
                    fill = b"\0" if t in (T.MYSQL_TYPE_GEOMETRY, T.MYSQL_TYPE_VECTOR) else b"x"
                    buf[a + p : a + n.length] = fill * (n.length - p)
            else:
                new = _encode(r, col, value, ev, mariadb=ctx.is_mariadb)
                if len(new) != n.length:
                    raise RedactError(f"event at {ev.offset}: column {col.label}: the "
                                      f"scrubbed value takes {len(new)} bytes, not {n.length}")
                buf[a : a + n.length] = new
    r.counts["rows"] = r.counts.get("rows", 0) + n_rows
    return True


def redact_event(r: Redactor, ev: DecodedEvent, ctx: DecodeContext) -> bytes:
    """The event's bytes with what is private scrubbed (the same length, CRC32 again)."""
    raw = ev.raw or b""
    h = ev.header
    if h is None or ev.node is None:
        raise RedactError(f"event at {ev.offset}: not decodable ({ev.error}); not written")
    buf = bytearray(raw)
    code = h.type_code
    if ev.error and isinstance(ev.body, RowsEvent | type(None)):
        raise RedactError(f"event at {ev.offset}: {ev.error}; not written")
    if _scrub_rows(r, ev, ctx, buf):
        pass
    elif code == int(E.TABLE_MAP_EVENT):
        for n in _leaves(ev.node):
            if isinstance(n.value, list):  # ENUM/SET members: each in its own bytes
                a = n.offset - ev.offset
                at = a
                for member in n.value:
                    if not isinstance(member, str) or not member:
                        continue
                    enc = member.encode("utf-8", "surrogateescape")
                    i = bytes(buf[at : a + n.length]).find(enc)
                    if i < 0:
                        raise RedactError(f"event at {ev.offset}: {n.name}: a member not "
                                          "found in its bytes; nothing is written")
                    new = r.name(member).encode()
                    if len(new) != len(enc):
                        new = b"x" * len(enc)
                    buf[at + i : at + i + len(enc)] = new
                    at += i + len(enc)
                    r._count("names")
                continue
            if isinstance(n.value, str) and n.value:
                span = _text_span(buf, ev, n)
                new = r.name(n.value).encode()  # names, ENUM/SET members: one map
                if len(new) != span[1] - span[0]:
                    new = b"x" * (span[1] - span[0])
                _put(buf, span, new, f"event at {ev.offset}: {n.name}")
                r._count("names")
    elif code in _QUERY_TYPES or code in _STATEMENTS or code == int(E.USER_VAR_EVENT):
        for n in _leaves(ev.node):
            if not isinstance(n.value, str | bytes) or not n.value or n.name == "catalog":
                continue
            span = _text_span(buf, ev, n)
            old = bytes(buf[span[0] : span[1]])
            if n.name == "query":
                new = r.sql(old)
            elif isinstance(n.value, str) and n.name in ("schema", "name"):
                new = r._ident(old)
            else:
                new = b"x" * len(old)
            _put(buf, span, new, f"event at {ev.offset}: {n.name}")
    _fix_checksum(buf, ev)
    return bytes(buf)


def redact_files(paths: list[Path], out: Path, *, until: dict[str, int] | None = None,
                 redactor: Redactor | None = None,
                 progress: Callable[[str], None] | None = None) -> Bundle:
    """Scrub ``paths`` into ``out/binlog/`` and write ``out/scenario.toml``. ``until``: per
    file name, cut the file after the event that ends at or after this offset (a slice that
    is still a binlog: every offset and log_pos stays)."""
    r = redactor or Redactor()
    bdir = out / "binlog"
    bdir.mkdir(parents=True, exist_ok=True)
    bundle = Bundle(out, [])
    version = ""
    for p in paths:
        name = p.name[:-3] if p.name.endswith(".gz") else p.name
        target = bdir / name
        ctx = DecodeContext()
        limit = (until or {}).get(name)
        part = target.with_suffix(target.suffix + ".part")
        try:
            with open(part, "wb") as f:
                f.write(BINLOG_MAGIC)
                for ev in read_binlog_file(p, record=True, ctx=ctx):
                    f.write(redact_event(r, ev, ctx))
                    bundle.events += 1
                    if ev.header is not None and ev.header.type_code == int(
                            E.FORMAT_DESCRIPTION_EVENT) and not version:
                        body = ev.body
                        version = (body.server_version
                                   if isinstance(body, FormatDescriptionEvent) else "")
                    if limit is not None and ev.offset + ev.size >= limit:
                        break
        except BaseException:
            part.unlink(missing_ok=True)  # nothing half-scrubbed is left behind
            raise
        part.replace(target)
        bundle.files.append(target)
        if progress is not None:
            progress(f"{p} -> {target}")
    bundle.counts = dict(r.counts)
    write_scenario(bundle, version)
    return bundle


def write_scenario(bundle: Bundle, version: str) -> None:
    """``bundle.out/scenario.toml``: a mock master serving the bundle's binlog files."""
    out = bundle.out
    flavor = "mariadb" if "mariadb" in version.lower() else "mysql"
    sc = out / "scenario.toml"
    files = ", ".join(json.dumps(f"binlog/{f.name}") for f in bundle.files)
    sc.write_text(
        "# binlogscope redact: a mock master serving the scrubbed binlog\n"
        "#   binlogscope mock-master --scenario scenario.toml\n"
        f'flavor = "{flavor}"\n'
        f"server_version = {json.dumps(version or '10.11.0-MariaDB-log')}\n"
        "[[users]]\nname = \"repl\"\npassword = \"replpass\"\n"
        f"[[sources]]\nbinlog = [{files}]\n")
    bundle.scenario = sc


__all__ = ["Bundle", "RedactError", "Redactor", "redact_event", "redact_files"]
