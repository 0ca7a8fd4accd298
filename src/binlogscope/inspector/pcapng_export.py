"""Export rows as pcapng (``x`` to ``NAME.pcapng``/``NAME.pcap``) and one row's raw bytes.

Wireshark, tshark and ``binlogscope pcap`` open the file. The rows are written with the one
pcapng writer (:mod:`binlogscope.drivers.pcapng`: :class:`PcapNgWriter` and a
:class:`TcpConversation` per connection of the source): synthetic Ethernet/IPv4/TCP headers, one
MySQL packet per write, each at its row's time.

- Packet rows (live sessions, captures, sniff, proxy) are written as the packet was on the wire,
  with the same masking as every other surface: scrambles and auth responses are ``*`` bytes.
  Rows that are not packets (setup steps, notes) have no bytes and are left out (counted).
- Binlog events (``binlogscope file``) are written as the source would send them to a replica:
  one packet ``0x00`` + event per event, server to client, sequence ids counting up, without a
  TCP handshake (no login or dump request was ever seen): readers, ``binlogscope pcap``
  included, take the flow as a capture joined in the middle of a binlog stream.

The addresses are synthetic (10.0.0.2:50000+flow -> 10.0.0.1:3306); a capture's real ones are
not kept per row. A pcapng file is always written whole or not at all (a temporary name first).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from binlogscope.inspector.source import RowSource
from binlogscope.session.events import Peer
from binlogscope.wire.framing import encode_packet

PCAP_SUFFIXES = (".pcapng", ".pcap")


def wants_pcapng(name: str) -> bool:
    """True for a file name the pcapng export writes (``.pcapng``; ``.pcap`` too: Wireshark
    and tshark read pcapng whatever the name says)."""
    return name.lower().endswith(PCAP_SUFFIXES)


def export_rows_pcapng(source: RowSource, rows: Sequence[int], path: Path, *,
                       cancelled: Callable[[], bool] = lambda: False) -> str:
    """Write ``rows`` (source indices, ascending) to ``path``; return the message to show."""
    from binlogscope.drivers.pcapng import (
        CLIENT_IP,
        SERVER_IP,
        PcapNgWriter,
        TcpConversation,
    )

    packets = bool(source.columns & {"direction"})
    tmp = path.with_name(f".{path.name}.part")
    flows: dict[int, TcpConversation] = {}
    written = skipped = masked = 0
    seq = 0
    last_time = 0.0
    try:
        writer = PcapNgWriter(tmp)
        try:
            for i in rows:
                if cancelled():
                    raise InterruptedError
                row = source.row(i)
                if packets and row.direction is None:
                    skipped += 1  # a step or a note: no bytes on the wire
                    continue
                det = source.detail(i)
                if not det.raw:
                    skipped += 1  # the bytes were dropped to bound memory
                    continue
                masked += bool(det.masked)
                ts = row.time if row.time is not None else last_time
                last_time = ts
                flow = (row.flow or 0) if packets else 0
                conv = flows.get(flow)
                if conv is None:
                    conv = flows[flow] = TcpConversation(
                        writer, (CLIENT_IP, 50000 + flow), (SERVER_IP, 3306))
                    if packets:
                        conv.handshake(ts)  # (a file's events: no connection was ever seen)
                if packets:
                    conv.data(Peer.CLIENT if row.direction == "->" else Peer.SERVER, det.raw, ts)
                else:
                    conv.data(Peer.SERVER, encode_packet(b"\x00" + det.raw, seq & 0xFF), ts)
                    seq += 1
                written += 1
            for conv in flows.values():
                conv.close(Peer.CLIENT, last_time)
                conv.close(Peer.SERVER, last_time)
        finally:
            writer.close()
        os.replace(tmp, path)
    except InterruptedError:
        tmp.unlink(missing_ok=True)
        return f"export to {path} cancelled: nothing written"
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    what = "packet(s)" if packets else "event(s) as a source's replication stream"
    msg = f"exported {written} {what} to {path} (pcapng, synthetic addresses)"
    if skipped:
        msg += f"; {skipped} row(s) without bytes left out"
    if masked:
        msg += f"; secrets masked in {masked} packet(s)"
    return msg


def export_row_bytes(source: RowSource, row: int, path: Path) -> str:
    """Write row ``row``'s bytes (the event, or the packet with its 4-byte header) to
    ``path`` (created, never overwritten); return the message to show."""
    det = source.detail(row)
    if not det.raw:
        raise OSError("this row has no bytes (a note, or bytes dropped to bound memory)")
    with path.open("xb") as out:
        out.write(det.raw)
    msg = f"wrote {len(det.raw):,} bytes of row {row + 1} to {path}"
    if det.masked:
        msg += f" (secrets masked: {sum(b - a for a, b in det.masked)} bytes are '*')"
    return msg


__all__ = ["export_row_bytes", "export_rows_pcapng", "wants_pcapng"]
