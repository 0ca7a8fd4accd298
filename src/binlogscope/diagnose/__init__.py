"""Answers to the questions users bring (issue 29), over the same decoder and drivers as every
command: ``patterns`` (pasted error lines -> where they point), ``walk`` (files, a capture or a
live server as one stream of events), ``explain`` + ``report`` (the event a line points at, with
its context), ``locate`` + ``catalog`` (FILE:POS <-> GTID <-> time, a per-file catalog),
``redact`` (a scrubbed, shareable reproducer). The CLI handlers are binlogscope.cli.explain,
.locate and .redact."""
