"""Build script: the package layout and the optional native kernel.

Metadata lives in pyproject.toml. ``binlogscope._native._kernel`` (the native kernel: row
images to plain values, loaded only through the ``binlogscope._native`` facade) is built when a
C compiler and the Python headers are there; it is ``optional``: without them the install still
succeeds and the pure-Python decoder is used (same values, slower). ``scripts/install-deps.sh``
installs gcc and the headers, and the test suite fails under CI when the kernel is missing.
"""

from __future__ import annotations

from setuptools import Extension, find_packages, setup

setup(
    packages=[*find_packages("src", include=["binlogscope", "binlogscope.*"]),
              *find_packages(".", include=["mock_master", "mock_master.*"])],
    package_dir={"binlogscope": "src/binlogscope", "mock_master": "mock_master"},
    ext_modules=[
        Extension("binlogscope._native._kernel",
                  ["src/binlogscope/_native/_kernel.c", "src/binlogscope/_native/_values.c",
                   "src/binlogscope/_native/_rowjson.c", "src/binlogscope/_native/_arrow.c",
                   "src/binlogscope/_native/_line.c", "src/binlogscope/_native/_linetext.c",
                   "src/binlogscope/_native/_linebody.c"],
                  depends=["src/binlogscope/_native/_kernel.h"],
                  optional=True, extra_compile_args=["-O2"]),
    ],
)
