"""The conversations view (``S``): one entry per connection (or binlog file) with what
``pcap --summary`` says of it; Enter filters the list to it, Esc closes."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from binlogscope.inspector.conversations import Conversation


class ConversationScreen(ModalScreen[str | None]):
    """Returns the filter of the chosen conversation (``flow:1``), or None (Esc)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,S", "close", "Close")]
    DEFAULT_CSS = """
    ConversationScreen { align: center middle; }
    ConversationScreen > Vertical { width: 95%; height: 90%; border: round $primary;
                                    background: $surface; }
    ConversationScreen OptionList { height: 1fr; }
    """

    def __init__(self, convs: list[Conversation]) -> None:
        super().__init__()
        self.convs = convs

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"{len(self.convs)} conversation(s): Enter shows only its rows, "
                        "Esc closes")
            opts = []
            for c in self.convs:
                lines = c.lines()
                t = Text(lines[0], style="bold")
                for line in lines[1:]:
                    t.append("\n" + line)
                opts.append(Option(t, id=c.filter))
            yield OptionList(*opts)

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_close(self) -> None:
        self.dismiss(None)
