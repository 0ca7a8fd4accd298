"""The replica's setup conversation, step by step, each with the one-line "why" a learner reads.

Pure data and string building: the live driver sends these, the TUI and printers show the why.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SetupStep:
    """One thing the replica does before the stream starts, and why (phase ``stream``: what
    it does on the source once it ended the stream itself, the KILL of a semi-sync dump's
    thread)."""

    phase: str  # connect | auth | setup | register | dump | stream
    what: str
    why: str
    sql: str | None = None
    optional: bool = False  # a failure is reported, not fatal (variables a flavour lacks)


def sql_quote(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def setup_steps(
    *,
    slave_uuid: str,
    heartbeat: float | None,
    semi_sync: bool,
    mariadb: bool,
    gtid: str | None,
    net_read_timeout: int,
) -> list[SetupStep]:
    steps = [
        SetupStep("setup", "session timeouts",
                  "a dump connection is idle between events: long timeouts keep the source from "
                  "closing it, and net_read/write_timeout bound how long a stalled side waits",
                  f"SET SESSION wait_timeout = 31536000, net_write_timeout = {net_read_timeout}, "
                  f"net_read_timeout = {net_read_timeout}", optional=True),
        SetupStep("setup", "SET NAMES binary",
                  "text in result sets and events is passed through as raw bytes; binlogscope "
                  "decodes it with each column's own charset",
                  "SET NAMES binary"),
        SetupStep("setup", "announce checksum support",
                  "tells the source this replica verifies event checksums: without it MySQL 5.6+ "
                  "and MariaDB refuse to stream CRC32-checksummed events to the replica",
                  "SET @master_binlog_checksum = @@global.binlog_checksum, "
                  "@source_binlog_checksum = @@global.binlog_checksum"),
        SetupStep("setup", "replica uuid",
                  "a stable identity for this replica: a source kills an older connection that "
                  "uses the same uuid, so a restarted replica replaces its ghost",
                  f"SET @slave_uuid = {sql_quote(slave_uuid)}, "
                  f"@replica_uuid = {sql_quote(slave_uuid)}"),
    ]
    if heartbeat:
        ns = int(heartbeat * 1_000_000_000)
        steps.append(SetupStep(
            "setup", f"heartbeat every {heartbeat:g} s",
            "asks the source to send a HEARTBEAT event when it has nothing else to send, so a "
            "silent link can be told from a dead one", f"SET @master_heartbeat_period = {ns}"))
    if mariadb:
        steps.append(SetupStep(
            "setup", "MariaDB replica capability",
            "4 = understands MariaDB GTID and annotate events; for events above the announced "
            "capability the source sends a dummy event instead",
            "SET @mariadb_slave_capability = 4"))
        if gtid is not None:
            steps += [
                SetupStep("setup", "GTID start position",
                          "MariaDB starts a GTID dump from @slave_connect_state: the last GTID "
                          "applied in each replication domain",
                          f"SET @slave_connect_state = {sql_quote(gtid)}"),
                SetupStep("setup", "GTID strictness",
                          "do not fail on gaps or duplicates of GTIDs in the requested state",
                          "SET @slave_gtid_strict_mode = 0, @slave_gtid_ignore_duplicates = 0"),
            ]
    if semi_sync:
        steps.append(SetupStep(
            "setup", "semi-sync",
            "from now on the source prefixes each event with 0xEF + a flag; when the flag asks, "
            "the replica ACKs the position so the source's commit can return (MySQL 8.0.26+'s "
            "rpl_semi_sync_source plugin reads @rpl_semi_sync_replica, the older plugin and "
            "MariaDB @rpl_semi_sync_slave)",
            "SET @rpl_semi_sync_slave = 1" if mariadb
            else "SET @rpl_semi_sync_slave = 1, @rpl_semi_sync_replica = 1"))
    return steps


QUERY_WHY = {
    "checksum": "which checksum the events will carry (NONE or CRC32): the last 4 bytes of every "
                "event are a CRC32 only when it is CRC32",
    "server_id": "the source's server_id: our own id must differ, or the source treats us as "
                 "itself",
    "version": "the flavour and version decide the dump command, GTID format and query names",
    "position": "where the source's binlog ends now: the default start for a new replica",
}
