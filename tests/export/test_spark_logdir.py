"""analyze's Spark logging configuration lives in a private per-run directory, removed after."""

from __future__ import annotations

import stat
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import pytest

from binlogscope.export.spark import analyze as spark_mod


def test_log_config_dir_is_fresh_private_and_random() -> None:
    a = spark_mod.log_config_dir()
    b = spark_mod.log_config_dir()
    try:
        assert a != b
        for d in (a, b):
            assert d.parent == Path(tempfile.gettempdir())
            assert d.name != "binlogscope-spark"
            assert not d.is_symlink()
            assert stat.S_IMODE(d.stat().st_mode) == 0o700
            conf = d / "log4j2.properties"
            assert stat.S_IMODE(conf.stat().st_mode) == 0o600
            assert conf.read_text(encoding="utf-8") == spark_mod._LOG4J
            assert [x.name for x in d.iterdir()] == ["log4j2.properties"]
    finally:
        for d in (a, b):
            (d / "log4j2.properties").unlink()
            d.rmdir()


def test_spark_session_uses_then_removes_its_log_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a stand-in SparkSession (no JVM): the JVM option points into the private directory,
    the file is there while the session starts, and the directory is gone afterwards."""
    seen: dict[str, Any] = {}

    class Builder:
        def __init__(self) -> None:
            self.conf: dict[str, str] = {}

        def master(self, _m: str) -> Builder:
            return self

        def appName(self, _n: str) -> Builder:  # noqa: N802 (pyspark's name)
            return self

        def config(self, k: str, v: str) -> Builder:
            self.conf[k] = v
            return self

        def getOrCreate(self) -> Any:  # noqa: N802 (pyspark's name)
            opt = self.conf["spark.driver.extraJavaOptions"]
            path = Path(opt.split("file:", 1)[1])
            seen["path"] = path
            seen["text"] = path.read_text(encoding="utf-8")
            ctx = types.SimpleNamespace(setLogLevel=lambda _level: None)
            return types.SimpleNamespace(sparkContext=ctx)

    fake_sql = types.ModuleType("pyspark.sql")
    fake_sql.SparkSession = types.SimpleNamespace(builder=Builder())  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyspark.sql", fake_sql)
    spark_mod.spark_session("local[1]")
    path: Path = seen["path"]
    assert seen["text"] == spark_mod._LOG4J
    assert path.parent.name.startswith("binlogscope-spark-")
    assert path.parent.name != "binlogscope-spark"
    assert not path.exists()  # the configuration goes once the session started
    # the directory (the JVM's stderr log) is private and goes when the process ends
    assert (path.parent / "spark-jvm.log").exists()
    assert path.parent.stat().st_mode & 0o777 == 0o700
