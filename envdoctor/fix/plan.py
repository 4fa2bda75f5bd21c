"""The plan: a numbered step per remedy chosen, prepared by its kind, nothing changed yet.

Findings that chose the same remedy share one step (one edit of `mixed_precision` answers
the kernels check and every model that failed in fp16). Config steps are prepared
together, each against the text the earlier ones leave, so that they apply in order and
undo in reverse. A finding with nothing envdoctor can apply gets a manual step (or is
listed as having no remedy), and is never "applied".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.fix.choose import MANUAL_RANK, Choice, actionable, choose, merge_actions, prefer_matches, rank
from envdoctor.fix.steps import Action, NotApplicable, kind_module
from envdoctor.target.intent import Intent
from envdoctor.target.model import Environment, Finding, Remedy, Report, Status


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

    @property
    def checks(self) -> List[str]:
        return list(dict.fromkeys(f.check for f in self.findings))

    def to_dict(self) -> Dict[str, Any]:
        return {
            "number": self.number,
            "kind": self.kind,
            "remedy": self.remedy.to_dict(),
            "preferred": self.preferred,
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
    environment: Dict[str, Any]
    ran: List[str] = field(default_factory=list)  # the checks that ran (not skipped) in the report planned from
    unmatched: List[str] = field(default_factory=list)  # --prefer keys that no finding's remedy answers

    @property
    def applicable(self) -> List[Step]:
        return [s for s in self.steps if s.action is not None]

    @property
    def empty(self) -> bool:
        return not self.steps and not self.unresolved

    def checks(self) -> List[str]:
        """The checks whose findings the plan answers: what verification re-runs."""
        found = [c for s in self.steps for c in s.checks] + [f.check for f in self.unresolved]
        return list(dict.fromkeys(found))

    def to_dict(self) -> Dict[str, Any]:
        return {
            "steps": [s.to_dict() for s in self.steps],
            "unresolved": [f.to_dict() for f in self.unresolved],
            "prefer_unmatched": list(self.unmatched),
        }


def make_plan(report: Report, prefer: Sequence[str] = (), only: Sequence[str] = ()) -> Plan:
    env = Environment.from_report(report.environment)
    findings = [f for f in actionable(report.findings) if not only or f.check in only]
    intent = env.intent
    bf16_gpu = has_bf16_gpu(report)
    python = env.python

    def why_not(remedy: Remedy) -> Optional[str]:
        try:
            _prepare_one(remedy, intent, bf16_gpu, python)
        except NotApplicable as exc:
            return str(exc)
        return None

    choices = choose([f for f in findings if f.remedies], prefer, why_not)
    steps = _steps(choices)
    _prepare(steps, intent, bf16_gpu, python)
    ran = [c.id for c in report.checks if c.status is not Status.SKIPPED]
    offered = [r.id for f in findings for r in f.remedies]
    unmatched = [key for key in prefer if not any(prefer_matches(rid, key) for rid in offered)]
    return Plan(steps=steps, unresolved=[f for f in findings if not f.remedies], environment=report.environment, ran=ran,
                unmatched=unmatched)


def has_bf16_gpu(report: Report) -> bool:
    """A GPU with native bf16 (bf16-support's facts): where an "auto" precision means bf16."""
    for check in report.checks:
        if check.id == "bf16-support":
            return any(d.get("is_bf16_supported_native") for d in check.facts.get("devices") or ())
    return False


def _steps(choices: Sequence[Choice]) -> List[Step]:
    """One step per remedy id taken (manual ones too), in the order findings first need them."""
    grouped: Dict[str, List[Choice]] = {}
    for choice in choices:
        grouped.setdefault(_step_key(_taken(choice)), []).append(choice)
    steps: List[Step] = []
    for key, group in grouped.items():
        taken = [_taken(c) for c in group]
        remedy = merge_actions(taken) or taken[0]
        kind = remedy.kind if group[0].chosen is not None else "manual"
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
    steps.sort(key=lambda s: (MANUAL_RANK if s.kind == "manual" else rank(s.remedy), -max(f.severity.rank for f in s.findings)))
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
    return next((r for r in remedies if r.kind == "manual"), remedies[0])


def _dedupe_passed(passed: Sequence[Tuple[Remedy, str]]) -> List[Tuple[Remedy, str]]:
    out: Dict[str, Tuple[Remedy, str]] = {}
    for remedy, why in passed:
        out.setdefault(_step_key(remedy), (remedy, why))
    return list(out.values())


# ---------------------------------------------------------------- preparing by kind


def config_action(remedy: Remedy) -> Dict[str, Any]:
    """The config action as the step edits it. A `when` key that is not being set (the device
    the run is on) was judged by the rule on the live facts; only the values to replace stay."""
    action = dict(remedy.action)
    changes = action.get("set") or {}
    when = {k: v for k, v in (action.get("when") or {}).items() if k in changes}
    action["when"] = when
    if not when:
        del action["when"]
    return action


def _prepare_one(remedy: Remedy, intent: Optional[Intent], bf16_gpu: bool, python: str) -> Action:
    if remedy.kind == "config":
        prepared = kind_module("config").prepare([config_action(remedy)], intent, bf16_gpu)[0]
        if isinstance(prepared, NotApplicable):
            raise prepared
        return prepared
    if remedy.kind == "pip":
        return kind_module("pip").prepare(remedy.action, python)
    if remedy.kind == "env":
        return kind_module("env").prepare(remedy.action)
    raise NotApplicable("a manual step")


def _prepare(steps: List[Step], intent: Optional[Intent], bf16_gpu: bool, python: str) -> None:
    """Each step's Action; config steps together, each against the text the earlier ones leave."""
    configs = [s for s in steps if s.kind == "config"]
    if configs:
        prepared = kind_module("config").prepare([config_action(s.remedy) for s in configs], intent, bf16_gpu)
        for step, action in zip(configs, prepared):
            if isinstance(action, NotApplicable):  # e.g. merged actions that now conflict
                step.passed_over.append((step.remedy, str(action)))
                step.kind = "manual"
            else:
                step.action = action
    for step in steps:
        if step.kind in ("pip", "env"):
            step.action = _prepare_one(step.remedy, intent, bf16_gpu, python)
