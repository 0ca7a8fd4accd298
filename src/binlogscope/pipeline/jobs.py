"""One process per input (``--jobs``): a binlog file or a capture is self-contained, so a bulk
command runs the same per-input function in N worker processes and writes their outputs in
input order (architecture amendment 10: one definition, N cores).

:func:`run_in_order` runs ``job(input, spool)`` for each input in a pool of worker processes
(forked, so the job is any function of the parent); each job writes its output into its own
spool file (in a private temporary directory) and returns a small result. The parent copies
the spool of input *i* to its output as soon as the inputs before it are written, then hands
``(input, result)`` to ``done`` (the command prints that input's messages there, so they come
in input order too) and removes the spool. At most ``2 * jobs`` inputs are in flight, so the
spools on disk stay bounded while one slow input is written out.

Ctrl-C: the workers ignore SIGINT; the parent notes it, and at its next safe point (never
inside the pool's own locks) terminates them, removes the spools and raises KeyboardInterrupt
(the command says "interrupted" and exits 130); SIGTERM and SIGHUP run the command's own
handler there. A broken pipe on the output
stops the workers the same way and is raised as BrokenPipeError.

``out=None``: the jobs write their output elsewhere (``export --jobs``: each input's Parquet
parts in a staging directory of its own); ``done`` is still called in input order, which is
where such a command publishes an input's output.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import IO, Any, TypeVar

I = TypeVar("I")  # noqa: E741  (an input)
R = TypeVar("R")  # a job's result


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _load() -> float | None:
    """The one-minute load average (runnable processes), None where the system has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def default_jobs(inputs: int, cores: int | None = None, load: float | None = None) -> int:
    """``--jobs`` when not given: one process per input on the cores that are free.

    One process for one input (or none); otherwise the usable cores (CPU affinity) less the
    one-minute load average (``os.getloadavg``), rounded, at least 1 and at most one per
    input. On a busy machine a second process only shares a core already taken: measured on
    this 2-core box at load 10, ``file --json --jobs 2`` took 1.5x the wall time of ``--jobs 1``
    and more CPU (the spools, the shared caches); with no core free the default is one process.
    ``cores``/``load`` default to this machine's (where there is no load average, the cores)."""
    if inputs <= 1:
        return 1
    if cores is None:
        cores = usable_cores()
    if load is None:
        load = _load() or 0.0
    free = int(cores - load + 0.5)
    return max(1, min(free, cores, inputs))


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    # the parent's own SIGTERM/SIGHUP handlers (cli/signals.py: "stop like Ctrl-C") are
    # inherited through fork: a worker is stopped by the pool with SIGTERM and must just end
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None:
            signal.signal(signum, signal.SIG_DFL)


def _copy(spool: str, out: IO[bytes]) -> None:
    """The spool's bytes onto ``out`` (sendfile when both are files: no copy through Python)."""
    out.flush()
    with open(spool, "rb") as src:
        try:
            fd = out.fileno()
        except (OSError, AttributeError, ValueError):
            shutil.copyfileobj(src, out, 1 << 20)
            return
        size = os.fstat(src.fileno()).st_size
        sent = 0
        try:
            while sent < size:
                n = os.sendfile(fd, src.fileno(), sent, size - sent)
                if n == 0:
                    break
                sent += n
        except OSError as exc:
            if isinstance(exc, BrokenPipeError) or sent:
                raise
            src.seek(0)  # (sendfile refused this pair of descriptors)
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()


#: the signals that stop a run (the commands turn SIGTERM and SIGHUP into Ctrl-C)
_STOPS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


class _Deferred:
    """Ctrl-C (and SIGTERM/SIGHUP) noted while the parent is inside the pool's machinery and
    acted on at the next safe point (:meth:`check`): a KeyboardInterrupt raised in the middle
    of ``apply_async`` or a result's lock left the pool unable to terminate (a run of many
    small inputs hung on Ctrl-C). At the safe point the command's own handler runs (raising
    KeyboardInterrupt, or ``Stopped`` for SIGTERM/SIGHUP); a signal without one stops the run
    as Ctrl-C does."""

    def __init__(self) -> None:
        self.fired: list[int] = []
        self.previous: dict[int, Any] = {}
        self.installed = threading.current_thread() is threading.main_thread()
        if self.installed:
            for signum in _STOPS:
                self.previous[signum] = signal.signal(signum, self._note)

    def _note(self, signum: int, _frame: object) -> None:
        self.fired.append(signum)

    def restore(self) -> None:
        if self.installed:
            self.installed = False
            for signum, handler in self.previous.items():
                signal.signal(signum, handler)

    def check(self) -> None:
        if not self.fired:
            return
        signum = self.fired[0]
        handler = self.previous.get(signum)
        self.restore()
        if callable(handler):
            handler(signum, None)
        if handler != signal.SIG_IGN:
            raise KeyboardInterrupt


def run_in_order(inputs: Sequence[I], job: Callable[[I, str], R], jobs: int,
                 out: IO[bytes] | None, done: Callable[[I, R], None]) -> None:
    """Run ``job(input, spool path)`` for every input in ``jobs`` worker processes; write each
    spool to ``out`` (None: the jobs write no spool) and call ``done(input, result)`` in input
    order."""
    import multiprocessing  # (here: a command that runs one process does not load it)

    ctx = multiprocessing.get_context("fork")
    stops = _Deferred()
    try:
        with tempfile.TemporaryDirectory(prefix="binlogscope-jobs-") as tmp:
            pool = ctx.Pool(max(1, jobs), initializer=_worker_init)
            try:
                _run(pool, inputs, job, jobs, out, done, tmp, stops)
                pool.close()
            except BaseException:
                pool.terminate()
                raise
            finally:
                pool.join()
    finally:
        stops.restore()
    stops.check()  # (a signal after the last input: the run is complete, the signal stands)


def _run(pool: Any, inputs: Sequence[I], job: Callable[[I, str], R], jobs: int,
         out: IO[bytes] | None, done: Callable[[I, R], None], tmp: str,
         stops: _Deferred) -> None:
    pending: deque[tuple[I, str, Any]] = deque()  # (input, spool, AsyncResult)
    todo = iter(enumerate(inputs))
    window = 2 * max(1, jobs)

    def submit() -> bool:
        nxt = next(todo, None)
        if nxt is None:
            return False
        i, item = nxt
        spool = os.path.join(tmp, f"{i}.out")
        pending.append((item, spool, pool.apply_async(job, (item, spool))))
        return True

    while len(pending) < window and submit():
        stops.check()
    while pending:
        item, spool, res = pending.popleft()
        while not res.ready():
            res.wait(0.05)
            stops.check()
        result = res.get()
        if out is not None:
            _copy(spool, out)
            os.unlink(spool)
        done(item, result)
        stops.check()
        submit()


__all__ = ["default_jobs", "run_in_order", "usable_cores"]
