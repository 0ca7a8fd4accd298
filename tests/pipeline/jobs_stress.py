"""``python -m tests.pipeline.jobs_stress RUNS``: the failing-job run of
tests/pipeline/test_jobs.py RUNS times in a row (two workers, small inputs) with a busy
background thread, as under pytest-xdist; prints one line per run. With
``multiprocessing.Pool`` about one run in 400 hung in ``pool.join()`` after
``pool.terminate()``; the test runs this under a timeout so such a hang fails it."""

from __future__ import annotations

import io
import sys
import threading
import time
from pathlib import Path

from binlogscope.pipeline.jobs import run_in_order


def failing_job(n: int, spool: str) -> int:
    if n == 2:
        raise RuntimeError("job 2 failed")
    Path(spool).write_text(f"{n}\n")
    return n


def _busy(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(1000))


def main(runs: int) -> int:
    stop = threading.Event()
    threading.Thread(target=_busy, args=(stop,), daemon=True).start()
    t0 = time.monotonic()
    for i in range(runs):
        out = io.BytesIO()
        try:
            run_in_order(list(range(5)), failing_job, 2, out, lambda item, r: None)
        except RuntimeError as exc:
            if "job 2 failed" not in str(exc):
                raise
        else:
            raise AssertionError("the failing job did not stop the run")
        if out.getvalue() != b"0\n1\n":
            raise AssertionError(out.getvalue())
        print(f"run {i + 1} done at {time.monotonic() - t0:.2f} s", flush=True)
    stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
