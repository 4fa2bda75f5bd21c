"""Rendering a Report: rich terminal text, Markdown for bug reports, JSON.

The model knows nothing of glyphs or colours; everything visual lives here.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Dict, List, Optional, TextIO

from envdoctor.model import CheckResult, Finding, Report, Severity, Status

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
EVIDENCE_LINES = 6
# For terminals that cannot encode them (a cp1252 console): every text, not just glyphs.
_ASCII = str.maketrans({"→": "->", "·": "-", "×": "x", "…": "...", "•": "*", "✓": "OK", "✗": "X",
                        "—": "-", "–": "-", "≥": ">=", "≤": "<=", "’": "'", "“": '"', "”": '"'})


def render_json(report: Report, ascii_only: bool = False) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=ascii_only)


def _headline(env: Dict[str, Any]) -> str:
    torch = "torch %s" % env["torch"] if env.get("torch") else "no importable torch"
    return "envdoctor %s · %s (Python %s) · %s · %s %s" % (
        env.get("envdoctor"), env.get("executable") or env.get("target_python"), env.get("python"), torch,
        (env.get("platform") or "").split("-")[0], env.get("machine") or "",
    )


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


class TerminalRenderer:
    def __init__(self, stream: Optional[TextIO] = None, verbose: bool = False, color: Optional[bool] = None) -> None:
        from rich.console import Console

        self.console = Console(
            file=stream or sys.stdout,
            highlight=False,
            soft_wrap=True,
            no_color=color is False,
            force_terminal=color if color else None,
        )
        self.verbose = verbose
        self.encoding = getattr(self.console.file, "encoding", None) or "utf-8"
        self.unicode = self.encoding.lower().replace("-", "").startswith("utf")

    def _t(self, text: str) -> str:
        """The text as this stream can encode it, never an encoding error."""
        if self.unicode:
            return text
        return text.translate(_ASCII).encode(self.encoding, "replace").decode(self.encoding)

    def _out(self, text: str = "", style: Optional[str] = None) -> None:
        self.console.print(self._t(text), style=style, markup=False, emoji=False, highlight=False)

    def render(self, report: Report) -> None:
        from rich.text import Text

        self._out(_headline(report.environment), style="bold")
        self._out()
        for result in report.checks:
            glyph, color = GLYPH[result.status]
            if not self.unicode:
                glyph = ASCII_GLYPH[result.status]
            line = Text()
            line.append("[%s] " % glyph, style=color)
            line.append(self._t(result.title), style="bold")
            line.append(" (%s)" % result.id, style="dim")
            if result.summary:
                line.append("  " + self._t(result.summary))
            self.console.print(line)
            for finding in result.findings:
                if finding.severity is Severity.OK:
                    continue
                if finding.severity is Severity.INFO and not self.verbose:
                    self._finding_title(finding)
                else:
                    self._finding(finding)
            if self.verbose and result.facts:
                self._facts(result)
        self._out()
        code = report.exit_code
        self._out("Doctor summary: " + summary_line(report), style="bold red" if code else "bold green")

    def _finding_title(self, finding: Finding) -> None:
        from rich.text import Text

        mark, color = SEVERITY_MARK[finding.severity]
        line = Text("    ")
        line.append(self._t(mark), style=color)
        line.append(" " + self._t(finding.title))
        self.console.print(line)

    def _finding(self, finding: Finding) -> None:
        self._finding_title(finding)
        evidence = list(finding.evidence)
        shown = evidence if self.verbose else evidence[:EVIDENCE_LINES]
        for item in shown:
            for line in str(item).splitlines() or [""]:
                self._out("        " + line, style="dim")
        if len(shown) < len(evidence):
            self._out("        … %d more (-v shows all)" % (len(evidence) - len(shown)), style="dim")
        for remedy in finding.remedies:
            self._out("      → %s" % remedy.summary)
            for command in remedy.commands:
                self._out("          $ " + command, style="cyan")

    def _facts(self, result: CheckResult) -> None:
        from rich.table import Table

        facts = dict(result.facts)
        ops = facts.pop("ops", None)
        if ops:
            table = Table(show_edge=False, pad_edge=False, box=None, padding=(0, 1))
            for column in ("op", "device", "dtype", "ok", "max_rel_err", "error"):
                table.add_column(column, overflow="fold")
            for op in ops:
                dtype = op.get("dtype", "")
                if op.get("mix"):
                    dtype = op["mix"]
                elif op.get("other_dtype") or op.get("to_dtype"):
                    dtype = "%s %s %s" % (dtype, "+" if op.get("other_dtype") else "→", op.get("other_dtype") or op.get("to_dtype"))
                err = op.get("max_rel_err")
                cells = (str(op.get("op")), str(op.get("device")), dtype, "yes" if op.get("ok") else "NO",
                         "" if err is None else str(err), (op.get("error") or "")[:160])
                table.add_row(*(self._t(c) for c in cells))
            self.console.print(table, style="dim")
        if facts:
            text = json.dumps(facts, indent=2, ensure_ascii=False, default=str)
            for line in text.splitlines():
                self._out("        " + line, style="dim")


def render_terminal(report: Report, stream: Optional[TextIO] = None, verbose: bool = False) -> None:
    TerminalRenderer(stream, verbose).render(report)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Report, verbose: bool = False) -> str:
    env = report.environment
    out: List[str] = ["## envdoctor report", ""]
    out.append("`%s`" % _headline(env))
    out.append("")
    out.append("| | check | status | summary |")
    out.append("|---|---|---|---|")
    for result in report.checks:
        glyph = GLYPH[result.status][0]
        out.append("| %s | `%s` | %s | %s |" % (glyph, result.id, result.status.value, _md_cell(result.summary)))
    out.append("")
    out.append("**%s**" % summary_line(report))
    findings = [f for f in report.findings if f.severity is not Severity.OK and (verbose or f.severity is not Severity.INFO)]
    notes = [f for f in report.findings if f.severity is Severity.INFO and not verbose]
    if findings:
        out += ["", "### Findings"]
        for f in findings:
            out += ["", "#### %s `%s` · %s" % (SEVERITY_MARK[f.severity][0], f.check, f.title)]
            if f.evidence:
                out += ["", "```text", *[str(e) for e in f.evidence], "```"]
            if f.remedies:
                out.append("")
                for r in f.remedies:
                    out.append("- %s" % r.summary)
                    out += ["  `%s`" % c for c in r.commands]
    if notes:
        out += ["", "### Notes", ""]
        out += ["- `%s` · %s" % (f.check, f.title) for f in notes]
    out += ["", "<details><summary>Environment</summary>", "", "```json", json.dumps(env, indent=2, ensure_ascii=False), "```", "", "</details>"]
    return "\n".join(out) + "\n"
