"""One process per input (``--jobs``): a binlog file or a capture is self-contained, so a bulk
command runs the same per-input function in N worker processes and writes their outputs in
input order (architecture amendment 10: one definition, N cores).

:func:`run_in_order` runs ``job(input, spool)`` for each input in up to ``jobs`` worker
processes (forked, so the job is any function of the parent, and the inputs are the worker's
copy: only an index goes to it); each job writes its output into its own spool file (in a
private temporary directory) and returns a small result, which comes back pickled through the
worker's own pipe (a job's exception too, raised in the parent when that input's turn comes).
The parent copies the spool of input *i* to its output as soon as the inputs before it are
written, then hands ``(input, result)`` to ``done`` (the command prints that input's messages
there, so they come in input order too) and removes the spool. At most ``2 * jobs`` inputs are
in flight (started and not yet written), so the spools on disk stay bounded while one slow
input is written out.

No ``multiprocessing.Pool``: its ``terminate`` could hang the run when a job failed (2 hangs in
about 740 failing runs with a busy thread, tests/pipeline/jobs_stress.py: a worker forked just
before was sent SIGTERM while it still had the parent's deferring handler, then waited forever
for the task queue's lock that ``terminate`` holds). Here each worker has two pipes of its own
(the inputs it is to run, its answers) and nothing else is shared (no queue, no lock): a worker
sets its signals before anything else (the stopping ones are blocked across the fork, so one
sent meanwhile acts with the worker's own), and the run is stopped by SIGKILL to each worker
and a ``waitpid`` of it; a worker that dies is an error of its input, not a hang.

Ctrl-C: the workers ignore SIGINT; the parent notes it, and at its next safe point stops the
workers, removes the spools and raises KeyboardInterrupt (the command says "interrupted" and
exits 130); SIGTERM and SIGHUP run the command's own handler there. A broken pipe on the output
stops the workers the same way and is raised as BrokenPipeError.

``out=None``: the jobs write their output elsewhere (``export --jobs``: each input's Parquet
parts in a staging directory of its own); ``done`` is still called in input order, which is
where such a command publishes an input's output.
"""

from __future__ import annotations

import os
import pickle
import select
import shutil
import signal
import tempfile
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any, NoReturn, TypeVar

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


#: the signals a worker leaves at their default action (it ignores SIGINT)
_ENDS = tuple(s for s in _STOPS if s != signal.SIGINT)


