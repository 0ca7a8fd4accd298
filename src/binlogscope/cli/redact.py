"""``binlogscope redact FILES --out BUNDLE``: a shareable reproducer (docs/redact.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from binlogscope.cli.common import PROG


def add_redact_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("redact", help="scrub binlog files into a shareable reproducer bundle",
                       description="Write BUNDLE/binlog/ (the files with row values, "
                       "statements and names scrubbed; types, lengths, metadata and structure "
                       "kept; checksums recomputed) and BUNDLE/scenario.toml (a mock master "
                       "serving them).")
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="binlog files or directories, "
                   "or one capture (pcap/pcapng) of a replication session: its dump's events")
    p.add_argument("--port", type=int, action="append", default=[],
                   help="a capture's MySQL server port(s) (default 3306 and any port with a "
                   "server greeting)")
    p.add_argument("--flow", type=int, metavar="N", help="a capture's flow N (default: the "
                   "first that carries a dump; pcap --summary lists them)")
    p.add_argument("--out", required=True, metavar="BUNDLE", help="the bundle directory")
    p.add_argument("--until", metavar="FILE:POS", help="cut FILE after the event that ends at "
                   "or after POS (the slice up to the failing event; files after FILE are "
                   "left out)")


def cmd_redact(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from binlogscope.diagnose.redact import RedactError, redact_files
    from binlogscope.diagnose.walk import SourceError, binlog_paths, has_capture_magic
    from binlogscope.drivers.binlog_file import BinlogFileError

    target = Path(args.out)
    if target.exists() and any(target.iterdir()):
        print(f"{PROG}: redact: {target} is not empty", file=err)
        return 2
    if len(args.sources) == 1 and has_capture_magic(args.sources[0]):
        return _redact_capture(args, target, out, err)
    try:
        paths = binlog_paths(list(args.sources))
        until: dict[str, int] | None = None
        if args.until:
            name, sep, pos = args.until.rpartition(":")
            if not sep or not pos.isdigit():
                print(f"{PROG}: redact: --until expects FILE:POS", file=err)
                return 2
            names = [p.name for p in paths]
            if name not in names:
                print(f"{PROG}: redact: {name} is not among the sources", file=err)
                return 2
            paths = paths[: names.index(name) + 1]
            until = {name: int(pos)}
        bundle = redact_files(paths, target, until=until)
    except (SourceError, BinlogFileError, RedactError) as exc:
        print(f"{PROG}: redact: {exc}", file=err)
        return 1
    except OSError as exc:
        print(f"{PROG}: redact: {exc.strerror or exc}", file=err)
        return 1
    c = bundle.counts
    print(f"{target}: {len(bundle.files)} file(s), {bundle.events} events; scrubbed "
          f"{c.get('rows', 0)} row image(s), {c.get('statements', 0)} statement(s), "
          f"{c.get('names', 0)} name(s); serve it with: {PROG} mock-master --scenario "
          f"{bundle.scenario}", file=out)
    return 0


def _redact_capture(args: argparse.Namespace, target: Path, out: TextIO, err: TextIO) -> int:
    """A capture's dump: its events scrubbed into binlog files, and the scenario."""
    from binlogscope.diagnose.redact import RedactError
    from binlogscope.diagnose.redact_capture import redact_capture
    from binlogscope.drivers.capture.files import CaptureError

    try:
        until = None
        if args.until:
            name, sep, pos = args.until.rpartition(":")
            if not sep or not pos.isdigit():
                print(f"{PROG}: redact: --until expects FILE:POS", file=err)
                return 2
            until = (name, int(pos))
        bundle = redact_capture(Path(args.sources[0]), target, ports=set(args.port) or None,
                                flow=args.flow, until=until)
    except (RedactError, CaptureError) as exc:
        print(f"{PROG}: redact: {exc}", file=err)
        return 1
    except OSError as exc:
        print(f"{PROG}: redact: {exc.strerror or exc}", file=err)
        return 1
    c = bundle.counts
    for name in bundle.partial:
        print(f"{PROG}: redact: the stream did not carry every event of {name} (the dump "
              "began inside it, or the server left events out for this client, such as "
              "ANNOTATE_ROWS): the bundle's file holds the events it carried, their log_pos as "
              "the server wrote them, their offsets not", file=err)
    print(f"{target}: {len(bundle.files)} file(s) from the capture's dump, {bundle.events} "
          f"events; scrubbed {c.get('rows', 0)} row image(s), {c.get('statements', 0)} "
          f"statement(s), {c.get('names', 0)} name(s); serve it with: {PROG} mock-master "
          f"--scenario {bundle.scenario}", file=out)
    return 0


__all__ = ["add_redact_parser", "cmd_redact"]
