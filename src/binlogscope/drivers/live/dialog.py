"""The live replica's setup dialog over a :class:`~.live_connect.Connection`, once logged in:
the setup queries (:func:`~.live_setup.setup_steps`, each with its why), the facts it asks the
server (checksum, server_id, version, binlog position), ``COM_REGISTER_SLAVE`` and the dump
command (file/position, or a GTID set)."""

from __future__ import annotations

import socket

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.live.connect import Connection, Put
from binlogscope.drivers.live.items import (
    LiveError,
    LiveSettings,
    ServerInfo,
    err_text,
    parse_start,
)
from binlogscope.drivers.live.setup import QUERY_WHY, SetupStep, setup_steps
from binlogscope.pipeline.position import RestartPoint
from binlogscope.session.events import PacketDecoded, Peer, ResultSetComplete
from binlogscope.wire.commands import (
    ComBinlogDump,
    ComBinlogDumpGtid,
    ComQuery,
    ComRegisterSlave,
    GtidSid,
    parse_gtid_sids,
)
from binlogscope.wire.constants import BinlogDumpFlag
from binlogscope.wire.handshake import ErrPacket, OkPacket


def query(rd: Connection, sql: str) -> ResultSetComplete | OkPacket | ErrPacket:
    """Send one query; its result set, OK or ERR."""
    rd.send(ComQuery(sql))
    while True:
        ev = rd.next_event()
        if isinstance(ev, ResultSetComplete):
            rd.flush_packets()  # the result set's terminating EOF/OK packet
            return ev
        if (isinstance(ev, PacketDecoded) and ev.direction == Peer.SERVER
                and isinstance(ev.value, OkPacket | ErrPacket) and ev.kind in ("ok", "err")):
            return ev.value


def _value(rd: Connection, put: Put, sql: str, why: str) -> str | None:
    put(SourceItem("step", step=SetupStep("setup", sql, why, sql)))
    res = query(rd, sql)
    if isinstance(res, ResultSetComplete) and res.rows:
        v = res.rows[0].values[0]
        return None if v is None else v.decode("utf-8", "replace")
    return None


def run_setup(rd: Connection, settings: LiveSettings, info: ServerInfo, slave_uuid: str,
              gtid: str | None, put: Put) -> None:
    """The setup steps, then what the replica needs to know about the server (into ``info``)."""
    steps = setup_steps(
        slave_uuid=slave_uuid, heartbeat=settings.heartbeat_period(),
        semi_sync=settings.semi_sync,
        mariadb=info.mariadb, gtid=gtid, net_read_timeout=settings.net_read_timeout)
    for step in steps:
        put(SourceItem("step", step=step))
        assert step.sql is not None
        res = query(rd, step.sql)
        if isinstance(res, ErrPacket):
            if not step.optional:
                raise LiveError(err_text(res, f"setup step '{step.what}' failed"),
                                res.error_code)
            put(SourceItem("note", text=f"{step.what}: server said {res.error_code} "
                           f"{res.error_message}"))
    info.checksum = _value(rd, put, "SELECT @@global.binlog_checksum", QUERY_WHY["checksum"])
    sid = _value(rd, put, "SELECT @@server_id", QUERY_WHY["server_id"])
    info.server_id = int(sid) if sid and sid.isdigit() else None
    _value(rd, put, "SELECT @@version", QUERY_WHY["version"])
    major = info.version.split(".")[0]
    modern_mysql = not info.mariadb and (
        major.isdigit() and (int(major) > 8 or info.version.startswith("8.4")))
    sql = "SHOW BINARY LOG STATUS" if modern_mysql else "SHOW MASTER STATUS"
    put(SourceItem("step", step=SetupStep("setup", sql, QUERY_WHY["position"], sql)))
    res = query(rd, sql)
    if isinstance(res, ResultSetComplete) and res.rows:
        status = dict(zip(res.names, res.rows[0].values, strict=False))
        f, p = status.get("File"), status.get("Position")
        if f is not None and p is not None:
            info.position = (f.decode(), int(p))


