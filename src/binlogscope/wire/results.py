"""Text result sets: column count, ColumnDefinition41 packets, rows (and the EOF/OK end).

A COM_QUERY that returns rows is answered with::

    column_count  ->  column_count x ColumnDefinition41  ->  [EOF]  ->  rows...  ->  EOF / OK(0xFE)

where the middle EOF is absent and the final EOF is an OK packet with a 0xFE header when
CLIENT_DEPRECATE_EOF was agreed. Row values are ``string<lenenc>``; 0xFB is NULL.

MariaDB's own capabilities (the greeting's and response's ``mariadb_capabilities``) are passed
in the bits above 32 of ``caps``, as the MariaDB server keeps them
(``caps | mariadb_caps << 32``): with MARIADB_CLIENT_CACHE_METADATA the column count is followed
by a ``metadata_follows`` byte, and with MARIADB_CLIENT_EXTENDED_METADATA every
ColumnDefinition41 carries a ``string<lenenc>`` of extended type information after
``org_name`` (pairs of a one-byte key - 0 type name, 1 format name - and a ``string<lenenc>``,
e.g. ``json``, ``uuid``, ``inet6``, ``point``).
"""

from __future__ import annotations

from dataclasses import dataclass

from binlogscope.wire.binlog.types import column_type_name
from binlogscope.wire.constants import CapabilityFlag, ColumnFlag, MariaDbCapability
from binlogscope.wire.fields import flag_field, lenenc_bytes, lenenc_int, lenenc_str, u8, u16, u32
from binlogscope.wire.handshake import charset_name
from binlogscope.wire.reader import ByteReader


@dataclass(frozen=True, slots=True)
class ColumnCount:
    column_count: int
    metadata_follows: int | None = None  # CLIENT_OPTIONAL_RESULTSET_METADATA: 0 none, 1 full


#: MariaDB capabilities as bits of ``caps`` (above the 32 bits of the MySQL flags)
MARIADB_CACHE_METADATA = MariaDbCapability.MARIADB_CLIENT_CACHE_METADATA << 32
MARIADB_EXTENDED_METADATA = MariaDbCapability.MARIADB_CLIENT_EXTENDED_METADATA << 32
_FOLLOWS_DOC = "0: no column definitions follow (the client has them cached), 1: they do"


def decode_column_count(r: ByteReader, caps: int = 0) -> ColumnCount:
    meta: int | None = None
    if caps & CapabilityFlag.CLIENT_OPTIONAL_RESULTSET_METADATA:
        meta = r.u8("metadata_follows", doc=_FOLLOWS_DOC)
    n = r.lenenc("column_count", doc="number of columns: this many column definitions follow")
    if n is None:
        raise ValueError("column_count cannot be NULL (0xFB)")
    if caps & MARIADB_CACHE_METADATA:
        meta = r.u8("metadata_follows", doc="MariaDB (MARIADB_CLIENT_CACHE_METADATA): "
                    + _FOLLOWS_DOC)
    return ColumnCount(n, meta)


def encode_column_count(v: ColumnCount, caps: int = 0) -> bytes:
    follows = u8(1 if v.metadata_follows is None else v.metadata_follows)
    out = b""
    if caps & CapabilityFlag.CLIENT_OPTIONAL_RESULTSET_METADATA:
        out = follows
    out += lenenc_int(v.column_count)
    if caps & MARIADB_CACHE_METADATA:
        out += follows
    return out


@dataclass(frozen=True, slots=True)
class ColumnDefinition41:
    """Metadata of one result-set column."""

    name: str
    type: int = 253  # MYSQL_TYPE_VAR_STRING
    schema: str = ""
    table: str = ""
    org_table: str = ""
    org_name: str = ""
    catalog: str = "def"
    character_set: int = 255
    column_length: int = 0
    flags: int = 0
    decimals: int = 0
    #: MariaDB extended metadata: (key, value) pairs, key 0 = type name, 1 = format name
    extended: tuple[tuple[int, str], ...] = ()


#: what the keys of MariaDB's extended metadata mean
EXTENDED_KEYS = {0: "type_name", 1: "format_name"}


def _extended_metadata(r: ByteReader) -> tuple[tuple[int, str], ...]:
    data = r.lenenc_bytes("extended_metadata", doc="MariaDB (MARIADB_CLIENT_EXTENDED_METADATA): "
                          "extended type information, pairs of a key (0 type name, 1 format "
                          "name) and a string<lenenc>, e.g. json, uuid, inet6, point") or b""
    pairs: list[tuple[int, str]] = []
    i = 0
    while i < len(data):
        key = data[i]
        n = data[i + 1] if i + 1 < len(data) else 0
        if n >= 0xFB or i + 2 + n > len(data):
            break  # not a short string<lenenc>: leave the rest as bytes
        pairs.append((key, data[i + 2:i + 2 + n].decode("utf-8", "replace")))
        i += 2 + n
    return tuple(pairs)


