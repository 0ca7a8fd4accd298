"""The bookmark list (``m``): every marked row with its type and summary; Enter jumps to it."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from binlogscope.inspector.source import RowSource


class BookmarkScreen(ModalScreen[int | None]):
    """Returns the chosen source row, or None (Esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,m", "close", "Close")]
    DEFAULT_CSS = """
    BookmarkScreen { align: center middle; }
    BookmarkScreen > Vertical { width: 90%; height: 70%; border: round $primary; }
    BookmarkScreen OptionList { height: 1fr; }
    """

    def __init__(self, source: RowSource, rows: list[int], current: int | None) -> None:
        super().__init__()
        self.source = source
        self.rows = rows
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"{len(self.rows)} bookmark(s): Enter jumps, Esc closes")
            opts = []
            for r in self.rows:
                row = self.source.row(r)
                where = self.source.position(r)
                opts.append(Option(f"#{row.number:<7} {row.event_type:<26} {where:<28} "
                                   f"{row.summary}", id=str(r)))
            yield OptionList(*opts)

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        if self.current in self.rows:
            ol.highlighted = self.rows.index(self.current)
        ol.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))

    def action_close(self) -> None:
        self.dismiss(None)
