"""How each preset and a command template turn a case's wishes into the client's own flags."""

from __future__ import annotations

from mock_master.conformance.catalogue import catalogue
from mock_master.conformance.catalogue.incidents import HALF_OPEN_HEARTBEAT
from mock_master.conformance.clients import Params, make_client


def _params(heartbeat: float | None) -> Params:
    return Params("127.0.0.1", 3306, "repl", "pw", "mysql-bin.000001", 4, None, "mariadb", 7,
                  heartbeat=heartbeat)


def test_the_half_open_case_asks_for_heartbeats() -> None:
    case = next(c for c in catalogue() if c.id == "incidents/half-open-no-heartbeats")
    assert case.build("mariadb").heartbeat == HALF_OPEN_HEARTBEAT == 3.0
    others = [c for c in catalogue() if c.id != case.id and c.build(c.flavors[0]).heartbeat]
    assert not others, [c.id for c in others]


def test_presets_pass_the_heartbeat_as_their_own_flags() -> None:
    live = make_client("binlogscope").argv
    argv = live(_params(3.0))
    i = argv.index("--heartbeat")
    assert argv[i + 1] == "3" and argv[argv.index("--net-read-timeout") + 1] == "6"
    assert "--heartbeat" not in live(_params(None))  # its defaults otherwise
    assert make_client("python-mysql-replication").argv(_params(3.0))[-2:] == ["3", ""]
    assert make_client("python-mysql-replication").argv(_params(None))[-2] == ""
    assert make_client("mariadb-replica").argv(_params(2.5))[-2] == "2.5"


def test_presets_insist_on_tls_with_their_own_flags() -> None:
    """A TLS case: "default" keeps the client's own setting, "required" insists."""
    p = _params(None)
    live = make_client("binlogscope").argv
    assert live(p)[live(p).index("--ssl-mode") + 1] == "DISABLED"  # the relay reads the stream
    p.tls = "default"
    assert live(p)[live(p).index("--ssl-mode") + 1] == "PREFERRED"
    p.tls = "required"
    assert live(p)[live(p).index("--ssl-mode") + 1] == "REQUIRED"
    assert "--ssl-verify-server-cert" in make_client("mariadb-binlog").argv(p)
    assert make_client("python-mysql-replication").argv(p)[-1] == "required"
    assert make_client("mariadb-replica").argv(p)[-1] == "required"


def test_a_template_gets_the_heartbeat_placeholder() -> None:
    t = make_client("my-cdc --hb {heartbeat} {host}:{port}")
    assert t.argv(_params(3.0)) == ["my-cdc", "--hb", "3", "127.0.0.1:3306"]
    assert t.argv(_params(None)) == ["my-cdc", "--hb", "0", "127.0.0.1:3306"]
