"""``python -m mock_master``: not implemented yet (issue 6)."""

from __future__ import annotations

import sys


def main() -> int:
    print("mock-master: not implemented yet (see issue 6)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