def register(rd: Connection, server_id: int, put: Put) -> None:
    """COM_REGISTER_SLAVE until its OK."""
    put(SourceItem("step", step=SetupStep(
        "register", f"COM_REGISTER_SLAVE server_id={server_id}",
        "lists this replica in the source's SHOW SLAVE HOSTS; server_id identifies it (0 "
        "would mean 'not a replica': a dump that ends at the end of the logs)")))
    rd.send(ComRegisterSlave(server_id, socket.gethostname()[:60], "", "", 0, 0, 0))
    while True:
        p = rd.next_packet()
        if isinstance(p.value, OkPacket):
            return
        if isinstance(p.value, ErrPacket):
            raise LiveError(err_text(p.value, "COM_REGISTER_SLAVE refused"),
                            p.value.error_code)


def dump(rd: Connection, settings: LiveSettings, info: ServerInfo, server_id: int,
         gtid: str | None, resume: RestartPoint | None, put: Put) -> int:
    """Send the dump command; returns how many real events at its start were delivered
    before (to skip)."""
    flags = BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK if settings.non_blocking else 0
    head = head_stop(settings, info)
    if head is not None:
        flags = 0
        put(SourceItem("step", step=SetupStep(
            "dump", f"a blocking dump that binlogscope ends at the head {head[0]}:{head[1]}",
            "MariaDB does not end a semi-sync dump asked for with BINLOG_DUMP_NON_BLOCK: "
            "its dump thread sends nothing and hangs in Ack_receiver::remove_slave "
            "(sql/semisync_master_ack_receiver.cc) until another semi-sync replica "
            "connects, so --non-blocking --semi-sync asks for a blocking dump and stops "
            "where SHOW MASTER STATUS said the binlog ended")))
    if info.mariadb:
        flags |= BinlogDumpFlag.BINLOG_SEND_ANNOTATE_ROWS_EVENT
    rp = resume
    if gtid is not None and (rp is None or rp.log_file is None or info.mariadb):
        if info.mariadb:
            what = f"COM_BINLOG_DUMP from GTID state {gtid!r}"
            why = ("MariaDB: an empty file name plus @slave_connect_state asks for a GTID "
                   "dump: the source finds the position of each domain's next GTID")
            put(SourceItem("step", step=SetupStep("dump", what, why)))
            rd.send(ComBinlogDump(4, server_id, "", int(flags)))
        else:
            put(SourceItem("step", step=SetupStep(
                "dump", f"COM_BINLOG_DUMP_GTID excluding {gtid!r}",
                "MySQL: the source sends every transaction whose GTID is not in the set")))
            rd.send(ComBinlogDumpGtid(server_id, "", 4, int(flags) | 0x04,
                                      mysql_gtid_set(gtid)))
        return rp.skip if rp is not None else 0
    skip = 0
    if rp is not None and rp.log_file is not None and rp.log_pos is not None:
        name, pos = rp.log_file, rp.log_pos
        skip = rp.skip
    elif settings.start:
        name, pos = parse_start(settings.start)
    elif info.position:
        name, pos = info.position
    else:
        raise LiveError("the server reports no binlog position (is log_bin on?); "
                        "give --start FILE:POS")
    put(SourceItem("step", step=SetupStep(
        "dump", f"COM_BINLOG_DUMP from {name or '(the first binlog file)'}:{pos}"
        + (" (non-blocking)" if flags & BinlogDumpFlag.BINLOG_DUMP_NON_BLOCK else ""),
        "from here on the connection is one-way: the source sends a fake ROTATE, its "
        "FORMAT_DESCRIPTION, then every event, each in its own packet")))
    rd.send(ComBinlogDump(pos, server_id, name, int(flags)))
    return skip


def head_stop(settings: LiveSettings, info: ServerInfo) -> tuple[str, int] | None:
    """Where binlogscope itself ends a ``--non-blocking --semi-sync`` dump from MariaDB (the
    binlog's head read by SHOW MASTER STATUS before the dump; None: the server ends it)."""
    if settings.non_blocking and settings.semi_sync and info.mariadb:
        return info.position
    return None


def mysql_gtid_set(text: str) -> tuple[GtidSid, ...]:
    """A MySQL GTID set (``uuid:1-5:7,uuid2:tag:1-3``) as COM_BINLOG_DUMP_GTID's entries;
    tagged GTIDs (MySQL 8.3+) go out in the tagged encoding. A bad set is one clear error."""
    try:
        return parse_gtid_sids(text)
    except ValueError as exc:
        raise LiveError(f"--gtid {text!r}: {exc}") from None


__all__ = ["dump", "head_stop", "mysql_gtid_set", "query", "register", "run_setup"]
