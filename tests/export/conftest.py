"""One Spark session (``local[2]``) for the export tests that need one: a JVM start costs
seconds, so the session lives as long as the test run (a module that defines its own
``spark`` fixture gets this session back from ``getOrCreate`` while it is alive)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from binlogscope.export.spark.analyze import spark_session

    s = spark_session("local[2]", [("spark.sql.shuffle.partitions", "2")])
    yield s
    s.stop()
