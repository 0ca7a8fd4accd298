"""Client commands: the first payload byte names the command (``Command``).

Decoded in full: COM_QUERY (with query attributes), COM_PING, COM_QUIT, COM_INIT_DB,
COM_REGISTER_SLAVE, COM_BINLOG_DUMP and COM_BINLOG_DUMP_GTID (with its SID/GNO interval set).
Other commands are shown as the command byte plus their raw arguments.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from binlogscope.wire.binlog.gtid_events import read_varlen
from binlogscope.wire.constants import (
    BinlogDumpFlag,
    BinlogDumpGtidFlag,
    CapabilityFlag,
    Command,
    command_name,
)
from binlogscope.wire.fields import SENSITIVE, escaped, flag_field, lenenc_int, u8, u16, u32, u64
from binlogscope.wire.gtid_sets import encode_gtid_set as encode_sid_block
from binlogscope.wire.gtid_sets import format_gtid_set, is_tagged_format, parse_gtid_set
from binlogscope.wire.node import make_node
from binlogscope.wire.reader import ByteReader


def _command_byte(r: ByteReader, expected: Command | None = None) -> int:
    code = r.peek_u8()
    name = command_name(code if code is not None else -1)
    c = r.u8("command", doc="command byte: which request this is",
             display=f"{name} (0x{code or 0:02x})")
    if expected is not None and c != expected:
        raise ValueError(f"command byte 0x{c:02x}, expected {expected.name} (0x{expected:02x})")
    return c


@dataclass(frozen=True, slots=True)
class ComQuery:
    """COM_QUERY (0x03): run one text SQL statement (or several with MULTI_STATEMENTS)."""

    query: str
    #: query attributes (CLIENT_QUERY_ATTRIBUTES): (name, raw binary-protocol value or None)
    attributes: tuple[tuple[str, bytes | None], ...] = ()


#: byte width of fixed-size binary-protocol values by MYSQL_TYPE_*; -1: 1-byte length prefix
_FIXED = {1: 1, 2: 2, 13: 2, 3: 4, 9: 4, 4: 4, 8: 8, 5: 8, 6: 0,
          7: -1, 10: -1, 12: -1, 11: -1}


def _query_attributes(r: ByteReader) -> tuple[tuple[str, bytes | None], ...]:
    pcount = r.lenenc("parameter_count", doc="number of query attributes") or 0
    r.lenenc("parameter_set_count", doc="always 1: one set of attributes")
    if not pcount:
        return ()
    nulls = r.raw("null_bitmap", (pcount + 7) // 8, doc="bit i set: attribute i is NULL")
    bind = r.u8("new_params_bind_flag", doc="1: the types and names follow")
    if not bind:
        raise ValueError("query attributes without types cannot be delimited")
    types: list[int] = []
    names: list[str] = []
    r.begin("parameters", doc="type and name of each query attribute")
    for _ in range(pcount):
        r.begin("parameter")
        types.append(r.u16("param_type_and_flag",
                           doc="MYSQL_TYPE_* of the value (0x8000: unsigned)") & 0xFF)
        names.append(r.lenenc_str("parameter_name", doc="attribute name") or "")
        r.end_group(display=names[-1])
    r.end_group()
    out: list[tuple[str, bytes | None]] = []
    r.begin("parameter_values", doc="attribute values in the binary protocol encoding")
    for i in range(pcount):
        if nulls[i // 8] >> (i % 8) & 1:
            out.append((names[i], None))
            continue
        width = _FIXED.get(types[i])
        if width is None:
            val = r.lenenc_bytes("parameter_value", doc=f"value of {names[i]}") or b""
        elif width == -1:
            n = r.u8("parameter_value_length", doc="length of the temporal value")
            val = r.raw("parameter_value", n, doc=f"value of {names[i]}")
        else:
            val = r.raw("parameter_value", width, doc=f"value of {names[i]}")
        out.append((names[i], val))
    r.end_group()
    return tuple(out)


def decode_com_query(r: ByteReader, caps: int = 0) -> ComQuery:
    _command_byte(r, Command.COM_QUERY)
    attrs: tuple[tuple[str, bytes | None], ...] = ()
    if caps & CapabilityFlag.CLIENT_QUERY_ATTRIBUTES:
        attrs = _query_attributes(r)
    q = r.rest_str("query", doc="the SQL text, not NUL-terminated (runs to the end)")
    return ComQuery(q, attrs)


def encode_com_query(v: ComQuery, caps: int = 0) -> bytes:
    out = u8(Command.COM_QUERY)
    if caps & CapabilityFlag.CLIENT_QUERY_ATTRIBUTES:
        out += lenenc_int(0) + lenenc_int(1)
    return out + v.query.encode()


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """A command with no or unparsed arguments (COM_PING, COM_QUIT, COM_INIT_DB...)."""

    command: int
    arguments: bytes = b""

    @property
    def name(self) -> str:
        return command_name(self.command)


_ARG_DOCS = {
    Command.COM_INIT_DB: ("schema_name", "schema to make the default (like USE)"),
    Command.COM_FIELD_LIST: ("table", "table name + NUL + column wildcard"),
    Command.COM_PROCESS_KILL: ("connection_id", "connection to kill (int<4>)"),
    # user, auth response (a password proof), schema, charset, plugin: masked as a whole
    Command.COM_CHANGE_USER: ("arguments", SENSITIVE + "user, auth response (password proof), "
                              "schema, character set, auth plugin, attributes"),
}


def decode_simple_command(r: ByteReader, caps: int = 0) -> SimpleCommand:
    """COM_PING / COM_QUIT / COM_STATISTICS...: command byte plus raw arguments, if any."""
    c = _command_byte(r)
    args = b""
    if not r.at_end():
        name, doc = _ARG_DOCS.get(Command(c) if c in Command._value2member_map_ else
                                  Command.COM_SLEEP, ("arguments", "command arguments"))
        if c == Command.COM_INIT_DB:
            args = r.rest_str(name, doc=doc).encode()
        else:
            args = r.rest(name, doc=doc)
    return SimpleCommand(c, args)


def encode_simple_command(v: SimpleCommand) -> bytes:
    return u8(v.command) + v.arguments


COM_PING = SimpleCommand(Command.COM_PING)
COM_QUIT = SimpleCommand(Command.COM_QUIT)


# ---------------------------------------------------------------------------- replication
@dataclass(frozen=True, slots=True)
class ComRegisterSlave:
    """COM_REGISTER_SLAVE (0x15): a replica announces itself (SHOW REPLICAS lists it)."""

    server_id: int
    hostname: str = ""
    user: str = ""
    password: str = field(default="", repr=False)
    port: int = 0
    replication_rank: int = 0
    master_id: int = 0


def decode_com_register_slave(r: ByteReader, caps: int = 0) -> ComRegisterSlave:
    _command_byte(r, Command.COM_REGISTER_SLAVE)
    sid = r.u32("server_id", doc="the replica's server_id (must be unique in the topology)")
    n = r.u8("hostname_length", doc="length of the hostname")
    host = r.fixed_str("hostname", n, doc="report_host of the replica (often empty)")
    n = r.u8("user_length", doc="length of the user")
    user = r.fixed_str("user", n, doc="report_user of the replica (often empty)")
    n = r.u8("password_length", doc="length of the password")
    pw = r.fixed_str("password", n, doc=SENSITIVE + "report_password of the replica")
    port = r.u16("port", doc="report_port of the replica (0: unknown)")
    rank = r.u32("replication_rank", doc="ignored by the server")
    mid = r.u32("master_id", doc="usually 0 (the server fills in its own id)")
    return ComRegisterSlave(sid, host, user, pw, port, rank, mid)


def encode_com_register_slave(v: ComRegisterSlave) -> bytes:
    def short(s: str) -> bytes:
        b = s.encode()
        if len(b) > 255:
            raise ValueError("COM_REGISTER_SLAVE strings are at most 255 bytes")
        return u8(len(b)) + b

    return (u8(Command.COM_REGISTER_SLAVE) + u32(v.server_id) + short(v.hostname)
            + short(v.user) + short(v.password) + u16(v.port) + u32(v.replication_rank)
            + u32(v.master_id))


@dataclass(frozen=True, slots=True)
class ComBinlogDump:
    """COM_BINLOG_DUMP (0x12): stream the binlog from a file name and position."""

    binlog_pos: int
    server_id: int
    binlog_filename: str = ""
    flags: int = 0

    @property
    def non_block(self) -> bool:
        return bool(self.flags & BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK)

    @property
    def requested_file(self) -> str:
        """The file name the server reads: the field up to its first NUL (MariaDB
        sql_parse.cc strmake()s the rest of the packet, MySQL reads a C string); empty: the
        first binlog file."""
        return self.binlog_filename.split("\0", 1)[0]

    @property
    def malformed(self) -> str | None:
        """What is wrong with the request's file name field, else None: NUL bytes inside it
        (string<EOF> has no terminator), e.g. python-mysql-replication's MariaDB dump writes
        an empty name as 4 NULs under a length header one byte short: 3 NULs in the packet,
        the 4th left over to start the client's next packet."""
        return dump_name_problem(self.binlog_filename)


