"""The selected row's cross-links (ACK <-> its event with the latency, rows event -> TABLE_MAP);
``L`` follows the first one. Hidden when the row has none."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from binlogscope.inspector.links import Link


class LinkBar(Static):
    DEFAULT_CSS = """
    LinkBar { height: auto; max-height: 2; padding: 0 1; display: none; }
    LinkBar.-shown { display: block; }
    """

    def show_links(self, links: list[Link]) -> None:
        self.set_class(bool(links), "-shown")
        t = Text(no_wrap=True, overflow="ellipsis")
        for k, link in enumerate(links):
            if k:
                t.append("  |  ")
            t.append("→ " if link.row is not None else "· ", style="bold")
            t.append(link.text, style="bold" if link.row is not None else "dim")
        if any(link.row is not None for link in links):
            t.append("   (L follows)", style="italic")
        self.update(t)
