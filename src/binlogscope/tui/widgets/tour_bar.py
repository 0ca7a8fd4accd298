"""The guided tour (``demo --tour``): the step's title and explanation under the panes; ``]`` next
step, ``[`` back, ``T`` ends it. The steps are in :mod:`binlogscope.inspector.tour`."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from binlogscope.inspector.source import RowSource
from binlogscope.inspector.tour import STEPS, TourStep, find_step_row, native_password_walkthrough


class TourBar(Static):
    DEFAULT_CSS = """
    TourBar { height: auto; max-height: 9; padding: 0 1; display: none;
              background: $accent 30%; }
    TourBar.-on { display: block; }
    /* the teaching switch's recomputation (about 9 lines at 80 columns) is the point of its
       step: the bar grows for it (at 9 lines its last lines and the keys were cut off) */
    TourBar.-teaching { max-height: 17; }
    """

    def __init__(self, source: RowSource, *, teach: str | None = None,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = source
        self.teach = teach  # the demo's own password: the auth proof recomputed by hand
        self.steps: tuple[TourStep, ...] = STEPS
        self.at = -1  # the step shown (-1: not started)
        self.rows: list[int] = []  # the row of each step shown so far
        self.waiting = False

    @property
    def on(self) -> bool:
        return self.has_class("-on")

    def start(self) -> None:
        self.add_class("-on")
        self.at, self.rows, self.waiting = -1, [], False

    def stop(self) -> None:
        self.remove_class("-on", "-teaching")
        if self.is_mounted:
            self.screen.remove_class("-teaching")

    def step(self, direction: int, *, user: bool = True) -> tuple[int, str | None] | None:
        """Go to the next (1) or previous (-1) step: (its row, the field to select), or None
        (the first step, the end, or the row has not come yet: the bar says so). ``user``:
        the key was pressed - a step still waiting for its row is skipped (a session may never
        send one, e.g. no semi-sync); new rows retry with ``user=False``."""
        if direction < 0:
            if self.at <= 0:
                return None
            self.at -= 1
            del self.rows[self.at + 1:]
            self._show()
            return self.rows[self.at], self.steps[self.at].field
        nxt = self.at + 1
        if user and self.waiting:
            nxt += 1  # the person moves on: skip the step whose row has not come
            self.at += 1
            self.rows.append(self.rows[-1] if self.rows else -1)
        after = self.rows[-1] if self.rows else -1
        while nxt < len(self.steps):
            row = find_step_row(self.source, self.steps[nxt], after)
            if row is not None:
                self.at, self.waiting = nxt, False
                self.rows.append(row)
                self._show()
                return row, self.steps[nxt].field
            if self.source.info().done:
                nxt += 1  # a finished source: this session has no such row, skip the step
                continue
            self.waiting = True
            self._show(waiting=self.steps[nxt])
            return None
        self._show(done=True)
        return None

    def _show(self, waiting: TourStep | None = None, done: bool = False) -> None:
        t = Text()
        teaching = False
        n = len(self.steps)
        if done:
            t.append("Tour: the end. ", style="bold")
            t.append("Every row can be explored the same way: select it, walk its fields; "
                     "? lists the keys. T closes the tour.")
        elif waiting is not None:
            t.append(f"Tour: waiting for '{waiting.title}' - its row has not arrived yet "
                     "(] skips this step)", style="italic")
        else:
            st = self.steps[self.at]
            teaching = bool(self.teach) and st.teach_text is not None
            t.append(f"Tour {self.at + 1}/{n}: {st.title}", style="bold")
            if teaching:
                t.append(" - teaching switch (the demo's own password)", style="bold")
                t.append(f"\n{st.teach_text}")
                t.append("\n" + self._walkthrough(), style="italic")
            else:
                t.append(f"\n{st.text}")
        t.append("\n] next  [ back  T ends the tour", style="dim")
        self.set_class(teaching, "-teaching")
        if self.is_mounted:  # the field help gives its rows to the recomputation meanwhile
            self.screen.set_class(teaching, "-teaching")
        self.update(t)

    def _walkthrough(self) -> str:
        src = self.source
        here = self.rows[self.at]
        greet = next((i for i in range(here - 1, -1, -1)
                      if src.row(i).event_type == "HANDSHAKE_V10"), None)
        redecode = getattr(src, "redecoded", None)
        if greet is None or redecode is None or self.teach is None:
            return "(the greeting's scramble is not available here)"
        g, r = redecode(greet), redecode(here)
        scramble = getattr(getattr(g, "value", None), "auth_plugin_data", b"")[:20]
        sent = getattr(getattr(r, "value", None), "auth_response", b"")
        if not scramble or not sent:
            return "(the greeting's scramble is not available here)"
        return native_password_walkthrough(scramble, self.teach, sent)
