"""The report as JSON (schema envdoctor/1): what `--json` prints."""

from __future__ import annotations

import json

from envdoctor.target.model import Report


def render_json(report: Report, ascii_only: bool = False) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=ascii_only)
