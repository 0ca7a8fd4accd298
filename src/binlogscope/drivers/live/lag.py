"""Position lag: the server's binlog head against what a reader has consumed, where known.

Where the head comes from (each sample says which):

- ``heartbeat``: the dump thread sends a heartbeat only when it has reached the end of the
  binlog and waits for more (MariaDB ``sql/sql_repl.cc`` ``wait_new_events`` ->
  ``send_heartbeat_event`` with the dump thread's coordinates; MySQL ``Binlog_sender::
  send_heartbeat_event`` the same): its ``log_pos`` and file name (the HEARTBEAT_LOG_EVENT's
  body, the v2 TLV on MySQL) are the server's head at the moment it was sent;
- ``rotate``: a real ROTATE at the end of a file names the file the server writes next, so the
  head is at least ``next_file:position``;
- ``status``: the answer of ``SHOW MASTER STATUS`` / ``SHOW BINARY LOG STATUS`` (seen in a
  capture, or asked by ``live --lag-every`` on a control connection of its own);
- ``event``: an event the server sent proves the head is at least where it ends.

Consumed is where the last event the reader got ends (its file and ``log_pos``). The lag is
then ``files_behind`` (the difference of the numbered suffixes of ``base.000123``, when both
files share the base name) and ``bytes_behind`` (head minus consumed in the same file; None
when the files differ: the size of the files in between is not on the wire).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: ``mysql-bin.000123`` -> ("mysql-bin", 123)
_NUMBERED = re.compile(r"^(.*)\.(\d+)$")
#: samples kept per session (the oldest dropped first beyond it)
MAX_SAMPLES = 100_000


def file_number(name: str) -> tuple[str, int] | None:
    """The base name and sequence number of a binlog file name (None: not numbered)."""
    m = _NUMBERED.match(name)
    return (m.group(1), int(m.group(2))) if m else None


def lag_between(head: tuple[str, int], consumed: tuple[str, int]
                ) -> tuple[int | None, int | None]:
    """(files behind, bytes behind) of ``consumed`` against ``head``; None where not known
    (files of other base names; bytes across files). Never negative: a head older than what
    was consumed (an old sample) counts as caught up."""
    hf, hp = head
    cf, cp = consumed
    if hf == cf:
        return 0, max(0, hp - cp)
    hn, cn = file_number(hf), file_number(cf)
    if hn is None or cn is None or hn[0] != cn[0]:
        return None, None
    if hn[1] < cn[1]:
        return 0, 0
    return hn[1] - cn[1], None


@dataclass(slots=True)
class LagSample:
    """The lag at one moment."""

    time: float
    source: str  # "heartbeat" | "rotate" | "status" (see the module doc)
    head_file: str
    head_pos: int
    consumed_file: str | None
    consumed_pos: int | None
    files_behind: int | None
    bytes_behind: int | None

    def to_json(self) -> dict[str, Any]:
        return {"time": round(self.time, 6), "source": self.source,
                "head": f"{self.head_file}:{self.head_pos}",
                "consumed": (f"{self.consumed_file}:{self.consumed_pos}"
                             if self.consumed_file is not None else None),
                "files_behind": self.files_behind, "bytes_behind": self.bytes_behind}

    def text(self) -> str:
        if self.consumed_file is None:
            behind = "lag unknown (nothing consumed yet)"
        elif self.files_behind is None:
            behind = "lag unknown (files of different names)"
        elif self.files_behind == 0:
            behind = ("caught up" if self.bytes_behind == 0
                      else f"{self.bytes_behind:,} bytes behind")
        else:
            behind = f"{self.files_behind} file(s) behind"
        got = (f"{self.consumed_file}:{self.consumed_pos}" if self.consumed_file is not None
               else "nothing yet")
        return (f"{behind}: server head {self.head_file}:{self.head_pos} ({self.source}), "
                f"consumed {got}")


@dataclass
class LagTracker:
    """Follows one dump: :meth:`consumed_to` per event, :meth:`head_at` per head seen; each
    head seen is a :class:`LagSample`."""

    head: tuple[str, int] | None = None
    consumed: tuple[str, int] | None = None
    samples: list[LagSample] = field(default_factory=list)
    max_bytes: int = 0
    max_files: int = 0
    worst: LagSample | None = None

    def consumed_to(self, file: str | None, end_pos: int) -> None:
        """An event that ends at ``end_pos`` of ``file`` reached the reader."""
        if not file or end_pos <= 0:
            return
        self.consumed = (file, end_pos)
        if self.head is None or _after(self.consumed, self.head):
            self.head = self.consumed  # the server had written at least that much

    def head_at(self, file: str | None, pos: int, t: float, source: str) -> LagSample | None:
        """The server's head is ``file:pos`` at ``t`` (from ``source``): a sample."""
        if not file or pos <= 0:
            return None
        self.head = (file, pos)
        c = self.consumed
        files, nbytes = lag_between(self.head, c) if c is not None else (None, None)
        s = LagSample(t, source, file, pos, c[0] if c else None, c[1] if c else None,
                      files, nbytes)
        if len(self.samples) >= MAX_SAMPLES:
            del self.samples[: MAX_SAMPLES // 10]
        self.samples.append(s)
        if (files or 0) > self.max_files or (not files and (nbytes or 0) > self.max_bytes):
            self.worst = s
        self.max_files = max(self.max_files, files or 0)
        if not files:
            self.max_bytes = max(self.max_bytes, nbytes or 0)
        return s

    def last(self) -> LagSample | None:
        return self.samples[-1] if self.samples else None

    def to_json(self) -> dict[str, Any] | None:
        last = self.last()
        if last is None:
            return None
        return {"last": last.to_json(), "max_bytes_behind": self.max_bytes,
                "max_files_behind": self.max_files, "samples": len(self.samples),
                "worst": self.worst.to_json() if self.worst else None}

    def lines(self) -> list[str]:
        last = self.last()
        if last is None:
            return []
        out = f"  lag       at the end {last.text()}"
        if self.max_files or self.max_bytes:
            worst = (f"{self.max_files} file(s)" if self.max_files
                     else f"{self.max_bytes:,} bytes")
            out += f"; most {worst} behind"
        return [out + f" ({len(self.samples)} samples)"]


def _after(a: tuple[str, int], b: tuple[str, int]) -> bool:
    """``a`` is later in the binlog than ``b`` (same file: by position; else by number)."""
    if a[0] == b[0]:
        return a[1] > b[1]
    an, bn = file_number(a[0]), file_number(b[0])
    return an is not None and bn is not None and an[0] == bn[0] and an[1] > bn[1]


__all__ = ["MAX_SAMPLES", "LagSample", "LagTracker", "file_number", "lag_between"]
