"""The JSON Schemas of ``simulate --format json``, shipped with the package.

``report.schema.json`` describes the backtest report, ``sweep.schema.json``
the sweep (``--sweep``). Both are JSON Schema draft 2020-12 and say every
key: a key added to a report is a property added to its schema (and to
``required`` when every report holds it), which the tests enforce by
validating real reports with unknown keys refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).resolve().parent
REPORT = "report"
SWEEP = "sweep"


def load(name: str) -> dict[str, Any]:
    """The schema called ``name`` (``report`` or ``sweep``), as a dict."""
    path = SCHEMA_DIR / f"{name}.schema.json"
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema
