"""binlogscope on Spark: the ``binlog`` data source (:mod:`.datasource`; its streaming reader
from a live server, :mod:`.stream` with :mod:`.stream_options`), ``export --spark``
(:mod:`.export`, its tasks :mod:`.tasks`) and ``analyze`` (:mod:`.analyze`).

PySpark is imported only when one of them is used (``pip install 'binlogscope[spark]'``)."""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Make ``spark.read.format("binlog")`` and ``spark.readStream.format("binlog")`` available
    in ``spark`` (a SparkSession); also ``binlogscope.spark.register``.

    Filter pushdown to Python data sources stays as the session has it (off by default): with
    it on, PySpark 4.3 keeps a DataFrame's reader after a filtered query, so a later query of
    the same DataFrame (``df.where(...).count()`` then ``df.count()``) still got the first
    query's pushed filters (measured: 263 rows of 596). docs/spark.md says when to turn it on."""
    from binlogscope.export.spark.datasource import BinlogDataSource

    spark.dataSource.register(BinlogDataSource)


__all__ = ["register"]
