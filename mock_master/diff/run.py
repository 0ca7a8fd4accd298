"""Running a client session twice - against a real server and against the mock master - for the
differential harness (``mock-master diff``); the comparison is :mod:`mock_master.diff.compare`.

A *session* is either a Python callable ``session(host, port)`` or a command line whose
arguments may hold ``{host}`` and ``{port}`` (run with a timeout; its exit status is kept).
Each run goes through its own recording :class:`~mock_master.diff.capture.Relay`.

::

    from mock_master.diff.run import differential
    report = differential(my_client, real=("127.0.0.1", 3306), binlogs=[...copies...])
    assert report.ok, report.text()

:func:`copy_binlogs` copies a server's binlog files (the active one too: the mock serves what
the server would send) so the mock can serve them after the real run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mock_master.diff.capture import Conversation, Relay

if TYPE_CHECKING:
    from mock_master.diff.compare import DiffReport

SessionFn = Callable[[str, int], object]
Session = SessionFn | Sequence[str]


@dataclass
class Run:
    """One side's run: what the session returned (a command: its exit status and output)
    and the recorded conversations."""

    result: object
    conversations: list[Conversation]
    error: BaseException | None = None


def _as_callable(session: Session, timeout: float) -> SessionFn:
    if callable(session):
        return session
    argv = list(session)

    def run(host: str, port: int) -> object:
        cmd = [a.replace("{host}", host).replace("{port}", str(port)) for a in argv]
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return (p.returncode, p.stdout, p.stderr)

    return run


def record(session: Session, host: str, port: int, *, timeout: float = 120,
           settle: float = 0.3) -> Run:
    """Run ``session`` through a relay to ``host:port``; the session's exception (if any) is
    kept in ``Run.error`` (the conversations up to it still count)."""
    fn = _as_callable(session, timeout)
    relay = Relay(host, port).start()
    result: object = None
    error: BaseException | None = None
    try:
        result = fn(relay.host, relay.port)
    except Exception as exc:
        error = exc
    finally:
        time.sleep(settle)  # the last packets of a closing connection
        relay.stop(timeout=settle + 2)
    return Run(result, relay.conversations, error)


def copy_binlogs(files: Sequence[Path | str], dest: Path | str) -> list[Path]:
    """Copies of ``files`` under ``dest`` (same names), for the mock to serve."""
    d = Path(dest)
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for f in files:
        target = d / Path(f).name
        shutil.copyfile(f, target)
        out.append(target)
    return out


def differential(session: Session, real: tuple[str, int], *, mock: tuple[str, int] | None = None,
                 binlogs: Sequence[Path | str] = (), scenario: Any = None,
                 timeout: float = 120) -> tuple[DiffReport, Run, Run]:
    """Run ``session`` against the real server, then against the mock master, and compare.

    The mock is ``mock`` (a running one), else one started here from ``scenario`` (a
    :class:`~mock_master.scenario.scenarios.Scenario`) or serving ``binlogs``.
    """
    from mock_master.diff.compare import compare

    real_run = record(session, *real, timeout=timeout)
    if mock is not None:
        mock_run = record(session, *mock, timeout=timeout)
    else:
        from mock_master.scenario.scenarios import BinlogSource, Scenario
        from mock_master.serve.server import ThreadedMockMaster

        sc = scenario if scenario is not None else Scenario(sources=[BinlogSource(list(binlogs))])
        mm = ThreadedMockMaster(sc).start()
        try:
            mock_run = record(session, mm.host, mm.port, timeout=timeout)
        finally:
            mm.stop()
    rep = compare(real_run.conversations, mock_run.conversations)
    for side, run in (("real server", real_run), ("mock", mock_run)):
        if run.error is not None:
            rep.notes.append(f"the session raised against the {side}: "
                             f"{type(run.error).__name__}: {run.error}")
    if not callable(session) and _status(real_run) != _status(mock_run):
        rep.notes.append(f"the command exited {_status(real_run)} against the real server, "
                         f"{_status(mock_run)} against the mock")
    return rep, real_run, mock_run


def _status(run: Run) -> object:
    r = run.result
    return r[0] if isinstance(r, tuple) and r else r


# --------------------------------------------------------------------------------- command line
def _progress(err: TextIO, prog: str, *, quiet: bool) -> Callable[..., None]:
    """``say(text)`` starts a step on stderr, ``say(text, done=True)`` ends it with its time:
    a run takes a server start and two client runs (tens of seconds), never in silence."""
    started = [time.monotonic()]

    def say(text: str, *, done: bool = False) -> None:
        if quiet:
            return
        if done:
            print(f"{prog}: diff:   {text} ({time.monotonic() - started[0]:.1f} s)", file=err,
                  flush=True)
        else:
            started[0] = time.monotonic()
            print(f"{prog}: diff: {text}", file=err, flush=True)

    return say


def _run_summary(run: Run) -> str:
    """One side's run in a few words: the client's exit status, the connections recorded."""
    status = _status(run)
    what = (f"raised {type(run.error).__name__}" if run.error is not None
            else f"the client exited {status}" if isinstance(status, int) else "the client ended")
    return f"{what}; {len(run.conversations)} connection(s) recorded"


def add_diff_arguments(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--real", metavar="HOST:PORT",
                       help="the real server the client is first run against")
    where.add_argument("--start-mariadb", metavar="DIR",
                       help="start a throw-away MariaDB under DIR instead (scripts/mariadb.sh, "
                       "a source checkout; logins root and repl/replpass), stopped at the end")
    p.add_argument("--sql", metavar="FILE", help="with --start-mariadb: run this SQL file "
                   "(as root, database binlogscope_test) before the client, to fill the binlog")
    p.add_argument("--binlog", action="append", default=[], metavar="PATH",
                   help="the server's binlog files (repeatable; copied after the real run), "
                   "for the mock to serve")
    p.add_argument("--binlog-dir", metavar="DIR", help="the server's binlog directory: the "
                   "files its *.index lists")
    p.add_argument("--scenario", metavar="FILE", help="a mock master scenario (TOML/YAML) to "
                   "serve instead (users, flavour, answers)")
    p.add_argument("--flavor", choices=["mariadb", "mysql"],
                   help="which server the mock behaves as (default: the scenario's, else "
                   "mariadb)")
    p.add_argument("--user", action="append", default=[], metavar="NAME",
                   help="the mock's login for the client (repeatable; default: the scenario's, "
                   "else repl/replpass); its password from --password-file/--password-env")
    p.add_argument("--auth-plugin", choices=["mysql_native_password", "caching_sha2_password"],
                   default="mysql_native_password", help="the --user logins' auth plugin")
    from mock_master.passwords import add_password_arguments

    add_password_arguments(p, "the password of the --user logins (default: none)")
    p.add_argument("--timeout", type=float, default=120, help="seconds per run (default 120)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress lines on stderr (each step, its time, the connections "
                   "recorded)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="the client, with {host} and {port} where it takes the server "
                   "address")


def run_diff(args: argparse.Namespace, out: TextIO, err: TextIO, prog: str, *,
             started: bool = False) -> int:
    """``mock-master diff``: 0 when the mock said the same as the real server, 1 when not,
    2 on a usage error."""
    command = list(args.command)
    say = _progress(err, prog, quiet=getattr(args, "quiet", False))
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print(f"{prog}: error: give the client command after --", file=err)
        return 2
    if args.sql and not args.start_mariadb:
        print(f"{prog}: error: --sql needs --start-mariadb", file=err)
        return 2
    if args.start_mariadb and not started:
        from mock_master.diff import server as diff_server

        say(f"starting a throw-away MariaDB under {args.start_mariadb} ...")
        try:
            server = diff_server.start(args.start_mariadb)
        except (diff_server.ServerError, OSError, subprocess.TimeoutExpired) as exc:
            print(f"{prog}: error: {exc}", file=err)
            return 1
        try:
            say(f"MariaDB up on {server.host}:{server.port}", done=True)
            if args.sql:
                say(f"running {args.sql} on it ...")
                diff_server.run_sql(server, args.sql)
                say("filled", done=True)
            args.real = f"{server.host}:{server.port}"
            args.binlog_dir = str(server.binlog_dir)
            return run_diff(args, out, err, prog, started=True)
        except diff_server.ServerError as exc:
            print(f"{prog}: error: {exc}", file=err)
            return 1
        finally:
            say("stopping the throw-away MariaDB ...")
            server.stop()
            say("stopped", done=True)
    host, _, port_text = args.real.rpartition(":")
    try:
        real = (host or "127.0.0.1", int(port_text))
    except ValueError:
        print(f"{prog}: error: --real {args.real!r}: expected HOST:PORT", file=err)
        return 2
    files: list[Path] = [Path(b) for b in args.binlog]
    if args.binlog_dir:
        from mock_master.diff.server import binlog_files

        files += binlog_files(Path(args.binlog_dir))
    from mock_master.passwords import password_from_args
    from mock_master.scenario.scenarios import ScenarioError, User, load_scenario

    scenario = None
    try:  # everything that can fail before the real run
        if args.scenario:
            scenario = load_scenario(args.scenario)
        users = [User(name, password_from_args(args, default=""), args.auth_plugin)
                 for name in args.user]
    except ScenarioError as exc:
        print(f"{prog}: error: {exc}", file=err)
        return 2
    if not files and scenario is None:
        print(f"{prog}: error: give --binlog files, --binlog-dir or --scenario", file=err)
        return 2
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mm-diff-") as tmp:
        say(f"running the client against the real server {real[0]}:{real[1]} ...")
        real_run = record(command, *real, timeout=args.timeout)
        say(_run_summary(real_run), done=True)
        copies = copy_binlogs(files, tmp)  # after the real run: what the server had then
        from mock_master.scenario.scenarios import BinlogSource, Scenario
        from mock_master.serve.server import ThreadedMockMaster

        sc = scenario if scenario is not None else Scenario()
        if copies:
            sc.sources.append(BinlogSource(list(copies)))
        if args.flavor:
            sc.flavor = args.flavor
        if users:
            sc.users = users
        say(f"starting the mock master ({len(copies)} binlog file(s) copied"
            + (f", scenario {args.scenario}" if args.scenario else "") + ") ...")
        mm = ThreadedMockMaster(sc).start()
        say(f"listening on {mm.host}:{mm.port}", done=True)
        try:
            say("running the client against the mock ...")
            mock_run = record(command, mm.host, mm.port, timeout=args.timeout)
            say(_run_summary(mock_run), done=True)
        finally:
            mm.stop()
    from mock_master.diff.compare import compare

    say("comparing the server packets ...")
    rep = compare(real_run.conversations, mock_run.conversations)
    say("compared", done=True)
    if _status(real_run) != _status(mock_run):
        rep.notes.append(f"the command exited {_status(real_run)} against the real server, "
                         f"{_status(mock_run)} against the mock")
    for side, run in (("real server", real_run), ("mock", mock_run)):
        if run.error is not None:
            rep.notes.append(f"the command failed against the {side}: {run.error}")
    print(rep.text(), file=out)
    return 0 if rep.ok else 1

