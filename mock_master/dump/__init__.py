"""The binlog dump: what a client gets after COM_BINLOG_DUMP / COM_BINLOG_DUMP_GTID.

- ``sender.py`` - :class:`Dump`: the start, the fake ROTATE and FORMAT_DESCRIPTION of each file,
  the events, heartbeats, the end of a non-blocking dump;
- ``images.py`` - the fast path: a file's events framed as one wire image (straight from the
  file's bytes where no event changes for the client), kept for clients with the same settings;
- ``events.py`` - per event: semi-sync ACK bookkeeping and the fault actions that fire;
- ``positions.py`` - where a dump starts (file/pos, MariaDB GTID state, MySQL GTID set);
  ``mariadb_gtid.py`` - MariaDB's GTID connect/UNTIL state machine; ``mysql_gtid.py`` - MySQL's
  auto-positioning checks; ``gtid_sets.py`` - MySQL GTID set arithmetic; ``errors.py`` - the
  ERR a dump ends with;
- ``mariadb_compat.py`` - the events MariaDB makes up for replicas with a low capability;
- ``replica_vars.py`` - the replica's user variables under the names the version reads;
  ``mysql_reader.py`` - how MySQL's dump thread reads a damaged binlog;
- ``host.py`` - :class:`DumpConnection` / :class:`DumpServer`: all a dump reaches of its
  connection and server (the dump never imports :mod:`mock_master.serve`).
"""
