"""`envdoctor explain`: from a traceback or a whole log to its cause, confirmed live.

reader (stream, clean, keep windows) → tracebacks (the raised errors) → match (every
check's signatures, weighed with frames and context) → confirm (the matching probes
run on this stack through the engine) → Explanation.to_dict, which render.lines shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from envdoctor.pipeline.explain.confirm import apply_verdicts
from envdoctor.pipeline.explain.match import Diagnosis, Matching, match
from envdoctor.pipeline.explain.reader import LogExcerpt
from envdoctor.target.model import SCHEMA, Check, Report
from envdoctor.target.redact import Redactor


@dataclass
class Explanation:
    excerpt: LogExcerpt
    matching: Matching
    report: Optional[Report] = None  # the confirming probes' report, when they ran

    @property
    def diagnoses(self) -> List[Diagnosis]:
        return self.matching.diagnoses

    @property
    def exit_code(self) -> int:
        return 0 if self.diagnoses else 1

    def probed_checks(self) -> List[str]:
        """The diagnoses' checks, the ones whose probes can reproduce them, and the ones whose findings
        decide between two readings of one message (Signature.confirmed_by: "check-id:code")."""
        witnesses = {w for d in self.diagnoses for w in d.signature.witnesses}
        return sorted({d.check for d in self.diagnoses} | set(self.matching.supporting) | witnesses)

    def __repr__(self) -> str:
        return "<envdoctor Explanation: %s>" % (", ".join(d.check for d in self.diagnoses) or "no known cause")

    def to_dict(self) -> Dict[str, Any]:
        """The explanation as every output shows it (terminal, --json, a notebook, `run`'s stderr), with
        the secrets a log quotes (tokens, `api_key=` values, URL passwords) masked."""
        last = self.matching.errors[-1] if self.matching.errors else None
        probed = None
        if self.report is not None:
            target = self.report.target
            probed = {"python": target.python, "torch": target.torch,
                      "checks": [c.id for c in self.report.checks]}
        return Redactor.from_environ().data({
            "schema": SCHEMA,
            "input": {"lines": self.excerpt.total_lines, "bytes": self.excerpt.total_bytes, "errors": len(self.matching.errors),
                      "last_error": last.text.split("\n", 1)[0][:300] if last else None},
            "context": self.matching.context.to_dict(),
            "diagnoses": [d.to_dict() for d in self.diagnoses],
            "near": [n.to_dict() for n in self.matching.near],
            "probed": probed,
            "exit_code": self.exit_code,
        })


def signature_checks(plugins: bool = True) -> List[Check]:
    from envdoctor.pipeline.check.registry import load_checks

    return [item.check for item in load_checks(plugins=plugins)[0]]


def explain_excerpt(excerpt: LogExcerpt, checks: Optional[Sequence[Check]] = None, probe: bool = True, python: Optional[str] = None,
            timeout_s: Optional[float] = None, plugins: bool = True) -> Explanation:
    """Diagnose the excerpt; with `probe`, run the diagnosed checks' probes in `python` (a
    fresh worker) and say for each diagnosis whether this environment reproduces it."""
    matching = match(excerpt, signature_checks(plugins) if checks is None else checks)
    explanation = Explanation(excerpt, matching)
    if probe and matching.diagnoses:
        from envdoctor.pipeline.check.engine import run_check
        from envdoctor.pipeline.check.request import CheckRequest
        request = CheckRequest(python=python, only=explanation.probed_checks(), timeout_s=timeout_s, plugins=plugins,
                               default_config=False)
        explanation.report = run_check(request)
        apply_verdicts(matching.diagnoses, explanation.report, matching.supporting)
    return explanation
