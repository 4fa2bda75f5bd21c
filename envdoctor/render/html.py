"""Rendering for notebooks: a report, an explanation, a fix plan as one self-contained block of
HTML (inline styles, no script: Colab, Kaggle, JupyterLab and VS Code all show it as is).

The same words as the terminal (vocabulary.py): status marks per check, findings with
their evidence folded, remedies with their commands in blocks that one click selects whole.
Colours are mid-tones that read on light and dark themes; text inherits the notebook's.
"""

from __future__ import annotations

from html import escape
from typing import Any, Dict, List, Sequence

from envdoctor.render.vocabulary import GLYPH, SEVERITY_MARK, headline, intent_lines, summary_line
from envdoctor.target.model import Finding, Report, Severity

_COLOR = {"green": "#2e9e44", "yellow": "#c98a00", "red": "#d03a3a", "cyan": "#2a8fb0", "dim": "#8a8a8a"}
_STYLE = (
    "<style>"
    ".envdoctor{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:13px;line-height:1.45}"
    ".envdoctor .ed-head{font-weight:600;margin-bottom:6px}"
    ".envdoctor .ed-check{margin:2px 0}"
    ".envdoctor .ed-id{opacity:.6;font-family:monospace;font-size:12px}"
    ".envdoctor .ed-sum{opacity:.85}"
    ".envdoctor .ed-finding{margin:4px 0 6px 22px}"
    ".envdoctor details{margin:2px 0 2px 18px}"
    ".envdoctor details summary{cursor:pointer;opacity:.75}"
    ".envdoctor pre{margin:2px 0;white-space:pre-wrap;font-size:12px}"
    ".envdoctor .ed-evidence{opacity:.75}"
    ".envdoctor .ed-remedy{margin:3px 0 3px 18px}"
    ".envdoctor .ed-cmd{user-select:all;-webkit-user-select:all;cursor:text;padding:3px 6px;border-radius:4px;"
    "background:rgba(127,127,127,.15);display:block;font-family:monospace}"
    ".envdoctor .ed-note{border-left:4px solid #c98a00;padding:4px 8px;margin:6px 0;background:rgba(201,138,0,.10)}"
    ".envdoctor .ed-total{font-weight:600;margin-top:6px}"
    "</style>"
)


def _mark(glyph: str, color: str) -> str:
    return '<span style="color:%s;font-weight:700">%s</span>' % (_COLOR[color], escape(glyph))


def _notes(environment: Dict[str, Any]) -> List[str]:
    """What a notebook user must be told before the findings: a kernel that still runs old
    versions (restart), and where this runs."""
    out: List[str] = []
    kernel = environment.get("kernel") or {}
    for line in kernel.get("notes") or ():
        out.append('<div class="ed-note">%s</div>' % escape(line))
    return out


def _remedies(finding: Finding) -> List[str]:
    out: List[str] = []
    for remedy in finding.remedies:
        out.append('<div class="ed-remedy">→ %s' % escape(remedy.summary))
        out += ['<pre class="ed-cmd">%s</pre>' % escape(c) for c in remedy.commands]
        out.append("</div>")
    return out


def _finding(finding: Finding) -> List[str]:
    mark, color = SEVERITY_MARK[finding.severity]
    out = ['<div class="ed-finding">%s %s' % (_mark(mark, color), escape(finding.title))]
    if finding.evidence:
        text = "\n".join(str(e) for e in finding.evidence)
        out.append('<details><summary>evidence (%d)</summary><pre class="ed-evidence">%s</pre></details>'
                   % (len(finding.evidence), escape(text)))
    out += _remedies(finding)
    out.append("</div>")
    return out


def render_html(report: Report, verbose: bool = False) -> str:
    env = report.environment
    out = [_STYLE, '<div class="envdoctor">', '<div class="ed-head">%s</div>' % escape(headline(report))]
    out += _notes(env)
    config = intent_lines(report)
    if config:
        out.append("<pre>%s</pre>" % escape("\n".join(config)))
    for result in report.checks:
        glyph, color = GLYPH[result.status]
        out.append('<div class="ed-check">%s <b>%s</b> <span class="ed-id">%s</span> <span class="ed-sum">%s</span></div>'
                   % (_mark("[%s]" % glyph, color), escape(result.title), escape(result.id), escape(result.summary)))
        for finding in result.findings:
            if finding.severity is Severity.OK:
                continue
            if finding.severity is Severity.INFO and not verbose:
                mark, mcolor = SEVERITY_MARK[finding.severity]
                out.append('<div class="ed-finding">%s <span class="ed-sum">%s</span></div>' % (_mark(mark, mcolor), escape(finding.title)))
            else:
                out += _finding(finding)
    color = "red" if report.exit_code else "green"
    out.append('<div class="ed-total" style="color:%s">Doctor summary: %s</div>' % (_COLOR[color], escape(summary_line(report))))
    out.append("</div>")
    return "\n".join(out)


def lines_html(lines: Sequence[str], title: str = "") -> str:
    """An explanation, a fix plan or its outcome: the terminal's lines, in a notebook block."""
    head = '<div class="ed-head">%s</div>' % escape(title) if title else ""
    return "%s<div class=\"envdoctor\">%s<pre>%s</pre></div>" % (_STYLE, head, escape("\n".join(lines)))

