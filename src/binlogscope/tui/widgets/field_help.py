"""Field help: what the selected field is, where its bytes are and what it means (Node.doc)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from binlogscope.wire.node import Node


class FieldHelp(Static):
    def show_node(self, node: Node | None) -> None:
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
        self.update(t)
