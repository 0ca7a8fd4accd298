"""Status bar: source, server version, checksum, current position, events, errors, filter."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from binlogscope.tui.source import SourceInfo


class StatusBar(Static):
    def show(self, info: SourceInfo, position: str, shown: int, filtered: bool,
             bookmarks: int) -> None:
        t = Text(no_wrap=True, overflow="ellipsis")
        label = info.label.rsplit("/", 1)[-1]
        t.append(label, style="bold")
        if info.server_version:
            t.append(f" | {info.server_version}")
        if info.checksum:
            t.append(f" | checksum {info.checksum}")
        if position:
            t.append(f" | {position}")
        events = f"{info.events:,} events"
        if not info.done:
            events += " (indexing" + (f" {info.progress:.0%}" if info.progress is not None
                                      else "") + ")"
        t.append(f" | {events}")
        if filtered:
            t.append(f" | {shown:,} shown", style="bold")
        if bookmarks:
            t.append(f" | {bookmarks} marked")
        if info.errors:
            t.append(f" | {info.errors} error{'s' if info.errors != 1 else ''}",
                     style="bold red")
        if info.fatal:
            t.append(f" | {info.fatal}", style="bold red")
        key = (t.plain, bool(info.errors or info.fatal))
        if key != getattr(self, "_last", None):
            self._last = key
            self.update(t)
