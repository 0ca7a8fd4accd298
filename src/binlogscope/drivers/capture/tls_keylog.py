"""TLS-encrypted MySQL sessions in a capture, decrypted with an NSS key log (``--tls-keylog``).

MySQL and MariaDB switch to TLS inside the connection (the client's SSLRequest, then a TLS
handshake on the same TCP connection). With the session secrets - an NSS key log, the
``SSLKEYLOGFILE`` format that OpenSSL, ``live --tls-keylog``, ``proxy --tls-keylog``, browsers
and ``mysql`` clients built with OpenSSL 1.1.1+ write - the application data can be read back.

The decryption is Wireshark's: ``tshark`` (installed with Wireshark, the capture tools this
toolkit already uses) reads the capture with ``-o tls.keylog_file:FILE`` and the MySQL dissector
turned off, so every TCP payload of a MySQL connection reaches its ``data`` field as plaintext -
the cleartext packets before TLS as they are, each TLS record's application data decrypted
(TLS 1.2 and 1.3, every cipher suite Wireshark knows). Why tshark and not a Python TLS stack:
it is the reference implementation users compare against ("Wireshark parity"), it is
maintained for exactly this, and no cryptography is written here (scapy's TLS layer, tried
first, does not follow a TLS session that starts inside a MySQL stream).

The capture is then read by the usual pipeline (:func:`decrypted_records`): every frame of a
TLS connection is handed over as a raw IP packet carrying the plaintext instead of the TLS
bytes - same frame number and arrival time, TCP sequence numbers recounted over the plaintext -
so the flow reader sees what a TLS-terminating proxy's recording holds (the SSLRequest followed
by the cleartext login: :class:`~binlogscope.drivers.capture.flows.CaptureReader`'s
"plaintext after SSLRequest" case). A TLS record that cannot be decrypted (no key for that
session in the file, a truncated capture) is not skipped silently: its bytes become a TCP gap
in the flow (the reader reports it and resynchronises) and :attr:`Decryption.undecrypted` counts
them for the command's message.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field

from binlogscope.drivers.capture.files import iter_records
from binlogscope.drivers.capture.layers import (
    LINKTYPE_RAW,
    TCP_FIN,
    TCP_SYN,
    TcpSegment,
    parse_frame,
)

#: tshark's fields, one line per frame: number, TCP stream, TLS app-data records, payloads
_FIELDS = ("frame.number", "tcp.stream", "tls.app_data", "data.data")


class TlsKeylogError(Exception):
    """tshark is missing or cannot read the capture or the key log (one line for the user)."""


@dataclass(slots=True)
class Decryption:
    """What tshark made of the capture's TLS connections."""

    #: frame number -> plaintext TCP payload, for every frame of a TLS connection
    payloads: dict[int, bytes] = field(default_factory=dict)
    #: frame numbers whose TLS application data was not decrypted (no key)
    undecrypted: set[int] = field(default_factory=set)
    #: TLS connections (tshark's tcp.stream numbers)
    streams: set[int] = field(default_factory=set)


def tshark_path() -> str:
    exe = shutil.which("tshark")
    if exe is None:
        raise TlsKeylogError("--tls-keylog decrypts with Wireshark's tshark, which is not "
                             "installed (Debian/Ubuntu: apt install tshark)")
    return exe


def decrypt(path: str, keylog: str, *, timeout: float = 3600) -> Decryption:
    """Run tshark over the capture with the key log: the plaintext of each TLS connection's
    frames."""
    try:
        with open(keylog, encoding="ascii", errors="replace") as f:
            f.read(1)
    except OSError as exc:
        raise TlsKeylogError(f"--tls-keylog {keylog}: {exc.strerror or exc}") from None
    cmd = [tshark_path(), "-n", "-r", path, "-o", f"tls.keylog_file:{keylog}",
           "--disable-protocol", "mysql", "-T", "fields", "-E", "occurrence=a",
           "-E", "aggregator=,", "-E", "separator=\t"]
    for name in _FIELDS:
        cmd += ["-e", name]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TlsKeylogError(f"tshark could not read {path}: {exc}") from None
    if res.returncode != 0:
        why = next((line for line in res.stderr.splitlines()
                    if line.strip() and "Running as user" not in line), "")
        raise TlsKeylogError(f"tshark could not read {path}: "
                             f"{why or 'exit ' + str(res.returncode)}")
    return parse_fields(res.stdout)


def parse_fields(text: str) -> Decryption:
    """tshark's field lines (:data:`_FIELDS`) as a :class:`Decryption`."""
    rows: list[tuple[int, int, int, list[str]]] = []
    out = Decryption()
    for line in text.splitlines():
        cols = line.split("\t")
        if len(cols) < 4 or not cols[0].isdigit() or not cols[1].isdigit():
            continue
        number, stream = int(cols[0]), int(cols[1])
        app = len([x for x in cols[2].split(",") if x])
        data = [x for x in cols[3].split(",") if x]
        rows.append((number, stream, app, data))
        if app:
            out.streams.add(stream)
    for number, stream, app, data in rows:
        if stream not in out.streams:
            continue
        try:
            out.payloads[number] = b"".join(bytes.fromhex(x.replace(":", "")) for x in data)
        except ValueError:
            out.payloads[number] = b""
            out.undecrypted.add(number)
            continue
        if app > len(data):
            out.undecrypted.add(number)
    return out


@dataclass(slots=True)
class _Direction:
    next_seq: int | None = None


def decrypted_records(path: str, keylog: str, dec: Decryption | None = None
                      ) -> Iterator[tuple[int, float, int, bytes]]:
    """The capture's records (as :func:`~binlogscope.drivers.capture.files.iter_records`)
    with every frame of a TLS connection replaced by a raw IP packet carrying its plaintext."""
    if dec is None:
        dec = decrypt(path, keylog)
    sides: dict[tuple[bytes, int, bytes, int], _Direction] = {}
    for number, ts, linktype, frame in iter_records(path):
        plain = dec.payloads.get(number)
        seg = parse_frame(linktype, frame) if plain is not None else None
        if plain is None or seg is None:
            yield number, ts, linktype, frame
            continue
        key = (seg.src, seg.sport, seg.dst, seg.dport)
        side = sides.setdefault(key, _Direction())
        peer = sides.get((seg.dst, seg.dport, seg.src, seg.sport))
        if side.next_seq is None:
            side.next_seq = seg.seq
        seq = side.next_seq
        if number in dec.undecrypted:
            # the undecrypted bytes leave a hole in the plaintext stream: a TCP gap
            seq = (seq + max(1, len(seg.payload))) & 0xFFFFFFFF
        side.next_seq = (seq + len(plain) + (1 if seg.flags & (TCP_SYN | TCP_FIN) else 0)
                         ) & 0xFFFFFFFF
        ack = peer.next_seq if peer is not None and peer.next_seq is not None else seg.ack
        yield number, ts, LINKTYPE_RAW, _raw_packet(seg, seq, ack, plain)


def _raw_packet(seg: TcpSegment, seq: int, ack: int, payload: bytes) -> bytes:
    """An IPv4/IPv6 packet (no link header) with a 20-byte TCP header and ``payload``."""
    tcp = struct.pack("!HHIIBBHHH", seg.sport, seg.dport, seq, ack, 5 << 4, seg.flags & 0xFF,
                      65535, 0, 0) + payload
    if len(seg.src) == 4:
        return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0,
                           seg.src, seg.dst) + tcp
    return struct.pack("!IHBB16s16s", 6 << 28, len(tcp), 6, 64, seg.src, seg.dst) + tcp
