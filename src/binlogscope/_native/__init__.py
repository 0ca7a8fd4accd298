"""The native kernel's one loader and facade, and the one switch that turns it off.

``binlogscope._native._kernel`` is an optional C extension (built at install time when a
compiler is there; the install succeeds without one). It turns bytes into plain values - the
row images of a rows event, read by the column plans of ``wire/binlog/_rowcode.py`` - and
knows nothing of sessions, drivers, pipelines, outputs or dataclass layouts. The pure-Python
decoder in ``wire/`` stays the definition: the kernel gives the same values, faster.

This module is the only place that imports the kernel and the only place that reads
``BINLOGSCOPE_PURE_PYTHON``. Callers read :data:`kernel` when they need it (not at import),
so a test can turn the kernel off by setting this one attribute to None.
"""

from __future__ import annotations

import os
from types import ModuleType

#: the environment variable that turns every native code path off
SWITCH = "BINLOGSCOPE_PURE_PYTHON"
#: the plan kinds and functions this Python expects of the kernel (``PLAN_VERSION`` in
#: ``_kernel.c``; both change together): a kernel built from an older ``_kernel.c`` is not
#: used (the plans would name kinds it does not know)
PLAN_VERSION = 11


def _load() -> tuple[ModuleType | None, str]:
    if os.environ.get(SWITCH):
        return None, f"turned off by {SWITCH}"
    try:
        from binlogscope._native import _kernel
    except ImportError as exc:
        return None, f"not built ({exc}); the pure-Python decoder is used (same values, slower)"
    built = getattr(_kernel, "PLAN_VERSION", 1)
    if built != PLAN_VERSION:
        return None, (f"built from another _kernel.c (plan version {built}, this code needs "
                      f"{PLAN_VERSION}): rebuild it (python setup.py build_ext --inplace); the "
                      "pure-Python decoder is used (same values, slower)")
    return _kernel, ""


#: the compiled kernel module, or None (not built, or turned off by BINLOGSCOPE_PURE_PYTHON)
kernel: ModuleType | None
#: why :data:`kernel` is None ("" when it is loaded)
reason: str
kernel, reason = _load()


def available() -> bool:
    """True when the native kernel is loaded and in use."""
    return kernel is not None
