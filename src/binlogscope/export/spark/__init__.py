"""binlogscope on Spark: the ``binlog`` data source (:mod:`.datasource`), ``export --spark``
(:mod:`.export`, its tasks :mod:`.tasks`) and ``analyze`` (:mod:`.analyze`).

PySpark is imported only when one of them is used (``pip install 'binlogscope[spark]'``)."""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Make ``spark.read.format("binlog")`` available in ``spark`` (a SparkSession), and let
    Spark push filters to Python data sources (the source honours the cheap ones)."""
    from binlogscope.export.spark.datasource import BinlogDataSource

    spark.dataSource.register(BinlogDataSource)
    try:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    except Exception:  # a Spark without the setting: Spark filters every row itself
        pass


__all__ = ["register"]
