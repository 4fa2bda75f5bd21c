"""The plan: a numbered step per remedy chosen, prepared by its kind, nothing changed yet.

Findings that chose the same remedy share one step (one edit of `mixed_precision` answers
the kernels check and every model that failed in fp16). Config steps are prepared
together, each against the text the earlier ones leave, so that they apply in order and
undo in reverse. A finding with nothing envdoctor can apply gets a manual step (or is
listed as having no remedy), and is never "applied".
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from envdoctor.pipeline.fix.action import Action, NotApplicable, kind_module
from envdoctor.pipeline.fix.choose import Choice, actionable, choose, merge_actions, prefer_matches
from envdoctor.target.model import Finding, Remedy, Report, Status, Target
from envdoctor.target.remedies.kinds import KINDS, MANUAL, rank_of


@dataclass
class Step:
    number: int
    kind: str  # "config", "pip", "env", "manual"
    remedy: Remedy
    findings: List[Finding]
    alternatives: List[Remedy] = field(default_factory=list)
    passed_over: List[Tuple[Remedy, str]] = field(default_factory=list)
    action: Optional[Action] = None  # None: a manual step, shown and never applied
    preferred: bool = False
    consequence: bool = False  # planned for what the earlier steps' config edits would make wrong

    @property
    def checks(self) -> List[str]:
        return list(dict.fromkeys(f.check for f in self.findings))

    @property
    def files(self) -> Set[str]:
        """The config files the step edits, each as the real path its symlinks lead to."""
        return {os.path.realpath(f.path) for f in getattr(self.action, "files", ())}

    def to_dict(self) -> Dict[str, Any]:
        return {
            "number": self.number,
            "kind": self.kind,
            "remedy": self.remedy.to_dict(),
            "preferred": self.preferred,
            "consequence": self.consequence,
            "applies": self.action is not None,
            "lines": self.action.lines() if self.action is not None else list(self.remedy.commands),
            "change": self.action.to_dict() if self.action is not None else None,
            "findings": [{"check": f.check, "code": f.code, "severity": f.severity.value, "title": f.title} for f in self.findings],
            "alternatives": [r.to_dict() for r in self.alternatives],
            "passed_over": [dict(r.to_dict(), reason=why) for r, why in self.passed_over],
        }


@dataclass
class Plan:
    steps: List[Step]
    unresolved: List[Finding]  # findings that offer no remedy at all
    target: Target  # the run's, from the report planned from
    ran: List[str] = field(default_factory=list)  # the checks that ran (not skipped) in the report planned from
    unmatched: List[str] = field(default_factory=list)  # --prefer keys that no finding's remedy answers
    # (check, code) of the error and warning findings planned from: one that appears, or rises
    # from a note to an error, after the plan's edits is new
    seen: Set[Tuple[str, str]] = field(default_factory=set)

    @property
    def applicable(self) -> List[Step]:
        return [s for s in self.steps if s.action is not None]

    @property
    def empty(self) -> bool:
        return not self.steps and not self.unresolved

    def checks(self) -> List[str]:
        """The checks whose findings the plan answers."""
        found = [c for s in self.steps for c in s.checks] + [f.check for f in self.unresolved]
        return list(dict.fromkeys(found))

    def planned_texts(self) -> Dict[str, str]:
        """Each config file the plan edits -> its text after the plan's last edit of it."""
        texts: Dict[str, str] = {}
        for step in self.applicable:
            texts.update({f.file: f.after for f in getattr(step.action, "files", ())})
        return texts

    def to_dict(self) -> Dict[str, Any]:
        return {
            "steps": [s.to_dict() for s in self.steps],
            "unresolved": [f.to_dict() for f in self.unresolved],
            "prefer_unmatched": list(self.unmatched),
        }


def make_plan(report: Report, prefer: Sequence[str] = (), only: Sequence[str] = ()) -> Plan:
    target = report.target
    findings = _wanted(report, only)
    steps = _steps(choose([f for f in findings if f.remedies], prefer, _applicability(target)))
    _prepare(steps, target)
    ran = [c.id for c in report.checks if c.status is not Status.SKIPPED]
    offered = [r.id for f in findings for r in f.remedies]
    unmatched = [key for key in prefer if not any(prefer_matches(rid, key) for rid in offered)]
    return Plan(steps=steps, unresolved=[f for f in findings if not f.remedies], target=target, ran=ran, unmatched=unmatched,
                seen={(f.check, f.code) for f in actionable(report.findings)})


