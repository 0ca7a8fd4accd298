"""Status bar: source, server version, checksum, current position, events, errors, filter.

For a live session or capture (``info.extra`` has a ``state``) the live counters come first:
state (live / PAUSED / ended, follow), the packets a paused live capture holds, the binlog
file:pos being fetched, events/s, ACKs sent, heartbeats, the store (fetched, shown, acked, waiting),
errors and reconnects.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from binlogscope.inspector.source import SourceInfo


class StatusBar(Static):
    def show(self, info: SourceInfo, position: str, shown: int, filter_spec: str,
             bookmarks: int, follow: bool | None = None, task: str = "") -> None:
        """``filter_spec``: the active filter's text ("" = none), always shown when set;
        ``task``: what a go-to is doing before it goes (first: a narrow terminal keeps it)."""
        t = Text(no_wrap=True, overflow="ellipsis")
        if task:
            t.append(task, style="bold reverse")
            t.append(" | ")
        x = dict(info.extra)
        state = x.pop("state", None)
        if state is not None:
            self._live(t, info, x, state, follow)
        # most useful first: a narrow terminal cuts the end off
        t.append(position or info.label.rsplit("/", 1)[-1], style="bold")
        if filter_spec:
            t.append(f" | filter: {filter_spec} ({shown:,} shown)", style="bold")
        if info.rows is None:
            events = f"{info.events:,} events"
        else:  # a packet stream: rows (packets, notes) and the binlog events among them
            events = f"{info.rows:,} rows, {info.events:,} binlog events"
        if not info.done and state is None:
            events += " (indexing" + (f" {info.progress:.0%}" if info.progress is not None
                                      else "") + ")"
        t.append(f" | {events}")
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
        for k, v in x.items():
            t.append(f" | {k} {v}")
        if state is not None:
            t.append(f" | {info.label}")
        key = (t.plain, bool(info.errors or info.fatal))
        if key != getattr(self, "_last", None):
            self._last = key
            # one line of fixed height (app.tcss #status): new text never changes its size,
            # so no layout of the screen (a full one cost ~50 ms at every tick while indexing)
            self.update(t, layout=False)

    @staticmethod
    def _live(t: Text, info: SourceInfo, x: dict[str, str], state: str,
              follow: bool | None) -> None:
        if state == "PAUSED":
            t.append(" PAUSED ", style="bold reverse yellow")
        elif state == "live":
            t.append(" LIVE ", style="bold reverse green")
        else:
            t.append(f" {state} ", style="bold reverse")
        if follow is not None:
            t.append(" follow" if follow else " scroll", style="bold" if follow else "dim")
        held = x.pop("held", None)
        if held is not None:
            t.append(f" | held {held}", style="bold yellow")
        binlog = x.pop("binlog", None)
        if binlog:
            t.append(f" | {binlog}", style="bold")
        for k in ("events/s", "ACKs", "heartbeats", "store", "reconnects"):
            v = x.pop(k, None)
            if v is not None:
                t.append(f" | {k} {v}", style="bold yellow" if k == "reconnects" else "")
        t.append(" | ")
