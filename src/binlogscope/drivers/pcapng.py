"""Record a live session as pcapng, both directions, with synthetic Ethernet/IPv4/TCP headers.

``binlogscope pcap session.pcapng`` and Wireshark both open the result, and binlogscope shows
exactly what it showed live. Each MySQL packet becomes one TCP segment (sequence numbers
continuous per direction, a synthetic three-way handshake first, FIN at the end), timestamped
when it was sent or received.

Secrets: the auth response, auth-switch data and COM_REGISTER_SLAVE's password are overwritten
with ``*`` bytes of the same length (framing stays valid) unless ``raw=True``
(``--record-raw``). With TLS the *decrypted* packets are recorded, minus the SSLRequest (a
reader would otherwise treat the rest as encrypted); a capture comment says so.
"""

from __future__ import annotations

import time
from pathlib import Path

from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.fields import redact_bytes

CLIENT_IP = "10.0.0.2"
SERVER_IP = "10.0.0.1"


class SessionRecorder:
    def __init__(self, path: str | Path, *, server_port: int = 3306, raw: bool = False) -> None:
        from scapy.utils import PcapNgWriter

        self.path = Path(path)
        self.raw = raw
        self.server_port = server_port or 3306
        self.client_port = 50000 + (int(time.time()) % 10000)
        self._w = PcapNgWriter(str(self.path))
        self._seq = {Peer.CLIENT: 1000, Peer.SERVER: 5000}
        self._bufs: dict[Peer, bytearray] = {Peer.CLIENT: bytearray(), Peer.SERVER: bytearray()}
        self._base = {Peer.CLIENT: 0, Peer.SERVER: 0}
        self.tls = False
        self._closed = False
        self._handshake()

    # --------------------------------------------------------------- bytes as they flow
    def data(self, direction: Peer, data: bytes) -> None:
        """Every (plaintext) byte of the connection, in order, per direction."""
        self._bufs[direction] += data

    def packet(self, ev: PacketDecoded) -> None:
        """A decoded packet: cut its bytes out of the direction's buffer and write a segment."""
        buf = self._bufs[ev.direction]
        lo = ev.offset - self._base[ev.direction]
        hi = lo + ev.wire_length
        if lo < 0 or hi > len(buf):
            return  # not ours (already written or never seen)
        raw = bytes(buf[lo:hi])
        del buf[:hi]
        self._base[ev.direction] += hi
        if ev.kind == "ssl_request":
            self.tls = True
            return
        if not self.raw and ev.node is not None:
            raw = redact_bytes(ev.node, raw)
        self._segment(ev.direction, raw, "PA")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._segment(Peer.CLIENT, b"", "FA")
        self._segment(Peer.SERVER, b"", "FA")
        self._w.close()
        if self.tls:
            note = self.path.with_suffix(self.path.suffix + ".txt")
            note.write_text("This session used TLS: the recording holds the decrypted MySQL "
                            "packets; the SSLRequest is left out.\n", encoding="utf-8")

    # --------------------------------------------------------------- synthetic TCP
    def _handshake(self) -> None:
        self._segment(Peer.CLIENT, b"", "S", advance=1)
        self._segment(Peer.SERVER, b"", "SA", advance=1)
        self._segment(Peer.CLIENT, b"", "A")

    def _segment(self, direction: Peer, payload: bytes, flags: str, advance: int = 0) -> None:
        from scapy.layers.inet import IP, TCP
        from scapy.layers.l2 import Ether

        if direction == Peer.CLIENT:
            src, dst, sport, dport = CLIENT_IP, SERVER_IP, self.client_port, self.server_port
            ack = self._seq[Peer.SERVER]
        else:
            src, dst, sport, dport = SERVER_IP, CLIENT_IP, self.server_port, self.client_port
            ack = self._seq[Peer.CLIENT]
        # MySQL packets can exceed an IP datagram: split into 64000-byte segments
        chunks = [payload[i : i + 64000] for i in range(0, len(payload), 64000)] or [b""]
        for chunk in chunks:
            tcp = TCP(sport=sport, dport=dport, seq=self._seq[direction],
                      ack=ack if "S" not in flags or "A" in flags else 0, flags=flags,
                      window=65535)
            pkt = Ether(src="02:00:00:00:00:02" if direction == Peer.CLIENT
                        else "02:00:00:00:00:01",
                        dst="02:00:00:00:00:01" if direction == Peer.CLIENT
                        else "02:00:00:00:00:02") / IP(src=src, dst=dst) / tcp
            if chunk:
                pkt = pkt / chunk
            pkt.time = time.time()
            self._w.write(pkt)
            self._seq[direction] = (self._seq[direction] + len(chunk)) & 0xFFFFFFFF
        self._seq[direction] = (self._seq[direction] + advance) & 0xFFFFFFFF
