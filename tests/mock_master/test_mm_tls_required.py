"""tls_required (require_secure_transport=ON): a plain login is refused as each server does -
MariaDB 10.11 with ERR 1045 (measured: tests/conformance/test_real_mariadb_tls.py), MySQL with
ERR 3159 after the password check (acl_authenticate) - and a TLS login gets in."""

from __future__ import annotations

import pymysql
import pytest

from mock_master.conformance.catalogue.common import txn_stream
from mock_master.conformance.catalogue.setup import _tls_files
from mock_master.scenario.errors import ScenarioError
from mock_master.scenario.scenarios import Scenario, StreamSource
from mock_master.serve.server import ThreadedMockMaster

pytestmark = pytest.mark.network


def _login(mm: ThreadedMockMaster, password: str, *, tls: bool) -> tuple[int, str] | None:
    kw: dict[str, object] = {"ssl": {"check_hostname": False}} if tls else {"ssl_disabled": True}
    try:
        pymysql.connect(host="127.0.0.1", port=mm.port, user="repl", password=password,
                        connect_timeout=10, **kw).close()  # type: ignore[arg-type]
    except pymysql.MySQLError as exc:
        return int(exc.args[0]), str(exc.args[1])
    return None


@pytest.mark.parametrize("flavor", ["mariadb", "mysql"])
def test_a_plain_login_is_refused_a_tls_login_gets_in(flavor: str) -> None:
    cert, key = _tls_files()
    b, _ = txn_stream(flavor, 1)
    mm = ThreadedMockMaster(Scenario(flavor=flavor, sources=[StreamSource(b.build())],
                                     tls_cert=cert, tls_key=key, tls_required=True)).start()
    try:
        plain = _login(mm, "replpass", tls=False)
        wrong = _login(mm, "nope", tls=False)
        assert _login(mm, "replpass", tls=True) is None
    finally:
        mm.stop()
    assert wrong is not None and wrong[0] == 1045  # the password is checked first
    assert plain is not None
    if flavor == "mariadb":
        assert plain[0] == 1045 and "Access denied for user 'repl'" in plain[1]
    else:
        assert plain == (3159, "Connections using insecure transport are prohibited while "
                               "--require_secure_transport=ON.")


def test_tls_required_needs_a_certificate() -> None:
    with pytest.raises(ScenarioError, match="tls_required needs tls_cert"):
        Scenario(tls_required=True)
