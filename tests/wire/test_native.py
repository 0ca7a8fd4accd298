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


def test_a_kernel_of_another_plan_version_is_not_used() -> None:
    """A kernel built from an older _kernel.c (a stale build beside newer Python) would be
    handed plan kinds it does not know: the facade does not use it and says why."""
    code = ("import sys, types; from binlogscope._native import _kernel; "
            "_kernel.PLAN_VERSION = -1; sys.modules.pop('binlogscope._native'); "
            "import binlogscope._native as n; print(n.available()); print(n.reason)")
    env = {k: v for k, v in os.environ.items() if k != _native.SWITCH}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if run.returncode:  # the kernel is not built here: nothing to check
        assert "ModuleNotFoundError" in run.stderr or "ImportError" in run.stderr, run.stderr
        return
    available, reason = run.stdout.splitlines()
    assert available == "False" and "plan version -1" in reason and "rebuild" in reason
