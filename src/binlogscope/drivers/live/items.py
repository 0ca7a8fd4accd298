"""What the parts of the live replica share: its settings (:class:`LiveSettings`), what the
consumer gets (:class:`SourceItem`), what it learnt about the server (:class:`ServerInfo`) and
its one error type (:class:`LiveError`, with hints for the server's usual ERR codes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.options import ConnectionOptions
from binlogscope.pipeline.filter import TableFilter
from binlogscope.session.events import DecodeError, PacketDecoded, SequenceMismatch
from binlogscope.wire.binlog.rows import UNKNOWN_CONTEXT
from binlogscope.wire.binlog.types import HEARTBEATS, is_heartbeat
from binlogscope.wire.handshake import ErrPacket

ERR_HINTS = {
    1236: "the requested binlog file/position does not exist on the server (purged or "
          "mistyped): check SHOW BINARY LOGS and start from a file it lists",
    1045: "wrong user or password",
    1227: "the user lacks a privilege: a replica needs REPLICATION SLAVE (and REPLICATION "
          "CLIENT / BINLOG MONITOR for the status queries)",
    1129: "the host is blocked after too many connection errors: FLUSH HOSTS on the server",
    3159: "the server accepts only encrypted connections (require_secure_transport): use "
          "--ssl-mode REQUIRED (or VERIFY_CA with --ssl-ca)",
}
#: 1045 once logged in: MariaDB answers COM_REGISTER_SLAVE / COM_BINLOG_DUMP of an account
#: without REPLICATION SLAVE with ER_ACCESS_DENIED_ERROR (MySQL sends 1227)
_NO_REPL_PRIVILEGE = ("the login worked, but the account lacks the REPLICATION SLAVE privilege a "
                      "replica needs: GRANT REPLICATION SLAVE ON *.* TO the user")
#: 1045 at login over plain TCP to a server that offers TLS: MariaDB refuses an unencrypted
#: login this way both for require_secure_transport=ON and an account's REQUIRE SSL
_LOGIN_TLS = (" - or the server requires TLS (require_secure_transport, or the account's "
              "REQUIRE SSL): try --ssl-mode REQUIRED")
#: 1236 texts about a GTID start (MariaDB: "...requested to start from GTID X, which is not in
#: the master's binlog", "Could not find GTID state requested by slave in any binlog files";
#: MySQL: "...purged binary logs containing GTIDs that the slave requires")
_GTID_HINT = ("the GTID position is not in the source's binlog (purged, never written there, or "
              "a diverged replica): compare --gtid with SELECT @@gtid_binlog_pos / "
              "@@gtid_purged, or start from a FILE:POS")
#: 1236 texts about a position inside an existing file
_POSITION_HINT = ("the position is not the start of an event in that file (or beyond its end):"
                  " use a position that SHOW BINLOG EVENTS lists, or 4 for the file's start")


def err_hint(err: ErrPacket, *, logged_in: bool = True, tls_possible: bool = False) -> str | None:
    """The hint for a server's ERR, by code and, where one code has several causes, by the
    stage (``logged_in``: the login is over) and the message text. ``tls_possible``: the
    login went over plain TCP to a server that offers TLS."""
    code, msg = err.error_code, err.error_message.lower()
    if code == 1045:
        if logged_in:
            return _NO_REPL_PRIVILEGE
        return ERR_HINTS[1045] + (_LOGIN_TLS if tls_possible else "")
    if code == 1227 and "replication slave" in msg:
        return _NO_REPL_PRIVILEGE
    if code == 1236:
        if "gtid" in msg:
            return _GTID_HINT
        if "position" in msg and "could not find first log" not in msg:
            return _POSITION_HINT
    return ERR_HINTS.get(code)


class LiveError(Exception):
    """A failure the user must act on; the message is one clear line. ``code``: the server's
    ERR code when the server refused something."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


