"""JSON as `--json` prints it (schema envdoctor/1): the report, a fix run, an explanation."""

from __future__ import annotations

import json
from typing import Any

from envdoctor.target.model import Report


def json_text(data: Any, ascii_only: bool = False) -> str:
    """`data` as JSON text that is valid UTF-8 whatever it holds: a file name that is not UTF-8
    (a surrogate-escaped byte) is written as its escape, never as the raw byte."""
    text = json.dumps(data, indent=2, ensure_ascii=ascii_only)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, indent=2, ensure_ascii=True)
    return text


def render_json(report: Report, ascii_only: bool = False) -> str:
    return json_text(report.to_dict(), ascii_only)
