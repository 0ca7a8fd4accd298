"""Export decoded sessions to a Parquet dataset (``arrow``) and analyse it on Spark (``spark``).

``binlogscope.export.spark`` imports PySpark and is only imported by ``binlogscope analyze``.
"""

from __future__ import annotations
