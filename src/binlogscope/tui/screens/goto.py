"""The inspector's go-to by GTID and by time (``g GTID``, ``g @TIME``): the workers that find
the row, and, over a set of files opened the first time, what they do first (the missing
catalog entries built and cached, the files they walk indexed; progress in the status line,
``Esc`` cancels). :class:`MainScreen` is this screen with everything else."""

from __future__ import annotations

from textual import work
from textual.screen import Screen
from textual.worker import get_current_worker

from binlogscope.inspector.actions import (
    catalogue_for_goto,
    find_gtid,
    find_time,
    goto_ready,
    gtid_rows,
    time_rows,
    wait_goto_ready,
)
from binlogscope.inspector.source import RowSource


class GoToScreen(Screen[None]):
    #: what the screen shows (set by :class:`MainScreen`)
    source: RowSource
    #: a go-to's preparation (the catalog built, files indexed), first in the status line
    goto_task: str = ""

    def _jump(self, row: int) -> None:  # (MainScreen: move the list's cursor there)
        raise NotImplementedError

    def _show_status(self) -> None:  # (MainScreen: redraw the status line)
        raise NotImplementedError

    def _set_task(self, text: str) -> None:
        self.goto_task = text
        self._show_status()

    def _ready_to_go(self, gtid: str | None = None, t: float | None = None) -> bool:
        """(In a go-to's worker) a set of files opened the first time: its missing catalog
        entries built and cached, then the files the go-to walks indexed - progress in the
        status line, Esc cancels. False when cancelled."""
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled

        def progress(k: int, total: int, name: str) -> None:
            self.app.call_from_thread(self._set_task, f"go to: cataloguing {name} "
                                      f"({k + 1}/{total}; esc cancels)")
        try:
            ok = catalogue_for_goto(self.source, cancelled, progress)
            if ok and not goto_ready(self.source, gtid=gtid, t=t):
                self.app.call_from_thread(self._set_task, "go to: waiting for the files to "
                                          "be indexed (esc cancels)")
                ok = wait_goto_ready(self.source, cancelled, gtid=gtid, t=t)
        finally:
            self.app.call_from_thread(self._set_task, "")
        return ok and not worker.is_cancelled

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _goto_gtid(self, gtid: str) -> None:
        """The GTID event (or MariaDB GTID / MySQL GTID_LOG) whose GTID is ``gtid``."""
        worker = get_current_worker()
        if not self._ready_to_go(gtid=gtid):
            return
        rows, skipped = gtid_rows(self.source, gtid)
        row = find_gtid(self.source, gtid, lambda: worker.is_cancelled, rows)
        if row is None and skipped and not worker.is_cancelled:
            self.app.call_from_thread(
                self.notify, f"go to: no GTID {gtid}; {len(skipped)} file(s) not searched, "
                f"their catalog rules it out ({', '.join(skipped)})", severity="warning")
            return
        if row is not None:
            self.app.call_from_thread(self._jump, row)
        elif not worker.is_cancelled:
            self.app.call_from_thread(self.notify, f"go to: no GTID {gtid} (yet)",
                                      severity="warning")

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _goto_time(self, when: float, where: str) -> None:
        """The first row at or after ``when`` (a set of files: skipping those whose cached
        catalog says they end before it)."""
        worker = get_current_worker()
        if not self._ready_to_go(t=when):
            return
        rows, skipped = time_rows(self.source, when)
        row = find_time(self.source, when, lambda: worker.is_cancelled, rows)
        if row is not None:
            self.app.call_from_thread(self._jump, row)
            if skipped:
                self.app.call_from_thread(
                    self.notify, f"went to the first row at or after {where[1:].strip()}; "
                    f"{len(skipped)} file(s) not searched, their catalog ends before it")
        elif not worker.is_cancelled:
            self.app.call_from_thread(self.notify, f"go to {where}: no row at or after it "
                                      "(yet)", severity="warning")

