"""Phase strip: connect -> auth -> setup -> register -> dump -> stream, and why each step is done.

The first line shows where the session is now (highlighted; earlier phases done, later ones to
come) and underlines the phase of the selected row; the second line says why a replica sends the
selected row's setup step (``SetupStep.why``), or what the phase is about.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.widgets import Static

from binlogscope.inspector.source import PHASE_DOCS, PHASES


class PhaseStrip(Static):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "phase-strip--done", "phase-strip--now", "phase-strip--todo", "phase-strip--row",
        "phase-strip--why",
    }

    def show(self, now: int, at_row: int, step: Any = None) -> None:
        """``step``: a SetupStep-like object (phase, what, why) or None."""
        t = Text(no_wrap=True, overflow="ellipsis")
        for i, name in enumerate(PHASES):
            if i:
                t.append(" > ", style="dim")
            cls = ("phase-strip--now" if i == now else "phase-strip--done" if i < now
                   else "phase-strip--todo")
            style = self.get_component_rich_style(cls)
            if i == at_row and at_row != now:
                style = style + self.get_component_rich_style("phase-strip--row")
            t.append(f" {name} " if i == now else name, style=style)
        t.append("\n")
        why_style = self.get_component_rich_style("phase-strip--why")
        name = PHASES[at_row] if 0 <= at_row < len(PHASES) else ""
        if step is not None and getattr(step, "phase", None) == name and name != "stream":
            t.append(f"{step.what}: ", style="bold")
            t.append(str(step.why), style=why_style)
        elif name:
            t.append(f"{name}: ", style="bold")
            t.append(PHASE_DOCS[name], style=why_style)
        key = (t.plain, now, at_row)
        if key != getattr(self, "_last", None):
            self._last = key
            self.update(t)
