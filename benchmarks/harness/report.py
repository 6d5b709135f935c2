"""How a benchmark prints its result: one JSON object, on one line with ``--json`` (what scripts and the README's
figures read), indented otherwise."""

from __future__ import annotations

import json
from typing import Any


def print_report(result: dict[str, Any], *, one_line: bool) -> None:
    print(json.dumps(result) if one_line else json.dumps(result, indent=2))
