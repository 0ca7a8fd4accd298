"""One-line prompt for the filter, search, go-to and export commands (hidden until used).

Each mode keeps a history of what was submitted: up / down in the prompt walk it. The text the
prompt opens with (the current filter, a proposed file name) is selected: typing replaces it,
Backspace then Enter submits an empty line (for the filter: every row).
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
    "filter": ("Filter", "empty: every row; type:WRITE table:db\\.t gtid:0-1-7 pos>N flow:1 "
                         "semi:ack time>HH:MM errors TEXT (? help)"),
    "search": ("Search", "text in type, table or summary (n / N: next / previous)"),
    "goto": ("Go to", "1234 (position in this file), FILE:1234 (where an event starts), "
                      "end:FILE:1234 (the event ending there: end_log_pos), #57 (row 57), "
                      "0-1-42 or uuid:42 (GTID)"),
    "export": ("Export view to", "NAME.jsonl (JSON lines), NAME.pcapng (Wireshark), "
                                 "NAME.parquet or DIR/ (Parquet)"),
    "export_event": ("Export event to", "NAME.json (the tree) or NAME.bin (the raw bytes)"),
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
    PromptBar > Input, PromptBar > Input:focus {
        width: 1fr; height: 1; border: none; padding: 0;
    }
    """
    # ``Input:focus`` (Textual's default ``border: tall``) out-ranks a plain ``PromptBar > Input``
    # rule: without the ``:focus`` selector here the focused input kept a 2-row border inside
    # this 1-row bar and its text area was 0 rows high - nothing typed was ever visible

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode = "filter"
        self.history: dict[str, list[str]] = {}
        self._at = 0  # position in the mode's history; len(history) = the text being edited
        self._draft = ""

    def compose(self) -> ComposeResult:
        yield Label("Filter")
        inp = Input(id="prompt-input")
        inp.cursor_blink = False  # a steady cursor: the hint's first letter stays readable
        yield inp

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
