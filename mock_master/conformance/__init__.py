"""The conformance report card: grade a replication client on every case the protocol allows.

``binlogscope conformance run --client ...`` (see :mod:`mock_master.conformance.cli` and
docs/conformance.md). The parts: the case model (:mod:`.model`), the catalogue
(:mod:`.catalogue`), the runner (:mod:`.runner`: a mock master and a recording relay per case),
the grading (:mod:`.grade`), the clients and adapters (:mod:`.clients`, :mod:`.adapters`) and the
reports (:mod:`.report`).
"""

from __future__ import annotations
