"""A small catalog per binlog file: what ``locate`` (and anything that wants to skip files)
needs to know about a file without reading it again.

One entry per file: its size and modification time (the key: a file that changed is read
again), the server version and checksum setting of its FORMAT_DESCRIPTION, the server ids that
wrote it, the first and last header time, event and transaction counts, the GTID state it
starts from (MariaDB's GTID_LIST, MySQL's PREVIOUS_GTIDS), the first and last GTID of each
MariaDB domain / MySQL source uuid in it, the next file (its ROTATE), where its last event ends
and how many damaged stretches it has.

Entries are kept as JSON, one file per binlog, under ``$XDG_CACHE_HOME/binlogscope/catalog``
(``~/.cache/...``), keyed by the binlog's absolute path: the binlog directory is never written.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.control_events import FormatDescriptionEvent, RotateEvent, StartEventV3
from binlogscope.wire.binlog.decode import DecodedEvent
from binlogscope.wire.binlog.gtid_events import GtidListEvent, PreviousGtidsEvent
from binlogscope.wire.binlog.types import EventType as E

#: bump when the entries change shape (older entries are then rebuilt)
CATALOG_VERSION = 2
_FDE = int(E.FORMAT_DESCRIPTION_EVENT)
_ROTATE = int(E.ROTATE_EVENT)
_MARIADB_GTID = int(E.GTID_EVENT)
_MYSQL_GTIDS = frozenset((int(E.GTID_LOG_EVENT), int(E.GTID_TAGGED_LOG_EVENT)))
_ANON = int(E.ANONYMOUS_GTID_LOG_EVENT)
_GTID_LIST = int(E.GTID_LIST_EVENT)
_PREVIOUS = int(E.PREVIOUS_GTIDS_LOG_EVENT)
_XID = int(E.XID_EVENT)


@dataclass(slots=True)
class FileCatalog:
    name: str
    path: str
    size: int
    mtime_ns: int
    server_version: str | None = None
    checksum: str | None = None
    server_ids: list[int] = field(default_factory=list)
    first_time: int | None = None
    last_time: int | None = None
    #: the header time of the file's very first event (0 for a relay log's ROTATE): what a
    #: --stop-datetime sees first
    first_event_time: int | None = None
    events: int = 0
    transactions: int = 0
    #: the GTID state the file starts from (GTID_LIST / PREVIOUS_GTIDS), as the server writes it
    start_state: str | None = None
    #: per MariaDB "domain-server" or MySQL uuid: [first, last] sequence number in this file
    gtid_ranges: dict[str, list[int]] = field(default_factory=dict)
    next_file: str | None = None
    end: int = 4
    damaged: int = 0
    version: int = CATALOG_VERSION

    def covers_time(self, t: int) -> bool:
        return self.last_time is not None and self.last_time >= t

    def may_hold(self, gtid: str) -> bool:
        """Whether the file can hold the transaction ``gtid`` (from its ranges)."""
        key, seq = gtid_key(gtid)
        if key is None:
            return True
        r = self.gtid_ranges.get(key)
        return r is not None and r[0] <= seq <= r[1]


def gtid_key(gtid: str) -> tuple[str | None, int]:
    """("domain-server", seq) for MariaDB, ("uuid[:tag]", gno) for MySQL, (None, 0) else."""
    parts = gtid.split("-")
    if len(parts) == 3 and all(p.isdigit() for p in parts):
        return f"{parts[0]}-{parts[1]}", int(parts[2])
    sid, sep, gno = gtid.rpartition(":")
    if sep and gno.isdigit():
        return sid.lower(), int(gno)
    return None, 0


class Builder:
    """Builds one file's entry from its events, fed in order."""

    def __init__(self, entry: FileCatalog) -> None:
        self.c = entry
        self._ids: set[int] = set()

    def feed(self, ev: DecodedEvent) -> None:
        c = self.c
        c.events += 1
        h = ev.header
        if ev.error is not None:
            c.damaged += 1
        if h is None:
            return
        if c.first_event_time is None:
            c.first_event_time = h.timestamp
        end = (ev.file_pos if ev.file_pos is not None else ev.offset) + h.event_size
        c.end = max(c.end, end)
        code = h.type_code
        if h.timestamp:
            if c.first_time is None:
                c.first_time = h.timestamp
            c.last_time = max(c.last_time or 0, h.timestamp)
        if h.server_id not in self._ids:
            self._ids.add(h.server_id)
            c.server_ids.append(h.server_id)
        body = ev.body
        if code == _FDE and c.server_version is None:
            from binlogscope.diagnose.explain import checksum_text

            c.server_version = (body.server_version
                                if isinstance(body, FormatDescriptionEvent | StartEventV3)
                                else None)
            c.checksum = checksum_text(ev)
        elif code == _ROTATE:
            c.next_file = body.next_log_name if isinstance(body, RotateEvent) else None
        elif code in (_GTID_LIST, _PREVIOUS) and c.start_state is None:
            c.start_state = (body.gtid_list if isinstance(body, GtidListEvent)
                             else body.gtid_set if isinstance(body, PreviousGtidsEvent) else "")
        elif code in (_MARIADB_GTID, _ANON) or code in _MYSQL_GTIDS:
            c.transactions += 1
            g = bodies.gtid(ev)
            if g is not None:
                key, seq = gtid_key(g)
                if key is not None:
                    r = c.gtid_ranges.get(key)
                    if r is None:
                        c.gtid_ranges[key] = [seq, seq]
                    else:
                        r[0] = min(r[0], seq)
                        r[1] = max(r[1], seq)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "binlogscope" / "catalog"


def _key_file(directory: Path, path: Path) -> Path:
    digest = hashlib.sha1(str(path.resolve()).encode(), usedforsecurity=False).hexdigest()
    return directory / f"{digest[:20]}.json"


