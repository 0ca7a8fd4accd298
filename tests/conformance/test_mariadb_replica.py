"""A real MariaDB replica (its IO thread) graded on the protocol cases: its semi-sync ACKs and
where it resumes after a cut, judged on the wire. The replica is a throw-away server of its
own (scripts/mariadb.sh), connected to each case's mock master in turn."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_master.conformance.model import Result, Verdict
from tests.ci_support import unavailable
from tests.conformance.support import explain, run
from tests.mariadb_server import MariaDB, ServerStartError, start, stop

pytestmark = [pytest.mark.mysql, pytest.mark.network, pytest.mark.slow]

CASES = ("semisync/ack-each-flagged-event,stream/disconnect-mid-transaction,"
         "stream/disconnect-mid-event,stream/err-1236-purged,setup/dump-request-framing,"
         "gtid/mariadb-purged,semisync/ack-multi-packet-event,stream/tcp-cut-mid-packet,"
         "incidents/half-open-no-heartbeats,setup/tls-required,setup/tls-insisted-not-offered,"
         "gtid/mariadb-strict-mode-hole,gtid/mariadb-out-of-order-seq-no")


@pytest.fixture(scope="module")
def replica(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    d = Path(tmp_path_factory.mktemp("conformance-replica"))
    try:
        server = start(d)
    except ServerStartError as exc:
        unavailable(f"MariaDB could not be started: {exc}")
    old = {k: os.environ.get(k) for k in ("CONFORMANCE_REPLICA",
                                          "CONFORMANCE_REPLICA_PASSWORD")}
    os.environ["CONFORMANCE_REPLICA"] = f"{server.host}:{server.port}:{server.user}"
    os.environ["CONFORMANCE_REPLICA_PASSWORD"] = server.password
    try:
        yield server
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        stop(server.dir)


@pytest.fixture(scope="module")
def results(replica: MariaDB) -> dict[str, Result]:
    return run("mariadb-replica", CASES, flavors=("mariadb",), jobs=1)


def test_the_replica_passes_the_protocol_cases(results: dict[str, Result]) -> None:
    assert len(results) == 13
    cut = results.pop("stream/disconnect-mid-event [mariadb]")
    bad = [explain(r) for r in results.values() if r.verdict != Verdict.PASS]
    assert not bad, "\n".join(bad)
    # a truncated event is corruption to a real replica: its IO thread stops (no resume)
    assert cut.verdict == Verdict.NON_STRICT, explain(cut)
    assert any("1595" in ln for ln in cut.evidence["client_other_output"]), explain(cut)


def test_a_silent_master_is_noticed_with_the_heartbeat_the_case_asks_for(
        results: dict[str, Result]) -> None:
    """The preset sets MASTER_HEARTBEAT_PERIOD=3 and slave_net_timeout=6 for the half-open
    case: the IO thread gives up on the stalled connection and reconnects (a second dump
    request on the wire), resuming where it stopped."""
    r = results["incidents/half-open-no-heartbeats [mariadb]"]
    text = "\n".join(c.text for c in r.checks)
    assert "reconnected" in text and "@master_heartbeat_period" in text.lower(), explain(r)
    assert "resumed at" in text, explain(r)


def test_tls_what_the_replica_does(results: dict[str, Result]) -> None:
    """10.11's default MASTER_SSL=0 against a TLS-only master: the login is refused (1045) and
    the IO thread reports it and retries; told to insist (MASTER_SSL_VERIFY_SERVER_CERT=1) it
    sends no login to a master without TLS."""
    req = "\n".join(c.text for c in results["setup/tls-required [mariadb]"].checks)
    assert "plain text" in req and "1045" in req, req
    ins = "\n".join(c.text for c in results["setup/tls-insisted-not-offered [mariadb]"].checks)
    assert "refused to log in without TLS" in ins, ins


def test_in_gtid_strict_mode_it_reports_the_hole(results: dict[str, Result]) -> None:
    """gtid_strict_mode=ON (the case's wish): the IO thread announces
    @slave_gtid_strict_mode=1 and stops on the server's ERR 1236."""
    r = results["gtid/mariadb-strict-mode-hole [mariadb]"]
    assert any("slave_gtid_strict_mode" in p["label"] and "1" in p["label"]
               for p in r.evidence["packets"]), explain(r)
    assert any("1236" in ln for ln in r.evidence["client_other_output"]), explain(r)


def test_its_acks_and_its_resume_position_are_the_evidence(results: dict[str, Result]) -> None:
    acks = results["semisync/ack-each-flagged-event [mariadb]"]
    assert any("semi_sync_ack" in p["label"] for p in acks.evidence["packets"])
    assert "ACK(s), one per flagged event" in "\n".join(c.text for c in acks.checks)
    cut = results["stream/disconnect-mid-transaction [mariadb]"]
    assert "resumed at" in "\n".join(c.text for c in cut.checks), explain(cut)
