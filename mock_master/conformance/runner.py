"""Running cases: one mock master and one recording relay per case, the client in between.

Cases are independent (each has its own server on its own port, its own relay and its own
client process), so :func:`run_cases` runs several at once in threads; the client processes do
the work. A client that is still running at the case's time limit is stopped (its process
group, which the runner started) and the case judges what it saw.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from mock_master.conformance.clients import HELLO_LIVE, Client, Params, translate_live_all
from mock_master.conformance.model import (
    NEEDS_GTID,
    NEEDS_SEMI_SYNC,
    NEEDS_VALUES,
    Case,
    Check,
    Result,
    Setup,
    Verdict,
    worst,
)
from mock_master.conformance.observe import Observation
from mock_master.diff.capture import Relay
from mock_master.serve.server import ThreadedMockMaster

USER, PASSWORD = "repl", "replpass"


def _unimplemented(case: Case, client: Client) -> str | None:
    if NEEDS_GTID in case.needs and "gtid" not in client.offers:
        return "the client has no GTID start ({gtid} is not in its command)"
    if NEEDS_SEMI_SYNC in case.needs and "semi_sync" not in client.offers:
        return "the client does not negotiate semi-sync (--semi-sync not given)"
    if NEEDS_VALUES in case.needs and client.adapter == "none":
        return "the client reports no values (no adapter)"
    return None


def _read_lines(stream: Any, t0: float, client: Client, lines: list[dict[str, Any]],
                other: list[str]) -> None:
    if client.adapter == "binlogscope-live":
        lines.append(dict(HELLO_LIVE, _at=0.0))
    for raw in stream:
        text = raw.decode("utf-8", "replace").rstrip("\n")
        at = time.monotonic() - t0
        if client.adapter == "none":
            other.append(text)
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            other.append(text)
            continue
        if not isinstance(obj, dict):
            other.append(text)
            continue
        objs = translate_live_all(obj) if client.adapter == "binlogscope-live" else [obj]
        for o in objs:
            o["_at"] = round(at, 4)
            lines.append(o)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the client's process group (started by us, with its own session)."""
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_case(case: Case, client: Client, flavor: str, *,
             on_start: Callable[[ThreadedMockMaster], None] | None = None) -> Result:
    """Run ``case`` against ``client`` in ``flavor``; the graded :class:`Result`."""
    started = time.monotonic()
    why = _unimplemented(case, client)
    if why is not None:
        return Result(case.id, case.section, flavor, Verdict.UNIMPLEMENTED, case.title,
                      [Check(Verdict.UNIMPLEMENTED, why)], {}, 0.0)
    try:
        setup: Setup = case.build(flavor)
    except Exception as exc:  # a case that cannot be built is the catalogue's bug: reported
        return Result(case.id, case.section, flavor, Verdict.FAIL, case.title,
                      [Check(Verdict.FAIL, f"the case could not be built: "
                             f"{type(exc).__name__}: {exc}")], {}, 0.0)
    try:
        mm = ThreadedMockMaster(setup.scenario).start()
    except Exception as exc:  # the catalogue's (or a corpus file's) bug: reported
        return Result(case.id, case.section, flavor, Verdict.FAIL, case.title,
                      [Check(Verdict.FAIL, f"the mock master could not serve the case: "
                             f"{type(exc).__name__}: {exc}")], {}, time.monotonic() - started)
    relay = Relay("127.0.0.1", mm.port).start()
    try:
        stream = mm.master.stream
        first = stream.files[0].name if stream.files else "mysql-bin.000001"
        file, pos = setup.start or (first, 4)
        params = Params("127.0.0.1", relay.port, USER, PASSWORD, file, pos, setup.gtid, flavor,
                        2_000_000 + relay.port, semi_sync=NEEDS_SEMI_SYNC in case.needs,
                        heartbeat=setup.heartbeat, tls=setup.tls,
                        gtid_strict=setup.gtid_strict)
        env = dict(os.environ, MYSQL_PWD=PASSWORD,
                   **{f"CONFORMANCE_{k.upper()}": v for k, v in params.as_dict().items()})
        env.pop("CONFORMANCE_PASSWORD")
        env["PYTHONUNBUFFERED"] = "1"
        lines: list[dict[str, Any]] = []
        other: list[str] = []
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(client.argv(params), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                    start_new_session=True)
        except OSError as exc:
            return Result(case.id, case.section, flavor, Verdict.FAIL, case.title,
                          [Check(Verdict.FAIL, f"the client could not be started: {exc}")],
                          {}, time.monotonic() - started)
        if on_start is not None:
            on_start(mm)
        errbuf: list[bytes] = []
        tout = threading.Thread(target=_read_lines, args=(proc.stdout, t0, client, lines, other),
                                daemon=True)
        terr = threading.Thread(target=lambda: errbuf.append(proc.stderr.read() if proc.stderr
                                                             else b""), daemon=True)
        tout.start()
        terr.start()
        timed_out = False
        try:
            proc.wait(setup.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(proc)
        tout.join(5)
        terr.join(5)
        exit_code = None if timed_out else proc.returncode
        relay.stop(timeout=0.5)
    finally:
        relay.stop(timeout=0)
        mm.stop()
    clients = [_client_log(c) for c in mm.log.clients]
    obs = Observation(case.id, flavor, setup, relay.conversations, t0, lines, other,
                      b"".join(errbuf).decode("utf-8", "replace"), exit_code, timed_out,
                      time.monotonic() - t0, clients, has_adapter=client.adapter != "none")
    try:
        checks = case.judge(obs)
    except Exception as exc:  # a judge's bug must not stop the run: it is reported
        checks = [Check(Verdict.FAIL, f"the case's judge failed: {type(exc).__name__}: {exc}")]
    verdict = worst(checks)
    if case.informational and verdict in (Verdict.PASS, Verdict.NON_STRICT, Verdict.FAIL):
        verdict = Verdict.INFORMATIONAL
    # a passing case keeps the packet labels; the annotated trees are for what went wrong
    try:
        evidence = obs.evidence(trees=verdict not in (Verdict.PASS, Verdict.INFORMATIONAL))
    except Exception as exc:  # bytes no decoder expected (a fuzz mutant): said, not raised
        evidence = {"evidence_error": f"{type(exc).__name__}: {exc}"[:500],
                    "client_stderr": obs.stderr[-4000:], "client_exit": obs.exit_code,
                    "timed_out": obs.timed_out}
    evidence["expect"] = case.expect
    evidence["links"] = list(case.links)
    evidence["client"] = client.name
    return Result(case.id, case.section, flavor, verdict, case.title, checks, evidence,
                  time.monotonic() - started)


def _client_log(c: Any) -> dict[str, Any]:
    d = asdict(c)
    return {k: (list(v) if isinstance(v, list) else v) for k, v in d.items()}


def run_cases(cases: Iterable[tuple[Case, str]], client: Client, *, jobs: int = 4,
              progress: Callable[[Result], None] | None = None) -> list[Result]:
    """Run (case, flavor) pairs, ``jobs`` at a time; results in the order given."""
    todo = list(cases)

    def one(item: tuple[Case, str]) -> Result:
        r = run_case(item[0], client, item[1])
        if progress is not None:
            progress(r)
        return r

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, todo))