def dump_name_problem(name: str) -> str | None:
    """The malformed file name of a COM_BINLOG_DUMP, in words (None: a proper name)."""
    if "\0" not in name:
        return None
    read = name.split("\0", 1)[0]
    what = (f"{len(name)} NUL byte(s) where the file name goes" if not name.strip("\0")
            else f"a file name with NUL bytes ({escaped(name)})")
    reads = f"{escaped(read)!r}" if read else "'' (the first binlog file)"
    return (f"malformed COM_BINLOG_DUMP: {what}; the name runs to the end of the packet "
            f"(string<EOF>, no terminator) and the server reads it up to the first NUL: {reads}. "
            "A client that sends a NUL-terminated or NUL-padded name counts it in the packet; "
            "one whose length header counts a byte less than it wrote (python-mysql-"
            "replication's MariaDB dump: 4 NULs, header 14 for 15 bytes) leaves the rest to "
            "start its next packet")


def decode_com_binlog_dump(r: ByteReader, caps: int = 0) -> ComBinlogDump:
    _command_byte(r, Command.COM_BINLOG_DUMP)
    pos = r.u32("binlog_pos", doc="position in the file to start at (4 = first event)")
    flags = flag_field(r, "flags", 2, BinlogDumpFlag,
                       doc="2 bytes little-endian; BINLOG_DUMP_NON_BLOCK: send EOF at the end "
                       "of the logs instead of waiting")
    sid = r.u32("server_id", doc="the replica's server_id; 0 also means 'stop at the end'")
    start = r.pos
    name = r.take(r.end - start, "binlog_filename").decode("utf-8", "replace")
    if r.record:
        doc = "file to start from (empty: the first file the server has)"
        problem = dump_name_problem(name)
        if problem is not None:  # NULs inside the field: say what the server makes of it
            doc += ("; this client NUL-terminated the name inside the field (the string runs "
                    "to the end of the packet): the server reads the name up to the NUL")
            shown = escaped(name)
            if not name.strip("\0"):  # nothing but NULs: not a file name at all
                shown = (f"malformed: {shown} ({len(name)} NUL bytes; the server reads '': "
                         "the first binlog file)")
            r.add_node(make_node("binlog_filename", r.base + start, r.pos - start, name,
                                 "string<EOF>", shown, doc, (), problem))
        else:
            shown = "" if name.isprintable() else escaped(name)
            r.leaf("binlog_filename", start, name, wire="string<EOF>", doc=doc, display=shown)
    return ComBinlogDump(pos, sid, name, flags)


