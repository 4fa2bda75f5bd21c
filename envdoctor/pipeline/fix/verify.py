"""Proof that a fix worked: the checks that produced the findings run again, in a fresh
worker, on the files as they are now and with the step's variables set; a step is fixed
when none of its findings comes back at warning or error."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from envdoctor.pipeline.check.request import CheckRequest
from envdoctor.pipeline.fix.choose import actionable
from envdoctor.pipeline.fix.plan import Plan, Step
from envdoctor.target.model import CheckResult, Finding, Report, Status

BROKEN = (Status.CRASHED, Status.TIMEOUT, Status.SKIPPED)

# Checks whose verdict a fix of another check's finding changes, re-run with it: without
# apex, transformers builds T5 with its own T5LayerNorm, which library-probes shows.
AFFECTS = {"apex": ("library-probes",)}


@dataclass
class Verdict:
    number: int
    fixed: bool
    evidence: List[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"step": self.number, "fixed": self.fixed, "evidence": list(self.evidence)}


def request_for(request: CheckRequest, plan: Plan, environ: Dict[str, Optional[str]]) -> CheckRequest:
    """The original request narrowed to the plan's checks (and those they affect, where the
    first run had them), with the env steps' variables."""
    ran = set(plan.ran)
    checks = plan.checks() + [a for c in plan.checks() for a in AFFECTS.get(c, ()) if a in ran]
    return dataclasses.replace(request, only=list(dict.fromkeys(checks)), skip=(), environ=dict(request.environ, **environ))


def verdicts(steps: Sequence[Step], after: Report) -> List[Verdict]:
    results = {c.id: c for c in after.checks}
    still = actionable(after.findings)
    out = []
    for step in steps:
        wanted = {(f.check, f.code) for f in step.findings}
        back = [f for f in still if (f.check, f.code) in wanted]
        broken = [results[c] for c in step.checks if c in results and results[c].status in BROKEN]
        shown = step.checks + [a for c in step.checks for a in AFFECTS.get(c, ())]
        evidence = [_check_line(results[c]) for c in dict.fromkeys(shown) if c in results]
        evidence += ["still: %s" % f.title for f in back]
        out.append(Verdict(step.number, not back and not broken, evidence))
    return out


def gone(findings: Sequence[Finding], after: Report) -> List[Finding]:
    """Findings with no step of their own that the fix answered anyway."""
    still = {(f.check, f.code) for f in actionable(after.findings)}
    ran = {c.id for c in after.checks if c.status not in BROKEN}
    return [f for f in findings if f.check in ran and (f.check, f.code) not in still]


def _check_line(result: CheckResult) -> str:
    return "%s: %s%s" % (result.id, result.status.value, " — %s" % result.summary if result.summary else "")
