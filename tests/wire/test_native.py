"""The native kernel's facade (``binlogscope._native``): one loader, one switch."""

from __future__ import annotations

import os
import subprocess
import sys

from binlogscope import _native
from tests.ci_support import unavailable


def test_kernel_is_built() -> None:
    """Under CI=true a missing kernel fails (the test command installs a compiler)."""
    if _native.kernel is None and not os.environ.get(_native.SWITCH):
        unavailable(f"the native kernel: {_native.reason}")
    assert _native.available() == (_native.kernel is not None)


def test_switch_turns_the_kernel_off() -> None:
    code = ("from binlogscope import _native; "
            "print(_native.available(), _native.reason)")
    env = {**os.environ, _native.SWITCH: "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == f"False turned off by {_native.SWITCH}"
