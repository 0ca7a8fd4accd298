"""The ``binlog`` source's inputs: ``file:`` URIs of a directory and of a glob, a local
directory and a glob give the local export's rows (real Spark ``local[2]``); remote URIs
(``s3a://`` ...) are listed and read through pyarrow's filesystems, named by the URI given."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from binlogscope.export.arrow import read_table
from binlogscope.export.records import BinlogFileSource
from binlogscope.export.run import run_export
from binlogscope.export.spark import datasource
from tests.export.test_export_spark import MARIADB, WORKLOAD


def _rows(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.mark.spark
def test_file_uris_directories_and_globs(spark: Any, tmp_path: Path) -> None:
    from binlogscope.export.spark import register

    register(spark)
    d = tmp_path / "in"
    d.mkdir()
    for p in [WORKLOAD, *MARIADB[:2]]:
        shutil.copy(p, d / p.name)
    (d / "notes.txt").write_text("not a binlog")  # a directory's other files are not inputs
    local = tmp_path / "local"
    run_export(BinlogFileSource([str(d)]), local)
    want = _rows(read_table(local, "rows").to_pylist())
    assert len(want) > 500
    one = _rows([r for r in read_table(local, "rows").to_pylist()
                 if r["source"] == str(d / WORKLOAD.name)])
    for load, expect in [(f"file://{d}", want), (f"file:{d}/*", want), (str(d), want),
                         (f"file://{d}/{WORKLOAD.name[:12]}*", one),
                         (str(d / "mariadb-10.11-*"), one)]:
        got = (spark.read.format("binlog").option("table", "rows").load(load)
               .toArrow().cast(datasource.read_schema("rows")).to_pylist())
        assert _rows(got) == expect, load
    with pytest.raises(Exception, match="no file matches"):
        spark.read.format("binlog").load(f"file://{d}/nothing*").count()


def test_remote_uris_listed_and_read_through_pyarrow(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in bucket (a local directory as pyarrow's filesystem, the one thing replaced):
    a directory, a glob and a file URI name the inputs by the caller's scheme, their bytes and
    sizes come through the filesystem, a missing object is no input's bytes."""
    bucket = tmp_path / "bucket"
    (bucket / "logs").mkdir(parents=True)
    for name in ("mysql-bin.000001", "mysql-bin.000002", "_SUCCESS", "other.000003"):
        (bucket / "logs" / name).write_bytes(b"\xfebin" + name.encode())
    seen: list[tuple[str, str | None]] = []

    def fake(uri: str, endpoint: str | None = None) -> tuple[Any, str]:
        seen.append((uri, endpoint))
        assert uri.startswith("s3a://bucket/")
        return pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), uri[6:]

    monkeypatch.setattr(datasource, "remote_filesystem", fake)
    base = "s3a://bucket/logs"
    assert datasource.expand_paths([base]) == [f"{base}/mysql-bin.000001",
                                               f"{base}/mysql-bin.000002",
                                               f"{base}/other.000003"]
    assert datasource.expand_paths([f"{base}/mysql-bin.*"], "http://127.0.0.1:9000") == [
        f"{base}/mysql-bin.000001", f"{base}/mysql-bin.000002"]
    assert seen[-1] == (f"{base}/mysql-bin.*", "http://127.0.0.1:9000")
    assert datasource.read_bytes(f"{base}/mysql-bin.000002") == b"\xfebinmysql-bin.000002"
    assert datasource.input_size(f"{base}/mysql-bin.000001") == 4 + 16
    assert datasource.read_bytes(f"{base}/gone.000009") is None
    assert datasource.input_size(f"{base}/gone.000009") == 0
    with pytest.raises(datasource.BinlogSourceError, match="no such file"):
        datasource.expand_paths(["s3a://bucket/nothing"])
    with pytest.raises(datasource.BinlogSourceError, match="no file matches"):
        datasource.expand_paths([f"{base}/x*"])
    # a local path and a file: URI are not remote: read by the task (None) or locally
    assert datasource.read_bytes(str(bucket / "logs" / "other.000003")) is None
    assert datasource.read_bytes(f"file://{bucket}/logs/other.000003") == b"\xfebinother.000003"


def test_s3a_uris_go_to_pyarrow_s3() -> None:
    fs, path = datasource.remote_filesystem("s3a://some-bucket/a/b?region=us-east-1",
                                            "http://127.0.0.1:9000")
    assert isinstance(fs, pafs.S3FileSystem) and path == "some-bucket/a/b"
