"""``live --out FILE``: an output file that advances together with the ``--state`` file.

The protocol (exactly once across crashes, even ``kill -9``):

* the state file records, with the restart position, ``out_length``: how many bytes of the
  output hold exactly the events up to that position;
* a commit (at a transaction boundary) writes the buffered output, flushes and fsyncs it, and
  only then saves the state (temporary file, fsync, rename, directory fsync);
* a restart cuts the output back to ``out_length`` (what a crash wrote after the last commit
  is delivered again, from the recorded position) and appends from there.

A first run claims the file before it writes to it: the state is saved with ``out_length`` 0
(no position yet), so a crash before the first commit is resumed like any other. An output
the state does not account for (a file with data and no state, or shorter than the state
says) is one clear error: binlogscope never guesses which part of it is valid.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from binlogscope.pipeline.state import ReplicaState


class OutputFileError(Exception):
    """The ``--out`` file cannot be continued (one line naming the file and the problem)."""


class CommittedOutput:
    """The ``--out`` file, opened for appending after the last committed byte.

    ``text``: a text stream over it (UTF-8) for the printers; :meth:`commit` writes out
    everything written so far, fsyncs it and returns the file's length."""

    def __init__(self, path: str | Path, state_path: str | Path) -> None:
        p = Path(path)
        self.path = p
        if p.is_dir():
            raise OutputFileError(f"--out {p} is a directory")
        state = ReplicaState.load(state_path)  # (validated by the caller already)
        length = state.out_length
        size = p.stat().st_size if p.exists() else None
        if length is None:
            if size:
                raise OutputFileError(
                    f"--out {p} already holds {size} bytes that the state file {state_path} "
                    "does not account for: remove it, or name a new file")
            length = 0
            state.out_length = 0
            state.save(state_path)  # claim the file before writing to it
        elif size is None:
            raise OutputFileError(f"the state file {state_path} records {length} bytes of "
                                  f"--out {p}, which does not exist")
        elif size < length:
            raise OutputFileError(f"--out {p} holds {size} bytes, fewer than the {length} the "
                                  f"state file {state_path} records: it was changed outside "
                                  "binlogscope")
        #: bytes a crash had written after the last commit (cut off now, delivered again)
        self.cut = (size or 0) - length
        f = open(p, "r+b" if size is not None else "w+b", buffering=1 << 20)  # noqa: SIM115
        try:
            f.truncate(length)
            f.seek(length)
            if self.cut:
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            f.close()
            raise
        self._f = f
        self.text = io.TextIOWrapper(f, encoding="utf-8", errors="backslashreplace",
                                     newline="\n", write_through=False)

    def commit(self) -> int:
        """Everything written so far is on disk; returns the file's length."""
        self.text.flush()
        f = self._f
        f.flush()
        os.fsync(f.fileno())
        return f.tell()

    def close(self) -> None:
        """Close the file (what was written after the last commit is kept; the next run cuts
        it back to the committed length)."""
        try:
            self.text.close()
        except (OSError, ValueError):
            pass


__all__ = ["CommittedOutput", "OutputFileError"]
