"""One-line prompt for the filter, search, go-to and export commands (hidden until used).

Each mode keeps a history of what was submitted: up / down in the prompt walk it.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Input, Label

from binlogscope.tui.messages import PromptClosed, PromptSubmitted

PROMPTS = {
    "filter": ("Filter", "type:WRITE table:shop\\.orders gtid:0-1-7 file: pos>N flow:1 seq:0 "
                         "semi:ack time>HH:MM:SS errors text  (empty = all, up/down: history)"),
    "search": ("Search", "text in type, table or summary (n / N: next / previous)"),
    "goto": ("Go to", "file position (e.g. 1234) or #row number"),
    "export": ("Export view to", "file name for JSON lines; NAME.parquet or DIR/ for Parquet"),
    "export_event": ("Export event to", "file name for the event's tree as JSON"),
}


class PromptBar(Horizontal):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", show=True),
        Binding("up", "history(-1)", "Older", show=False),
        Binding("down", "history(1)", "Newer", show=False),
    ]
    DEFAULT_CSS = """
    PromptBar { height: 1; display: none; }
    PromptBar.-open { display: block; }
    PromptBar > Label { width: auto; padding: 0 1; }
    PromptBar > Input { width: 1fr; height: 1; border: none; padding: 0; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode = "filter"
        self.history: dict[str, list[str]] = {}
        self._at = 0  # position in the mode's history; len(history) = the text being edited
        self._draft = ""

    def compose(self) -> ComposeResult:
        yield Label("Filter")
        yield Input(id="prompt-input")

    def open(self, mode: str, value: str = "") -> None:
        self.mode = mode
        title, hint = PROMPTS[mode]
        self.query_one(Label).update(f"{title}:")
        inp = self.query_one(Input)
        inp.placeholder = hint
        inp.value = value
        inp.cursor_position = len(value)
        self._at = len(self.history.get(mode, ()))
        self._draft = value
        self.add_class("-open")
        inp.focus()

    def action_history(self, step: int) -> None:
        past = self.history.get(self.mode, [])
        at = max(0, min(self._at + step, len(past)))
        if at == self._at:
            return
        inp = self.query_one(Input)
        if self._at == len(past):
            self._draft = inp.value
        self._at = at
        inp.value = past[at] if at < len(past) else self._draft
        inp.cursor_position = len(inp.value)

    def action_close(self) -> None:
        self.remove_class("-open")
        self.post_message(PromptClosed(self.mode))

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.remove_class("-open")
        value = event.value.strip()
        past = self.history.setdefault(self.mode, [])
        if value and (not past or past[-1] != value):
            past.append(value)
        self.post_message(PromptSubmitted(self.mode, event.value))
