"""Drivers: the only code that opens files or sockets, feeding bytes to the sans-IO session.

One folder per source: ``live/`` (connect as a replica), ``capture/`` (pcap/pcapng files,
TCP reassembly, ``sniff`` on an interface), ``proxy/`` (relay a real client to a real server).
Shared beside them: ``binlog_file.py`` (binlog and relay-log files), ``items.py`` (the one item
type every source yields), ``pcapng.py`` (the one synthetic-TCP pcapng writer), ``drip.py``
(``slow_drip`` pacing) and ``scenario_files.py`` (the one fault ``Action`` type and its files).
"""
