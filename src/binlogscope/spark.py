"""binlogscope for PySpark users: ``binlogscope.spark.register(spark)`` makes the ``binlog`` data
source available in a session - ``spark.read.format("binlog")`` over binlog files, relay logs
and captures, ``spark.readStream.format("binlog")`` from a live server (docs/spark.md). The
code is in :mod:`binlogscope.export.spark`; PySpark is imported when it is used."""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``binlog`` data source (batch and streaming) in ``spark`` (a SparkSession)."""
    from binlogscope.export.spark import register as register_source

    register_source(spark)


__all__ = ["register"]
