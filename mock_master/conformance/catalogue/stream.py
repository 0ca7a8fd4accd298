from __future__ import annotations

from mock_master.conformance.model import Case

CASES: list[Case] = []