def load(path: Path, directory: Path | None) -> FileCatalog | None:
    """The cached entry of ``path`` when it is still the file's (same size and mtime)."""
    if directory is None:
        return None
    try:
        st = path.stat()
        data: dict[str, Any] = json.loads(_key_file(directory, path).read_text())
    except (OSError, ValueError):
        return None
    if (data.get("version") != CATALOG_VERSION or data.get("size") != st.st_size
            or data.get("mtime_ns") != st.st_mtime_ns
            or data.get("path") != str(path.resolve())):
        return None
    try:
        return FileCatalog(**data)
    except TypeError:
        return None


def save(entry: FileCatalog, directory: Path | None) -> None:
    if directory is None:
        return
    try:
        directory.mkdir(parents=True, exist_ok=True)
        target = _key_file(directory, Path(entry.path))
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(entry)))
        tmp.replace(target)
    except OSError:
        pass  # a cache that cannot be written only costs a second read


def new_entry(path: Path) -> FileCatalog:
    st = path.stat()
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return FileCatalog(name=name, path=str(path.resolve()), size=st.st_size,
                       mtime_ns=st.st_mtime_ns)


def rules_out(entry: FileCatalog, start: int | None, stop: int | None) -> bool:
    """Whether a file holds no event of the time window ``[start, stop)`` as ``file
    --start-datetime/--stop-datetime`` select them (:func:`binlogscope.pipeline.select.
    time_range`: from the first event at/after start to before the first at/after stop): every
    event is before ``start`` (its latest header time is), or its first event is at/after
    ``stop`` (the selection ends there). Damaged files are never ruled out."""
    if entry.damaged or not entry.events:
        return False
    if start is not None and entry.last_time is not None and entry.last_time < start:
        return True
    return stop is not None and entry.first_event_time is not None \
        and entry.first_event_time >= stop


def files_covering(paths: list[Path], start: int | None = None, stop: int | None = None, *,
                   directory: Path | None = None) -> tuple[list[Path], list[Path]]:
    """(the files to read, the files skipped) for the time window ``[start, stop)`` (seconds
    since the epoch, header times): a file is skipped only when its cached catalog entry - still
    the file's: same size and mtime - rules it out; a file without one is read (building an
    entry costs a read of the file: ``binlogscope locate --catalog FILES`` builds them). For
    ``file``, and for the Spark data source's planner (one task per file it keeps); reads only
    the cache (``directory``: default :func:`cache_dir`), never the binlogs."""
    where = cache_dir() if directory is None else directory
    keep: list[Path] = []
    skipped: list[Path] = []
    if start is None and stop is None:
        return list(paths), skipped
    for p in paths:
        entry = load(Path(p), where)
        (skipped if entry is not None and rules_out(entry, start, stop) else keep).append(p)
    return keep, skipped


def files_for_gtid(paths: list[Path], gtid: str, *, directory: Path | None = None
                   ) -> list[bool]:
    """Per file, whether it may hold transaction ``gtid``: False only when its cached catalog
    entry (still the file's) has no range of the GTID's domain-server/uuid holding it - the
    TUI's go-to over a set of files then does not walk its rows. Reads only the cache."""
    where = cache_dir() if directory is None else directory
    out = []
    for p in paths:
        entry = load(Path(p), where)
        out.append(entry is None or bool(entry.damaged) or entry.may_hold(gtid))
    return out


def files_for_time(paths: list[Path], t: float, *, directory: Path | None = None
                   ) -> list[bool]:
    """Per file, whether it may hold an event at or after ``t`` (header time): False only when
    its cached catalog entry (still the file's) says its latest event is before ``t`` - the
    TUI's go-to by time then does not walk its rows. Reads only the cache."""
    where = cache_dir() if directory is None else directory
    out = []
    for p in paths:
        entry = load(Path(p), where)
        out.append(entry is None or bool(entry.damaged) or not entry.events
                   or entry.last_time is None or entry.last_time >= int(t))
    return out


def build_missing(paths: list[Path], *, directory: Path | None = None,
                  cancelled: Callable[[], bool] = lambda: False,
                  progress: Callable[[int, int, str], None] | None = None) -> bool:
    """Build (and cache) the entries the cache lacks for ``paths`` - a file read each, as
    ``locate --catalog`` does - so what only the cache answers (:func:`files_for_gtid`,
    :func:`files_for_time`) answers for a set of files opened the first time as for one
    catalogued before. ``progress(k, total, name)`` before each file read (``k`` of the
    ``total`` to read); False when ``cancelled()`` stopped it (the entries finished so far
    are kept)."""
    from binlogscope.drivers.binlog_file import BinlogFileError, read_binlog_file

    where = cache_dir() if directory is None else directory
    todo = [Path(p) for p in paths if load(Path(p), where) is None]
    for k, path in enumerate(todo):
        if cancelled():
            return False
        if progress is not None:
            progress(k, len(todo), path.name)
            if cancelled():
                return False
        try:
            builder = Builder(new_entry(path))
            for n, ev in enumerate(read_binlog_file(path, record=False)):
                builder.feed(ev)
                if n & 0xFFF == 0xFFF and cancelled():
                    return False
        except (OSError, BinlogFileError):
            continue  # (not cached: the file is walked, as without a catalog)
        if cancelled():
            return False
        save(builder.c, where)
    return not cancelled()


def entry_json(entry: FileCatalog) -> dict[str, Any]:
    out = asdict(entry)
    out.pop("version", None)
    return out


__all__ = ["CATALOG_VERSION", "Builder", "FileCatalog", "build_missing", "cache_dir", "entry_json",
           "files_covering", "gtid_key", "load", "new_entry", "rules_out", "save"]
