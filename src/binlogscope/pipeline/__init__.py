"""Canal's pipeline, kept visible: fetcher -> decoder -> filter -> bounded store -> consumers."""

from __future__ import annotations
