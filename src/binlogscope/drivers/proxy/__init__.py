"""The proxy (``binlogscope proxy``): a real client relayed to a real server, both sides decoded.

``relay.py`` is the decoder side; ``process.py`` runs the relay in its own process and carries
copies of the bytes to the decoder; the forwarding paths are ``threads.py`` (plain: two blocking
threads a connection), ``faults.py`` (with fault actions) and ``tls.py`` + ``tls_legs.py`` (TLS
terminated at the proxy); ``record.py`` writes ``--record`` from the relay itself, lossless.
"""
