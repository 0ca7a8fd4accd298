"""Signals for every command, in one place: what SIGINT, SIGTERM and SIGHUP do to a run.

- :func:`stop_on_signals`: SIGTERM and SIGHUP raise :class:`Stopped` (a KeyboardInterrupt)
  in the main thread, so a run ends exactly as Ctrl-C ends it (``export``);
- :func:`flag_on_signals`: the first of SIGINT/SIGTERM/SIGHUP only sets a flag the run polls
  (it ends at its next item, with its last commit and summary: ``live``, ``sniff``, ``proxy``,
  ``export --live``); a second one raises :class:`Stopped` at once;
- :func:`restore_signals`: put back what either returned (commands also run in-process, from
  tests and programs, whose handlers must survive the call).

Both also watch the terminal (``drivers/hangup.py``) while they are in force: a terminal that
hangs up without signalling the command (a killed tmux, an ssh session closed under ``sh -c``)
sends it SIGHUP, so it ends as the signal ends it.

SIGPIPE is left as Python sets it (ignored): the replica and the proxy write to sockets whose
peer may be gone, which must be an error on that socket; a closed standard output is a
BrokenPipeError each command ends on quietly.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from binlogscope.drivers.hangup import watch_hangup


class Handlers(dict[int, Any]):
    """The handlers to put back (signal number -> handler), and the terminal watch to end."""

    def __init__(self) -> None:
        super().__init__()
        self.unwatch: Callable[[], None] = watch_hangup()


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread so a run ends as Ctrl-C ends it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def stop_on_signals() -> dict[int, Any]:
    """Make SIGTERM and SIGHUP stop ``live`` (and ``export``) like SIGINT: the replica stops,
    the state file, the ``--record`` capture and the export's checkpoint are flushed and
    closed (the default action would kill the process with the capture's tail still
    buffered). Returns the handlers to put back."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    fired: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        if fired:  # a second signal while shutting down: let the cleanup finish
            return
        fired.append(signum)
        raise Stopped(signum)

    previous = Handlers()
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, stop)
    return previous


def flag_on_signals(fired: list[int], on_first: Callable[[], None] | None = None, *,
                    raise_at: int = 2) -> dict[int, Any]:
    """Ctrl-C, SIGTERM and SIGHUP ask a run to stop at its next item (``fired`` gets the
    signal number; the run ends cleanly there, with its last commit); the ``raise_at``-th one
    (default: the second) stops it at once (:class:`Stopped`), the ones before it are only
    flagged too (``sniff``: the second ends the drain at the next whole output line - a
    Stopped raised inside a write of a long JSON line cut it). ``on_first`` runs at the first
    one (the proxy's decoder leaves the idle scheduling class there, so its shutdown is not
    starved on a busy machine). Returns the handlers to put back."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def stop(signum: int, _frame: object) -> None:
        if len(fired) + 1 >= raise_at:
            raise Stopped(signum)
        fired.append(signum)
        if on_first is not None and len(fired) == 1:
            on_first()

    previous = Handlers()
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, stop)
    return previous


def restore_signals(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)
    unwatch = getattr(previous, "unwatch", None)
    if callable(unwatch):
        unwatch()
