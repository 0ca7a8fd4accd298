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

import functools
import shutil
import struct
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from binlogscope.drivers.capture.files import iter_records
from binlogscope.drivers.capture.layers import (
    LINKTYPE_RAW,
    TCP_FIN,
    TCP_SYN,
    TcpSegment,
    parse_frame,
)

#: tshark's fields, one line per frame: number, TCP stream, TLS app-data records, payloads,
#: TLS records
_FIELDS = ("frame.number", "tcp.stream", "tls.app_data", "data.data",
           "tls.record.content_type")


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


@functools.cache
def plain_data_options() -> tuple[str, ...]:
    """tshark options that leave every decrypted byte in the ``data`` field: the MySQL
    dissector off, and the protocols whose heuristics try TLS application data (tshark -G
    heuristic-decodes, table ``tls``: RDP multitransport, HTTP, FIX, ...) off - one of them
    took a 16 KiB record of MD5 text for RDP, and its bytes were counted as not decrypted."""
    protocols = ["mysql"]
    try:
        res = subprocess.run([tshark_path(), "-G", "heuristic-decodes"], capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
        for line in res.stdout.splitlines():
            cols = line.split("\t")
            if len(cols) >= 2 and cols[0] == "tls" and cols[1] not in ("tls", "data"):
                protocols.append(cols[1])
    except (OSError, subprocess.TimeoutExpired):
        pass
    out: list[str] = []
    for name in protocols:
        out += ["--disable-protocol", name]
    return tuple(out)


def decrypt(path: str, keylog: str, *, timeout: float = 3600) -> Decryption:
    """Run tshark over the capture with the key log: the plaintext of each TLS connection's
    frames."""
    try:
        with open(keylog, encoding="ascii", errors="replace") as f:
            f.read(1)
    except OSError as exc:
        raise TlsKeylogError(f"--tls-keylog {keylog}: {exc.strerror or exc}") from None
    cmd = [tshark_path(), "-n", "-r", path, "-o", f"tls.keylog_file:{keylog}",
           *plain_data_options(), "-T", "fields", "-E", "occurrence=a",
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


def _row(line: str) -> tuple[int, int, int, list[str], bool] | None:
    """One tshark line (:data:`_FIELDS`): (frame number, TCP stream, TLS application-data
    records, plaintext payload pieces in hex, whether the frame holds a TLS record)."""
    cols = line.rstrip("\n").split("\t")
    if len(cols) < 4 or not cols[0].isdigit() or not cols[1].isdigit():
        return None
    app = len([x for x in cols[2].split(",") if x])
    tls = app > 0 or (len(cols) > 4 and bool(cols[4].strip()))
    return int(cols[0]), int(cols[1]), app, [x for x in cols[3].split(",") if x], tls


def _plaintext(app: int, data: list[str]) -> tuple[bytes, bool]:
    """A frame's plaintext and whether some of its TLS application data was not decrypted."""
    try:
        plain = b"".join(bytes.fromhex(x.replace(":", "")) for x in data)
    except ValueError:
        return b"", True
    return plain, app > len(data)


def parse_fields(text: str) -> Decryption:
    """tshark's field lines (:data:`_FIELDS`) as a :class:`Decryption`."""
    rows: list[tuple[int, int, int, list[str], bool]] = []
    out = Decryption()
    for line in text.splitlines():
        row = _row(line)
        if row is None:
            continue
        rows.append(row)
        if row[2]:
            out.streams.add(row[1])
    for number, stream, app, data, _ in rows:
        if stream not in out.streams:
            continue
        out.payloads[number], missing = _plaintext(app, data)
        if missing:
            out.undecrypted.add(number)
    return out


@dataclass(slots=True)
class _Direction:
    next_seq: int | None = None


class PlaintextFrames:
    """Frames of TLS connections rewritten to carry their plaintext: a raw IP packet with the
    same addresses and flags, TCP sequence numbers recounted over the plaintext (one count per
    direction, from the first rewritten frame's), the peer's count as the acknowledgement. An
    undecrypted frame leaves a hole in that count: a TCP gap for the flow reader."""

    def __init__(self) -> None:
        self._sides: dict[tuple[bytes, int, bytes, int], _Direction] = {}

    def rewrite(self, number: int, ts: float, linktype: int, frame: bytes, plain: bytes,
                undecrypted: bool) -> list[tuple[int, float, int, bytes]]:
        """The frame's records: one raw IP packet carrying ``plain``, or several with the same
        number and time when ``plain`` is longer than an IP packet holds (tshark gives a
        frame the plaintext of every TLS record that ends in it: several 16 KiB records in a
        64 KiB loopback segment overflow IPv4's 16-bit length)."""
        seg = parse_frame(linktype, frame)
        if seg is None:
            return [(number, ts, linktype, frame)]
        sides = self._sides
        side = sides.setdefault((seg.src, seg.sport, seg.dst, seg.dport), _Direction())
        peer = sides.get((seg.dst, seg.dport, seg.src, seg.sport))
        if side.next_seq is None:
            side.next_seq = seg.seq
        seq = side.next_seq
        if undecrypted:
            seq = (seq + max(1, len(seg.payload))) & 0xFFFFFFFF
        side.next_seq = (seq + len(plain) + (1 if seg.flags & (TCP_SYN | TCP_FIN) else 0)
                         ) & 0xFFFFFFFF
        ack = peer.next_seq if peer is not None and peer.next_seq is not None else seg.ack
        if len(plain) <= _MAX_PLAIN:
            return [(number, ts, LINKTYPE_RAW, _raw_packet(seg, seq, ack, plain))]
        out = []
        head = replace(seg, flags=seg.flags & ~TCP_FIN)  # (a FIN goes with the last piece)
        for at in range(0, len(plain), _MAX_PLAIN):
            piece = plain[at:at + _MAX_PLAIN]
            last = at + _MAX_PLAIN >= len(plain)
            out.append((number, ts, LINKTYPE_RAW,
                        _raw_packet(seg if last else head, (seq + at) & 0xFFFFFFFF, ack, piece)))
        return out


def decrypted_records(path: str, keylog: str, dec: Decryption | None = None
                      ) -> Iterator[tuple[int, float, int, bytes]]:
    """The capture's records (as :func:`~binlogscope.drivers.capture.files.iter_records`)
    with every frame of a TLS connection replaced by a raw IP packet carrying its plaintext."""
    if dec is None:
        dec = decrypt(path, keylog)
    frames = PlaintextFrames()
    for number, ts, linktype, frame in iter_records(path):
        plain = dec.payloads.get(number)
        if plain is None:
            yield number, ts, linktype, frame
        else:
            yield from frames.rewrite(number, ts, linktype, frame, plain,
                                      number in dec.undecrypted)


#: the most plaintext one rewritten packet carries (IPv4/IPv6 length fields are 16 bits)
_MAX_PLAIN = 65_000
#: the least time between a frame's capture and its decryption (``sniff --tls-keylog``)
KEY_DELAY = 0.1


class LiveDecryption:
    """``sniff --tls-keylog``: the same decryption, frame by frame as they are captured.

    One tshark process reads the captured frames as a pcap stream on its standard input
    (``-r -``, one pass, a line per frame as soon as the frame is read: ``-l``) with the same
    options and fields as :func:`decrypt`; a frame is handed on once its line is back. A TCP
    connection is rewritten (:class:`PlaintextFrames`) from its first TLS record on - the
    cleartext before it (greeting, SSLRequest) passes as captured, TLS handshake records become
    empty segments, application data its plaintext - as :func:`decrypted_records` rewrites a
    capture file's TLS connections.

    Keys written after the capture started (a ``live --tls-keylog`` or an ``SSLKEYLOGFILE``
    client appending to the file while ``sniff`` runs, the file created only then): Wireshark's
    TLS dissector reads the key log again from where it stopped whenever a session's secrets
    are not in what it has read, so a session is decrypted as long as its client has written
    its secrets by the time its frames reach tshark (clients write them before sending what
    they encrypt, and a frame reaches tshark after the capture ring's hand-over). Frames whose
    application data stays encrypted are counted (:attr:`undecrypted`) and leave a TCP gap.
    tshark keeps its per-connection state for the whole capture: its memory grows with the
    number of connections seen. A frame is handed to tshark no sooner than :data:`KEY_DELAY`
    after it was captured: a TLS 1.3 client writes its handshake secrets while it reads the
    ServerHello, the very frame tshark needs them for, and a loaded machine can schedule the
    client after the capture.
    """

    def __init__(self, keylog: str, linktype: int, *, timeout: float = 30.0) -> None:
        import queue
        import threading

        self.keylog = keylog
        #: frames whose TLS application data was not decrypted, and the first of them
        self.undecrypted = 0
        self.first_undecrypted = 0
        self._timeout = timeout
        self._tls: set[int] = set()  # tshark's stream numbers of connections seen in TLS
        self._frames = PlaintextFrames()
        self._pending: tuple[int, int, int, list[str], bool] | None = None
        cmd = [tshark_path(), "-n", "-l", "-r", "-", "-o", f"tls.keylog_file:{keylog}",
               *plain_data_options(), "-T", "fields", "-E", "occurrence=a",
               "-E", "aggregator=,", "-E", "separator=\t"]
        for name in _FIELDS:
            cmd += ["-e", name]
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise TlsKeylogError(f"cannot run tshark: {exc.strerror or exc}") from None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: list[str] = []
        assert self._proc.stdout is not None and self._proc.stderr is not None
        threading.Thread(target=self._read, args=(self._proc.stdout, True), daemon=True).start()
        threading.Thread(target=self._read, args=(self._proc.stderr, False),
                         daemon=True).start()
        self._write(struct.pack("=IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262_144, linktype))

    def _read(self, stream: Any, lines: bool) -> None:
        for raw in iter(stream.readline, b""):
            text = raw.decode("ascii", "replace")
            if lines:
                self._lines.put(text)
            elif text.strip() and "Running as user" not in text:
                self._stderr.append(text.strip())
        if lines:
            self._lines.put(None)

    def _write(self, data: bytes) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._failed() from None

    def _failed(self) -> TlsKeylogError:
        why = self._stderr[0] if self._stderr else (
            f"exit {self._proc.poll()}" if self._proc.poll() is not None else "no answer")
        return TlsKeylogError(f"tshark stopped decrypting: {why}")

    def records(self, frames: list[tuple[int, float, int, bytes]]
                ) -> list[list[tuple[int, float, int, bytes]]]:
        """``frames`` (number, arrival time, link type, frame: numbered from 1 in capture
        order, every captured frame exactly once) with the TLS connections' frames rewritten:
        the records of each frame (:meth:`PlaintextFrames.rewrite`)."""
        import queue

        rec = struct.Struct("=IIII")
        if frames:
            wait = frames[-1][1] + KEY_DELAY - time.time()
            if wait > 0:
                time.sleep(min(wait, KEY_DELAY))
        chunk = bytearray()
        for _, ts, _, frame in frames:
            sec = int(ts)
            chunk += rec.pack(sec, int((ts - sec) * 1_000_000), len(frame), len(frame)) + frame
        self._write(bytes(chunk))
        out = []
        for number, ts, linktype, frame in frames:
            row = self._pending
            while row is None or row[0] < number:
                try:
                    line = self._lines.get(timeout=self._timeout)
                except queue.Empty:
                    raise self._failed() from None
                if line is None:
                    raise self._failed()
                row = _row(line)
            if row[0] > number:  # (tshark gave this frame no line: passed as captured)
                self._pending = row
                out.append([(number, ts, linktype, frame)])
                continue
            self._pending = None
            _, stream, app, data, tls = row
            if tls:
                self._tls.add(stream)
            if stream not in self._tls:
                out.append([(number, ts, linktype, frame)])
                continue
            plain, missing = _plaintext(app, data)
            if missing:
                self.undecrypted += 1
                self.first_undecrypted = self.first_undecrypted or number
            out.append(self._frames.rewrite(number, ts, linktype, frame, plain, missing))
        return out

    def close(self) -> None:
        if self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def _raw_packet(seg: TcpSegment, seq: int, ack: int, payload: bytes) -> bytes:
    """An IPv4/IPv6 packet (no link header) with a 20-byte TCP header and ``payload``."""
    tcp = struct.pack("!HHIIBBHHH", seg.sport, seg.dport, seq, ack, 5 << 4, seg.flags & 0xFF,
                      65535, 0, 0) + payload
    if len(seg.src) == 4:
        return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0,
                           seg.src, seg.dst) + tcp
    return struct.pack("!IHBB16s16s", 6 << 28, len(tcp), 6, 64, seg.src, seg.dst) + tcp
