"""What the subcommands' modules share: the program name, the ``--table`` pattern and the
``--jobs`` loop of the commands that print per input (``file``, ``pcap``), and how a quoted
glob among the inputs is expanded (``file``, ``export``)."""

from __future__ import annotations

import functools
import glob
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

from binlogscope.pipeline.jobs import default_jobs, run_in_order
from binlogscope.render.escape import EscapingText, escape_controls
from binlogscope.render.json_out import binary_stream

PROG = "binlogscope"


class BadPatternError(Exception):
    """``--table`` is not a regular expression (the message is printed; exit code 2)."""


def table_pattern(text: str | None, err: TextIO) -> re.Pattern[str] | None:
    """The compiled ``--table`` regex (None when not given); prints one line and raises
    :class:`BadPatternError` when it does not compile."""
    if not text:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        print(f"{PROG}: error: --table: bad regular expression: {exc}", file=err)
        raise BadPatternError(str(exc)) from None


def jobs_option(args: Any, command: str, inputs: int, err: TextIO) -> int | None:
    """``--jobs`` (default: :func:`~binlogscope.pipeline.jobs.default_jobs` of the ``inputs``:
    one for one input, else the free cores); None, after one error line, below 1."""
    jobs: int | None = getattr(args, "jobs", None)
    if jobs is None:
        jobs = default_jobs(inputs)
    if jobs < 1:
        print(f"{PROG}: {command}: --jobs must be at least 1", file=err)
        return None
    return jobs


def spool_output(jobs: int, inputs: Sequence[str], out: TextIO) -> IO[bytes] | None:
    """Where the ``--jobs`` workers' spools are copied (the output's binary stream) when the
    inputs are run a process each: more than one job and input, none of them standard input
    (``-``), an output that is no terminal; None: run them in this process."""
    raw = binary_stream(out)
    if jobs > 1 and len(inputs) > 1 and "-" not in inputs and raw is not None \
            and not out.isatty():
        return raw
    return None


#: a ``--jobs`` worker: (the output's encoding, its error handler, whether it escapes, the
#: input, the spool file to write) -> (exit status, messages)
SpoolJob = Callable[[str, str, bool, str, str], tuple[int, str]]


def run_jobs_in_order(command: str, inputs: Sequence[str], job: SpoolJob, jobs: int,
                      out: TextIO, raw: IO[bytes], err: TextIO) -> int:
    """``--jobs N``: one process per input, each writing what the command prints to a spool
    file (encoded and escaped as ``out`` would); the outputs and messages in input order; the
    worst exit status (130 on Ctrl-C, with one line; 0 when the reader of the output left)."""
    status = 0

    def done(path: str, result: tuple[int, str]) -> None:
        nonlocal status
        code, messages = result
        status = max(status, code)
        if messages:
            err.write(messages)
            err.flush()

    out.flush()
    work = functools.partial(job, getattr(out, "encoding", None) or "utf-8",
                             getattr(out, "errors", None) or "strict",
                             isinstance(out, EscapingText))
    try:
        run_in_order(inputs, work, min(jobs, len(inputs)), raw, done)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: {command}: interrupted", file=err)
        return 130
    return status


__all__ = ["PROG", "BadPatternError", "SpoolJob", "jobs_option", "run_jobs_in_order",
           "spool_output", "table_pattern"]


def expand_globs(paths: Sequence[str], command: str, err: TextIO) -> list[str] | None:
    """The inputs with each quoted glob (``'mysql-bin.0*'``) replaced by its matches in name
    order, as the shell would have done (and as ``export --spark`` does): a path that exists
    or has no glob character stays as given (a missing one is reported by its reader), a
    glob's match that is the server's binlog index file is left out with a note
    (:func:`skip_index_files`). A glob that matches nothing (or only the index file) is one
    error line and None (the caller exits non-zero)."""
    out: list[str] = []
    for raw in paths:
        if raw == "-" or not glob.has_magic(raw) or Path(raw).exists():
            out.append(raw)
            continue
        matches = sorted(glob.glob(raw))
        kept = skip_index_files(matches, command, err)
        if not kept:
            what = "only the binlog index file" if matches else "no file"
            print(f"{PROG}: {command}: {escape_controls(raw)}: the glob matches {what}",
                  file=err)
            return None
        out += kept
    return out


def skip_index_files(sources: Sequence[str], command: str, err: TextIO) -> list[str]:
    """A datadir glob (``mysql-bin.*``) names the server's binlog index file too: a text list of
    the binlog files, not one of them. Such a file (``.index`` name, no binlog magic) is left
    out with a note instead of failing the command; anything else is kept and judged as
    input."""
    kept = []
    for s in sources:
        path = Path(s)
        if path.suffix == ".index" and path.is_file():
            try:
                with path.open("rb") as fh:
                    head = fh.read(4)
            except OSError:
                head = b""
            if head != b"\xfebin":
                print(f"{PROG}: {command}: {escape_controls(s)}: left out - a binlog index "
                      "file (the list of the binlog files), not a binlog", file=err)
                continue
        kept.append(s)
    return kept
