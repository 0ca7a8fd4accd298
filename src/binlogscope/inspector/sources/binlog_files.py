"""Several binlog files (``binlogscope file A B ...`` on a terminal) as one :class:`RowSource`.

The files are indexed one after the other, in the order given, each by its own
:class:`~binlogscope.inspector.sources.binlog_file.BinlogFileSource`; rows are numbered across
the whole set and every row keeps its own ``binlog_file`` and offsets. Start and stop positions
apply to every file, as in ``binlogscope file``'s text outputs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from itertools import chain
from pathlib import Path
from typing import TextIO

from binlogscope.inspector.source import Detail, Row, RowSignal, SourceInfo
from binlogscope.inspector.sources.binlog_file import BinlogFileSource


class BinlogSetSource:
    """Rows of ``paths`` in order; row ``i`` is row ``i - start[k]`` of file ``k``."""

    #: a set of files shows which file each event is in
    columns: frozenset[str] = frozenset({"binlog_file"})

    def __init__(self, paths: Sequence[str | Path], *, start_position: int | None = None,
                 stop_position: int | None = None) -> None:
        if not paths:
            raise ValueError("no binlog files")
        self.parts = [BinlogFileSource(p, start_position=start_position,
                                       stop_position=stop_position) for p in paths]
        self.path = self.parts[0].path  # export file names start with it
        #: every part announces its rows through the set's one signal
        self.changed = RowSignal()
        for part in self.parts:
            part.changed = self.changed
        self._starts: list[int] = [0]  # first global row of each indexed (or indexing) part
        self._done = False
        #: gtid -> per file, whether it may hold it (the cached catalogs: ``file`` sets it);
        #: None: every file may
        self.may_hold_gtid: Callable[[str], list[bool]] | None = None
        #: time -> per file, whether it may hold an event at/after it (the cached catalogs)
        self.may_reach_time: Callable[[float], list[bool]] | None = None
        #: (cancelled, progress(k, total, name)) -> False if cancelled: builds the catalog
        #: entries missing from the cache (``file`` sets it), so a set opened the first time
        #: is skipped through as a catalogued one; None: no catalog
        self.catalogue: Callable[[Callable[[], bool], Callable[[int, int, str], None]],
                                 bool] | None = None

    def gtid_rows(self, gtid: str) -> tuple[Iterable[int] | None, list[str]]:
        """The rows a GTID go-to walks (None: all) and the names of the files it skips."""
        if self.may_hold_gtid is None:
            return None, []
        return self._rows(self.may_hold_gtid(gtid))

    def time_rows(self, t: float) -> tuple[Iterable[int] | None, list[str]]:
        """The rows a go-to by time walks (None: all) and the names of the files it skips."""
        if self.may_reach_time is None:
            return None, []
        return self._rows(self.may_reach_time(t))

    def gtid_ready(self, gtid: str) -> bool:
        """Whether every file that may hold ``gtid`` is indexed (a go-to walking them now
        sees all their rows)."""
        return self._ready(None if self.may_hold_gtid is None else self.may_hold_gtid(gtid))

    def time_ready(self, t: float) -> bool:
        """Whether every file that may hold an event at/after ``t`` is indexed, up to the
        first of them (the go-to stops at the first row at/after ``t``)."""
        flags = None if self.may_reach_time is None else self.may_reach_time(t)
        if flags is not None and any(flags):
            first = flags.index(True)
            flags = [k == first for k in range(len(flags))]
        return self._ready(flags)

    def indexed(self, k: int) -> bool:
        """Whether file ``k`` is indexed to its end."""
        return self._done or k < len(self._starts) - 1

    def _ready(self, flags: list[bool] | None) -> bool:
        if flags is None:
            return self._done
        wanted = [k for k, ok in enumerate(flags) if ok]
        return not wanted or self.indexed(wanted[-1])

    def _rows(self, flags: list[bool]) -> tuple[Iterable[int] | None, list[str]]:
        skipped = [p.path.name for p, ok in zip(self.parts, flags, strict=True) if not ok]
        if not skipped:
            return None, []
        return (chain.from_iterable(self.part_rows(k) for k, ok in enumerate(flags) if ok),
                skipped)

    def part_of(self, index: int) -> int:
        """Which file (index into ``parts``) row ``index`` is in."""
        return bisect_right(self._starts, index) - 1

    def part_rows(self, k: int) -> range:
        """The global rows of file ``k`` (empty while it is not indexed yet)."""
        if k >= len(self._starts):
            return range(0)
        return range(self._starts[k], self._starts[k] + len(self.parts[k]))

    def _part(self, index: int) -> tuple[BinlogFileSource, int]:
        k = bisect_right(self._starts, index) - 1
        return self.parts[k], index - self._starts[k]

    # ----- RowSource
    def __len__(self) -> int:
        starts = self._starts
        k = len(starts) - 1
        return starts[k] + len(self.parts[k])

    def row(self, index: int) -> Row:
        part, i = self._part(index)
        return replace(part.row(i), index=index)

    def search_text(self, index: int) -> str:
        part, i = self._part(index)
        return part.search_text(i)

    def position(self, index: int) -> str:
        part, i = self._part(index)
        return part.position(i)

    def find_offset(self, offset: int, file: str | None = None) -> int | None:
        """The row holding ``offset`` in ``file`` (a name or its end), or in the first file
        that is that long."""
        for k, part in enumerate(self.parts[: len(self._starts)]):
            if file is not None and not (part.path.name == file or
                                         str(part.path).endswith(file)):
                continue
            n = len(part)
            if not n:
                continue
            last = part.row(n - 1)
            if file is None and offset >= (last.log_pos or 0) and k < len(self._starts) - 1:
                continue  # past this file's end: look in the next one
            found = part.find_offset(offset)
            if found is not None:
                return self._starts[k] + found
        return None

    def detail(self, index: int) -> Detail:
        part, i = self._part(index)
        return part.detail(i)

    def info(self) -> SourceInfo:
        infos = [p.info() for p in self.parts[: len(self._starts)]]
        cur = infos[-1]
        fatal = next((f"{p.path.name}: {i.fatal}" for p, i in zip(self.parts, infos, strict=False)
                      if i.fatal), None)
        progress = None
        if not self._done:
            progress = (len(infos) - 1 + (cur.progress or 0.0)) / len(self.parts)
        return SourceInfo(
            label=f"{self.parts[0].path} (+{len(self.parts) - 1} files)",
            server_version=cur.server_version, checksum=cur.checksum,
            events=sum(i.events for i in infos), errors=sum(i.errors for i in infos),
            done=self._done, progress=progress, fatal=fatal)

    def run(self, cancelled: Callable[[], bool]) -> None:
        try:
            for k, part in enumerate(self.parts):
                if k:
                    prev = self.parts[k - 1]
                    self._starts.append(self._starts[-1] + len(prev))
                part.run(cancelled)
                if cancelled():
                    return
        finally:
            self._done = True
            self.changed()

    def export_jsonl(self, indices: Sequence[int], out: TextIO, *, tree: bool = False,
                     cancelled: Callable[[], bool] = lambda: False) -> int:
        written = 0
        by_part: dict[int, list[int]] = {}
        for i in indices:
            k = bisect_right(self._starts, i) - 1
            by_part.setdefault(k, []).append(i - self._starts[k])
        for k in sorted(by_part):
            written += self.parts[k].export_jsonl(by_part[k], out, tree=tree,
                                                  cancelled=cancelled)
        return written


__all__ = ["BinlogSetSource"]
