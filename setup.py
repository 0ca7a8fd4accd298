"""Build script: the package layout and the optional native kernel.

Metadata lives in pyproject.toml. ``binlogscope._native._kernel`` (the native kernel: row
images to plain values, loaded only through the ``binlogscope._native`` facade) is built when a
C compiler and the Python headers are there; it is ``optional``: without them the install still
succeeds and the pure-Python decoder is used (same values, slower). ``scripts/install-deps.sh``
installs gcc and the headers, and the test suite fails under CI when the kernel is missing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py

#: the small real MariaDB binlog ``binlogscope demo`` opens: its home is captures/ (documented
#: in captures/README.md); a built package carries a copy as package data (binlogscope/demo/),
#: so a wheel install has its demo outside the checkout (cli/main.py ``_bundled_capture``)
DEMO_BINLOG = "mariadb-10.11-workload.000001"


class BuildPyWithDemo(build_py):
    """build_py, plus captures/'s demo binlog copied into the built package (one copy in the
    repository; the wheel gets its own)."""

    def run(self) -> None:
        super().run()
        src = Path(__file__).resolve().parent / "captures" / DEMO_BINLOG
        if src.is_file():
            dst = Path(self.build_lib) / "binlogscope" / "demo" / DEMO_BINLOG
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)


setup(
    cmdclass={"build_py": BuildPyWithDemo},
    packages=[*find_packages("src", include=["binlogscope", "binlogscope.*"]),
              *find_packages(".", include=["mock_master", "mock_master.*"])],
    package_dir={"binlogscope": "src/binlogscope", "mock_master": "mock_master"},
    ext_modules=[
        Extension("binlogscope._native._kernel",
                  ["src/binlogscope/_native/_kernel.c", "src/binlogscope/_native/_values.c",
                   "src/binlogscope/_native/_rowjson.c", "src/binlogscope/_native/_arrow.c",
                   "src/binlogscope/_native/_line.c", "src/binlogscope/_native/_linetext.c",
                   "src/binlogscope/_native/_linebody.c",
                   "src/binlogscope/_native/_columns.c",
                   "src/binlogscope/_native/_imagebytes.c",
                   "src/binlogscope/_native/_pktindex.c"],
                  depends=["src/binlogscope/_native/_kernel.h", "src/binlogscope/_native/_arrow.h"],
                  optional=True, extra_compile_args=["-O2"]),
    ],
)
