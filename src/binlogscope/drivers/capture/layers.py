"""Link, IP and TCP headers: the TCP segment in a captured frame, read with ``struct`` only.

The second layer of the pcap driver (:mod:`binlogscope.drivers.capture.pcap`): :func:`parse_frame`
reads
just the headers it needs - Ethernet (+ 802.1Q/802.1ad VLAN tags), Linux cooked SLL and SLL2, BSD
loopback/null, raw IP; IPv4 (options, padding trimmed, fragments skipped) and IPv6 (extension
headers). :func:`ipv4_offset` is the shortcut the flow table's fast path uses for the common
untagged IPv4 layouts.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

# link types (pcap LINKTYPE_*)
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
_RAW_TYPES = {LINKTYPE_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6}

_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_ETH_VLAN = {0x8100, 0x88A8, 0x9100}

_U16 = struct.Struct("!H")
#: the TCP header up to its flags: ports, seq, ack, data offset, flags
TCP_HEADER = struct.Struct("!HHIIBB")

TCP_FIN = 0x01
TCP_SYN = 0x02
TCP_RST = 0x04
TCP_ACK = 0x10


@dataclass(slots=True)
class TcpSegment:
    src: bytes  # packed IP address (4 or 16 bytes)
    sport: int
    dst: bytes
    dport: int
    seq: int
    flags: int
    payload: bytes
    ack: int = 0


def parse_frame(linktype: int, data: bytes) -> TcpSegment | None:
    """The TCP segment in a frame, or None (not IPv4/IPv6 TCP, an IP fragment, too short)."""
    try:
        if linktype in (LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL):
            off = 14 if linktype == LINKTYPE_ETHERNET else 16  # the protocol type ends there
            etype = _U16.unpack_from(data, off - 2)[0]
            while etype in _ETH_VLAN:
                etype = _U16.unpack_from(data, off + 2)[0]
                off += 4
        elif linktype == LINKTYPE_LINUX_SLL2:
            etype = _U16.unpack_from(data, 0)[0]
            off = 20
        elif linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
            fam = data[0] | data[3]  # host byte order (NULL) or network order (LOOP)
            etype = _ETH_IPV4 if fam == 2 else _ETH_IPV6 if fam in (10, 24, 28, 30) else 0
            off = 4
        elif linktype in _RAW_TYPES:
            v = data[0] >> 4
            etype = _ETH_IPV4 if v == 4 else _ETH_IPV6 if v == 6 else 0
            off = 0
        else:
            return None
        if etype == _ETH_IPV4:
            vihl = data[off]
            ihl = (vihl & 0x0F) * 4
            if vihl >> 4 != 4 or ihl < 20 or data[off + 9] != 6:
                return None
            frag = _U16.unpack_from(data, off + 6)[0]
            if frag & 0x3FFF:  # more fragments or a fragment offset: not reassembled
                return None
            total = _U16.unpack_from(data, off + 2)[0]
            end = off + total if total else len(data)  # 0: TSO, trust the frame
            src = data[off + 12 : off + 16]
            dst = data[off + 16 : off + 20]
            t = off + ihl
        elif etype == _ETH_IPV6:
            plen = _U16.unpack_from(data, off + 4)[0]
            nxt = data[off + 6]
            src = data[off + 8 : off + 24]
            dst = data[off + 24 : off + 40]
            end = off + 40 + plen if plen else len(data)
            t = off + 40
            while nxt in (0, 43, 60):  # hop-by-hop, routing, destination options
                nxt = data[t]
                t += (data[t + 1] + 1) * 8
            if nxt != 6:
                return None  # not TCP (or a fragment header: not reassembled)
        else:
            return None
        sport, dport, seq, ack, doff, flags = TCP_HEADER.unpack_from(data, t)
        start = t + (doff >> 4) * 4
        end = min(end, len(data))
        return TcpSegment(src, sport, dst, dport, seq, flags, data[start:end], ack)
    except (IndexError, struct.error):
        return None


def format_addr(ip: bytes, port: int) -> str:
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    import ipaddress

    return f"[{ipaddress.IPv6Address(ip)}]:{port}"


#: where the IPv4 header starts, per link type, when the frame carries IPv4 (see ipv4_offset)
_ETH_IPV4_BYTES = b"\x08\x00"
SYN_FIN_RST = TCP_SYN | TCP_FIN | TCP_RST


def ipv4_offset(linktype: int, data: bytes) -> int:
    """Offset of the IPv4 header for the common untagged layouts, -1 for anything else."""
    if linktype == LINKTYPE_ETHERNET:
        return 14 if data[12:14] == _ETH_IPV4_BYTES else -1
    if linktype == LINKTYPE_LINUX_SLL:
        return 16 if data[14:16] == _ETH_IPV4_BYTES else -1
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        return 4 if len(data) > 4 and data[0] | data[3] == 2 else -1
    if linktype == LINKTYPE_LINUX_SLL2:
        return 20 if data[0:2] == _ETH_IPV4_BYTES else -1
    if linktype in _RAW_TYPES:
        return 0 if data and data[0] >> 4 == 4 else -1
    return -1


__all__ = ["LINKTYPE_ETHERNET", "LINKTYPE_LINUX_SLL", "LINKTYPE_LINUX_SLL2", "LINKTYPE_LOOP",
           "LINKTYPE_NULL", "LINKTYPE_RAW", "SYN_FIN_RST", "TCP_ACK", "TCP_FIN", "TCP_HEADER",
           "TCP_RST", "TCP_SYN", "TcpSegment", "format_addr", "ipv4_offset", "parse_frame"]
