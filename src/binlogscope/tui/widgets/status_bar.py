"""Status bar: source, server version, checksum, current position, events, errors, filter."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from binlogscope.tui.source import SourceInfo


class StatusBar(Static):
    def show(self, info: SourceInfo, position: str, shown: int, filtered: bool,
             bookmarks: int) -> None:
        t = Text(no_wrap=True, overflow="ellipsis")
        # most useful first: a narrow terminal cuts the end off
        t.append(position or info.label.rsplit("/", 1)[-1], style="bold")
        events = f"{info.events:,} events"
        if not info.done:
            events += " (indexing" + (f" {info.progress:.0%}" if info.progress is not None
                                      else "") + ")"
        t.append(f" | {events}")
        if filtered:
            t.append(f" | {shown:,} shown", style="bold")
        if info.errors:
            t.append(f" | {info.errors} error{'s' if info.errors != 1 else ''}",
                     style="bold red")
        if info.fatal:
            t.append(f" | {info.fatal}", style="bold red")
        if bookmarks:
            t.append(f" | {bookmarks} marked")
        if info.server_version:
            t.append(f" | server {info.server_version}")
        if info.checksum:
            t.append(f" | checksum {info.checksum}")
        key = (t.plain, bool(info.errors or info.fatal))
        if key != getattr(self, "_last", None):
            self._last = key
            self.update(t)