def encode_com_binlog_dump(v: ComBinlogDump) -> bytes:
    return (u8(Command.COM_BINLOG_DUMP) + u32(v.binlog_pos) + u16(v.flags) + u32(v.server_id)
            + v.binlog_filename.encode())


@dataclass(frozen=True, slots=True)
class GtidInterval:
    start: int
    end: int  # exclusive, as on the wire


@dataclass(frozen=True, slots=True)
class GtidSid:
    sid: uuid.UUID
    intervals: tuple[GtidInterval, ...]
    tag: str = ""  # MySQL 8.3+ tagged GTIDs (uuid:tag:n); "" for untagged ones


def gtid_set_text(sids: tuple[GtidSid, ...]) -> str:
    """The usual text form, ``uuid:1-5:7`` (``uuid:tag:1-3`` for tagged GTIDs); intervals on
    the wire are [start, end)."""
    return format_gtid_set((s.sid, s.tag, ((i.start, i.end) for i in s.intervals))
                           for s in sids)


def parse_gtid_sids(text: str) -> tuple[GtidSid, ...]:
    """A MySQL GTID set in text (``uuid:1-5:7,uuid2:tag:1-3``) as COM_BINLOG_DUMP_GTID's
    entries (:func:`binlogscope.wire.gtid_sets.parse_gtid_set`)."""
    return tuple(GtidSid(sid, tuple(GtidInterval(a, b) for a, b in ivs), tag)
                 for (sid, tag), ivs in parse_gtid_set(text).items())


@dataclass(frozen=True, slots=True)
class ComBinlogDumpGtid:
    """COM_BINLOG_DUMP_GTID (0x1e): stream the binlog, skipping transactions in a GTID set."""

    server_id: int
    binlog_filename: str = ""
    binlog_pos: int = 4
    flags: int = 0
    gtid_set: tuple[GtidSid, ...] | None = None
    #: the SID block as raw bytes when it was not decoded (e.g. MySQL 8.3 tagged format)
    raw_data: bytes = b""


