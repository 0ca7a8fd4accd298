"""Loading a served history: binlog files, captures and recordings become an EventStream.

* :func:`load_binlog_files` - binlog files on disk (``.gz`` too), kept byte for byte.
* :func:`load_pcap` - the binlog events a capture carries (binlogscope's pcap reader).
* :func:`load_recording` / :func:`record_live` / :func:`save_recording` - a JSON-lines recording
  of a real dump session.
* :func:`stream_from_dump` - binlog files rebuilt from the events a dump sent.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson

from binlogscope.wire.binlog.control_events import RotateEvent
from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER_LEN, is_artificial, peek_header
from binlogscope.wire.binlog.types import is_heartbeat
from mock_master.history.sources import (
    FDE,
    FLAG_IN_USE,
    ROTATE,
    BinlogFile,
    EventStream,
    SourceError,
    decode_stored,
    fde_checksum,
    rebase,
    rewrite_header,
)
from mock_master.runlog import dumps_json


def split_events(data: bytes, name: str) -> BinlogFile:
    """A binlog file's bytes (magic included) as a file of events, cut by their event_size; a
    truncated tail (file still being written, or damaged) is left out."""
    if data[:4] != BINLOG_MAGIC:
        raise SourceError(f"{name}: not a binlog file (no fe 62 69 6e magic)")
    f = BinlogFile(Path(name).name, data=data)
    fde = f.fde
    f.checksum = fde_checksum(fde) if fde is not None else False
    return f


def load_binlog_files(paths: Sequence[str | Path], *, infer_names: bool = True
                      ) -> EventStream:
    files: list[BinlogFile] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            subs = sorted(x for x in path.iterdir() if x.is_file() and _is_binlog(x))
            if not subs:
                raise SourceError(f"{path}: no binlog files in this directory")
            files.extend(load_binlog_files(subs, infer_names=False).files)
            continue
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
            path = path.with_suffix("")
        files.append(split_events(raw, path.name))
    if not files:
        raise SourceError("no binlog files given")
    if infer_names:
        _infer_names(files)
    return EventStream(files)


def _infer_names(files: list[BinlogFile]) -> None:
    """Serve each file under the name its server gave it, not the name on disk: a ROTATE at the
    end of a file names the next one, so this one is the one before it."""
    import re

    for i, f in enumerate(files):
        last = f.event(-1) if f.count else b""
        if not last or last[4] != ROTATE:
            continue
        nxt = _rotate_name(last)
        m = re.fullmatch(r"(.*\.)(\d+)", nxt)
        if m is None or int(m.group(2)) == 0:
            continue
        f.name = f"{m.group(1)}{int(m.group(2)) - 1:0{len(m.group(2))}d}"
        if i + 1 < len(files):
            files[i + 1].name = nxt


def _is_binlog(p: Path) -> bool:
    try:
        with p.open("rb") as f:
            return f.read(4) == BINLOG_MAGIC
    except OSError:
        return False


# ------------------------------------------------------------------------------- pcap
def load_pcap(path: str | Path) -> EventStream:
    """The binlog events a pcap/pcapng capture of a dump carries, as files again.

    Uses binlogscope's pcap reader (``binlogscope.drivers.capture.pcap``); of several dump
    connections the one with the most events is used. Files are rebuilt from the fake ROTATE/FDE
    pairs and positions re-based, so the result is a consistent binlog. ``binlogscope live``
    recordings (pcapng) load the same way.
    """
    try:
        from binlogscope.drivers.capture import pcap as pcap_driver
    except ImportError as exc:
        raise SourceError("pcap sources need binlogscope's pcap reader (binlogscope.drivers"
                          f".capture.pcap), which is not available: {exc}") from None
    from binlogscope.session.events import PacketDecoded

    by_flow: dict[str, list[bytes]] = {}
    try:
        for item in pcap_driver.read_capture(str(path), record=True):
            ev = item.event
            if isinstance(ev, PacketDecoded) and ev.binlog_event is not None:
                raw = ev.binlog_event.raw
                if raw and ev.binlog_event.header is not None:
                    by_flow.setdefault(item.flow.name, []).append(bytes(raw))
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    except pcap_driver.CaptureError as exc:
        if not by_flow:
            raise SourceError(f"{path}: {exc}") from None
    if not by_flow:
        raise SourceError(f"{path}: the capture holds no binlog events")
    events = max(by_flow.values(), key=len)
    return stream_from_dump(events)


def stream_from_dump(events: Iterable[bytes]) -> EventStream:
    """Rebuild binlog files from the events a dump sent (fake ROTATE + FDE per file, ...).

    Artificial events (the fake ROTATE, heartbeats) are dropped; a FORMAT_DESCRIPTION starts a
    new file, named by the preceding (fake or real) ROTATE.
    """
    files: list[BinlogFile] = []
    name = "mysql-bin.000001"
    cur: list[bytes] | None = None
    for ev in events:
        t = ev[4]
        if is_heartbeat(t):
            continue
        if t == ROTATE:
            nxt = _rotate_name(ev)
            h = peek_header(ev)
            if is_artificial(h) or h.log_pos == 0:
                name = nxt
                continue
            if cur is not None:
                cur.append(ev)
            name = nxt
            continue
        if t == FDE:
            if cur is not None and files and files[-1].events is cur and len(cur) > 1:
                pass
            cur = [ev]
            files.append(BinlogFile(name, cur))
            continue
        if cur is None:
            continue  # events before the first FDE cannot be placed
        cur.append(ev)
    for f in files:
        fde = f.fde
        f.checksum = fde_checksum(fde) if fde is not None else False
        first = f.events[0]
        f.events[0] = rewrite_header(first, f.checksum,
                                     flags=peek_header(first).flags & ~FLAG_IN_USE)
    stream = EventStream(files)
    rebase(stream)
    return stream


def _rotate_name(ev: bytes) -> str:
    # the trailer may be a CRC32 (MariaDB checksums the fake ROTATE too): it is one if it matches
    crc = (len(ev) >= HEADER_LEN + 12
           and zlib.crc32(ev[:-4]) == int.from_bytes(ev[-4:], "little"))
    body = decode_stored(ev, crc).body
    return body.next_log_name if isinstance(body, RotateEvent) else ""


# ------------------------------------------------------------------------------- recordings
RECORDING_FORMAT = "binlogscope-mock-master-recording/1"


def save_recording(stream: EventStream, path: str | Path) -> None:
    """Write a stream as a JSON-lines recording (header line, then one line per event)."""
    with Path(path).open("wb") as out:
        out.write(dumps_json({"format": RECORDING_FORMAT,
                              "files": [f.name for f in stream.files]}) + b"\n")
        for f in stream.files:
            for ev in f.events:
                out.write(dumps_json({"file": f.name, "hex": ev.hex()}) + b"\n")


def load_recording(path: str | Path) -> EventStream:
    """A recording: a ``binlogscope live`` session capture (pcapng, loaded like any capture)
    or a JSON-lines file written by :func:`save_recording` / :func:`record_live`."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise SourceError(f"cannot read {p}: {exc.strerror or exc}") from None
    if magic in (b"\x0a\x0d\x0d\x0a", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4",
                 b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d"):
        return load_pcap(p)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SourceError(f"cannot read {p}: {exc.strerror or exc}") from None
    if not lines:
        raise SourceError(f"{p}: empty recording")
    try:
        head = orjson.loads(lines[0])
    except orjson.JSONDecodeError:
        head = {}
    if head.get("format") != RECORDING_FORMAT:
        raise SourceError(f"{p}: not a mock-master recording (first line must name "
                          f"format {RECORDING_FORMAT!r})")
    by_name: dict[str, list[bytes]] = {}
    order: list[str] = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
            ev = bytes.fromhex(obj["hex"])
            name = str(obj["file"])
        except (orjson.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
            raise SourceError(f"{p}:{n}: bad recording line: {exc}") from None
        if name not in by_name:
            by_name[name] = []
            order.append(name)
        by_name[name].append(ev)
    files = []
    for name in order:
        f = BinlogFile(name, by_name[name])
        fde = f.fde
        f.checksum = fde_checksum(fde) if fde is not None else False
        files.append(f)
    return EventStream(files)


def record_live(host: str, port: int, user: str, password: str, path: str | Path, *,
                start: str | None = None, server_id: int | None = None) -> int:
    """Record a real server's binlog once (non-blocking dump through binlogscope's live
    replica) into a recording file; returns the number of events written."""
    from binlogscope.drivers.items import SourceItem
    from binlogscope.drivers.live.options import ConnectionOptions
    from binlogscope.drivers.live.replica import LiveSettings, run_live
    from binlogscope.session.events import PacketDecoded

    raw: list[bytes] = []

    def consume(item: SourceItem) -> None:
        ev = item.event
        if isinstance(ev, PacketDecoded) and ev.binlog_event is not None:
            r = ev.binlog_event.raw
            if r:
                raw.append(bytes(r))

    conn = ConnectionOptions(host=host, port=port, user=user, password=password)
    # no start: an empty file name, which every server reads as its first binlog file (the
    # current position, what live takes by default, would record nothing but the end)
    rep = run_live(LiveSettings(conn=conn, start=start or ":4", non_blocking=True,
                                server_id=server_id, reconnect=False), consume)
    if rep.error:
        raise SourceError(f"recording failed: {rep.error}")
    stream = stream_from_dump(raw)
    save_recording(stream, path)
    return stream.event_count
