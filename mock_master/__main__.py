"""``python -m mock_master`` / ``mock-master``: serve a scenario, or record a real server.

::

    mock-master serve captures/x/mysql-bin.000001 --port 0       # prints the port
    mock-master captures/x/mysql-bin.000001                      # "serve" is the default
    mock-master serve --scenario ci.toml --log run.json --quiet
    mock-master serve x.bin --user repl --password-env REPL_PW   # a login (password not in argv)
    mock-master record --host 127.0.0.1 --user repl --password-file pw.txt out.jsonl
    mock-master actions                                          # list fault actions
    mock-master diff --real 127.0.0.1:3306 --binlog-dir D -- client {host} {port}   # compare

``binlogscope mock-master ...`` is the same command line (:func:`main` with another ``prog``).
Passwords never come from the command line (every user of the machine can read it): they are
read from a file (its first line) or an environment variable.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import sys
from collections.abc import Sequence
from typing import TextIO

from binlogscope.wire.fields import escaped
from mock_master.passwords import add_password_arguments, password_from_args

PROG = "mock-master"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="A scriptable MySQL/MariaDB primary that "
                                "replays binlogs to real replication clients.")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    s = sub.add_parser("serve", help="serve a scenario (the default command)")
    add_serve_arguments(s)
    r = sub.add_parser("record", help="record a real server's binlog once into a recording "
                       "(replay it with --recording)")
    r.add_argument("out", metavar="OUT", help="recording file to write (JSON lines)")
    r.add_argument("--host", default="127.0.0.1", help="the server to record from "
                   "(default 127.0.0.1)")
    r.add_argument("--port", type=int, default=3306, help="its port (default 3306)")
    r.add_argument("--user", default="root", help="a user with REPLICATION SLAVE (default root)")
    add_password_arguments(r, "the password (default: $MYSQL_PWD, else none)")
    r.add_argument("--start", metavar="FILE:POS", help="record from here (default: the first "
                   "binlog file's start)")
    sub.add_parser("actions", help="list the fault actions a scenario can use")
    from mock_master.diff.run import add_diff_arguments

    add_diff_arguments(sub.add_parser(
        "diff", help="run a client against a real server and against the mock, compare the "
        "packets", description="Run the client command against the real server, then against "
        "the mock master serving copies of its binlog files, both through a recording relay; "
        "compare the server packets field by field (docs/differential.md). Exit 0: the same, "
        "1: different."))
    return p


def add_serve_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("binlogs", nargs="*", metavar="BINLOG",
                   help="binlog files or directories to serve (like --binlog)")
    s.add_argument("--scenario", metavar="FILE", help="TOML or YAML scenario")
    s.add_argument("--binlog", action="append", default=[], metavar="PATH",
                   help="binlog file or directory to serve (repeatable)")
    s.add_argument("--pcap", metavar="FILE", help="serve the binlog events of a capture")
    s.add_argument("--recording", metavar="FILE", help="serve a recording")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                   "127.0.0.1; 0.0.0.0: every interface)")
    s.add_argument("--port", type=int, default=None,
                   help="TCP port (default: a free one, named in the first line; 0: a free one "
                   "printed again alone on the second line, for scripts). Not 3306 by "
                   "default: a real server on this machine has it")
    s.add_argument("--flavor", choices=["mariadb", "mysql"],
                   help="which server to behave as: greeting, variables, GTID dump command "
                   "(default: the scenario's, else mariadb)")
    s.add_argument("--server-version", metavar="VERSION",
                   help="the version the greeting and SELECT VERSION() announce (default: the "
                   "served binlog's FORMAT_DESCRIPTION version, else the flavour's)")
    s.add_argument("--user", action="append", default=[], metavar="NAME",
                   help="a login (repeatable; replaces the scenario's users; default: the "
                   "scenario's, else repl with password replpass); its password from "
                   "--password-file or --password-env")
    add_password_arguments(s, "the password of the --user logins (default: none)")
    s.add_argument("--auth-plugin", choices=["mysql_native_password", "caching_sha2_password"],
                   default="mysql_native_password", help="the --user logins' auth plugin")
    s.add_argument("-q", "--quiet", action="store_true",
                   help="no line on stderr per client connect, register, dump and close")
    s.add_argument("--tls-cert", metavar="PEM", help="certificate to offer TLS with; "
                   "without it (or the scenario's) the mock master offers no TLS")
    s.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert (default: "
                   "in the --tls-cert file)")
    s.add_argument("--schema-ddl", metavar="FILE", help="the tables, as a DDL script (CREATE "
                   "DATABASE/USE/CREATE TABLE...): first over the stream's DDL and TABLE_MAPs")
    s.add_argument("--schema-from", metavar="URL", help="the tables of a live server: "
                   "mysql://user@host:port[/db,...] (password in $MOCK_MASTER_SCHEMA_PASSWORD)")
    s.add_argument("--log", metavar="FILE", help="write what each client did here (JSON) when "
                   "the server stops")
    s.add_argument("--action", action="append", default=[], metavar="'KIND at=N key=value'",
                   help="a fault action (repeatable), e.g. 'disconnect_after_event at=10'")


def scenario_from_args(args: argparse.Namespace) -> object:
    from mock_master.scenario.scenarios import (
        BinlogSource,
        PcapSource,
        RecordingSource,
        Scenario,
        User,
        load_scenario,
    )

    sc = load_scenario(args.scenario) if args.scenario else Scenario()
    if args.binlog or args.binlogs:
        sc.sources.append(BinlogSource(list(args.binlog) + list(args.binlogs)))
    if args.pcap:
        sc.sources.append(PcapSource(args.pcap))
    if args.recording:
        sc.sources.append(RecordingSource(args.recording))
    if args.flavor:
        sc.flavor = args.flavor
    if args.server_version:
        sc.server_version = args.server_version
    if args.user:
        bad = [u for u in args.user if ":" in u]
        if bad:
            raise ValueError(f"--user {bad[0].partition(':')[0]}:...: --user takes a name only; "
                             "passwords are not taken from the command line (every user of "
                             "the machine can read it): use --password-file FILE or "
                             "--password-env VARIABLE")
        pw = password_from_args(args, default="")
        sc.users = [User(name, pw, args.auth_plugin) for name in args.user]
    elif args.password_file or args.password_env:
        raise ValueError("--password-file/--password-env need --user NAME")
    if args.tls_cert:
        sc.tls_cert, sc.tls_key = args.tls_cert, args.tls_key or args.tls_cert
    if args.log:
        sc.log = args.log
    if args.schema_ddl:
        sc.schema_ddl = args.schema_ddl
    if args.schema_from:
        sc.schema_from = args.schema_from
    from binlogscope.drivers.scenario_files import parse_action
    from mock_master.scenario.faults import validate_action

    # a malformed --action is a usage error (ValueError: exit 2), an unknown one a scenario error
    sc.actions += [validate_action(parse_action(text, ValueError)) for text in args.action]
    return sc


def run_serve(args: argparse.Namespace, out: TextIO, err: TextIO, prog: str = PROG) -> int:
    from mock_master.history.sources import SourceError
    from mock_master.scenario.scenarios import ScenarioError
    from mock_master.serve.server import MockMaster

    try:
        sc = scenario_from_args(args)
        if not sc.sources:  # type: ignore[attr-defined]
            what = ("the scenario has no [[sources]]" if args.scenario else "no binlog given")
            print(f"{prog}: error: {what}: nothing to serve - give binlog files or directories "
                  "(mock-master serve mysql-bin.000001 ...), --pcap FILE, --recording FILE or "
                  "a --scenario FILE with [[sources]] (--help: every option)", file=err)
            return 2
        mm = MockMaster(sc, args.host, args.port or 0)  # type: ignore[arg-type]
        if not args.quiet:
            # (a line names what clients sent - a dump file name, a REGISTER host: escaped, so
            # a client cannot write to the operator's terminal or forge a line)
            mm.announce = lambda line: print(f"{prog}: {escaped(line)}", file=err, flush=True)
    except (ScenarioError, SourceError, ValueError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=err)
        return 2 if isinstance(exc, ValueError) else 1
    warn_undescribed(mm.undescribed_tables(), err, prog)

    async def main() -> None:
        try:
            port = await mm.start()
        except OSError as exc:
            hint = " (leave --port out for a free port)" if args.port else ""
            raise SystemExit(f"{prog}: error: cannot listen on {args.host}:{args.port}: "
                             f"{exc.strerror or exc}{hint}") from None
        print(f"mock master ({mm.flavor} {mm.version}) listening on {args.host}:{port}, "
              f"serving {len(mm.stream.files)} binlog file(s), {mm.stream.event_count} events",
              file=out, flush=True)
        print(port, file=out, flush=True) if args.port == 0 else None
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):
                pass
        await stop.wait()
        await mm.stop()
        for v in mm.log.violations:
            print(f"{prog}: client violation: {escaped(str(v))}", file=err)
        for q in mm.log.unknown_queries:
            print(f"{prog}: unknown query (add an answer): {escaped(str(q))}", file=err)

    try:
        asyncio.run(main())
    except SystemExit as exc:
        print(exc, file=err)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


#: tables named one by one in the load-time warning (the rest are counted)
WARN_TABLES = 20


def warn_undescribed(tables: list[str], err: TextIO, prog: str = PROG) -> None:
    """At load time, on stderr (also with --quiet): the tables the mock cannot describe and
    how to describe them (they are answered as missing tables)."""
    if not tables:
        return
    shown = ", ".join(tables[:WARN_TABLES]) + (
        f" and {len(tables) - WARN_TABLES} more" if len(tables) > WARN_TABLES else "")
    print(f"{prog}: warning: {len(tables)} table(s) have TABLE_MAPs without column names "
          f"(binlog_row_metadata is not FULL) and no CREATE TABLE in the served files: "
          f"{shown}", file=err)
    print(f"{prog}: warning: a client asking about them gets what a server says of a missing "
          "table (ERR 1146 for SHOW CREATE TABLE/SHOW COLUMNS/DESCRIBE, no information_schema "
          "rows), so CDC clients that need column names stop, stall or drop their rows; "
          "describe them with --schema-ddl FILE (their CREATE TABLE statements; scenario: "
          "schema_ddl) or "
          "--schema-from mysql://user@host:port/db (a server that has them; scenario: "
          "schema_from; password in "
          "$MOCK_MASTER_SCHEMA_PASSWORD)", file=err)


def run_record(args: argparse.Namespace, out: TextIO, err: TextIO, prog: str = PROG) -> int:
    import os

    from mock_master.history.loaders import record_live
    from mock_master.history.sources import SourceError
    from mock_master.scenario.scenarios import ScenarioError

    try:
        password = password_from_args(args, default=os.environ.get("MYSQL_PWD", ""))
        n = record_live(args.host, args.port, args.user, password, args.out,
                        start=args.start)
    except (SourceError, ScenarioError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=err)
        return 1
    print(f"recorded {n} events into {args.out}", file=out)
    return 0


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None, prog: str = PROG) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("serve", "record", "actions", "diff", "-h", "--help"):
        argv.insert(0, "serve")
    try:
        args = build_parser(prog).parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error (already printed)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if args.cmd == "actions":
        from mock_master.scenario.faults import ACTIONS

        for name, (defaults, what) in sorted(ACTIONS.items()):
            extra = " ".join(f"{k}={v}" for k, v in defaults.items())
            print(f"{name:30} {what}" + (f"  [{extra}]" if extra else ""), file=out)
        return 0
    if args.cmd == "record":
        return run_record(args, out, err, prog)
    if args.cmd == "diff":
        from mock_master.diff.run import run_diff

        return run_diff(args, out, err, prog)
    return run_serve(args, out, err, prog)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    raise SystemExit(main())
