"""`fix --yes`: apply every step in order, each written to the journal before it runs,
then verify by re-probing. A step that fails to apply, to confirm or to verify rolls back
everything this run did, newest first; Ctrl-C does too, and the journal says where it stood."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from envdoctor.pipeline.check.engine import run_check
from envdoctor.pipeline.check.request import CheckRequest
from envdoctor.pipeline.fix.action import FixError
from envdoctor.pipeline.fix.journal import Journal, RunJournal
from envdoctor.pipeline.fix.plan import Plan, Step
from envdoctor.pipeline.fix.undo import undo_run
from envdoctor.pipeline.fix.verify import Verdict, gone, request_for, verdicts
from envdoctor.target.model import Finding, Report
from envdoctor.target.version import __version__

Say = Callable[[str], None]


@dataclass
class FixOutcome:
    status: str  # "verified", "not-fixed", "failed", "rolled-back"
    run_id: Optional[str] = None
    applied: List[int] = field(default_factory=list)
    failure: Optional[str] = None
    verdicts: List[Verdict] = field(default_factory=list)
    also_gone: List[Finding] = field(default_factory=list)
    rollback: List[str] = field(default_factory=list)
    after: Optional[Report] = None

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "verified" else 1

    def to_dict(self) -> Dict[str, Any]:
        return {
            "status": self.status,
            "journal": self.run_id,
            "applied": list(self.applied),
            "failure": self.failure,
            "verified": [v.to_dict() for v in self.verdicts],
            "also_fixed": [{"check": f.check, "code": f.code, "title": f.title} for f in self.also_gone],
            "rolled_back": list(self.rollback),
            "exit_code": self.exit_code,
        }


def apply_plan(plan: Plan, request: CheckRequest, journal: Journal, say: Optional[Say] = None) -> FixOutcome:
    say = say or (lambda line: None)
    steps = plan.applicable
    run = journal.begin(_meta(plan, request))  # JournalError: stop before anything changes
    outcome = FixOutcome(status="failed", run_id=run.id)
    run.set_status("applying")
    try:
        for step in steps:
            say("step %d: applying (%s)" % (step.number, step.kind))
            _apply_step(run, step)
            outcome.applied.append(step.number)
    except FixError as exc:
        outcome.failure = str(exc)
        _roll_back(run, outcome, say, "failed")
        return outcome
    except BaseException:  # Ctrl-C, a bug: nothing stays half-done
        _roll_back(run, outcome, say, "interrupted")
        raise
    run.set_status("applied")
    say("verifying: re-running %s" % ", ".join(plan.checks()))
    try:
        after = run_check(request_for(request, plan, _variables(steps)))
    except BaseException as exc:
        outcome.failure = "verification did not run: %s" % exc
        _roll_back(run, outcome, say, "failed")
        if not isinstance(exc, Exception):
            raise
        return outcome
    outcome.after = after
    outcome.verdicts = verdicts(steps, after)
    outcome.also_gone = gone([f for s in plan.steps if s.action is None for f in s.findings] + plan.unresolved, after)
    if all(v.fixed for v in outcome.verdicts):
        outcome.status = "verified"
        run.set_status("verified")
        return outcome
    outcome.failure = "step %s not fixed" % ", ".join(str(v.number) for v in outcome.verdicts if not v.fixed)
    _roll_back(run, outcome, say, "not-fixed")
    return outcome


def _apply_step(run: RunJournal, step: Step) -> None:
    assert step.action is not None
    record = run.add_step(step.number, step.kind, dict(step.action.to_dict(), remedy=step.remedy.id, summary=step.remedy.summary))
    record.mark("started")
    try:
        step.action.apply(record)
        record.mark("applied")
        step.action.confirm()
        record.mark("confirmed")
    except FixError as exc:
        record.mark("failed", error=str(exc))
        raise FixError("step %d (%s): %s" % (step.number, step.kind, exc)) from None
    except OSError as exc:
        record.mark("failed", error=str(exc))
        raise FixError("step %d (%s): %s" % (step.number, step.kind, exc.strerror or exc)) from None


def _roll_back(run: RunJournal, outcome: FixOutcome, say: Say, status: str) -> None:
    say("rolling back everything this run did")
    try:
        outcome.rollback = undo_run(run)
        outcome.status = "rolled-back" if status != "not-fixed" else "not-fixed"
    except FixError as exc:
        outcome.rollback = ["rollback stopped: %s (journal %s)" % (exc, run.path)]
        outcome.status = "failed"
    run.set_status("rolled-back" if outcome.status != "failed" else "failed", reason=outcome.failure or status)


def _variables(steps: List[Step]) -> Dict[str, Optional[str]]:
    found: Dict[str, Optional[str]] = {}
    for step in steps:
        variables = getattr(step.action, "variables", None)
        if callable(variables):
            found.update(variables())
    return found


def _meta(plan: Plan, request: CheckRequest) -> Dict[str, Any]:
    return {
        "envdoctor": __version__,
        "python": plan.target.python,
        "configs": [str(Path(c)) for c in request.configs],
        "steps": [s.to_dict() for s in plan.applicable],
    }