def decode_column_definition41(r: ByteReader, caps: int = 0) -> ColumnDefinition41:
    cat = r.lenenc_str("catalog", doc="always 'def'")
    schema = r.lenenc_str("schema", doc="schema of the table the column comes from")
    table = r.lenenc_str("table", doc="table alias as written in the query")
    org_table = r.lenenc_str("org_table", doc="real table name")
    name = r.lenenc_str("name", doc="column alias (the result-set column name)")
    org_name = r.lenenc_str("org_name", doc="real column name")
    extended = _extended_metadata(r) if caps & MARIADB_EXTENDED_METADATA else ()
    r.lenenc("length_of_fixed_length_fields", doc="0x0c: 12 bytes of fixed fields follow")
    cs = r.u16("character_set", doc="collation id of the column (63 = binary)",
               display=charset_name(int.from_bytes(r.peek(2), "little")))
    length = r.u32("column_length", doc="maximum display length of the column")
    code = r.peek_u8()
    t = r.u8("type", doc="MYSQL_TYPE_* of the values",
             display=f"{column_type_name(code)} ({code})" if code is not None else "")
    flags = flag_field(r, "flags", 2, ColumnFlag, doc="*_FLAG bits: NOT NULL, PRI_KEY, UNSIGNED...")
    dec = r.u8("decimals", doc="digits after the point (0x1f: not a fixed-point type)")
    if r.remaining >= 2:
        r.raw("reserved", 2, doc="filler, 0x00 0x00")
    return ColumnDefinition41(name or "", t, schema or "", table or "", org_table or "",
                              org_name or "", cat or "", cs, length, flags, dec, extended)


def encode_column_definition41(v: ColumnDefinition41, caps: int = 0) -> bytes:
    ext = b""
    if caps & MARIADB_EXTENDED_METADATA:
        ext = lenenc_bytes(b"".join(bytes([k]) + lenenc_str(text) for k, text in v.extended))
    return (lenenc_str(v.catalog) + lenenc_str(v.schema) + lenenc_str(v.table)
            + lenenc_str(v.org_table) + lenenc_str(v.name) + lenenc_str(v.org_name) + ext
            + b"\x0c" + u16(v.character_set) + u32(v.column_length) + u8(v.type)
            + u16(v.flags) + u8(v.decimals) + b"\0\0")


_LENENC_HDR = {0xFC: 3, 0xFD: 4, 0xFE: 9}


@dataclass(frozen=True, slots=True)
class TextRow:
    """One row of a text result set: each value as bytes (None for SQL NULL)."""

    values: tuple[bytes | None, ...]

    def text(self, encoding: str = "utf-8") -> tuple[str | None, ...]:
        return tuple(None if v is None else v.decode(encoding, "replace") for v in self.values)


def decode_text_row(
    r: ByteReader, caps: int = 0, columns: tuple[str, ...] | None = None
) -> TextRow:
    """A ProtocolText::ResultsetRow; ``columns`` (names) only label the nodes."""
    vals: list[bytes | None] = []
    i = 0
    while not r.at_end():
        label = columns[i] if columns is not None and i < len(columns) else f"col_{i}"
        p = r.pos
        first = r.buf[p]
        v: bytes | None
        if first == 0xFB:
            r.take(1, label)
            v = None
        elif first == 0xFF:
            raise ValueError(f"{label!r}: 0xFF is not a valid length-encoded string")
        else:
            hdr = _LENENC_HDR.get(first, 1)
            raw = r.take(hdr, label)
            v = r.take(first if hdr == 1 else int.from_bytes(raw[1:], "little"), label)
        if r.record:
            r.leaf(label, p, v, wire="string<lenenc>",
                   display="NULL" if v is None else repr(v.decode("utf-8", "replace")),
                   doc="NULL (0xFB)" if v is None else "column value as text (string<lenenc>)")
        vals.append(v)
        i += 1
    if columns is not None and i != len(columns):
        raise ValueError(f"row has {i} values, the result set has {len(columns)} columns")
    return TextRow(tuple(vals))


def encode_text_row(v: TextRow, caps: int = 0) -> bytes:
    return b"".join(lenenc_bytes(x) for x in v.values)


@dataclass(frozen=True, slots=True)
class LocalInfileRequest:
    """0xFB: the server asks the client to send a local file (LOAD DATA LOCAL INFILE)."""

    filename: str


def decode_local_infile_request(r: ByteReader, caps: int = 0) -> LocalInfileRequest:
    r.u8("header", doc="0xFB: LOCAL INFILE request")
    return LocalInfileRequest(r.rest_str("filename", doc="file the client should send"))


@dataclass(frozen=True, slots=True)
class RawResponse:
    """A reply binlogscope does not decode (prepared statements, COM_STATISTICS text...)."""

    data: bytes


def decode_raw_response(r: ByteReader, caps: int = 0) -> RawResponse:
    return RawResponse(r.rest("data", doc="reply payload binlogscope shows undecoded"))
