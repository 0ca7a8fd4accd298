"""Export decoded sessions to a Parquet dataset and analyse it on Spark.

Where things are:

* ``records`` - what a source hands the exporter (events, packets, input ends) and the
  binlog-file source; ``sources`` - the capture and live sources;
* ``mapper`` - records -> table rows, a transaction at a time (GTID, XID, commit time on every
  row: the Canal entry model); ``packets`` - the packets table and its redaction hook;
* ``images`` - row images -> the ``before``/``after`` maps, typed JSON and ``pk`` columns;
* ``arrow`` - the schema (defined once), the dataset layout and its checkpoint files;
  ``writer`` - the crash-safe, memory-bounded Parquet writer;
* ``run`` - the export loop with its checkpoints and ``--resume``;
* ``spark`` (imports PySpark, from the ``spark`` extra: the session, ``binlogscope analyze``) and
  ``report_output`` - the reports and how they are printed, written and drawn;
* ``spark/export`` (driver) and ``spark/tasks`` (executors) - ``export --spark``: the
  ``binlog`` data source (``spark/datasource``) read with one task per input, the same
  dataset as the local export.
"""

from __future__ import annotations
