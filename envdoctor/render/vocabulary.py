"""The words and marks every renderer shares: the status glyphs, the headline, the summary
line, the training config's lines. The terminal, Markdown, HTML and notebook renderers say
the same things because they say them with these."""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.target.intent import clipped
from envdoctor.target.model import Report, Severity, Status
from envdoctor.target.platform.where import TERMINAL

GLYPH = {
    Status.OK: ("✓", "green"),
    Status.WARNING: ("!", "yellow"),
    Status.ERROR: ("✗", "red"),
    Status.CRASHED: ("✗", "red"),
    Status.TIMEOUT: ("✗", "red"),
    Status.SKIPPED: ("-", "dim"),
}
ASCII_GLYPH = {Status.OK: "OK", Status.WARNING: "!", Status.ERROR: "X", Status.CRASHED: "X", Status.TIMEOUT: "X", Status.SKIPPED: "-"}
SEVERITY_MARK = {Severity.ERROR: ("✗", "red"), Severity.WARNING: ("!", "yellow"), Severity.INFO: ("•", "cyan"), Severity.OK: ("✓", "green")}
EVIDENCE_LINES = 6  # evidence lines shown per finding without -v
# For terminals that cannot encode them (a cp1252 console): every text, not just glyphs.
ASCII = str.maketrans({"→": "->", "·": "-", "×": "x", "…": "...", "•": "*", "✓": "OK", "✗": "X",
                        "—": "-", "–": "-", "≥": ">=", "≤": "<=", "’": "'", "“": '"', "”": '"'})


def section(value: Any) -> Dict[str, Any]:
    """A sub-dict of a report that may come from an older or newer envdoctor."""
    return value if isinstance(value, dict) else {}


def mark(value: Any) -> str:
    return "✓" if value else "✗"


def count(n: int, word: str) -> str:
    """'1 step', '3 steps'."""
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def headline(report: Report) -> str:
    """'envdoctor 0.1.0 · /venv/bin/python (Python 3.11.7) · torch 2.13.0+cpu · Linux x86_64 · Colab (CPU runtime)'."""
    target = report.target
    torch = "torch %s" % target.torch if target.torch else "no importable torch"
    place = " · %s" % target.where.label() if target.where.platform != TERMINAL else ""
    return "envdoctor %s · %s (Python %s) · %s · %s %s%s" % (
        report.environment.get("envdoctor"), target.python, target.python_version, torch,
        (target.platform or "").split("-")[0], target.machine or "", place,
    )


def intent_lines(report: Report) -> List[str]:
    """What the training configs ask for, each value with where it is written:
    "Training config: train.yaml (autotrain-advanced DreamBooth)", then "precision fp16  train.yaml:12 `mixed_precision: fp16`"."""
    intent = report.target.intent
    lines = ["note: %s" % n for n in report.environment.get("config_notes") or ()]
    if intent is None:
        return lines
    lines.append("Training config: " + ", ".join("%s (%s)" % (s.file, s.label or s.tool) for s in intent.sources))
    shown = [("device", None), ("precision", None)] + [("weight_dtype", p) for p in intent.parts()] + [("adapter", None), ("dora", None)]
    for name, part in shown:
        setting = intent.effective(name, part)
        if setting is None:
            continue
        label = "%s %s" % (part, "weights") if part else name
        value = {True: "on", False: "off"}.get(setting.value, setting.value) if isinstance(setting.value, bool) else setting.value
        lines.append("  %s %s  %s" % (label, clipped(str(value)), setting.where()))
    return lines


def summary_line(report: Report) -> str:
    s = report.summary()
    counts = s["findings"]
    broken = s["status"]["crashed"] + s["status"]["timeout"]
    parts = []
    if counts["error"]:
        parts.append("%d error%s" % (counts["error"], "" if counts["error"] == 1 else "s"))
    if counts["warning"]:
        parts.append("%d warning%s" % (counts["warning"], "" if counts["warning"] == 1 else "s"))
    if broken:
        parts.append("%d check%s did not finish" % (broken, "" if broken == 1 else "s"))
    if not parts:
        notes = " (%d note%s, -v for details)" % (counts["info"], "" if counts["info"] == 1 else "s") if counts["info"] else ""
        return "No issues found in %d checks%s." % (s["checks"], notes)
    return "%s in %d checks." % (", ".join(parts), s["checks"])
