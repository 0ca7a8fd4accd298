"""The ``binlogscope`` command line: one module per command, the rest shared.

``main.py`` builds the parser and dispatches; each command's module parses nothing but runs it:
``file.py``, ``pcap.py`` (+ ``pcap_summary.py``), ``live.py``, ``sniff.py``, ``proxy.py``,
``explain.py``, ``locate.py``, ``redact.py``; ``export``/``analyze`` are dispatched from
``main.py`` to the export package. Shared: ``terminal.py`` (when the TUI opens), ``signals.py``
(SIGINT/SIGTERM/SIGHUP), ``common.py`` (program name, ``--table``), ``type_names.py``
(``--type``), ``plugins.py`` (subcommands other packages add: ``mock-master``, ``demo``,
``conformance``).
"""
