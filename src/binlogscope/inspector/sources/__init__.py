"""Row sources of the inspector: each input the TUI and the CLI show, as a ``RowSource``.

``binlog_file.py`` / ``binlog_files.py`` (files on disk), ``pcap.py`` (a capture), ``live.py``
(a live replica), ``sniff.py`` (items arriving in follow mode: sniff and proxy), and
``packets.py`` (a stream of session events, shared by live and captures: its indexer) with
``packet_rows.py`` (those rows' columns and what a row shows from them).
"""
