"""Generate a capture that makes the capture reader resynchronise for a long time: a MySQL
connection (greeting), a TCP gap on the server's side, then ``--mb`` MB of bytes in which no
packet header is ever plausible - ``--fill ff`` (each position reads as the header of a 16 MiB
packet fragment whose end has not arrived yet, the worst case: nothing can be dropped until
4 MiB are held) or ``--fill random`` - in ``--frame`` byte segments.

    python bench/make_resync_capture.py /tmp/resync.pcap --mb 60 --frame 65536
    /usr/bin/time -f '%U+%S s %M KB' binlogscope pcap /tmp/resync.pcap --summary

Before the incremental scan (session/resync.py ``PacketScan``) every new segment rescanned the
whole held buffer (up to 4 MiB): quadratic in the bytes held.
"""

from __future__ import annotations

import argparse
import os
import struct
from pathlib import Path


def _frame(src: int, sport: int, dst: int, dport: int, seq: int, flags: int,
           payload: bytes) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, 0x50, flags, 65535, 0, 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, min(20 + len(tcp) + len(payload), 0xFFFF), 0,
                     0, 64, 6, 0, bytes((10, 0, 0, src)), bytes((10, 0, 0, dst)))
    return ip + tcp + payload


def greeting() -> bytes:
    payload = (b"\x0a" + b"10.11.19-MariaDB\0" + struct.pack("<I", 7) + b"abcdefgh\0"
               + struct.pack("<H", 0xF7FE) + b"\x2d" + struct.pack("<H", 2)
               + struct.pack("<H", 0x81BF) + b"\x15" + bytes(10) + b"ijklmnopqrst\0"
               + b"mysql_native_password\0")
    return len(payload).to_bytes(3, "little") + b"\0" + payload


def generate(size: int, frame: int, fill: str) -> bytes:
    """The capture (classic pcap, raw IPv4) as bytes."""
    frames = [_frame(1, 40000, 2, 3306, 999, 0x02, b""), _frame(2, 3306, 1, 40000, 4999, 0x12, b"")]
    sseq = 5000
    g = greeting()
    frames.append(_frame(2, 3306, 1, 40000, sseq, 0x18, g))
    sseq += len(g) + 1000  # 1000 bytes lost: the gap
    sent = 0
    while sent < size:
        n = min(frame, size - sent)
        data = b"\xff" * n if fill == "ff" else os.urandom(n)
        frames.append(_frame(2, 3306, 1, 40000, sseq, 0x18, data))
        sseq += n
        sent += n
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101)]
    for i, f in enumerate(frames):
        out.append(struct.pack("<IIII", 1_700_000_000 + i, 0, len(f), len(f)) + f)
    return b"".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mb", type=float, default=60)
    ap.add_argument("--frame", type=int, default=65000)
    ap.add_argument("--fill", choices=("ff", "random"), default="ff")
    a = ap.parse_args()
    a.out.write_bytes(generate(int(a.mb * 1_000_000), a.frame, a.fill))
    print(a.out)


if __name__ == "__main__":
    main()
