"""The binlogscope TUI application: one source, one inspector screen (screens own handlers)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from binlogscope.inspector.source import RowSource
from binlogscope.inspector.view import RowFilter
from binlogscope.tui.screens.main import MainScreen


class BinlogScopeApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "binlogscope"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, source: RowSource, initial_filter: RowFilter | None = None, *,
                 tour: bool = False, teach: str | None = None) -> None:
        super().__init__()
        self.source = source
        self.initial_filter = initial_filter
        self.tour = tour  # start the guided tour (demo --tour)
        self.teach = teach  # the demo's own password (demo --tour --teach)

    def on_mount(self) -> None:
        self.push_screen(MainScreen(self.source, self.initial_filter, tour=self.tour,
                                    teach=self.teach))
