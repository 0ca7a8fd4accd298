"""The packet/event list: a virtual list (Line API) over a :class:`View`.

Only the visible lines are ever rendered; a row is built from the source's compact columns when
its line is painted, so a million-event file costs nothing here.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import reactive
from textual.strip import Strip

from binlogscope.inspector.columns import BY_KEY, COLUMNS, chosen, fit, source_kind
from binlogscope.inspector.source import KINDS, Row, format_seconds, format_time
from binlogscope.inspector.view import View
from binlogscope.tui.messages import FollowRequested, RowHighlighted
from binlogscope.tui.widgets.styled import StyledScrollView

_COLS_NARROW = 100
#: the time column's modes (``t`` cycles): UTC time, seconds since the first row, seconds since
#: the previous shown row (Wireshark's "delta displayed": semi-sync ACK latency)
TIME_MODES = ("absolute", "relative", "delta")


def _fit(text: str, width: int, right: bool = False, keep_end: bool = False) -> str:
    """``text`` cut or padded to ``width`` cells; ``keep_end``: cut at the front (a binlog
    file name differs in its end: 'mysql-bin.000001' narrow is '…-bin.000001', not
    'mysql-bin.0…' for every file of a set)."""
    if cell_len(text) > width and keep_end:
        text = "…" + text[-(width - 1):] if width > 1 else text[:width]
        while cell_len(text) > width:
            text = "…" + text[2:]
    elif cell_len(text) > width:
        text = text[: max(width - 1, 0)] + "…" if width > 0 else ""
        while cell_len(text) > width:
            text = text[:-2] + "…"
    pad = " " * (width - cell_len(text))
    return pad + text if right else text + pad


class EventList(StyledScrollView, can_focus=True):
    """One line per row; the first line is a fixed column header."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "event-list--header", "event-list--cursor", "event-list--cursor-blurred",
        "event-list--bookmark", *(f"event-list--kind-{k}" for k in KINDS),
    }

    DEFAULT_CSS = """
    EventList { overflow-x: hidden; overflow-y: scroll; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    def __init__(self, view: View, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view = view
        self.bookmarks: set[int] = set()
        self.show_optional: frozenset[str] = view.source.columns
        #: the columns shown (C chooses them; saved per kind of source)
        self.column_keys: list[str] = chosen(view.source)
        self._last_posted: tuple[int, int] | None = None
        self._sized_rows = -1
        self.time_mode = "absolute"

    # ----- data
    @property
    def row_count(self) -> int:
        return len(self.view)

    def set_view(self, view: View, keep_row: int | None = None) -> None:
        """Show another view; keep the cursor on ``keep_row`` (a source row) when possible."""
        self.view = view
        self.rows_changed()
        if len(view):
            self.cursor = view.nearest(keep_row) if keep_row is not None else 0
        else:
            self._last_posted = None
            self.refresh()

    def rows_changed(self, force: bool = True) -> None:
        """The view grew: update the scroll range and repaint.

        With ``force=False`` (the periodic tick while indexing) a full list only gets its
        scrollbar range updated, and only when it grew by a tenth or more.
        """
        n = len(self.view)
        height = self.scrollable_content_region.height
        full = self._sized_rows >= round(self.scroll_y) + height
        if force or not full or n - self._sized_rows > max(self._sized_rows // 10, 1000):
            self._sized_rows = n
            self.virtual_size = Size(self.size.width, n + 1)
            if force or not full:
                self.refresh()
        if self._last_posted is None and len(self.view):
            self.cursor = min(self.cursor, len(self.view) - 1)

    @property
    def current_row(self) -> int | None:
        if not len(self.view):
            return None
        return self.view.row_index(min(self.cursor, len(self.view) - 1))

    def move_to_row(self, row_index: int) -> None:
        v = self.view.view_index(row_index)
        self.cursor = v if v is not None else self.view.nearest(row_index)

    # ----- cursor
    def validate_cursor(self, value: int) -> int:
        n = len(self.view)
        return 0 if n == 0 else max(0, min(value, n - 1))

    def watch_cursor(self, value: int) -> None:
        if value >= self._sized_rows:
            self.rows_changed()
        page = max(self.scrollable_content_region.height - 1, 1)
        top = round(self.scroll_y)
        if value < top:
            self.scroll_to(y=value, animate=False, immediate=True)
        elif value >= top + page:
            self.scroll_to(y=value - page + 1, animate=False, immediate=True)
        self.refresh()
        if len(self.view):
            key = (value, self.view.row_index(value))
            if key != self._last_posted:
                self._last_posted = key
                self.post_message(RowHighlighted(*key))

    def action_cursor(self, delta: int) -> None:
        if delta < 0:
            self.post_message(FollowRequested(False))
        self.cursor += delta

    def action_page(self, direction: int) -> None:
        if direction < 0:
            self.post_message(FollowRequested(False))
        page = max(self.scrollable_content_region.height - 1, 1)
        self.cursor += direction * page

    def action_edge(self, end: int) -> None:
        self.cursor = len(self.view) - 1 if end else 0
        self.post_message(FollowRequested(bool(end)))

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        self.post_message(FollowRequested(False))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        self.focus()
        self.post_message(FollowRequested(False))
        self.cursor = round(self.scroll_y) + offset.y - 1

    def on_resize(self, event: events.Resize) -> None:
        self._sized_rows = len(self.view)
        self.virtual_size = Size(event.size.width, self._sized_rows + 1)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # ----- painting
    def _wide(self, width: int) -> bool:
        """Wide columns (full time, type names) when the summary still gets room."""
        packets = "direction" in self.show_optional
        extra = 16 if "binlog_file" in self.column_keys else 0
        return width >= _COLS_NARROW + (40 if packets else 0) + extra

    def set_columns(self, keys: list[str]) -> None:
        """Show these columns (keys of :data:`~binlogscope.inspector.columns.COLUMNS`)."""
        self.column_keys = [c.key for c in COLUMNS if c.key in set(keys) | {"number"}]
        self.refresh()

    def cycle_time_mode(self) -> str:
        """absolute -> relative to the first row -> delta to the previous shown row -> ..."""
        self.time_mode = TIME_MODES[(TIME_MODES.index(self.time_mode) + 1) % len(TIME_MODES)]
        self.refresh()
        return self.time_mode

    def _time_column(self, wide: bool) -> tuple[str, str, int, bool]:
        usec = "wire_time" in self.show_optional
        if self.time_mode == "relative":
            return ("time", "rel. time (s)" if wide else "rel. time", 13, True)
        if self.time_mode == "delta":
            return ("time", "delta (s)", 13, True)
        if usec:
            return ("time", "time (UTC)" if wide else "time", 26 if wide else 15, False)
        return ("time", "time (UTC)" if wide else "time", 19 if wide else 8, False)

    def _columns(self, width: int) -> list[tuple[str, str, int, bool]]:
        """(key, title, width, right-aligned) of the chosen columns that fit ``width`` (a
        narrow list drops the least needed first); summary takes the rest."""
        src = self.view.source
        n = max(len(src), 1)
        wide = self._wide(width)
        out: dict[str, tuple[str, str, int, bool]] = {}
        for key in self.column_keys:
            col = BY_KEY[key]
            if key == "number":
                out[key] = (key, col.title, max(len(str(n)), 3) + 1, True)
            elif key == "frame":
                last = src.row(n - 1).frame if len(src) else None
                out[key] = (key, col.title, max(len(str(last or 0)), 5), True)
            elif key == "time":
                out[key] = self._time_column(wide)
            else:
                out[key] = (key, col.title if wide else col.short,
                            col.width if wide else col.narrow, col.right)
        keep = fit(list(out), {k: v[2] for k, v in out.items()}, width, source_kind(src))
        return [out[k] for k in keep]

    def _time_cell(self, row: Row, vi: int, wide: bool) -> str:
        if self.time_mode == "absolute":
            return format_time(row.time, wide, "wire_time" in self.show_optional)
        if row.time is None:
            return ""
        if self.time_mode == "relative":
            src = self.view.source
            first = src.row(0).time if len(src) else None
            return format_seconds(None if first is None else row.time - first)
        if vi == 0:
            return format_seconds(0.0)
        prev = self.view.source.row(self.view.row_index(vi - 1)).time
        return format_seconds(None if prev is None else row.time - prev)

    def _cell(self, row: Row, key: str, wide: bool) -> str:
        if key == "number":
            return str(row.number)
        if key == "length":
            return str(row.length)
        if key == "semi_sync" and not wide and row.semi_sync:
            # narrow: "ef", "ef?" (ACK requested), "ACK" (the position is in the summary)
            return {"ef ACK?": "ef?"}.get(row.semi_sync, row.semi_sync.split(" ")[0])
        if key == "event_type":
            t = row.event_type
            return t if wide else t.replace("_EVENT", "").removesuffix("_LOG")
        value = getattr(row, key)
        return "" if value is None else str(value)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        cols = self._columns(width)
        wide = self._wide(width)
        if y == 0:
            text = " ".join(_fit(t, w, r) for _, t, w, r in cols) + " summary"
            style = self._style("event-list--header")
            return Strip([Segment(_fit(text, width), style)], width)
        vi = round(self.scroll_y) + y - 1
        if vi >= len(self.view):
            return Strip.blank(width, self._style(""))
        ri = self.view.row_index(vi)
        row = self.view.source.row(ri)
        cells = []
        for key, _, w, right in cols:
            text = self._time_cell(row, vi, wide) if key == "time" else self._cell(row, key, wide)
            if key == "number" and ri in self.bookmarks:
                text = "*" + text
            cells.append(_fit(text, w, right, keep_end=key == "binlog_file"))
        used = sum(w for _, _, w, _ in cols) + len(cols)
        line = " ".join(cells) + " " + _fit(row.summary, max(width - used, 0))
        style = self._style(f"event-list--kind-{row.kind}")
        if vi == self.cursor:
            cls = "event-list--cursor" if self.has_focus else "event-list--cursor-blurred"
            style = style + self._style(cls)
        segs = [Segment(_fit(line, width), style)]
        if ri in self.bookmarks:
            bm = self._style("event-list--bookmark")
            segs = [Segment(line[:1], style + bm), Segment(_fit(line, width)[1:], style)]
        return Strip(segs, width)
