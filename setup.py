"""Build script: the package layout and the optional C accelerators.

Metadata lives in pyproject.toml. ``binlogscope.wire.binlog._crows`` (the row-image reader of
the fast decode path, written in C) is built when a C compiler and the Python headers are
there; it is ``optional``: without them the install still succeeds and the pure-Python readers
are used (same values, slower). ``scripts/install-deps.sh`` installs gcc and the headers, and
the test suite fails under CI when the accelerator is missing.
"""

from __future__ import annotations

from setuptools import Extension, find_packages, setup

setup(
    packages=[*find_packages("src", include=["binlogscope", "binlogscope.*"]),
              *find_packages(".", include=["mock_master", "mock_master.*"])],
    package_dir={"binlogscope": "src/binlogscope", "mock_master": "mock_master"},
    ext_modules=[
        Extension("binlogscope.wire.binlog._crows", ["src/binlogscope/wire/binlog/_crows.c"],
                  optional=True, extra_compile_args=["-O2"]),
    ],
)
