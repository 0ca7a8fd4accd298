"""In CI nothing may be skipped for want of a server, a tool or the shared fixtures."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str) -> NoReturn:
    """Fail under CI (the test command installs everything), skip with the reason elsewhere."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: this must not be skipped)")
    pytest.skip(reason)
