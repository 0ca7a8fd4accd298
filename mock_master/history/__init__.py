"""The served history: the binlog files a mock master serves, as one :class:`EventStream`.

- ``sources.py`` - :class:`EventStream` / :class:`BinlogFile` (events kept byte for byte,
  ``log_pos`` consistent), the GTID index, the edits stream actions make;
- ``loaders.py`` - binlog files, captures (pcap) and recordings become a stream;
  ``record_live`` records a real server once;
- ``builder.py`` - :class:`EventBuilder`: events built in Python, no server needed;
- ``gtid_pos.py`` - ``binlog_gtid_pos(file, pos)`` over the served files (MariaDB).
"""
