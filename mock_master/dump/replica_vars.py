"""The user variables a replica sets before its dump, read under the names the emulated server
reads them (``--flavor`` and ``--server-version``).

Facts from the servers' source (never their code):

- MySQL 8.0.26 renamed master/slave to source/replica; since then the sender looks a variable
  up under its new name first and the old one second (``get_user_var_from_alternatives`` in
  mysql-server ``sql/rpl_source.cc`` at 08415f0d, 8.4 era: ``uv.find(alt1)``, then
  ``uv.find(alt2)``): ``get_replica_uuid`` reads ``replica_uuid`` then ``slave_uuid``;
  ``Binlog_sender::init_checksum_alg`` ``source_binlog_checksum`` then
  ``master_binlog_checksum``; ``init_heartbeat_period`` ``source_heartbeat_period`` then
  ``master_heartbeat_period``.
- Before 8.0.26 (``sql/rpl_binlog_sender.cc`` at 6299d1de, 8.0.1x; 0313b353, 5.7) only the
  old names exist: ``user_vars.find("master_binlog_checksum")``, ``"master_heartbeat_period"``,
  and ``get_slave_uuid`` reads ``slave_uuid``. A client that sets only ``@source_*`` talks to
  such a server as one that set nothing (checksum-unaware: the dump of a CRC32 binlog fails;
  no heartbeats).
- MariaDB (``sql/sql_repl.cc`` at 0020b98b, 11.x): ``master_binlog_checksum`` and
  ``master_heartbeat_period`` only, and no replica UUID (a dump is matched by server_id).
- Semi-sync: the source plugin decides. 8.0.26 brought ``semisync_source`` (plugin
  ``rpl_semi_sync_source``, variables ``rpl_semi_sync_source_*``) whose
  ``ReplSemiSyncMaster::is_semi_sync_slave`` reads only ``@rpl_semi_sync_replica``; the
  ``semisync_replica`` plugin sends ``SET @rpl_semi_sync_replica = 1`` to such a source and
  ``SET @rpl_semi_sync_replica = 1, @rpl_semi_sync_slave = 1`` to one with the old plugin
  (``has_source_semisync(mysql, "master")``; plugin/semisync, 8.0.26+). The mock plays the
  new plugin from 8.0.26 on and the old one (``rpl_semi_sync_master``, ``@rpl_semi_sync_slave``)
  before; MariaDB's built-in semi-sync reads ``@rpl_semi_sync_slave``.
"""

from __future__ import annotations

import re
from typing import Any

#: the first MySQL version that reads the source/replica names
RENAMED = (8, 0, 26)

_NEW = {"semi_sync": "rpl_semi_sync_replica",
        "binlog_checksum": "source_binlog_checksum",
        "heartbeat_period": "source_heartbeat_period",
        "uuid": "replica_uuid"}
_OLD = {"semi_sync": "rpl_semi_sync_slave",
        "binlog_checksum": "master_binlog_checksum",
        "heartbeat_period": "master_heartbeat_period",
        "uuid": "slave_uuid"}


def names(what: str, flavor: str, version: tuple[int, int, int]) -> tuple[str, ...]:
    """The user-variable names the server reads for ``what`` (``binlog_checksum``,
    ``heartbeat_period``, ``uuid``, ``semi_sync``), in the order it looks them up."""
    if flavor == "mariadb":
        return () if what == "uuid" else (_OLD[what],)
    if version >= RENAMED:
        return (_NEW[what],) if what == "semi_sync" else (_NEW[what], _OLD[what])
    return (_OLD[what],)


def replica_var(user_vars: dict[str, Any], what: str, flavor: str,
                version: tuple[int, int, int]) -> Any:
    """The value the server reads for ``what`` (None: the client set none of its names)."""
    for name in names(what, flavor, version):
        if name in user_vars:
            return user_vars[name]
    return None


def semi_sync_plugin(flavor: str, version: tuple[int, int, int]) -> str:
    """The prefix of the semi-sync source plugin's variables (``rpl_semi_sync_source`` for
    MySQL 8.0.26+, else ``rpl_semi_sync_master``)."""
    if flavor == "mysql" and version >= RENAMED:
        return "rpl_semi_sync_source"
    return "rpl_semi_sync_master"


def int_value(v: Any) -> int:
    """A user variable as the server's ``val_int`` reads it (a number's leading digits)."""
    if v is None:
        return 0
    if isinstance(v, (int, float)):
        return int(v)
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    m = re.match(r"\s*[-+]?\d+", str(v))
    return int(m.group()) if m else 0
