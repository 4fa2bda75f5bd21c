"""The report in a terminal: rich text with colours where the stream has them, plain text as a
notebook's fallback, ASCII for a console that cannot encode the marks."""

from __future__ import annotations

import io
import json
import sys
from typing import Optional, TextIO

from envdoctor.render.vocabulary import ASCII, ASCII_GLYPH, EVIDENCE_LINES, GLYPH, SEVERITY_MARK, headline, intent_lines, summary_line
from envdoctor.target.model import CheckResult, Finding, Report, Severity


class TerminalRenderer:
    def __init__(self, stream: Optional[TextIO] = None, verbose: bool = False, color: Optional[bool] = None) -> None:
        from rich.console import Console

        self.console = Console(
            file=stream or sys.stdout,
            highlight=False,
            soft_wrap=True,
            no_color=color is False,
            force_terminal=color,  # None: as the stream is; False: plain text (a notebook's text fallback)
            force_jupyter=False,  # inside a kernel the text goes where it is told; notebooks get render.html
        )
        self.verbose = verbose
        self.encoding = getattr(self.console.file, "encoding", None) or "utf-8"
        self.unicode = self.encoding.lower().replace("-", "").startswith("utf")

    def _t(self, text: str) -> str:
        """The text as this stream can encode it, never an encoding error."""
        if self.unicode:
            return text
        return text.translate(ASCII).encode(self.encoding, "replace").decode(self.encoding)

    def _out(self, text: str = "", style: Optional[str] = None) -> None:
        self.console.print(self._t(text), style=style, markup=False, emoji=False, highlight=False)

    def render(self, report: Report) -> None:
        from rich.text import Text

        self._out(headline(report), style="bold")
        for config_line in intent_lines(report):
            self._out(config_line, style=None if config_line.startswith(" ") else "bold")
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


def render_text(report: Report, verbose: bool = False) -> str:
    """The terminal report as plain text (no colours): a notebook's text fallback, a plain console's repr."""
    buffer = io.StringIO()
    TerminalRenderer(buffer, verbose, color=False).render(report)
    return buffer.getvalue()
