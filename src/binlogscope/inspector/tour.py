"""``demo --tour``: a guided walk through a replica session for students.

Each step names the row it explains (the first row after the previous step's that matches) and a
field to select, so the hex pane lights up the bytes the text talks about. The steps are matched
against the rows as they arrive (a live session): a step whose row has not come yet waits.

The teaching switch (``demo --tour --teach``, the in-process demo only, where the password is the
demo's own ``replpass``) adds a step that recomputes ``mysql_native_password`` by hand from the
greeting's scramble: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))) - and checks the
result against the auth response the replica sent. Nowhere else is a scramble or auth response
shown: every other surface masks them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from binlogscope.inspector.source import Row, RowSource


@dataclass(frozen=True, slots=True)
class TourStep:
    title: str
    text: str
    matches: Callable[[Row], bool]
    field: str | None = None  # dotted path of the field to select (Node.find)
    #: the text with the teaching switch on (shorter: the recomputation follows it)
    teach_text: str | None = None


def _type(*names: str) -> Callable[[Row], bool]:
    return lambda r: r.event_type in names


def _rows_event(r: Row) -> bool:
    return r.kind in ("write", "update", "delete")


_EV = "binlog_event.event"

STEPS: tuple[TourStep, ...] = (
    TourStep("The server speaks first",
             "A replica connects like any client. The server's greeting (HandshakeV10) "
             "says its version, its capabilities and a one-time random nonce (the scramble) "
             "that the password proof will mix in.",
             _type("HANDSHAKE_V10"), "handshake_v10.auth_plugin_data_part_1"),
    TourStep("The replica logs in",
             "HandshakeResponse41: the user name and the auth response - a proof computed "
             "from the password and the server's nonce (masked here: a recording or a "
             "screenshot must never give it away).",
             _type("HANDSHAKE_RESPONSE41"), "handshake_response41.auth_response",
             teach_text="The server stores only stage2; the replica proves it knows stage1:"),
    TourStep("Logged in", "OK_Packet: the login succeeded; from here the replica runs "
             "plain queries.", _type("OK")),
    TourStep("Setting the session up",
             "Before asking for the binlog the replica tells the server what it can read: "
             "the checksum algorithm (SET @master_binlog_checksum), heartbeats, semi-sync, "
             "the GTID state. The strip above the list says why each query is sent.",
             _type("COM_QUERY"), "com_query.query"),
    TourStep("Registering",
             "COM_REGISTER_SLAVE: the replica announces its server_id (it shows in the "
             "server's SHOW REPLICAS).",
             _type("COM_REGISTER_SLAVE"), "com_register_slave.server_id"),
    TourStep("The dump request",
             "COM_BINLOG_DUMP names the binlog file and position to start from. From here "
             "the connection is one-way: the server pushes events, one per packet.",
             _type("COM_BINLOG_DUMP", "COM_BINLOG_DUMP_GTID"), "com_binlog_dump.binlog_filename"),
    TourStep("A fake ROTATE first",
             "The first event says which file the stream is in. It is artificial (timestamp "
             "0, log_pos 0): it is in no binlog file.",
             _type("ROTATE_EVENT"), f"{_EV}.header.log_pos"),
    TourStep("The format description",
             "FORMAT_DESCRIPTION: the server version, the header length and each event "
             "type's post-header length - and the checksum algorithm of every later event.",
             _type("FORMAT_DESCRIPTION_EVENT"), f"{_EV}.header"),
    TourStep("A transaction begins",
             "A GTID event opens each transaction: domain-server-sequence (MariaDB) or "
             "uuid:number (MySQL). A replica that saves it can resume exactly there.",
             _type("GTID_EVENT", "GTID_LOG_EVENT", "ANONYMOUS_GTID_LOG_EVENT")),
    TourStep("Which table",
             "TABLE_MAP maps a table_id to schema.table and its column types; the rows "
             "events that follow carry only the table_id.",
             _type("TABLE_MAP_EVENT"), f"{_EV}.body.table_id"),
    TourStep("The rows",
             "A rows event: the row images (after images for an INSERT). Its table_id points "
             "back at the TABLE_MAP (L follows the link).",
             _rows_event, f"{_EV}.body.table_id"),
    TourStep("Commit",
             "XID: the transaction committed. log_pos in its header is where the next "
             "event starts - the position a replica saves.",
             _type("XID_EVENT"), f"{_EV}.header.log_pos"),
    TourStep("Semi-sync: the server asks for an ACK",
             "With semi-sync the server puts two bytes before the event: 0xEF and a flag. "
             "Flag 1 asks the replica to acknowledge this event before the commit returns.",
             lambda r: r.semi_sync == "ef ACK?",
             "binlog_event.semi_sync_header.semi_sync_flag"),
    TourStep("The replica's ACK",
             "The replica answers with the binlog position it received; the line under the "
             "panes shows the latency between the event and its ACK.",
             lambda r: (r.semi_sync or "").startswith("ACK"), "semi_sync_ack.binlog_pos"),
    TourStep("Heartbeats",
             "When there is nothing to send the server sends a heartbeat: the connection is "
             "alive and the replica knows where the server is.",
             _type("HEARTBEAT_LOG_EVENT")),
)


def native_password_walkthrough(scramble: bytes, password: str, sent: bytes) -> str:
    """The mysql_native_password proof recomputed step by step (the teaching switch)."""
    stage1 = hashlib.sha1(password.encode()).digest()
    stage2 = hashlib.sha1(stage1).digest()
    mix = hashlib.sha1(scramble + stage2).digest()
    proof = bytes(a ^ b for a, b in zip(stage1, mix, strict=True))
    ok = ("equals the auth response the replica sent" if proof == sent
          else f"DIFFERS FROM the auth response the replica sent ({sent.hex()})")
    # (each line fits 80 columns: the tour bar shows all of it on a small terminal)
    return (f"scramble (from the greeting) = {scramble.hex()}\n"
            f"stage1 = SHA1(password) = {stage1.hex()}\n"
            f"stage2 = SHA1(stage1) = {stage2.hex()} (stored)\n"
            f"SHA1(scramble + stage2) = {mix.hex()}\n"
            f"proof = stage1 XOR that = {proof.hex()}\n"
            f"{ok}")


def find_step_row(source: RowSource, step: TourStep, after: int) -> int | None:
    """The first row after ``after`` that ``step`` explains (None: not there yet)."""
    for i in range(after + 1, len(source)):
        if step.matches(source.row(i)):
            return i
    return None


__all__ = ["STEPS", "TourStep", "find_step_row", "native_password_walkthrough"]
