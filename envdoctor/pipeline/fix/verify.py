"""Proof that a fix worked: every check that ran before runs again, in a fresh worker, on the
files as they are now and with the steps' variables set (a changed field or package can turn
any check, not only the ones that asked for the change). A step is fixed when none of its
findings comes back at warning or error and nothing new appears that it can have caused."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.pipeline.check.request import CheckRequest
from envdoctor.pipeline.fix.choose import actionable
from envdoctor.pipeline.fix.plan import Plan, Step
from envdoctor.target.model import CheckResult, Finding, Report, Severity, Status
from envdoctor.target.remedies.actions import action_names
from envdoctor.target.versions import requirement_name

BROKEN = (Status.CRASHED, Status.TIMEOUT, Status.SKIPPED)

# Checks whose verdict a fix of another check's finding changes, shown in its evidence:
# without apex, transformers builds T5 with its own T5LayerNorm, which library-probes shows.
AFFECTS = {"apex": ("library-probes",)}


@dataclass
class Verdict:
    number: int
    fixed: bool
    evidence: List[str]

    def to_dict(self) -> Dict[str, Any]:
        return {"step": self.number, "fixed": self.fixed, "evidence": list(self.evidence)}


def request_for(request: CheckRequest, plan: Plan, environ: Dict[str, Optional[str]]) -> CheckRequest:
    """The original request with every check the first run ran, and the env steps' variables.
    Where torch did not import, the checks it skipped run too: a step may have made torch whole."""
    if plan.target.torch_ok:
        request = dataclasses.replace(request, only=list(plan.ran), skip=())
    return dataclasses.replace(request, environ=dict(request.environ, **environ))


def verdicts(steps: Sequence[Step], after: Report, caused: Dict[int, List[Finding]]) -> List[Verdict]:
    """Each step's: fixed when its findings are gone, its checks ran, and it `caused` nothing new."""
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
        evidence += ["new since the fix: %s: %s" % (f.check, f.title) for f in caused.get(step.number, ())]
        out.append(Verdict(step.number, not back and not broken and not caused.get(step.number), evidence))
    return out


def new_findings(plan: Plan, steps: Sequence[Step], after: Report) -> Tuple[Dict[int, List[Finding]], List[Finding]]:
    """Error findings the first run did not have: by the applied steps that can have caused
    them (the steps that edited the config a finding names; for one that names no config, the
    steps that changed the package it names, else those that changed packages or variables,
    else every step), and those no step caused but made visible: where torch did not import,
    no rule could judge what torch measures, so what it finds once torch imports was there
    before, unseen, unless a step edited it."""
    new = [f for f in after.findings if f.severity is Severity.ERROR and (f.check, f.code) not in plan.seen]
    out: Dict[int, List[Finding]] = {}
    revealed: List[Finding] = []
    for finding in new:
        config = (finding.subject or {}).get("config") or {}
        named = _config_path(config.get("file"))
        editors = [s for s in steps if named is not None and named in s.files]
        if not editors and not plan.target.torch_ok:
            revealed.append(finding)
            continue
        if not editors and named is None:
            editors = _installers(steps, (finding.subject or {}).get("package")) or [s for s in steps if not s.files] or list(steps)
        for step in editors or steps:
            out.setdefault(step.number, []).append(finding)
    return out, revealed
def _installers(steps: Sequence[Step], package: Any) -> List[Step]:
    """The steps that changed the package a finding names: a bitsandbytes that does not import is the
    bitsandbytes install's doing, not the numpy downgrade's beside it."""
    name = requirement_name(package) if isinstance(package, str) else None
    return [s for s in steps if name and name in action_names(s.remedy.action, ("install", "upgrade", "uninstall"))]


def _config_path(file: Any) -> Optional[str]:
    return os.path.realpath(file) if isinstance(file, str) and file else None


def gone(findings: Sequence[Finding], after: Report) -> List[Finding]:
    """Findings with no step of their own that the fix answered anyway."""
    still = {(f.check, f.code) for f in actionable(after.findings)}
    ran = {c.id for c in after.checks if c.status not in BROKEN}
    return [f for f in findings if f.check in ran and (f.check, f.code) not in still]


def left(findings: Sequence[Finding], after: Report) -> List[Finding]:
    """Findings with no step of their own (manual, no remedy) that are still there: the user's to do."""
    answered = gone(findings, after)
    return [f for f in findings if f not in answered]


def _check_line(result: CheckResult) -> str:
    return "%s: %s%s" % (result.id, result.status.value, " — %s" % result.summary if result.summary else "")
