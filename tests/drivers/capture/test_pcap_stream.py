"""``binlogscope pcap -``: captures read from standard input / a pipe (pcap, pcapng, gzip'd),
forward only, frames out as they arrive, memory flat; absurd block and record lengths are one
clear error line with every frame before them kept."""

from __future__ import annotations

import functools
import gzip
import os
import struct
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from binlogscope.drivers.capture import files as pcap_files
from binlogscope.drivers.capture.pcap import CaptureError, iter_records

CAPTURES = Path(__file__).resolve().parents[3] / "captures"
ALL = sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
SEMI = CAPTURES / "pcap-semisync.pcap"
REPLICA = CAPTURES / "pcap-mariadb-replica.pcapng"

pytestmark = pytest.mark.timeout(300)


def run(args: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "binlogscope", "pcap", *args], input=data,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("src", ALL, ids=lambda p: p.name)
def test_stdin_equals_the_file(src: Path) -> None:
    data = src.read_bytes()
    for mode in (["--json"], ["--summary"]):
        want = subprocess.run([sys.executable, "-m", "binlogscope", "pcap", *mode, str(src)],
                              capture_output=True, timeout=120)
        for fed in (data, gzip.compress(data)):
            got = run([*mode, "-"], fed)
            assert got.returncode == want.returncode
            assert got.stdout == want.stdout
            assert b"Traceback" not in got.stderr
            assert got.stderr == want.stderr.replace(str(src).encode(), b"-")


def _pipe_records(chunks: list[bytes], gate: threading.Event | None = None,
                  after: int = 1) -> Iterator[tuple[int, float, int, bytes]]:
    """iter_records over a real pipe (not seekable) fed by a thread: the first ``after`` chunks,
    then (once ``gate`` is set) the rest."""
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as fh:
            for i, c in enumerate(chunks):
                if i == after and gate is not None:
                    gate.wait(30)
                fh.write(c)
                fh.flush()

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    with os.fdopen(r, "rb") as fh:
        yield from pcap_files._iter_stream(fh, "pipe")
    t.join(10)


@pytest.mark.parametrize("src", [SEMI, REPLICA], ids=lambda p: p.name)
def test_pipe_frames_come_out_before_the_input_ends(src: Path) -> None:
    data = src.read_bytes()
    want = list(iter_records(str(src)))
    gate = threading.Event()
    half = len(data) // 2
    it = _pipe_records([data[:half], data[half:]], gate)
    first = next(it)  # the writer still holds back the second half
    assert not gate.is_set()
    assert first == want[0]
    gate.set()
    assert [first, *it] == want


def _udp_pcap(n: int) -> bytes:
    """A classic pcap of ``n`` 200-byte UDP frames (no MySQL: nothing is kept per frame)."""
    frame = (b"\x00" * 12 + b"\x08\x00"
             + bytes.fromhex("450000ba00004000401100007f0000017f000001") + b"\x13\x88" * 2
             + b"\x00\xa6\x00\x00" + b"x" * 158)
    head = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    rec = struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame
    return head + rec * n


@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_pipe_memory_stays_flat(fmt: str) -> None:
    if fmt == "pcap":
        data = _udp_pcap(100_000)  # 21 MB
    else:  # the pcapng capture's packet blocks repeated
        raw = REPLICA.read_bytes()
        head_len = _block_offsets(raw)[2]  # SHB + IDB
        data = raw[:head_len] + raw[head_len:] * 700  # ~20 MB
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    tracemalloc.start()
    try:
        n = 0
        for _ in _pipe_records(chunks):
            n += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n > 50_000 if fmt == "pcap" else n > 10_000
    assert peak < 8 << 20, f"peak {peak:,} bytes for a {len(data):,}-byte stream"


def _block_offsets(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(data):
        out.append(pos)
        pos += struct.unpack_from("<I", data, pos + 4)[0]
    return out


@functools.cache
def _good_json(src: Path) -> list[bytes]:
    return subprocess.run([sys.executable, "-m", "binlogscope", "pcap", "--json", str(src)],
                          capture_output=True, timeout=120).stdout.splitlines()


@pytest.mark.parametrize("length", [0xFFFFFFF0, 0x7FFFFFFC, 13])
@pytest.mark.parametrize("via", ["file", "stdin", "stdin-gz"])
def test_absurd_pcapng_block_length(tmp_path: Path, length: int, via: str) -> None:
    data = bytearray(REPLICA.read_bytes())
    at = _block_offsets(bytes(data))[40]
    struct.pack_into("<I", data, at + 4, length)
    good = _good_json(REPLICA)
    frames_before = sum(1 for b in _block_offsets(REPLICA.read_bytes())[:40]
                        if struct.unpack_from("<I", REPLICA.read_bytes(), b)[0] == 6)
    if via == "file":
        bad = tmp_path / "bad.pcapng"
        bad.write_bytes(bytes(data))
        p = subprocess.run([sys.executable, "-m", "binlogscope", "pcap", "--json", str(bad)],
                           capture_output=True, timeout=120)
    else:
        p = run(["--json", "-"], gzip.compress(bytes(data)) if via == "stdin-gz" else bytes(data))
    err = p.stderr.decode()
    assert p.returncode == 1 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert f"damaged capture at byte {at} (after frame {frames_before})" in err
    shown = p.stdout.splitlines()
    assert shown and shown == good[: len(shown)]  # everything before the damage, as it was


@pytest.mark.parametrize("caplen", [0xFFFFFFF0, 1 << 20, 200_000])
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_pcap_record_longer_than_the_file(tmp_path: Path, caplen: int, via: str) -> None:
    data = bytearray(SEMI.read_bytes())
    pos, k = 24, 0
    while k < 30:  # the 31st record claims more than there is
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
        k += 1
    struct.pack_into("<I", data, pos + 8, caplen)
    if via == "file":
        bad = tmp_path / "bad.pcap"
        bad.write_bytes(bytes(data))
        p = subprocess.run([sys.executable, "-m", "binlogscope", "pcap", "--json", str(bad)],
                           capture_output=True, timeout=120)
    else:
        p = run(["--json", "-"], bytes(data))
    err = p.stderr.decode()
    assert p.returncode == 1 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert f"frame 31 at byte {pos}" in err and f"of its {caplen} bytes" in err
    assert p.stdout  # the 30 frames before


def test_stdin_terminal_and_empty_and_garbage() -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    with pytest.raises(CaptureError, match="standard input is a terminal"):
        pcap_files._iter_stream(Tty(), "<stdin>")
    for data, msg in [(b"", "is empty"), (b"hello world, no capture", "not a pcap"),
                      (b"\x1f\x8b\x08garbage", "not a pcap")]:
        p = run(["--json", "-"], data)
        err = p.stderr.decode()
        assert p.returncode == 1 and err.count("\n") == 1 and msg in err, err
