"""`fix --yes`: apply every step in order, each written to the journal before it runs,
then verify by re-probing.

Steps stand or fall on their own: a step that fails to apply, to confirm or to verify is
rolled back together with the steps that build on it (later edits of the same config file,
whose backups hold its text), and the independent steps that were applied and verified stay.
The outcome says which were kept and which were rolled back, and why. Ctrl-C, or a bug, rolls
back everything this run did, newest first; the journal says where it stood, and `undo`
reverts whatever a run kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from envdoctor.pipeline.check.engine import run_check
from envdoctor.pipeline.check.request import CheckRequest
from envdoctor.pipeline.fix.action import FixError
from envdoctor.pipeline.fix.journal import Journal, JournalError, RunJournal
from envdoctor.pipeline.fix.plan import Plan, Step
from envdoctor.pipeline.fix.undo import UNDOABLE, undo_run, undo_steps
from envdoctor.pipeline.fix.verify import Verdict, gone, left, new_findings, request_for, verdicts
from envdoctor.target.model import Finding, Report
from envdoctor.target.version import __version__

Say = Callable[[str], None]


@dataclass
class FixOutcome:
    status: str  # "verified", "partly-verified", "not-fixed", "failed", "rolled-back"
    run_id: Optional[str] = None
    applied: List[int] = field(default_factory=list)  # the steps whose change was made
    failure: Optional[str] = None
    verdicts: List[Verdict] = field(default_factory=list)
    also_gone: List[Finding] = field(default_factory=list)
    revealed: List[Finding] = field(default_factory=list)  # errors torch's import now lets the checks see
    left: List[Finding] = field(default_factory=list)  # the manual steps' and unanswered findings still there
    rollback: List[str] = field(default_factory=list)
    after: Optional[Report] = None
    kept: List[int] = field(default_factory=list)  # applied, verified and still in place
    dropped: Dict[int, str] = field(default_factory=dict)  # step -> why it failed or was rolled back

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "verified" and not self.revealed and not self.left else 1

    def to_dict(self) -> Dict[str, Any]:
        return {
            "status": self.status,
            "journal": self.run_id,
            "applied": list(self.applied),
            "kept": list(self.kept),
            "dropped": [{"step": n, "reason": why} for n, why in sorted(self.dropped.items())],
            "failure": self.failure,
            "verified": [v.to_dict() for v in self.verdicts],
            "also_fixed": [{"check": f.check, "code": f.code, "title": f.title} for f in self.also_gone],
            "revealed": [{"check": f.check, "code": f.code, "title": f.title} for f in self.revealed],
            "left": [{"check": f.check, "code": f.code, "title": f.title} for f in self.left],
            "rolled_back": list(self.rollback),
            "exit_code": self.exit_code,
        }


def builds_on(steps: Sequence[Step]) -> Dict[int, List[int]]:
    """step -> the later steps that build on it: edits of the same config file (each backs up
    and edits the text the one before it left). Every other step stands on its own."""
    later: Dict[int, List[int]] = {s.number: [] for s in steps}
    for i, step in enumerate(steps):
        for other in steps[i + 1:]:
            if step.files & other.files:
                later[step.number].append(other.number)
    return later


def _with_dependents(numbers: Sequence[int], later: Mapping[int, Sequence[int]]) -> List[int]:
    found: List[int] = []
    pending = list(numbers)
    while pending:
        number = pending.pop()
        if number not in found:
            found.append(number)
            pending.extend(later.get(number, ()))
    return sorted(found)


def apply_plan(plan: Plan, request: CheckRequest, journal: Journal, say: Optional[Say] = None,
               recheck: Callable[[CheckRequest], Report] = run_check) -> FixOutcome:
    """`recheck`: what verification runs (fix --distributed: the ranks' collectives again)."""
    say = say or (lambda line: None)
    run = journal.begin(_meta(plan, request))  # JournalError: stop before anything changes
    outcome = FixOutcome(status="failed", run_id=run.id)
    try:
        return _apply(plan, request, run, outcome, say, recheck)
    except JournalError as exc:
        # The journal stopped taking writes mid-run (a full disk): nothing may stay that its
        # journal cannot undo. What each step recorded in memory drives the rollback.
        outcome.failure = "the journal stopped taking writes mid-run, so everything this run changed is rolled back: %s" % exc
        _roll_back(run, outcome, say, "failed")
        if outcome.status == "failed":
            outcome.rollback.append("still changed: %s" % ("; ".join(_in_place(run)) or "nothing"))
        return outcome


def _in_place(run: RunJournal) -> List[str]:
    """The steps whose change is still in place, each with how to revert it by hand."""
    out = []
    for step in run.steps:
        if step.status in UNDOABLE:
            files = ["%s (original bytes in %s)" % (r.get("file"), r.get("backup")) for r in step.record.get("files") or ()]
            out.append("step %d (%s): %s" % (step.number, step.kind, ", ".join(files) or step.plan.get("summary") or step.kind))
    return out


def _apply(plan: Plan, request: CheckRequest, run: RunJournal, outcome: FixOutcome, say: Say,
           recheck: Callable[[CheckRequest], Report]) -> FixOutcome:
    steps = plan.applicable
    later = builds_on(steps)
    run.set_status("applying")
    try:
        for step in steps:
            cause = next((n for n in outcome.dropped if step.number in later[n]), None)
            if cause is not None:
                outcome.dropped[step.number] = "not applied: it builds on step %d" % cause
                continue
            say("step %d: applying (%s)" % (step.number, step.kind))
            try:
                _apply_step(run, step)
            except FixError as exc:
                outcome.dropped[step.number] = str(exc)
                say("step %d failed: rolling back its own change" % step.number)
                try:
                    outcome.rollback += undo_steps(run, [step.number])
                except FixError as stuck:  # its half-done change cannot be undone: nothing else may stay either
                    outcome.failure = "%s; and its undo failed: %s" % (exc, stuck)
                    _roll_back(run, outcome, say, "failed")
                    return outcome
                continue
            outcome.applied.append(step.number)
    except BaseException:  # Ctrl-C, a bug: nothing stays half-done
        _roll_back(run, outcome, say, "interrupted")
        raise
    if not outcome.applied:
        outcome.failure = _failure(outcome)
        outcome.status = "rolled-back"
        run.set_status("rolled-back", reason=outcome.failure)
        return outcome
    run.set_status("applied")
    applied = [s for s in steps if s.number in outcome.applied]
    say("verifying: re-running %s" % ", ".join(plan.ran))
    try:
        after = recheck(request_for(request, plan, variables_of(applied)))
    except BaseException as exc:
        outcome.failure = "verification did not run: %s" % exc
        _roll_back(run, outcome, say, "failed")
        if not isinstance(exc, Exception):
            raise
        return outcome
    outcome.after = after
    caused, outcome.revealed = new_findings(plan, applied, after)
    outcome.verdicts = verdicts(applied, after, caused)
    unanswered = [f for s in plan.steps if s.action is None for f in s.findings] + plan.unresolved
    outcome.also_gone, outcome.left = gone(unanswered, after), left(unanswered, after)
    not_fixed = [v.number for v in outcome.verdicts if not v.fixed]
    for number in not_fixed:
        outcome.dropped[number] = "not fixed: its findings are still there after it"
    undone = [n for n in _with_dependents(not_fixed, later) if n in outcome.applied]
    for number in undone:
        cause = next((n for n in not_fixed if number in _with_dependents([n], later)), not_fixed[0] if not_fixed else number)
        outcome.dropped.setdefault(number, "rolled back: it builds on step %d, which was not fixed" % cause)
    try:
        if undone:
            say("rolling back step %s" % ", ".join(str(n) for n in undone))
            outcome.rollback += undo_steps(run, undone)
    except FixError as exc:
        outcome.rollback.append("rollback stopped: %s (journal %s)" % (exc, run.path))
        outcome.failure = _failure(outcome)
        outcome.status = "failed"
        run.set_status("failed", reason=outcome.failure)
        return outcome
    outcome.kept = [n for n in outcome.applied if n not in undone]
    outcome.failure = _failure(outcome) if outcome.dropped else None
    if not outcome.dropped:
        outcome.status = "verified"
    elif outcome.kept:
        outcome.status = "partly-verified"
    else:
        outcome.status = "not-fixed" if not_fixed else "rolled-back"
    run.set_status({"not-fixed": "rolled-back"}.get(outcome.status, outcome.status), reason=outcome.failure or "")
    return outcome


def _failure(outcome: FixOutcome) -> str:
    return "; ".join(why if why.startswith("step %d (" % n) else "step %d: %s" % (n, why) for n, why in sorted(outcome.dropped.items()))


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
    try:
        run.set_status("rolled-back" if outcome.status != "failed" else "failed", reason=outcome.failure or status)
    except JournalError as exc:  # the rollback itself is done; its record could not be written
        outcome.rollback.append("the journal could not record the rollback: %s" % exc)


def variables_of(steps: Sequence[Step]) -> Dict[str, Optional[str]]:
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
