"""A terminal that hangs up ends the run, as SIGHUP does.

When a terminal goes away (an ssh session closed, a tmux server killed, a terminal window
closed) the kernel sends SIGHUP only to the session leader - the shell, or the ``sh -c`` a
tmux pane runs - and then detaches the terminal from every process of the session. A
command started by that shell is not signalled unless the shell forwards the signal
(an interactive bash does, ``sh -c`` and many wrappers do not), and what it then sees is
only this: reads of the terminal return end-of-file, writes fail with EIO, and ``poll``
reports POLLHUP. Textual's input thread takes that end-of-file for a piped standard input and
keeps going, so a TUI whose terminal hung up stayed alive for ever; ``live``, ``sniff``,
``proxy`` and ``export --live`` would run on until their next write to the terminal failed.

:func:`watch_hangup` closes that gap for every long-running command: a daemon thread waits
(``poll`` with no events asked: it sleeps until POLLHUP/POLLERR/POLLNVAL) on the standard
streams that are terminals; at a hang-up it points them at ``/dev/null`` (the run's last
writes - the TUI restoring the terminal, a summary, a final line - then go nowhere instead of
failing with EIO half-way) and sends SIGHUP to the main thread, where the command's own SIGHUP
handler ends the run exactly as a hang-up signal does (``cli/signals.py``; the TUI's in
``tui/__init__.py``): a live session makes its last commit, ``export --live`` publishes what
it had, the TUI quits as ``q`` does. Sent with ``pthread_kill`` to the main thread, it also
interrupts a system call the main thread is blocked in.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Callable

_STREAMS = (0, 1, 2)
_POLL_MS = 250  # how often the watcher looks whether it is still wanted

_lock = threading.Lock()
_users = 0
_thread: threading.Thread | None = None
_hung_up = threading.Event()
_watched: list[int] = []  # the terminal's streams (once hung up, isatty says no any more)


def _terminal_fds() -> list[int]:
    fds: list[int] = []
    for fd in _STREAMS:
        try:
            if os.isatty(fd):
                fds.append(fd)
        except OSError:
            continue
    return fds


def hung_up() -> bool:
    """True once the watcher saw the terminal hang up (this process's standard streams now
    point at ``/dev/null``)."""
    return _hung_up.is_set()


def watch_hangup() -> Callable[[], None]:
    """Watch the standard streams that are terminals for a hang-up while the returned function
    is not yet called (calls nest: a TUI inside ``proxy`` watches while ``proxy`` does).

    Only from the main thread, and only when a standard stream is a terminal; otherwise (a
    pipe, a file, a test) nothing is watched and the returned function does nothing."""
    global _users, _thread
    if (threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "SIGHUP") or _hung_up.is_set()):
        return _nothing
    fds = _terminal_fds()
    if not fds:
        return _nothing
    with _lock:
        _users += 1
        _watched[:] = fds
        if _thread is None:
            _thread = threading.Thread(target=_watch, args=(fds, threading.main_thread().ident),
                                       name="binlogscope-hangup", daemon=True)
            _thread.start()
    done = False

    def unwatch() -> None:
        global _users
        nonlocal done
        if done:
            return
        done = True
        with _lock:
            _users -= 1

    return unwatch


def _nothing() -> None:
    return None


def _watch(fds: list[int], main_ident: int | None) -> None:
    global _thread
    poller = select.poll()
    for fd in fds:
        poller.register(fd, 0)  # no events asked: poll reports only POLLHUP, POLLERR, POLLNVAL
    while True:
        with _lock:
            if _users <= 0:  # (the thread leaves under the lock: a new watch starts another)
                _thread = None
                return
        try:
            ready = poller.poll(_POLL_MS)
        except OSError:  # (cannot watch: the terminal is then as without the watcher)
            with _lock:
                _thread = None
            return
        for fd, ev in ready:
            if ev & select.POLLNVAL:  # (a stream the command closed itself: not a hang-up)
                poller.unregister(fd)
        if any(ev & select.POLLHUP for _, ev in ready) or _hung_up.is_set():
            # (or a write saw EIO first - terminal_hung_up - and pointed the streams at
            # /dev/null, where no POLLHUP will ever come: the run still ends as SIGHUP ends it)
            break
    with _lock:
        _thread = None
        if _users <= 0:
            return
        _detach(fds)
        _hung_up.set()
    if main_ident is not None:
        try:
            signal.pthread_kill(main_ident, signal.SIGHUP)
        except (OSError, ValueError):  # (the main thread just ended)
            pass


def _detach(fds: list[int]) -> None:
    """Point the hung-up terminal's streams at /dev/null (what ``nohup`` would have done)."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        for fd in fds:
            os.dup2(null, fd)
    finally:
        os.close(null)


def terminal_hung_up(exc: BaseException) -> bool:
    """True when ``exc`` is a write to (or read of) a standard stream whose terminal hung up -
    EIO, which can come before the watcher saw the hang-up. Then the hung-up streams are
    pointed at ``/dev/null`` at once (so what the command still prints does not fail again)
    and the command should end as SIGHUP ends it: while a watch is on, the watcher sends that
    SIGHUP (within its poll period: the streams it watched are ``/dev/null`` now, where no
    POLLHUP would ever come); without one the caller ends the command itself."""
    import errno

    if not isinstance(exc, OSError) or exc.errno != errno.EIO:
        return False
    with _lock:
        fds = list(_watched)
    poller = select.poll()
    for fd in fds:
        poller.register(fd, 0)
    try:
        dead = sorted({fd for fd, ev in poller.poll(0) if ev & select.POLLHUP})
    except OSError:
        dead = []
    if not dead and not _hung_up.is_set():
        return False
    with _lock:
        if dead:
            _detach(dead)
        _hung_up.set()
    return True
