"""The binlogscope TUI application: one source, one inspector screen (screens own handlers)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.driver import Driver

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

    def get_driver_class(self) -> type[Driver]:
        """Textual's choice, except that its Linux terminal driver is the one that survives a
        terminal that hangs up (tui/driver.py)."""
        cls = super().get_driver_class()
        if cls.__name__ == "LinuxDriver":  # (not imported where there is no such terminal)
            from textual.drivers.linux_driver import LinuxDriver

            from binlogscope.tui.driver import HangupSafeDriver

            if cls is LinuxDriver:
                return HangupSafeDriver
        return cls

    def on_mount(self) -> None:
        self.push_screen(MainScreen(self.source, self.initial_filter, tour=self.tour,
                                    teach=self.teach))
