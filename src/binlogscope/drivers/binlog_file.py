"""Binlog files on disk -> decoded events (the only place that opens them).

Streams the file in chunks through the sans-IO :class:`BinlogStreamDecoder`, so memory stays flat
whatever the file size. ``.gz`` files are decompressed on the fly.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER_LEN
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.node import Node

CHUNK = 1 << 20


class BinlogFileError(Exception):
    """The file cannot be read as a binlog at all (missing, unreadable, not a binlog)."""


@dataclass(slots=True)
class FileEvents:
    """What :func:`read_binlog_file` found besides the events."""

    path: str
    magic_node: Node | None = None
    fatal: str | None = None


def _open(path: Path) -> BinaryIO:
    try:
        f: BinaryIO = path.open("rb")
    except OSError as exc:
        raise BinlogFileError(f"cannot open {path}: {exc.strerror or exc}") from None
    if path.suffix == ".gz":
        return gzip.open(f, "rb")  # type: ignore[return-value]
    return f


def read_binlog_file(
    path: str | Path,
    *,
    record: bool = True,
    ctx: DecodeContext | None = None,
    start_position: int | None = None,
    stop_position: int | None = None,
    info: FileEvents | None = None,
) -> Iterator[DecodedEvent]:
    """Yield every event of a binlog file; damage becomes events with ``error`` set.

    With ``start_position`` the FORMAT_DESCRIPTION at offset 4 is decoded first (it says how to
    read the rest: checksums, post-header lengths) but only events at or after the position are
    yielded. Raises :class:`BinlogFileError` if the file cannot be opened or is not a binlog.
    """
    p = Path(path)
    ctx = ctx if ctx is not None else DecodeContext()
    with _open(p) as f:
        try:
            head = f.read(4)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise BinlogFileError(f"cannot read {p}: {exc}") from None
        if head != BINLOG_MAGIC:
            shown = head.hex(" ") if head else "empty file"
            raise BinlogFileError(
                f"{p} is not a binlog file (magic {shown}, expected fe 62 69 6e)")
        if start_position is not None and start_position > 4:
            # read the FDE (and anything else before start) only to learn the stream settings
            pre = BinlogStreamDecoder(ctx, record=False)
            pre.receive_data(head)
            need = start_position - 4
            while need > 0:
                chunk = f.read(min(CHUNK, need))
                if not chunk:
                    break
                need -= len(chunk)
                pre.receive_data(chunk)
                for _ in pre.events():
                    pass
            dec = BinlogStreamDecoder(ctx, record=record, start_offset=start_position,
                                      expect_magic=False)
        else:
            dec = BinlogStreamDecoder(ctx, record=record)
            dec.receive_data(head)
        while True:
            try:
                chunk = f.read(CHUNK)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                if info is not None:
                    info.fatal = f"cannot read {p}: {exc}"
                chunk = b""
            dec.receive_data(chunk)
            for ev in dec.events():
                if stop_position is not None and ev.offset >= stop_position:
                    return
                yield ev
            if not chunk:
                break
        if info is not None:
            info.magic_node = dec.magic_node
            if dec.fatal:
                info.fatal = dec.fatal


def looks_like_binlog(path: str | Path) -> bool:
    try:
        with _open(Path(path)) as f:
            return f.read(4 + HEADER_LEN)[:4] == BINLOG_MAGIC
    except (BinlogFileError, OSError, EOFError):
        return False
