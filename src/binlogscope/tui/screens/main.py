"""The inspector screen: event list, detail tree, hex pane, field help, status bar, prompt bar."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import Footer
from textual.worker import get_current_worker

from binlogscope.inspector.actions import (
    export,
    go_time,
    goto_note,
    goto_row,
    looks_like_gtid,
    search_view,
)
from binlogscope.inspector.clipboard import copy_note
from binlogscope.inspector.columns import save as save_columns
from binlogscope.inspector.conversations import Conversation, conversations
from binlogscope.inspector.doc_links import links_for
from binlogscope.inspector.links import Link, links
from binlogscope.inspector.source import Detail, RowSignal, RowSource, SessionSource
from binlogscope.inspector.view import RowFilter, View
from binlogscope.tui.messages import (
    FieldSelected,
    FollowRequested,
    HexCursorMoved,
    PromptClosed,
    PromptSubmitted,
    RowHighlighted,
    RowsAdded,
)
from binlogscope.tui.screens.bookmarks import BookmarkScreen
from binlogscope.tui.screens.columns import ColumnScreen
from binlogscope.tui.screens.conversations import ConversationScreen
from binlogscope.tui.screens.goto import GoToScreen
from binlogscope.tui.screens.help import HelpScreen
from binlogscope.tui.widgets.event_list import EventList
from binlogscope.tui.widgets.field_help import FieldHelp
from binlogscope.tui.widgets.field_tree import FieldTree
from binlogscope.tui.widgets.hex_pane import HexPane
from binlogscope.tui.widgets.link_bar import LinkBar
from binlogscope.tui.widgets.phase_strip import PhaseStrip
from binlogscope.tui.widgets.prompt_bar import PromptBar
from binlogscope.tui.widgets.status_bar import StatusBar
from binlogscope.tui.widgets.tour_bar import TourBar
from binlogscope.wire.node import Node

#: rows a filtered view takes in per update while the source is still growing
_SYNC_LIMIT = 50_000
#: while rows pour in (indexing a big file, a busy stream) the list and status update at most
#: every this many seconds (as the old 0.2 s poll did); a row after a quiet spell shows at once
_MIN_SYNC_GAP = 0.2
#: a session's status counts things no row announces (events/s, held packets): refreshed
_STATUS_EVERY = 1.0


class MainScreen(GoToScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help"),
        Binding("f", "prompt('filter')", "Filter"),
        Binding("e", "errors_only", "Errors"),
        Binding("slash", "prompt('search')", "Search"),
        Binding("n", "search(1)", "Next"),
        Binding("N", "search(-1)", "Prev", show=False),
        Binding("g", "prompt('goto')", "Go to"),
        Binding("b", "bookmark", "Mark"),
        Binding("B", "next_bookmark(1)", "Next mark", show=False),
        Binding("ctrl+b", "next_bookmark(-1)", "Previous mark", show=False),
        Binding("m", "bookmark_list", "Marks", show=False),
        Binding("plus,asterisk", "expand_all", "Expand all", show=False),
        Binding("minus", "collapse_all", "Collapse all", show=False),
        Binding("x", "prompt('export')", "Export"),
        Binding("X", "prompt('export_event')", "Export event", show=False),
        Binding("c", "copy('hex')", "Copy hex"),
        Binding("v", "copy('value')", "Copy value", show=False),
        Binding("t", "time_mode", "Time", show=False),
        Binding("C", "columns", "Columns", show=False),
        Binding("L", "follow_link", "Link", show=False),
        Binding("D", "doc_links", "Docs", show=False),
        Binding("T", "tour", "Tour", show=False),
        Binding("right_square_bracket", "tour_step(1)", "Next step", show=False),
        Binding("left_square_bracket", "tour_step(-1)", "Step back", show=False),
        Binding("S", "conversations", "Conversations", show=False),
        Binding("escape", "focus_list", "List", show=False),
        Binding("F", "follow", "Follow"),
        Binding("p", "pause", "Pause"),
    ]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # noqa: RUF012

    def __init__(self, source: RowSource, initial_filter: RowFilter | None = None, *,
                 tour: bool = False, teach: str | None = None) -> None:
        super().__init__()
        self.tour = tour
        self.teach = teach
        self._pending_field: str | None = None
        self.source = source
        self.view = View(source, initial_filter)
        self.detail: Detail | None = None
        self.detail_row: int | None = None
        self.links: list[Link] = []
        self.field: Node | None = None
        self.search_text = ""
        self.session = source if isinstance(source, SessionSource) else None
        self.live = bool(self.session is not None and self.session.live)
        #: live: keep the cursor on the newest row (off when the user moves up; F / End resume)
        self.follow = self.live
        self.paused = bool(self.session is not None and self.session.paused)
        #: a go-to's preparation (the catalog built, files indexed), first in the status line
        self.goto_task = ""

    def compose(self) -> ComposeResult:
        yield PromptBar(id="prompt")
        if self.session is not None:
            yield PhaseStrip(id="phases")
        yield EventList(self.view, id="events")
        with Horizontal(id="detail"):
            yield FieldTree(id="tree")
            yield HexPane(id="hex")
        yield TourBar(self.source, teach=self.teach, id="tour")
        yield LinkBar(id="links")
        yield FieldHelp(id="field-help")
        yield StatusBar(id="status")
        yield Footer()

    @property
    def events(self) -> EventList:
        return self.query_one(EventList)

    def on_mount(self) -> None:
        if self.session is not None:
            self.add_class("-session")
        self.events.focus()
        self._synced_at = 0.0
        self._sync_timer: Timer | None = None
        signal = getattr(self.source, "changed", None)
        self._signal = signal if isinstance(signal, RowSignal) else None
        if self._signal is not None:
            # new rows come by message (RowsAdded), posted by the source's producing thread
            self._signal.listen(lambda: self.post_message(RowsAdded()))
            if self.session is not None and self.live:
                self.set_interval(_STATUS_EVERY, self._show_status)
        else:  # a source without a signal: look every 0.2 s
            self.set_interval(0.2, self._tick)
        self._index()
        self.call_after_refresh(self._show_status)  # before any row: state, source, version
        if self.tour:
            self.action_tour()

    def on_unmount(self) -> None:
        if self._signal is not None:
            self._signal.listen(None)
        if self.session is not None:
            self.session.stop()  # closes the socket: a fetcher stuck in recv() ends

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("follow", "pause"):
            return self.live
        return True

    # ----- background work
    @work(thread=True, group="source", exit_on_error=False)
    def _index(self) -> None:
        worker = get_current_worker()
        self.source.run(lambda: worker.is_cancelled)

    @on(RowsAdded)
    def _rows_added(self, message: RowsAdded) -> None:
        wait = self._synced_at + _MIN_SYNC_GAP - time.monotonic()
        if wait > 0:  # updated a moment ago: once more when the gap is over
            if self._sync_timer is None:
                self._sync_timer = self.set_timer(wait, self._tick)
            return
        self._tick()

    def _tick(self) -> None:
        """Take in the rows the source published, follow, show the status."""
        if self._sync_timer is not None:
            self._sync_timer.stop()
            self._sync_timer = None
        self._synced_at = time.monotonic()
        if self._signal is not None:
            self._signal.rearm()  # before reading: a row published after it notifies again
        lst = self.events
        if lst.view is self.view and self.view.sync(limit=_SYNC_LIMIT):
            lst.rows_changed(force=False)
            if self.follow:
                self._to_end()
        if self._signal is not None and self.view.scanned < len(self.source):
            self.post_message(RowsAdded())  # a filtered view takes the rest in steps
        tour = self.query_one(TourBar)
        if tour.on and tour.waiting:
            self._tour_to(tour.step(1, user=False))  # the row the tour waits for may have come
        self._show_status()

    def _to_end(self) -> None:
        n = len(self.view)
        if n and self.events.cursor != n - 1:
            self.events.cursor = n - 1

    def _show_status(self) -> None:
        row = self.events.current_row
        pos = self.source.position(row) if row is not None else ""
        det = self.detail
        if self.field is not None and det is not None and self.field is not det.node:
            pos += f" (field @{self.field.offset})"
        flt = self.view.filter
        self.query_one(StatusBar).show(self.source.info(), pos, len(self.view),
                                       flt.spec() if flt.active else "",
                                       len(self.events.bookmarks),
                                       follow=self.follow if self.live else None,
                                       task=self.goto_task)
        if self.session is not None:
            now, at, step = self.session.phase_at(row)
            self.query_one(PhaseStrip).show(now, at, step)

    @on(RowHighlighted)
    def _row_highlighted(self, message: RowHighlighted) -> None:
        self._load_detail(message.row_index)
        self._show_status()

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _load_detail(self, row_index: int) -> None:
        worker = get_current_worker()
        time.sleep(0.02)  # let a held-down key pass before decoding
        if worker.is_cancelled:
            return
        try:
            detail = self.source.detail(row_index)
            found = links(self.source, row_index)
        except Exception as exc:  # a decode bug must not take the UI down
            self.app.call_from_thread(self.notify, f"cannot decode row {row_index + 1}: {exc}",
                                      severity="error")
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_detail, row_index, detail, found)

    def _show_detail(self, row_index: int, detail: Detail, found: list[Link]) -> None:
        if self.events.current_row != row_index:
            return
        self.links = found
        self.query_one(LinkBar).show_links(found)
        self.detail = detail
        self.detail_row = row_index
        self.field = None
        self.query_one(HexPane).load(detail.raw, detail.base, detail.masked)
        self.query_one(FieldTree).load(detail.node)
        path, self._pending_field = self._pending_field, None
        try:
            target = detail.node.find(path) if path else None
        except KeyError:  # (a packet of another shape than the tour expected)
            target = None
        if target is not None:
            self.query_one(FieldTree).select_field(target)

    # ----- tree <-> hex
    @on(FieldSelected)
    def _field_selected(self, message: FieldSelected) -> None:
        node = message.node
        self.field = node
        self.query_one(HexPane).set_highlight(node.offset, node.end)
        self.query_one(FieldHelp).show_node(node, self._type_name())
        self._show_status()

    @on(HexCursorMoved)
    def _hex_moved(self, message: HexCursorMoved) -> None:
        if self.detail is None:
            return
        hit = self.detail.node.at(message.offset)
        if hit is not None and hit is not self.field:
            self.query_one(FieldTree).select_field(hit)

    # ----- prompt bar
    def action_prompt(self, mode: str) -> None:
        value = ""
        name = Path(getattr(self.source, "path", "binlogscope")).name
        if mode == "filter":
            value = self.view.filter.spec()
        elif mode == "search":
            value = self.search_text
        elif mode == "export":
            value = f"{name}.view.jsonl"
        elif mode == "export_event":
            row = self.events.current_row
            if row is None:
                return
            value = f"{name}.{self.source.row(row).offset}.json"
        self.query_one(PromptBar).open(mode, value)

    @on(PromptClosed)
    def _prompt_closed(self, message: PromptClosed) -> None:
        self.events.focus()

    @on(PromptSubmitted)
    def _prompt_submitted(self, message: PromptSubmitted) -> None:
        self.events.focus()
        value = message.value.strip()
        if message.mode == "filter":
            try:
                flt = RowFilter.parse(value)
            except ValueError as exc:
                self.notify(str(exc), severity="error", timeout=10)
                return
            self.apply_filter(flt)
        elif message.mode == "search":
            self.search_text = value.lower()
            if value:
                self.action_search(1)
        elif message.mode == "goto":
            self.goto(value)
        elif message.mode in ("export", "export_event") and value:
            row = self.events.current_row
            if message.mode == "export":
                rows = [self.view.row_index(i) for i in range(len(self.view))]
            else:
                rows = [] if row is None else [row]
            self._export(value, rows, message.mode == "export_event")

    # ----- filter
    def apply_filter(self, flt: RowFilter) -> None:
        self._filter(flt, self.events.current_row)

    @work(thread=True, exclusive=True, group="filter", exit_on_error=False)
    def _filter(self, flt: RowFilter, keep_row: int | None) -> None:
        worker = get_current_worker()
        view = View(self.source, flt)
        view.sync(cancelled=lambda: worker.is_cancelled)
        if not worker.is_cancelled:
            self.app.call_from_thread(self._set_view, view, keep_row)

    def _set_view(self, view: View, keep_row: int | None) -> None:
        self.view = view
        self.events.set_view(view, keep_row)
        if self._signal is not None and view.scanned < len(self.source):
            self.post_message(RowsAdded())  # rows published while the filter ran
        if not len(view):
            self.detail = None
            self.query_one(FieldTree).load(None)
            self.query_one(HexPane).clear()
            self.query_one(FieldHelp).show_node(None)
            self.notify("no rows match the filter", severity="warning")
        self._show_status()

    def action_errors_only(self) -> None:
        self.apply_filter(self.view.filter.with_errors(not self.view.filter.errors))

    # ----- search, go to, bookmarks
    def action_search(self, direction: int) -> None:
        if not self.search_text:
            self.action_prompt("search")
            return
        self._search(self.search_text, direction, self.events.cursor, self.view)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, text: str, direction: int, start: int, view: View) -> None:
        worker = get_current_worker()
        hit = search_view(view, text, direction, start, lambda: worker.is_cancelled)
        if worker.is_cancelled:
            return
        if hit is None:
            self.app.call_from_thread(self.notify, f"not found: {text}", severity="warning")
        else:
            self.app.call_from_thread(self._found, view, *hit)

    def _found(self, view: View, vi: int, wrapped: bool) -> None:
        if view is self.view:
            self._stop_following()
            self.events.cursor = vi
            if wrapped:
                self.notify("search wrapped around")

    def goto(self, where: str) -> None:
        """``1234`` (a position in the current row's file), ``FILE:1234``,
        ``end:FILE:1234`` (the event ending there), ``#57`` (row 57) or a GTID; anything else
        is one clear line saying what ``g`` takes."""
        where = where.strip()
        if not where:
            return
        if looks_like_gtid(where):
            gtid = where[5:] if where.lower().startswith("gtid:") else where
            self._goto_gtid(gtid.strip().lower())
            return
        try:
            when = go_time(where)
        except ValueError as exc:
            self.notify(f"go to {where}: {exc}", severity="error", timeout=10)
            return
        if when is not None:
            self._goto_time(when, where)
            return
        try:
            row = self._goto_row(where)
        except ValueError as exc:
            self.notify(f"go to {where}: {exc}", severity="error", timeout=10)
            return
        self._jump(row)
        note = goto_note(where)
        if note is not None:  # (which end of the event the position named)
            self.notify(note)

    def _goto_row(self, where: str) -> int:
        return goto_row(self.source, where, self.events.current_row)

    def _jump(self, row: int) -> None:
        self._stop_following()
        if self.view.view_index(row) is None and self.view.filter.active:
            self.notify("that row is hidden by the filter; showing the nearest one")
        self.events.move_to_row(row)

    def action_bookmark(self) -> None:
        row = self.events.current_row
        if row is None:
            return
        marks = self.events.bookmarks
        marks.symmetric_difference_update({row})
        self.events.refresh()
        self._show_status()

    def action_next_bookmark(self, direction: int = 1) -> None:
        """The next (1) or previous (-1) bookmark, wrapping around."""
        marks = sorted(self.events.bookmarks)
        if not marks:
            self.notify("no bookmarks: press b to mark a row")
            return
        cur = self.events.current_row or 0
        if direction > 0:
            nxt = next((m for m in marks if m > cur), marks[0])
        else:
            nxt = next((m for m in reversed(marks) if m < cur), marks[-1])
        self._jump(nxt)

    def action_bookmark_list(self) -> None:
        marks = sorted(self.events.bookmarks)
        if not marks:
            self.notify("no bookmarks: press b to mark a row")
            return

        def chosen(row: int | None) -> None:
            if row is not None:
                self._jump(row)

        self.app.push_screen(BookmarkScreen(self.source, marks, self.events.current_row),
                             chosen)

    # ----- tree
    def action_expand_all(self) -> None:
        if self.detail is None:
            return
        n = self.query_one(FieldTree).expand_everything()
        self.notify(f"expanded {n} fields")

    def action_collapse_all(self) -> None:
        if self.detail is not None:
            self.query_one(FieldTree).collapse_everything()

    # ----- export, copy
    @work(thread=True, group="export", exit_on_error=False)
    def _export(self, name: str, rows: list[int], one_row: bool) -> None:
        worker = get_current_worker()
        try:
            msg, renamed = export(self.source, name, rows, one_row=one_row,
                                  cancelled=lambda: worker.is_cancelled)
        except Exception as exc:  # one line in the UI, never a crash
            self.app.call_from_thread(self.notify, f"export failed: {exc}", severity="error")
            return
        self.app.call_from_thread(self.notify, msg,
                                  severity="warning" if renamed else "information")

    def action_copy(self, what: str) -> None:
        node = self.field
        if node is None or self.detail is None:
            self.notify("select a field first", severity="warning")
            return
        text = self.detail.hex_text(node) if what == "hex" else node.text
        self.app.copy_to_clipboard(text)  # OSC 52: many terminals (and tmux) drop it silently
        # so the value is also saved to this user's private file and shown: it is never lost
        self.notify(f"copied {node.name} {what}: {copy_note(text)}", timeout=8)

    # ----- live: follow, pause
    @on(FollowRequested)
    def _follow_requested(self, message: FollowRequested) -> None:
        if message.on:
            if self.live and not self.follow:
                self.follow = True
                self._to_end()
                self._show_status()
        else:
            self._stop_following()

    def _stop_following(self) -> None:
        if self.follow:
            self.follow = False
            self.notify("follow off: End or F jumps to the newest row and follows again")
            self._show_status()

    def action_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self._to_end()
        self._show_status()

    def action_pause(self) -> None:
        if self.session is None:
            return
        self.paused = not self.paused
        self.session.set_paused(self.paused)
        if self.paused:
            self.notify(f"paused: {self.session.pause_doc}; p resumes")
            self._show_status()
        else:
            self.notify("resumed")
            self._tick()  # what was held shows at once (follow goes to the newest row)

    def action_time_mode(self) -> None:
        mode = self.events.cycle_time_mode()
        self.notify({"absolute": "time: UTC time of each row",
                     "relative": "time: seconds since the first row",
                     "delta": "time: seconds since the previous shown row"}[mode])

    def _type_name(self) -> str:
        row = self.detail_row
        return self.source.row(row).event_type if row is not None else ""

    def action_tour(self) -> None:
        bar = self.query_one(TourBar)
        if bar.on:
            bar.stop()
            return
        bar.start()
        self.action_tour_step(1)

    def action_tour_step(self, direction: int) -> None:
        bar = self.query_one(TourBar)
        if not bar.on:
            return
        self._tour_to(bar.step(direction))

    def _tour_to(self, to: tuple[int, str | None] | None) -> None:
        if to is not None:
            row, self._pending_field = to
            self._jump(row)
            self.events.focus()

    def action_doc_links(self) -> None:
        node = self.field
        docs = links_for(self._type_name(), node.name if node is not None else None)
        if not docs:
            self.notify("no documentation links for this row", severity="warning")
            return
        self.notify("\n".join(f"{d.title}: {d.url}" for d in docs), timeout=20)

    def action_follow_link(self) -> None:
        target = next((link for link in self.links if link.row is not None), None)
        if target is None or target.row is None:
            self.notify("this row links to no other row", severity="warning")
            return
        self._jump(target.row)

    def action_conversations(self) -> None:
        self._conversations()

    @work(thread=True, exclusive=True, group="conversations", exit_on_error=False)
    def _conversations(self) -> None:
        convs = conversations(self.source)
        self.app.call_from_thread(self._show_conversations, convs)

    def _show_conversations(self, convs: list[Conversation]) -> None:
        def chosen(spec: str | None) -> None:
            if spec is not None:
                self.apply_filter(RowFilter.parse(spec))

        self.app.push_screen(ConversationScreen(convs), chosen)

    def action_columns(self) -> None:
        def chosen(keys: list[str] | None) -> None:
            if keys is None:
                return
            self.events.set_columns(keys)
            try:
                path = save_columns(self.source, self.events.column_keys)
            except OSError as exc:
                self.notify(f"columns shown, not saved: {exc}", severity="warning")
                return
            self.notify(f"columns saved to {path}")

        self.app.push_screen(ColumnScreen(self.source, self.events.column_keys), chosen)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_focus_list(self) -> None:
        if self.goto_task:  # a go-to preparing: Esc cancels it
            self.workers.cancel_group(self, "search")
            self._set_task("")
            self.notify("go to: cancelled")
        self.events.focus()
