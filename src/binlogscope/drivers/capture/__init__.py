"""Captures: pcap/pcapng files and live interfaces, read in layers.

``files.py`` (pcap and pcapng records, gzip too) -> ``layers.py`` (link, IP, TCP headers) ->
``tcp_reassembly.py`` (one direction of one connection) -> ``flows.py`` (one OBSERVER session per
MySQL connection; ``conns.py`` its per-connection state, ``drain.py`` its session events as
items); ``pcap.py`` is the entry point.
``sniff.py`` and ``sniff_ring.py`` read an interface live (a TPACKET_V3 ring in its own
process). ``place.py`` reads one packet of a capture file again by its place (frame, length,
CRC-32) for the inspector, which keeps no payloads of a capture file.
"""
