"""Run one payload decoder safely, and the ``kind -> decoder`` table.

:func:`run_decoder` is the one place where a payload decoder's exception becomes data: the
result carries the error message and a partial Node (every field up to the damage, then an
``error`` leaf over the rest), never a traceback. Bytes a decoder leaves unread become an
``unparsed`` leaf, so the tree always tiles the payload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from binlogscope.wire import commands, handshake, replication, results, statements
from binlogscope.wire.framing import Packet, packet_node
from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader, DecodeError, ShortRead

PayloadDecoder = Callable[[ByteReader, int], Any]


@dataclass(slots=True)
class DecodedPayload:
    kind: str
    value: Any  # the typed packet value (None when decoding failed)
    node: Node | None  # None in fast mode (record=False)
    error: str | None = None
    error_offset: int | None = None  # absolute offset where decoding stopped


#: kind -> (decoder, one-line doc of the packet)
KINDS: dict[str, tuple[PayloadDecoder, str]] = {
    "handshake_v10": (handshake.decode_handshake_v10,
                      "HandshakeV10: the server's greeting (version, scramble, capabilities)"),
    "ssl_request": (handshake.decode_ssl_request,
                    "SSLRequest: the client switches to TLS; the rest is encrypted"),
    "handshake_response41": (handshake.decode_handshake_response41,
                             "HandshakeResponse41: user, auth response, schema, plugin, attrs"),
    "handshake_response320": (handshake.decode_handshake_response320,
                              "HandshakeResponse320: pre-4.1 login packet"),
    "auth_switch_request": (handshake.decode_auth_switch_request,
                            "AuthSwitchRequest (0xFE): authenticate again with another plugin"),
    "auth_more_data": (handshake.decode_auth_more_data,
                       "AuthMoreData (0x01): extra data from the server's auth plugin"),
    "auth_switch_response": (handshake.decode_auth_switch_response,
                             "client auth data for the current auth plugin"),
    "ok": (handshake.decode_ok, "OK_Packet: the command succeeded"),
    "err": (handshake.decode_err, "ERR_Packet: the command failed"),
    "eof": (handshake.decode_eof, "EOF_Packet: end of column definitions or rows"),
    "com_query": (commands.decode_com_query, "COM_QUERY: a text SQL statement"),
    "com_register_slave": (commands.decode_com_register_slave,
                           "COM_REGISTER_SLAVE: a replica announces itself"),
    "com_binlog_dump": (commands.decode_com_binlog_dump,
                        "COM_BINLOG_DUMP: start streaming the binlog from file+position"),
    "com_binlog_dump_gtid": (commands.decode_com_binlog_dump_gtid,
                             "COM_BINLOG_DUMP_GTID: start streaming, skipping a GTID set"),
    "com_stmt_prepare": (statements.decode_com_stmt_prepare,
                         "COM_STMT_PREPARE: a statement with ? parameters to prepare"),
    "com_stmt_execute": (statements.decode_com_stmt_execute,
                         "COM_STMT_EXECUTE: run a prepared statement with these parameters"),
    "com_stmt_close": (statements.decode_com_stmt_close,
                       "COM_STMT_CLOSE / COM_STMT_RESET: a prepared statement by its id"),
    "stmt_prepare_ok": (statements.decode_stmt_prepare_ok,
                        "COM_STMT_PREPARE_OK: the statement's id, columns and parameters"),
    "param_definition": (results.decode_column_definition41,
                         "a ? parameter's definition (after COM_STMT_PREPARE_OK)"),
    "binary_row": (statements.decode_binary_row, "a result-set row in the binary protocol"),
    "command": (commands.decode_simple_command, "a client command"),
    "column_count": (results.decode_column_count,
                     "result set header: the number of columns that follow"),
    "column_definition41": (results.decode_column_definition41,
                            "ColumnDefinition41: name, origin and type of a result column"),
    "text_row": (results.decode_text_row, "a result-set row in the text protocol"),
    "local_infile_request": (results.decode_local_infile_request,
                             "LOCAL INFILE request: the server wants a client file"),
    "raw": (results.decode_raw_response, "a packet binlogscope shows undecoded"),
    "semi_sync_ack": (replication.decode_semi_sync_ack,
                      "semi-sync ACK: the replica confirms it has an event (no reply)"),
}
KIND_DOCS: dict[str, str] = {k: doc for k, (_, doc) in KINDS.items()}
KIND_DOCS["binlog_event"] = ("binlog network packet: 0x00 + [semi-sync header] + one binlog "
                             "event")


def run_decoder(
    kind: str,
    fn: PayloadDecoder,
    payload: bytes | bytearray | memoryview,
    *,
    caps: int,
    base: int = 0,
    record: bool = True,
    doc: str | None = None,
) -> DecodedPayload:
    """Decode ``payload`` with ``fn``; errors become a message and a partial node."""
    r = ByteReader(payload, base=base, record=record)
    d = KIND_DOCS.get(kind, "") if doc is None else doc
    try:
        value = fn(r, caps)
        if not r.at_end():
            r.rest("unparsed", doc="bytes after the last field binlogscope knows")
    except Exception as exc:
        at = exc.offset if isinstance(exc, DecodeError) else r.offset
        message = _message(exc, r)
        node = r.partial(kind, exc, doc=d) if record else None
        return DecodedPayload(kind, None, node, message, at)
    node = r.finish(kind, doc=d) if record else None
    return DecodedPayload(kind, value, node, None)


def decode_packet(
    payload: bytes | bytearray | memoryview,
    kind: str,
    *,
    caps: int = handshake.DEFAULT_CAPABILITIES,
    base: int = 0,
    record: bool = True,
) -> DecodedPayload:
    """Decode a payload whose kind is known (the session decides the kind from its state)."""
    fn, _ = KINDS[kind]
    return run_decoder(kind, fn, payload, caps=caps, base=base, record=record)


def _message(exc: BaseException, r: ByteReader) -> str:
    if isinstance(exc, DecodeError | ShortRead):
        return str(exc)
    text = str(exc) or type(exc).__name__
    if text.startswith("at offset "):
        return text
    return f"at offset {r.offset}: {text}"


def packet_tree(pkt: Packet, d: DecodedPayload, error: str | None) -> Node | None:
    """The root Node of a decoded packet: its header(s) and ``d``'s payload tree (None when
    ``d`` was decoded without a tree). The session and the inspector's re-decoder both build
    a packet's tree here, so a re-decoded packet shows what the session showed."""
    if d.node is None:
        return None
    return packet_node(pkt, d.node, name="packet", value=d.kind, doc=d.node.doc, error=error,
                       display=packet_title(d.kind, d.value, pkt.sequence_id, len(pkt.payload)))


def packet_title(kind: str, value: Any, seq: int, payload_length: int) -> str:
    """A packet's one-line title, ``binlog_event XID_EVENT (seq 7, 32 bytes)``: its tree's
    display (:func:`packet_tree`), and what a text line shows of a packet decoded without a
    tree (``live --brief``)."""
    what = kind
    if isinstance(value, replication.BinlogPacket):
        what = f"binlog_event {value.event.type_name}"
    elif isinstance(value, commands.SimpleCommand):
        what = value.name
    elif isinstance(value, handshake.ErrPacket):
        what = f"err {value.error_code}"
    return f"{what} (seq {seq}, {payload_length} bytes)"
