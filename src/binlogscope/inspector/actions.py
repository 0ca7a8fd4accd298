"""What the inspector's ``g`` (go to) and ``x`` / ``X`` (export) do, without any UI: the TUI
calls these from its workers and shows the one line they return or raise."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path

from binlogscope.inspector.source import RowSource
from binlogscope.inspector.sources.binlog_file import BinlogFileSource
from binlogscope.inspector.sources.binlog_files import BinlogSetSource
from binlogscope.inspector.view import View, parse_time

_MARIADB_GTID = re.compile(r"\d+-\d+-\d+")
_MYSQL_GTID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:", re.I)


def looks_like_gtid(text: str) -> bool:
    """``0-1-42`` (MariaDB) or ``uuid:42`` (MySQL); ``gtid:`` forces it."""
    return bool(text.lower().startswith("gtid:") or _MARIADB_GTID.fullmatch(text)
                or _MYSQL_GTID.match(text))


def _number(text: str) -> int | None:
    text = text.strip().replace(",", "").replace("_", "")
    return int(text) if text.isdigit() else None


#: what ``g`` says after a plain position (error messages quote the END of an event)
START_NOTE = ("went to the event that STARTS at {pos:,}; an error's end_log_pos (nextPosition, "
              "LogPos) is where the failing event ENDS: g end:{where}")


def goto_note(where: str) -> str | None:
    """The line ``g`` shows after jumping to ``where``: which end of an event a position
    named (a plain position is the event's start; ``end:`` its end); None for rows/GTIDs."""
    where = where.strip()
    if where.startswith(("#", "@")) or where.lower().startswith("time:") \
            or looks_like_gtid(where):
        return None
    if where.lower().startswith("end:"):
        pos = _number(where.rpartition(":")[2])
        return None if pos is None else f"went to the event that ENDS at {pos:,}"
    pos = _number(where.rpartition(":")[2])
    return None if pos is None else START_NOTE.format(pos=pos, where=where)


def goto_row(source: RowSource, where: str, current: int | None) -> int:
    """The row ``where`` names: ``#57`` (row 57), ``FILE:1234``, or ``1234`` - a position in
    the file of row ``current`` on a set of files (mysqlbinlog's positions are per file), in the
    one file or stream otherwise; ``end:FILE:1234`` / ``end:1234``: the event that ENDS there
    (an error's end_log_pos). Raises ValueError with a line for the user."""
    if where.lower().startswith("end:"):
        return _goto_end(source, where[4:].strip(), current)
    if where.startswith("#"):
        num = _number(where[1:])
        if num is None:
            raise ValueError("expected a row number after # (e.g. #57)")
        if not 0 < num <= len(source):
            raise ValueError(f"no row {num}: the list has rows 1 to {len(source):,}")
        return num - 1
    file, _, text = where.rpartition(":")
    pos = _number(text)
    if pos is None:
        raise ValueError(f"{where!r} is not a position: type a file position (1234), "
                         "FILE:1234, a row (#57) or a GTID (0-1-42, uuid:42)")
    if isinstance(source, BinlogSetSource):
        if not file:
            file = source.parts[source.part_of(current or 0)].path.name
        found = source.find_offset(pos, file)
        if found is None:
            names = [p.path.name for p in source.parts]
            if not any(n == file or n.endswith(file) for n in names):
                raise ValueError(f"no file {file} in this set ({', '.join(names)})")
            raise ValueError(f"no event at position {pos:,} in {file}")
        return found
    found = source.find_offset(pos)
    if found is None:
        raise ValueError(f"no event at position {pos:,}")
    return found


def _goto_end(source: RowSource, where: str, current: int | None) -> int:
    """The row of the event whose last byte is just before position ``where`` ends: in a
    binlog file the event holding byte POS-1 when it ends exactly at POS; in a stream (live,
    capture) the event whose ``log_pos`` is POS (in FILE when given)."""
    file, _, text = where.rpartition(":")
    pos = _number(text)
    if pos is None or pos < 5:
        raise ValueError(f"end:{where}: expected end:FILE:POS or end:POS (an end_log_pos)")
    found: int | None
    if isinstance(source, BinlogSetSource | BinlogFileSource):
        if isinstance(source, BinlogSetSource):
            if not file:
                file = source.parts[source.part_of(current or 0)].path.name
            found = source.find_offset(pos - 1, file)
            if found is None and not any(p.path.name == file or str(p.path).endswith(file)
                                         for p in source.parts):
                names = ", ".join(p.path.name for p in source.parts)
                raise ValueError(f"no file {file} in this set ({names})")
        else:
            found = source.find_offset(pos - 1)
        if found is not None:
            row = source.row(found)
            if row.offset + row.length != pos:
                raise ValueError(
                    f"no event ends at {pos:,}: the {row.event_type} at {row.offset:,} ends at "
                    f"{row.offset + row.length:,} (g {row.offset + row.length} "
                    f"or g {row.offset})")
            return found
        raise ValueError(f"no event ends at position {pos:,}")
    for i in range(len(source)):
        row = source.row(i)
        bf = row.binlog_file  # (None: the stream did not say which file)
        if row.log_pos == pos and (not file or bf is None or bf.endswith(file)
                                   or file.endswith(bf)):
            return i
    raise ValueError(f"no event ends at position {pos:,}" + (f" in {file}" if file else ""))


def search_view(view: View, text: str, direction: int, start: int,
                cancelled: Callable[[], bool] = lambda: False) -> tuple[int, bool] | None:
    """The next (``direction`` 1) or previous (-1) view position after ``start`` whose search
    text holds ``text``, wrapping around: (position, wrapped), None if none."""
    n = len(view)
    src = view.source
    for k in range(1, n + 1):
        vi = (start + direction * k) % n
        if text in src.search_text(view.row_index(vi)):
            return vi, (vi <= start if direction > 0 else vi >= start)
        if k & 0xFFFF == 0 and cancelled():
            return None
    return None


def catalogue_for_goto(source: RowSource, cancelled: Callable[[], bool],
                       progress: Callable[[int, int, str], None]) -> bool:
    """Before a go-to by GTID or time over a set of files: build the catalog entries the cache
    lacks (``progress(k, total, name)`` before each file read), so a set opened the first time
    skips files as a catalogued one does; False when cancelled."""
    if isinstance(source, BinlogSetSource) and source.catalogue is not None:
        return source.catalogue(cancelled, progress)
    return True


def wait_goto_ready(source: RowSource, cancelled: Callable[[], bool], *,
                    gtid: str | None = None, t: float | None = None,
                    poll: float = 0.05) -> bool:
    """Wait until the files a go-to by ``gtid`` (or time ``t``) walks are indexed (a set of
    files indexes them in order), so it answers as it would once everything is indexed;
    False when cancelled."""
    import time

    while not cancelled():
        if goto_ready(source, gtid=gtid, t=t):
            return True
        time.sleep(poll)
    return False


def goto_ready(source: RowSource, *, gtid: str | None = None, t: float | None = None) -> bool:
    """Whether the files a go-to by ``gtid`` (or time ``t``) walks are indexed now."""
    if not isinstance(source, BinlogSetSource):
        return True
    return source.gtid_ready(gtid) if gtid is not None else source.time_ready(t or 0.0)


def gtid_rows(source: RowSource, gtid: str) -> tuple[Iterable[int] | None, list[str]]:
    """The rows a GTID go-to walks (None: all) and the files it skips (a set of files whose
    cached catalogs rule the GTID out)."""
    if isinstance(source, BinlogSetSource):
        return source.gtid_rows(gtid)
    return None, []


def time_rows(source: RowSource, t: float) -> tuple[Iterable[int] | None, list[str]]:
    """The rows a go-to by time walks (None: all) and the files it skips (a set of files
    whose cached catalogs say they end before ``t``)."""
    if isinstance(source, BinlogSetSource):
        return source.time_rows(t)
    return None, []


def find_time(source: RowSource, t: float, cancelled: Callable[[], bool] = lambda: False,
              rows: Iterable[int] | None = None) -> int | None:
    """The first row whose time is at or after ``t`` (seconds since the epoch)."""
    for n, i in enumerate(range(len(source)) if rows is None else rows):
        if n & 0xFFF == 0 and cancelled():
            return None
        rt = source.row(i).time
        if rt is not None and rt >= t:
            return i
    return None


def go_time(where: str) -> float | None:
    """``@YYYY-MM-DDTHH:MM:SS[.ffffff]`` (UTC; ``@`` or ``time:``): its seconds since the
    epoch; None when ``where`` is not a time go-to; ValueError for a time without a date."""
    w = where.strip()
    if w.startswith("@"):
        text = w[1:]
    elif w.lower().startswith("time:"):
        text = w[5:]
    else:
        return None
    value, absolute = parse_time(text.strip().replace(" ", "T"))
    if not absolute:
        raise ValueError("a go-to by time needs the date: @YYYY-MM-DDTHH:MM:SS (UTC)")
    return value


def find_gtid(source: RowSource, gtid: str,
              cancelled: Callable[[], bool] = lambda: False,
              rows: Iterable[int] | None = None) -> int | None:
    """The GTID event (MariaDB GTID / MySQL GTID_LOG) of transaction ``gtid`` (lower case);
    ``rows``: only these (a set of files: those the catalog does not rule out)."""
    for i in (range(len(source)) if rows is None else rows):
        if i & 0xFFF == 0 and cancelled():
            return None
        row = source.row(i)
        if row.kind == "gtid" and gtid in row.summary.lower().split():
            return i
    return None


def free_path(path: Path) -> Path:
    """``path`` if nothing is there, else the first free ``NAME-1.EXT``, ``NAME-2.EXT``..."""
    if not path.exists():
        return path
    suffix = "".join(path.suffixes[-1:]) if path.suffix else ""
    stem = path.name[: len(path.name) - len(suffix)] if suffix else path.name
    k = 1
    while True:
        cand = path.with_name(f"{stem}-{k}{suffix}")
        if not cand.exists():
            return cand
        k += 1


def export(source: RowSource, name: str, rows: list[int], *, one_row: bool,
           cancelled: Callable[[], bool] = lambda: False) -> tuple[str, bool]:
    """Export ``rows`` to the file ``name`` says (never overwriting: a free ``NAME-1.EXT``):
    ``.pcapng``/``.pcap`` packets, ``.parquet``/``DIR/`` Parquet (the view), ``.bin`` the raw
    bytes (one row), else JSON lines (the tree of one row). Returns (message, True when the
    name was taken); raises on failure."""
    asked = Path(name).expanduser()
    path = free_path(asked)
    note = f" ({asked} exists: not overwritten)" if path != asked else ""
    from binlogscope.inspector.pcapng_export import (
        export_row_bytes,
        export_rows_pcapng,
        wants_pcapng,
    )

    if wants_pcapng(name):
        msg = export_rows_pcapng(source, rows, path, cancelled=cancelled)
    elif one_row and name.lower().endswith(".bin"):
        msg = export_row_bytes(source, rows[0], path)
    elif not one_row and name.endswith(("/", ".parquet")):
        from binlogscope.inspector.parquet_export import export_view_parquet

        msg = export_view_parquet(source, rows, path, cancelled=cancelled)
    else:
        with path.open("x", encoding="utf-8") as out:  # "x": never overwrite
            n = source.export_jsonl(rows, out, tree=one_row, cancelled=cancelled)
        msg = f"exported {n} event(s) to {path}"
    return msg + note, bool(note)


__all__ = ["export", "find_gtid", "free_path", "goto_row", "looks_like_gtid", "search_view"]