class _Deferred:
    """Ctrl-C (and SIGTERM/SIGHUP) noted while the parent is inside the run's machinery (a
    fork, a worker's answer half read) and acted on at the next safe point (:meth:`check`);
    a KeyboardInterrupt raised between a fork and its worker being recorded would leave that
    worker running. At the safe point the command's own handler runs (raising
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


# A worker's answer, pickled onto its pipe: (_OK, result), (_FAILED, exception, traceback text)
# or, for an exception that does not come back through pickle, (_TEXT, "Type: message",
# traceback text).
_OK, _FAILED, _TEXT = 0, 1, 2


class _WorkerTracebackError(Exception):
    """The ``__cause__`` of a job's exception raised in the parent: where the job raised it
    (the traceback in the worker, as text)."""

    def __str__(self) -> str:
        return f"\n\n{self.args[0]}" if self.args else ""


def _answer(job: Callable[[I, str], R], item: I, spool: str) -> bytes:
    try:
        return pickle.dumps((_OK, job(item, spool)), pickle.HIGHEST_PROTOCOL)
    except BaseException as exc:  # (the parent raises it when the input's turn comes)
        tb = traceback.format_exc()
        try:
            data = pickle.dumps((_FAILED, exc, tb), pickle.HIGHEST_PROTOCOL)
            pickle.loads(data)  # (an exception whose __init__ wants other arguments loads not)
            return data
        except BaseException:
            text = "".join(traceback.format_exception_only(exc)).strip()
            return pickle.dumps((_TEXT, text, tb), pickle.HIGHEST_PROTOCOL)


def _worker(job: Callable[[I, str], R], inputs: Sequence[I], tmp: str, tasks: int, answers: int,
            inherited: list[int], mask: set[int | signal.Signals] | None) -> NoReturn:
    """The forked child: its signals first (the parent blocked the stopping ones across the
    fork, so one sent meanwhile acts on the worker now, with these), then the inputs the
    parent names on ``tasks`` (an index into its copy of ``inputs``, 8 bytes), each job's
    answer onto ``answers`` (8 bytes of length, the pickle), until ``tasks`` ends; then
    ``os._exit`` (never back into the parent's code: no ``finally`` of the parent, no atexit).
    Its standard streams are not flushed: a job writes its output to its spool, and a flush
    could wait on a lock another thread of the parent held at the fork."""
    code = 70
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
        for signum in _ENDS:  # (the parent's handlers, "stop like Ctrl-C", are no worker's)
            signal.signal(signum, signal.SIG_DFL)
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for other in inherited:  # (the parent's ends of this and the other workers' pipes)
            os.close(other)
        with os.fdopen(tasks, "rb") as todo:
            while len(head := todo.read(8)) == 8:
                index = int.from_bytes(head, "little")
                data = _answer(job, inputs[index], os.path.join(tmp, f"{index}.out"))
                view = memoryview(len(data).to_bytes(8, "little") + data)
                while view:
                    view = view[os.write(answers, view):]
        code = 0
    finally:
        os._exit(code)


def _reap(pid: int) -> int | None:
    """Wait for the worker ``pid`` to end; its wait status (None: already reaped elsewhere)."""
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return None
        except InterruptedError:  # pragma: no cover  (PEP 475 retries; a handler's raise)
            continue


def exit_text(code: int) -> str:
    """A child process's exit code as words (negative: the signal that killed it, as
    ``multiprocessing``'s ``exitcode`` and ``os.waitstatus_to_exitcode`` give it)."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _ended(status: int | None) -> str:
    if status is None:
        return "its exit status unknown"
    return exit_text(os.waitstatus_to_exitcode(status))


class _Slot:
    """One worker process: its pid, the parent's ends of its two pipes, the input it runs."""

    __slots__ = ("answer", "index", "pid", "recv", "send")

    def __init__(self, pid: int, send: int, recv: int) -> None:
        self.pid, self.send, self.recv = pid, send, recv
        self.index: int | None = None
        self.answer = bytearray()


class _Workers:
    """Up to ``jobs`` forked workers, each with two pipes of its own (the inputs it is to run,
    its answers): nothing shared between the parent and the workers (no queue, no lock), so
    stopping them is a SIGKILL and a ``waitpid`` each, and a worker that dies is an error of
    its input, never a hang. A worker runs input after input (a fork per input cost ~7 ms of
    CPU: the copy-on-write faults of both processes)."""

    def __init__(self, job: Callable[[I, str], Any], inputs: Sequence[I], tmp: str) -> None:
        self.job, self.inputs, self.tmp = job, inputs, tmp
        self.slots: dict[int, _Slot] = {}  # the parent's end of the answers pipe -> worker
        self.answers: dict[int, tuple[bool, Any]] = {}  # input index -> (ok, result/exception)
        self.failed: int | None = None  # the first input known to have failed
        self.poller = select.poll()

    def busy(self) -> int:
        return sum(1 for slot in self.slots.values() if slot.index is not None)

    def run(self, index: int) -> None:
        """Input ``index`` to an idle worker (a new one when none is idle)."""
        slot = next((s for s in self.slots.values() if s.index is None), None) or self._fork()
        slot.index = index
        try:
            os.write(slot.send, index.to_bytes(8, "little"))  # (one at a time: it has room)
        except BrokenPipeError:  # (the worker died idle: the input fails, not the output)
            self._lost(slot)

    def _fork(self) -> _Slot:
        fds: list[int] = []
        try:
            tasks_r, tasks_w = os.pipe()
            fds += (tasks_r, tasks_w)
            answers_r, answers_w = os.pipe()
            fds += (answers_r, answers_w)
            mask = None
            if hasattr(signal, "pthread_sigmask"):
                mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
            try:
                pid = os.fork()
                if pid == 0:
                    inherited = [tasks_w, answers_r]
                    for other in self.slots.values():
                        inherited += (other.send, other.recv)
                    _worker(self.job, self.inputs, self.tmp, tasks_r, answers_w, inherited, mask)
                slot = self.slots[answers_r] = _Slot(pid, tasks_w, answers_r)
                self.poller.register(answers_r, select.POLLIN)
            finally:
                if mask is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        except BaseException:
            if len(fds) < 4 or fds[2] not in self.slots:  # (not forked: none is the worker's)
                for fd in fds:
                    os.close(fd)
            raise
        os.close(tasks_r)
        os.close(answers_w)
        return slot

    def wait(self, timeout: float) -> None:
        """Read what the workers sent within ``timeout`` seconds; record the answers that are
        whole; a worker whose pipe ended is reaped (its input, if any, failed)."""
        for fd, _event in self.poller.poll(timeout * 1000):
            slot = self.slots[fd]
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self._lost(slot)
                continue
            slot.answer += chunk
            if len(slot.answer) >= 8:
                size = int.from_bytes(slot.answer[:8], "little")
                if len(slot.answer) >= 8 + size:
                    assert slot.index is not None
                    self._record(slot.index, pickle.loads(slot.answer[8:8 + size]))
                    slot.index = None
                    del slot.answer[:]

    def _lost(self, slot: _Slot) -> None:
        del self.slots[slot.recv]
        self.poller.unregister(slot.recv)
        os.close(slot.recv)
        os.close(slot.send)
        status = _reap(slot.pid)
        if slot.index is not None:
            self._record(slot.index, None, status)

    def _record(self, index: int, answer: Any, status: int | None = None) -> None:
        if answer is None:
            exc: BaseException = RuntimeError(
                f"the worker process of input #{index} ended without a result ({_ended(status)})")
        elif answer[0] == _OK:
            self.answers[index] = (True, answer[1])
            return
        elif answer[0] == _FAILED:
            exc = answer[1]
            exc.__cause__ = _WorkerTracebackError(answer[2])
        else:
            exc = RuntimeError(answer[1])
            exc.__cause__ = _WorkerTracebackError(answer[2])
        self.answers[index] = (False, exc)
        if self.failed is None or index < self.failed:
            self.failed = index

    def stop(self) -> None:
        """End every worker (SIGKILL: a job's output is of no use once the run stops, and an
        idle worker has nothing to finish) and reap it: none is left behind, not even as a
        zombie."""
        for slot in self.slots.values():
            try:
                os.kill(slot.pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover  (reaped elsewhere)
                pass
        for slot in list(self.slots.values()):
            _reap(slot.pid)
            self.poller.unregister(slot.recv)
            os.close(slot.recv)
            os.close(slot.send)
            del self.slots[slot.recv]


def run_in_order(inputs: Sequence[I], job: Callable[[I, str], R], jobs: int,
                 out: IO[bytes] | None, done: Callable[[I, R], None]) -> None:
    """Run ``job(input, spool path)`` for every input in at most ``jobs`` worker processes at
    a time; write each spool to ``out`` (None: the jobs write no spool) and call
    ``done(input, result)`` in input order. A job's exception is raised here when its input's
    turn comes (the same exception, with the worker's traceback as its ``__cause__``)."""
    stops = _Deferred()
    try:
        with tempfile.TemporaryDirectory(prefix="binlogscope-jobs-") as tmp:
            workers = _Workers(job, inputs, tmp)
            try:
                _run(workers, inputs, max(1, jobs), out, done, tmp, stops)
            finally:
                workers.stop()
    finally:
        stops.restore()
    stops.check()  # (a signal after the last input: the run is complete, the signal stands)


def _run(workers: _Workers, inputs: Sequence[I], jobs: int, out: IO[bytes] | None,
         done: Callable[[I, R], None], tmp: str, stops: _Deferred) -> None:
    started = 0
    window = 2 * jobs  # inputs started and not yet written out
    for turn, item in enumerate(inputs):
        while True:
            # (none past a failed input: the run ends there)
            end = len(inputs) if workers.failed is None else workers.failed + 1
            while started < end and started - turn < window and workers.busy() < jobs:
                workers.run(started)
                started += 1
                stops.check()
            if turn in workers.answers:
                break
            workers.wait(0.05)  # (short: a deferred signal is acted on within it)
            stops.check()
        ok, result = workers.answers.pop(turn)
        if not ok:
            raise result
        if out is not None:
            spool = os.path.join(tmp, f"{turn}.out")
            _copy(spool, out)
            os.unlink(spool)
        done(item, result)
        stops.check()


__all__ = ["default_jobs", "exit_text", "run_in_order", "usable_cores"]