#: ERR codes that say the server (or this connection) is going away, not that the request is
#: wrong: ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED (MariaDB), ER_QUERY_INTERRUPTED, the
#: ER_NET_* read/write errors and timeouts, CR_SERVER_LOST. A dump ended by one reconnects; a
#: reconnect's login or setup refused by one is retried with the reconnect backoff.
SERVER_GOING = frozenset((1053, 1927, 1317, 1158, 1159, 1160, 1161, 2013))


def err_text(err: ErrPacket, what: str, *, logged_in: bool = True,
             tls_possible: bool = False) -> str:
    """``what: ERR code (state) message`` and the hint for it (:func:`err_hint`), if any."""
    hint = err_hint(err, logged_in=logged_in, tls_possible=tls_possible)
    text = f"{what}: ERR {err.error_code} ({err.sql_state}) {err.error_message}"
    return f"{text} - hint: {hint}" if hint else text


#: HEARTBEAT_LOG_EVENT, HEARTBEAT_LOG_EVENT_V2 (defined in wire: :func:`is_heartbeat`)
HEARTBEAT_TYPES = HEARTBEATS


def counted_event(item: SourceItem) -> bool:
    """What ``--count N`` counts (``live``, ``export --live``, the TUI): a binlog event of the
    dump that is shown, including the artificial ones the source sends at the start of a dump
    (the Rotate with flag 0x20, a Format_description with log_pos 0); not a heartbeat (it
    comes only when the source is idle: counting it would make N depend on timing), not a
    replay skipped on resume, not an event the table filter dropped."""
    if item.kind != "packet" or not item.deliver:
        return False
    ev = item.event
    if not isinstance(ev, PacketDecoded) or ev.binlog_event is None:
        return False
    h = ev.binlog_event.header
    return h is not None and not is_heartbeat(h.type_code)


def decode_problem(item: SourceItem) -> str | None:
    """What could not be decoded in a delivered item (None: nothing): a packet the session
    could not read, a packet or binlog event decoded with an error, a binlog event whose
    checksum does not match, a packet whose sequence id breaks the count. Missing context
    (a row event whose TABLE_MAP came before the start) is not counted, as ``export`` does
    not count it as damage: the stream started there. ``live`` and ``export --live`` end
    with a non-zero status after any of these (docs/architecture: a decode error is an
    item and a non-zero exit)."""
    if item.kind != "packet":
        return None
    ev = item.event
    if isinstance(ev, DecodeError):
        return f"at {ev.direction.value} byte {ev.offset}: {ev.message}"
    if isinstance(ev, SequenceMismatch):  # (a client library stops: packets out of order)
        return (f"at {ev.direction.value} byte {ev.offset}: packets out of order: sequence "
                f"id {ev.got}, expected {ev.expected}")
    if not isinstance(ev, PacketDecoded):
        return None
    bev = ev.binlog_event
    if bev is None:
        return f"{ev.kind} at byte {ev.offset}: {ev.error}" if ev.error else None
    # (the common case, a good event, is told without building the text: once per event)
    if bev.error:
        if bev.error.startswith(UNKNOWN_CONTEXT):
            return None
        what = bev.error
    elif ev.error:
        what = ev.error
    elif bev.checksum_ok is False:
        what = "checksum mismatch"
    else:
        return None
    where = (f"{bev.type_name} at {bev.binlog_file}:{bev.file_pos}"
             if bev.binlog_file is not None else f"{bev.type_name} at byte {ev.offset}")
    return f"{where}: {what}"