def _decode_sid_block(r: ByteReader) -> tuple[GtidSid, ...]:
    tagged = is_tagged_format(r.peek(8))
    if tagged:
        p = r.pos
        word = int.from_bytes(r.take(8, "n_sids"), "little")
        n = (word >> 8) & ((1 << 48) - 1)
        r.leaf("n_sids", p, n, wire="int<8>", display=f"{n} (tagged format)",
               doc="number of (uuid, tag) entries; in the tagged format (MySQL 8.3+) the "
               "first and last byte are the format (1) and the count sits in between")
    else:
        n = r.u64("n_sids", doc="number of server UUIDs in the set")
    if n > r.remaining // 24:
        raise ValueError(f"n_sids {n} cannot fit in {r.remaining} bytes")
    out: list[GtidSid] = []
    for _ in range(n):
        r.begin("sid_entry", doc="one server UUID (and tag) and its GNO intervals")
        start = r.pos
        raw = r.take(16, "sid")
        sid = uuid.UUID(bytes=raw)
        r.leaf("sid", start, sid, wire="string[16]", doc="server UUID (source_id) of the GTIDs",
               display=str(sid))
        tag = ""
        if tagged:
            size = read_varlen(r, "tag_length", "length of the tag (variable-length integer)")
            tag = r.fixed_str("tag", size, doc="GTID tag (empty for the untagged GTIDs)")
        m = r.u64("n_intervals", doc="number of GNO intervals for this UUID")
        ivs: list[GtidInterval] = []
        for _ in range(m):
            r.begin("interval")
            a = r.u64("start", doc="first transaction number (GNO) in the interval")
            b = r.u64("end", doc="one past the last GNO (the interval is [start, end))")
            r.end_group(display=f"{a}-{b - 1}")
            ivs.append(GtidInterval(a, b))
        r.end_group(display=f"{sid}:{tag}" if tag else str(sid))
        out.append(GtidSid(sid, tuple(ivs), tag))
    return tuple(out)


def decode_com_binlog_dump_gtid(r: ByteReader, caps: int = 0) -> ComBinlogDumpGtid:
    """As MySQL reads it (sql/rpl_source.cc): the name is a C string (a NUL-filled name means
    none), and ``data_size`` with the SID block follows whatever the flags say."""
    _command_byte(r, Command.COM_BINLOG_DUMP_GTID)
    flags = flag_field(r, "flags", 2, BinlogDumpGtidFlag,
                       doc="2 bytes little-endian; BINLOG_THROUGH_GTID: a GTID set follows "
                       "(the server reads the set whatever the flags)")
    sid = r.u32("server_id", doc="the replica's server_id")
    n = r.u32("binlog_name_info_size", doc="length of the file name (0: start by GTIDs only)")
    name = r.fixed_str("binlog_name", n, strip_nul=True,
                       doc="file to start from, read up to its first NUL (usually empty or "
                       "NUL-filled: start by GTIDs)")
    pos = r.u64("binlog_pos", doc="position to start at (4 = first event)")
    gtids: tuple[GtidSid, ...] | None = None
    raw = b""
    if not r.at_end():
        size = r.u32("data_size", doc="byte length of the encoded GTID set")
        with r.bounded(size, "data"):
            first = r.peek(8)
            if len(first) == 8 and first[7] != 0 and not is_tagged_format(first):
                raw = r.rest("data", doc="GTID set in an encoding binlogscope does not know")
            else:
                r.begin("data", doc="the replica's gtid_executed: these transactions are "
                        "skipped")
                gtids = _decode_sid_block(r)
                r.end_group(display=gtid_set_text(gtids))
    return ComBinlogDumpGtid(sid, name, pos, flags, gtids, raw)


def encode_gtid_set(sids: tuple[GtidSid, ...]) -> bytes:
    """The set as COM_BINLOG_DUMP_GTID carries it: the tagged format (MySQL 8.3+) when a tag
    is present, the untagged one otherwise."""
    return encode_sid_block((s.sid, s.tag, ((i.start, i.end) for i in s.intervals))
                            for s in sids)


def encode_com_binlog_dump_gtid(v: ComBinlogDumpGtid) -> bytes:
    """The flags are sent as given; ``data_size`` and the set follow when there is a set (or
    when BINLOG_THROUGH_GTID is set), as MySQL replicas send them."""
    name = v.binlog_filename.encode()
    data = b""
    if v.gtid_set is not None:
        data = encode_gtid_set(v.gtid_set)
    elif v.raw_data:
        data = v.raw_data
    out = (u8(Command.COM_BINLOG_DUMP_GTID) + u16(v.flags) + u32(v.server_id) + u32(len(name))
           + name + u64(v.binlog_pos))
    if data or v.gtid_set is not None or v.flags & BinlogDumpGtidFlag.BINLOG_THROUGH_GTID:
        out += u32(len(data)) + data
    return out