def extend_plan(plan: Plan, after: Report, texts: Mapping[str, str], prefer: Sequence[str] = (), only: Sequence[str] = ()) -> bool:
    """Add to `plan` the steps for what its own config edits would make wrong. `after` is the
    check of the configs as the plan leaves them (`texts`, the planned text of each file), and
    each new step is prepared against those texts. False: nothing new."""
    new = [f for f in _wanted(after, only) if (f.check, f.code) not in plan.seen]
    plan.seen |= {(f.check, f.code) for f in actionable(after.findings)}
    if not new:
        return False
    target = after.target
    if target.intent is not None:  # the report's intent came back from JSON without the texts it was read from
        sources = tuple(dataclasses.replace(s, text=texts.get(s.file)) for s in target.intent.sources)
        target = dataclasses.replace(target, intent=dataclasses.replace(target.intent, sources=sources))
    added = _steps(choose([f for f in new if f.remedies], prefer, _applicability(target)))
    _prepare(added, target)
    for number, step in enumerate(added, len(plan.steps) + 1):
        step.number, step.consequence = number, True
    plan.steps += added
    plan.unresolved += [f for f in new if not f.remedies]
    return True


# How many times the plan is checked again after its own edits: a round adds steps only for
# findings no earlier round had, so two settle every rule here; the third is a margin.
CONSEQUENCE_ROUNDS = 3


def close_over(plan: Plan, check_planned: Callable[[Mapping[str, str]], Report], prefer: Sequence[str] = (),
               only: Sequence[str] = ()) -> None:
    """Plan what the plan's own config edits would make wrong: `check_planned(texts)` checks
    the configs as the plan leaves them (a device moved to the CPU keeps an fp16 the CPU
    cannot run). Only config edits change the intent; packages are proven once installed."""
    for _ in range(CONSEQUENCE_ROUNDS):
        texts = plan.planned_texts()
        if not texts or not extend_plan(plan, check_planned(texts), texts, prefer, only):
            return


def _wanted(report: Report, only: Sequence[str]) -> List[Finding]:
    return [f for f in actionable(report.findings) if not only or f.check in only]


def _applicability(target: Target) -> Callable[[Remedy], Optional[str]]:
    """Why a remedy cannot be applied to this target (None: it can), asked of its kind."""
    def why_not(remedy: Remedy) -> Optional[str]:
        if remedy.kind == MANUAL.name or remedy.kind not in KINDS:
            return "a manual step"
        (prepared,) = kind_module(remedy.kind).prepare_steps([remedy.action], target)
        return str(prepared) if isinstance(prepared, NotApplicable) else None

    return why_not


def _steps(choices: Sequence[Choice]) -> List[Step]:
    """One step per remedy id taken (manual ones too), in the order findings first need them."""
    grouped: Dict[str, List[Choice]] = {}
    for choice in choices:
        grouped.setdefault(_step_key(_taken(choice)), []).append(choice)
    steps: List[Step] = []
    for key, group in grouped.items():
        taken = [_taken(c) for c in group]
        remedy = merge_actions(taken) or taken[0]
        kind = remedy.kind if group[0].chosen is not None else MANUAL.name
        seen = {key}
        alternatives: List[Remedy] = []
        for choice in group:
            for other in choice.alternatives:
                if _step_key(other) not in seen:
                    seen.add(_step_key(other))
                    alternatives.append(other)
        passed = [p for c in group for p in c.passed_over]
        steps.append(Step(number=len(steps) + 1, kind=kind, remedy=remedy, findings=[c.finding for c in group],
                          alternatives=alternatives, passed_over=_dedupe_passed(passed), preferred=any(c.preferred for c in group)))
    # least invasive first (config edits, variables, packages, torch), errors before warnings
    # among equals, manual steps last: a failing pip step rolls back the quick, certain edits
    steps.sort(key=lambda s: (rank_of(s.kind, s.remedy.action), -max(f.severity.rank for f in s.findings)))
    for number, step in enumerate(steps, 1):
        step.number = number
    return steps


def _step_key(remedy: Remedy) -> str:
    return remedy.id or remedy.summary


def _taken(choice: Choice) -> Remedy:
    """The remedy a finding's step shows: the one chosen; else its first manual step; else
    (nothing applies here) its first remedy, shown with why it cannot be applied."""
    if choice.chosen is not None:
        return choice.chosen
    remedies = choice.finding.remedies
    return next((r for r in remedies if r.kind == MANUAL.name), remedies[0])


def _dedupe_passed(passed: Sequence[Tuple[Remedy, str]]) -> List[Tuple[Remedy, str]]:
    out: Dict[str, Tuple[Remedy, str]] = {}
    for remedy, why in passed:
        out.setdefault(_step_key(remedy), (remedy, why))
    return list(out.values())


def _prepare(steps: List[Step], target: Target) -> None:
    """Each step's Action, prepared by its kind's module, every kind's steps together in order
    (config steps each against the text the earlier ones leave)."""
    for kind in dict.fromkeys(s.kind for s in steps):
        if kind == MANUAL.name:
            continue
        of_kind = [s for s in steps if s.kind == kind]
        for step, action in zip(of_kind, kind_module(kind).prepare_steps([s.remedy.action for s in of_kind], target)):
            if isinstance(action, NotApplicable):  # e.g. merged actions that now conflict
                step.passed_over.append((step.remedy, str(action)))
                step.kind = MANUAL.name
            else:
                step.action = action