class DecodeProblems:
    """Counts :func:`decode_problem` over the items a command shows; :meth:`summary` is the
    one stderr line at the end (None when there was none)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: str | None = None
        self._last: str | None = None  # the last problem's text

    def see(self, item: SourceItem) -> None:
        ev = item.event
        if type(ev) is PacketDecoded and item.kind == "packet":
            # (once per event: a good binlog event, as decode_problem tells it, inline)
            bev = ev.binlog_event
            if bev is not None and not bev.error and not ev.error \
                    and bev.checksum_ok is not False:
                return
        p = decode_problem(item)
        if p is None:
            return
        last, self._last = self._last, p
        # the session follows a packet decoded with an error by a decode_error item of the
        # same error: one problem
        if isinstance(ev, DecodeError) and last is not None and last.endswith(ev.message):
            return
        self.count += 1
        if self.first is None:
            self.first = p

    def summary(self) -> str | None:
        if not self.count:
            return None
        return (f"{self.count} event(s)/packet(s) could not be decoded (shown with their "
                f"error); the first: {self.first}")


@dataclass
class LiveSettings:
    conn: ConnectionOptions
    server_id: int | None = None
    start: str | None = None  # FILE:POS
    gtid: str | None = None
    semi_sync: bool = False
    heartbeat: float | None = None
    non_blocking: bool = False
    state_path: str | None = None
    table_filter: TableFilter = field(default_factory=TableFilter)
    connect_timeout: float = 10.0
    net_read_timeout: int = 60
    reconnect: bool = True
    max_reconnects: int = 8
    store_size: int = 4096
    #: seconds between --state writes (0: after every acked event); the last acked position
    #: is always written when the session ends or is stopped
    state_interval: float = 0.25
    record_path: str | None = None
    record_raw: bool = False
    #: ``live --out FILE``: a state file holding a position (and the output's length) wins
    #: over --start/--gtid, which only say where the output's first run starts
    out_path: str | None = None
    #: save the state after every transaction (the consumer's output is flushed first), so
    #: a crash repeats at most the transaction in flight (``live --state`` on stdout)
    commit_each_txn: bool = False
    #: build the annotated tree for stream packets (the TUI and --plain need it; --json and
    #: exporters do not: every value is still decoded, only the Nodes are skipped)
    stream_tree: bool = True
    #: ``--lag-every``: seconds between SHOW MASTER STATUS polls of the server's head on a
    #: control connection (0: none; heartbeats still give the head when idle)
    lag_every: float = 0.0
    #: ``live --json``: the command's writer of the stream's event lines by the native kernel
    #: (``render/line_layout.packet_lines``, :mod:`.lines`), or None: every event an item
    json_lines: Any = None

    def heartbeat_period(self) -> float:
        """Seconds between the source's heartbeats asked for (0: none): ``heartbeat``, or
        when not given half the read timeout, as MySQL's and MariaDB's replicas default
        MASTER_HEARTBEAT_PERIOD to slave_net_timeout / 2 (60 s -> 30 s), so an idle source
        keeps the link and a dead one is noticed within the read timeout."""
        if self.heartbeat is not None:
            return self.heartbeat
        return self.net_read_timeout / 2

    def read_timeout(self) -> float:
        """Seconds without a byte before the connection counts as lost: ``net_read_timeout``,
        and with a ``heartbeat`` given at least three of its periods (and a second)."""
        return float(max(self.net_read_timeout, (self.heartbeat or 0) * 3 + 1))


@dataclass
class ServerInfo:
    version: str = ""
    server_id: int | None = None
    checksum: str | None = None
    position: tuple[str, int] | None = None
    mariadb: bool = False


def parse_start(start: str) -> tuple[str, int]:
    """``--start FILE:POS``; an empty FILE (``:4``) asks for the server's first binlog file (a
    COM_BINLOG_DUMP with an empty name: MariaDB and MySQL start at the first file of their
    index, sql_repl.cc / rpl_binlog_sender.cc ``check_start_file``)."""
    name, sep, pos = start.rpartition(":")
    if not sep or not pos.isdigit():
        raise LiveError(f"--start {start!r}: expected FILE:POS, e.g. mysql-bin.000003:4 "
                        "(:4 for the server's first binlog file)")
    return name, int(pos)


__all__ = [
    "ERR_HINTS",
    "HEARTBEAT_TYPES",
    "SERVER_GOING",
    "DecodeProblems",
    "LiveError",
    "LiveSettings",
    "ServerInfo",
    "counted_event",
    "decode_problem",
    "err_hint",
    "err_text",
    "parse_start",
]
