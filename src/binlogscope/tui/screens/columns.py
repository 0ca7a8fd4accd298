"""The column chooser (``C``): every column the source can fill, Space toggles, Enter applies and
saves the set for this kind of source (binlog files / packet streams), Esc leaves it as it was."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, SelectionList
from textual.widgets.selection_list import Selection

from binlogscope.inspector.columns import available
from binlogscope.inspector.source import RowSource


class ColumnScreen(ModalScreen[list[str] | None]):
    """Returns the chosen column keys (in the list's order), or None (Esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Cancel"),
        Binding("enter", "apply", "Apply and save", priority=True),
    ]
    DEFAULT_CSS = """
    ColumnScreen { align: center middle; }
    ColumnScreen > Vertical { width: 90%; max-width: 110; height: auto; max-height: 90%;
                              border: round $primary; background: $surface; }
    ColumnScreen SelectionList { height: auto; max-height: 24; }
    """

    def __init__(self, source: RowSource, shown: list[str]) -> None:
        super().__init__()
        self.source = source
        self.shown = shown

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Columns: Space shows / hides, Enter applies and saves, Esc cancels")
            yield SelectionList[str](*(
                Selection(f"{c.title:<13} {c.doc}", c.key, c.key in self.shown,
                          disabled=c.key == "number")
                for c in available(self.source)))

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def action_apply(self) -> None:
        self.dismiss(list(self.query_one(SelectionList).selected))

    def action_close(self) -> None:
        self.dismiss(None)
