"""The one switch of the native kernel in tests: the ``native`` fixture (tests/conftest.py).

``binlogscope._native.kernel`` is the facade's one attribute (None: the pure-Python paths,
what ``BINLOGSCOPE_PURE_PYTHON=1`` does at import). A test that compares the two paths takes
the ``native`` fixture and runs the pure-Python side inside ``with native.off():``; a test of
the kernel itself calls ``native.require()`` first (a skip with the reason, a failure in CI).
The fixture is session-scoped and holds no state, so hypothesis tests may take it too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from binlogscope import _native
from tests.ci_support import unavailable


class NativeSwitch:
    """Turns the native kernel off for the length of a ``with`` block."""

    @property
    def loaded(self) -> bool:
        """True when the kernel is built and in use (so an off/on comparison means something)."""
        return _native.kernel is not None

    def require(self) -> None:
        """Skip (fail under CI) when the kernel is not loaded."""
        if _native.kernel is None:
            unavailable(f"the native kernel: {_native.reason}")

    @contextmanager
    def off(self) -> Iterator[None]:
        """The pure-Python paths inside the block; the kernel (if any) again after it."""
        saved = _native.kernel
        _native.kernel = None
        try:
            yield
        finally:
            _native.kernel = saved
