"""Field help: what the selected field is, where its bytes are and what it means (Node.doc)."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from binlogscope.inspector.doc_links import links_for
from binlogscope.wire.node import Node


class FieldHelp(Static):
    def show_node(self, node: Node | None, type_name: str = "") -> None:
        """``type_name``: the row's event/packet type, for the documentation and source
        links (clickable where the terminal supports links; ``D`` lists them)."""
        if node is None:
            self.update("")
            return
        t = Text()
        t.append(node.name, style="bold")
        if node.wire:
            t.append(f"  {node.wire}", style="italic")
        plural = "s" if node.length != 1 else ""
        t.append(f"  @{node.offset}..{node.end} ({node.length} byte{plural})")
        value = node.text
        if value:
            t.append("  = ")
            t.append(value if len(value) <= 120 else value[:119] + "…")
        if node.doc:
            t.append("\n")
            t.append(node.doc, style="italic")
        if node.error:
            t.append("\n")
            t.append(f"ERROR {node.error}", style="bold red")
        docs = links_for(type_name, node.name)
        if docs:
            t.append("\nread: ", style="dim")
            for k, d in enumerate(docs[:2]):
                if k:
                    t.append(" · ", style="dim")
                t.append(d.title, style=Style(link=d.url, underline=True))
            t.append(f"  (D: {'all ' + str(len(docs)) if len(docs) > 2 else 'the'} links)",
                     style="dim")
        self.update(t)
