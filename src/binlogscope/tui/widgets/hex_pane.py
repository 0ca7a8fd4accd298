"""Hex pane: offset | hex | ASCII of one event, with the selected field highlighted.

Offsets are absolute (file positions for binlogs). The cursor is a byte; moving it posts
:class:`HexCursorMoved` so the screen can select the field that owns the byte (``Node.at``).
"""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import reactive
from textual.strip import Strip

from binlogscope.tui.messages import HexCursorMoved
from binlogscope.tui.widgets.styled import StyledScrollView


class HexPane(StyledScrollView, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "move(-1)", "Byte left", show=False),
        Binding("right,l", "move(1)", "Byte right", show=False),
        Binding("up,k", "move_line(-1)", "Line up", show=False),
        Binding("down,j", "move_line(1)", "Line down", show=False),
        Binding("pageup", "move_page(-1)", show=False),
        Binding("pagedown", "move_page(1)", show=False),
        Binding("home", "edge(0)", show=False),
        Binding("end", "edge(1)", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "hex-pane--offset", "hex-pane--highlight", "hex-pane--cursor", "hex-pane--dim",
    }
    DEFAULT_CSS = """
    HexPane { overflow-x: hidden; overflow-y: auto; }
    """

    cursor: reactive[int] = reactive(0, init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data = b""
        self.base = 0
        self.highlight: tuple[int, int] = (0, 0)
        #: absolute [start, end) spans of secret bytes: drawn as ``**`` / ``*``
        self.masked: tuple[tuple[int, int], ...] = ()

    # ----- data
    def load(self, data: bytes, base: int, masked: tuple[tuple[int, int], ...] = ()) -> None:
        """Show ``data`` (absolute offsets from ``base``); bytes in ``masked`` spans never show."""
        self.data = data
        self.base = base
        self.masked = masked
        self.highlight = (base, base)
        self.set_reactive(HexPane.cursor, base)
        self._resize_virtual()
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    def clear(self) -> None:
        self.load(b"", 0)

    @property
    def per_line(self) -> int:
        w = self.scrollable_content_region.width or self.size.width
        ow = self._offset_width()
        for n in (16, 8, 4):
            if ow + 2 + n * 3 + 1 + n <= w:
                return n
        return 4

    def _offset_width(self) -> int:
        return max(len(str(self.base + len(self.data))), 4)

    def _resize_virtual(self) -> None:
        lines = (len(self.data) + self.per_line - 1) // self.per_line
        self.virtual_size = Size(self.size.width, lines)

    def set_highlight(self, start: int, end: int) -> None:
        """Highlight absolute offsets [start, end) and bring them into view."""
        self.highlight = (start, end)
        if not (start <= self.cursor < max(end, start + 1)):
            self.set_reactive(HexPane.cursor, max(self.base, start))
        self._scroll_to_offset(start)
        self.refresh()

    # ----- cursor
    def validate_cursor(self, value: int) -> int:
        if not self.data:
            return self.base
        return max(self.base, min(value, self.base + len(self.data) - 1))

    def watch_cursor(self, value: int) -> None:
        self._scroll_to_offset(value)
        self.refresh()
        self.post_message(HexCursorMoved(value))

    def _scroll_to_offset(self, offset: int) -> None:
        line = (offset - self.base) // self.per_line
        h = max(self.scrollable_content_region.height, 1)
        top = round(self.scroll_y)
        if line < top:
            self.scroll_to(y=line, animate=False, immediate=True)
        elif line >= top + h:
            self.scroll_to(y=line - h + 1, animate=False, immediate=True)

    def action_move(self, delta: int) -> None:
        self.cursor += delta

    def action_move_line(self, delta: int) -> None:
        self.cursor += delta * self.per_line

    def action_move_page(self, delta: int) -> None:
        self.cursor += delta * self.per_line * max(self.scrollable_content_region.height - 1, 1)

    def action_edge(self, end: int) -> None:
        self.cursor = self.base + (len(self.data) - 1 if end else 0)

    def on_click(self, event: events.Click) -> None:
        off = event.get_content_offset(self)
        if off is None or not self.data:
            return
        self.focus()
        n = self.per_line
        ow = self._offset_width()
        x = off.x - (ow + 2)
        ascii_x = off.x - (ow + 2 + n * 3 + 1)
        if 0 <= ascii_x < n:
            col = ascii_x
        elif 0 <= x < n * 3:
            col = x // 3
        else:
            return
        line = round(self.scroll_y) + off.y
        self.cursor = self.base + line * n + col

    def on_resize(self, event: events.Resize) -> None:
        self._resize_virtual()

    # ----- painting
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        n = self.per_line
        line = round(self.scroll_y) + y
        start = line * n
        base_style = self._style("")
        if start >= len(self.data):
            return Strip.blank(width, base_style)
        chunk = self.data[start : start + n]
        ow = self._offset_width()
        off_style = self._style("hex-pane--offset")
        hi = self._style("hex-pane--highlight")
        cur = self._style("hex-pane--cursor")
        dim = self._style("hex-pane--dim")
        h0, h1 = self.highlight
        masked = self.masked
        segs: list[Segment] = [Segment(f"{self.base + start:>{ow}}  ", off_style)]
        asc: list[Segment] = []
        for i, b in enumerate(chunk):
            a = self.base + start + i
            style: Style = base_style
            if a == self.cursor and self.has_focus:
                style = cur
            elif h0 <= a < h1:
                style = hi
            elif a == self.cursor:
                style = cur
            sep_style = hi if h0 <= a < h1 and h0 <= a + 1 < h1 and i + 1 < len(chunk) else (
                base_style)
            secret = bool(masked) and any(lo <= a < hi for lo, hi in masked)
            segs.append(Segment("**" if secret else f"{b:02x}", style))
            segs.append(Segment(" ", sep_style))
            ch = "*" if secret else chr(b) if 0x20 <= b < 0x7F else "."
            asc.append(Segment(ch, style if ch != "." or style is not base_style else dim))
        pad = (n - len(chunk)) * 3
        segs.append(Segment(" " * (pad + 1), base_style))
        segs.extend(asc)
        return Strip(segs).adjust_cell_length(width, base_style)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
