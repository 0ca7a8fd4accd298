"""The event list's columns: which exist, the default set per kind of source, the order in which a
narrow terminal drops them, and the user's saved choice (``C`` in the TUI).

The choice is saved per kind of source (``file``: binlog files; ``packets``: live sessions,
captures, sniff, proxy) in ``$XDG_CONFIG_HOME/binlogscope/tui.json`` (``~/.config/...`` when
unset) as ``{"columns": {"file": ["number", ...], "packets": [...]}}``. Pure Python: the TUI
shows it, tests call it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from binlogscope.inspector.source import RowSource


@dataclass(frozen=True, slots=True)
class Column:
    key: str  # a Row attribute (or "time"/"number")
    title: str  # wide title
    short: str  # narrow title
    width: int  # wide width
    narrow: int  # narrow width
    right: bool = False
    doc: str = ""
    #: the source must fill this optional column (Row attribute) for it to be offered
    needs: str | None = None


COLUMNS: tuple[Column, ...] = (
    Column("number", "no.", "no.", 0, 0, True, "row number (g #N goes to it)"),
    Column("frame", "frame", "frame", 5, 5, True, "capture frame the packet starts in",
           needs="frame"),
    Column("time", "time (UTC)", "time", 19, 8, False,
           "row time: the event's timestamp (files) or its arrival (sessions, captures); "
           "t cycles absolute / since the first row / since the previous row"),
    Column("binlog_file", "file", "file", 16, 12, False, "the binlog file the event is in"),
    Column("flow", "flow", "flow", 4, 4, True, "capture connection number", needs="flow"),
    Column("direction", "dir", "dir", 3, 3, False,
           "-> replica to source, <- source to replica", needs="direction"),
    Column("length", "len", "len", 8, 6, True, "bytes of the event (or packet payload)"),
    Column("seq", "seq", "seq", 3, 3, True, "packet sequence id", needs="seq"),
    Column("semi_sync", "semi", "semi", 10, 4, False,
           "ef: semi-sync header; ef ACK?: the source asks for an ACK; ACK: the reply",
           needs="semi_sync"),
    Column("event_type", "type", "type", 24, 14, False, "event or packet type"),
    Column("table", "schema.table", "table", 20, 12, False, "the table a rows event changes"),
    Column("file_pos", "# at", "# at", 10, 7, True,
           "where the event starts in its binlog file (mysqlbinlog's '# at')"),
    Column("log_pos", "log_pos", "log_pos", 10, 7, True,
           "the header's log_pos: where the next event starts (end_log_pos)"),
    Column("gtid", "gtid", "gtid", 22, 14, False, "the transaction's GTID"),
)
BY_KEY = {c.key: c for c in COLUMNS}

DEFAULTS = {
    "file": ("number", "binlog_file", "time", "length", "event_type", "table", "file_pos",
             "log_pos"),
    "packets": ("number", "frame", "time", "flow", "direction", "length", "seq", "semi_sync",
                "event_type", "table", "file_pos", "log_pos"),
}
#: what a narrow list drops first, per kind (columns not listed are kept)
DROP_ORDER = {
    "file": ("gtid", "length", "table", "binlog_file"),
    "packets": ("gtid", "frame", "seq", "length", "flow", "binlog_file", "log_pos", "file_pos",
                "table", "semi_sync"),
}
#: the summary keeps at least this many cells before a column is dropped
MIN_SUMMARY = 16


def source_kind(source: RowSource) -> str:
    return "packets" if "direction" in source.columns else "file"


def available(source: RowSource) -> list[Column]:
    """The columns this source can fill (the file column only on a set of files)."""
    out = []
    for c in COLUMNS:
        if c.needs is not None and c.needs not in source.columns:
            continue
        if c.key == "binlog_file" and source_kind(source) == "file" \
                and "binlog_file" not in source.columns:
            continue
        out.append(c)
    return out


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "binlogscope" / "tui.json"


def _load() -> dict[str, object]:
    try:
        data = json.loads(config_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def chosen(source: RowSource) -> list[str]:
    """The columns to show for ``source``: the saved choice, else the default (only the ones
    the source fills, in the list's order)."""
    kind = source_kind(source)
    keys = {c.key for c in available(source)}
    saved = _load().get("columns")
    want: object = saved.get(kind) if isinstance(saved, dict) else None
    if not isinstance(want, list) or not all(isinstance(k, str) for k in want):
        want = DEFAULTS[kind]
    picked = set(want) | {"number"}
    return [c.key for c in COLUMNS if c.key in picked and c.key in keys]


def save(source: RowSource, keys: list[str]) -> Path:
    """Save ``keys`` as the column set of this kind of source; returns the file written."""
    path = config_path()
    data = _load()
    cols = data.get("columns")
    if not isinstance(cols, dict):
        cols = {}
    cols[source_kind(source)] = [k for k in keys if k in BY_KEY]
    data["columns"] = cols
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def fit(keys: list[str], widths: dict[str, int], width: int, kind: str) -> list[str]:
    """Drop columns (in :data:`DROP_ORDER`) until the summary gets :data:`MIN_SUMMARY` cells
    of ``width``; ``widths`` holds each key's width (a separator cell follows each)."""
    keys = list(keys)
    for victim in DROP_ORDER[kind]:
        used = sum(widths[k] + 1 for k in keys)
        if width - used >= MIN_SUMMARY:
            break
        if victim in keys:
            keys.remove(victim)
    return keys


__all__ = ["BY_KEY", "COLUMNS", "DEFAULTS", "Column", "available", "chosen", "config_path",
           "fit", "save", "source_kind"]
