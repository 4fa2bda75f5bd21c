"""Which way out `fix` takes for each finding: pure rules over the findings' remedies.

The default is the least invasive remedy that can be applied and verified here: a config
edit, then an environment variable, then a package other than torch, then torch itself.
Manual steps are shown, never applied. `--prefer KEY` picks another where a finding has it.
Among equals, the remedy that the most findings offer wins, so that one edit answers
every finding about the same setting (the CPU's fp32 for both the kernels and the models).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from envdoctor.target.model import Finding, Remedy, Severity
from envdoctor.target.remedies.kinds import MANUAL, rank_of

# --prefer words people type for the remedies' ids
PREFER_ALIASES = {
    "fp32": "precision-fp32",
    "bf16": "precision-bf16",
    "fp16": "precision-fp16",
    "gpu": "use-gpu",
    "cpu": "device-cpu",
    "cuda": "device-cuda",
    "rebuild-apex": "apex-build-from-source",
    "build-apex": "apex-build-from-source",
}

# A remedy that cannot be applied here says why (None: it can).
Applicability = Callable[[Remedy], Optional[str]]


@dataclass(frozen=True)
class Choice:
    """One finding's way out: the remedy taken (None: nothing envdoctor can apply), the
    ones not taken, and why a remedy that would have come first was passed over."""

    finding: Finding
    chosen: Optional[Remedy]
    alternatives: Tuple[Remedy, ...]
    passed_over: Tuple[Tuple[Remedy, str], ...] = ()
    preferred: bool = False  # chosen because of --prefer


def rank(remedy: Remedy) -> int:
    """Least invasive first: the kinds table's order (a config edit, a variable, a package, torch)."""
    return rank_of(remedy.kind, remedy.action)


def prefer_matches(remedy_id: str, key: str) -> bool:
    """`--prefer upgrade-torch` names `torch-upgrade`, `fp32` names `precision-fp32`."""
    if not remedy_id or not key:
        return False
    key = PREFER_ALIASES.get(key, key)
    return remedy_id == key or remedy_id.endswith("-" + key) or sorted(remedy_id.split("-")) == sorted(key.split("-"))


def actionable(findings: Sequence[Finding]) -> List[Finding]:
    """What fix works on: the error and warning findings."""
    return [f for f in findings if f.severity in (Severity.ERROR, Severity.WARNING)]


def choose(findings: Sequence[Finding], prefer: Sequence[str] = (), applicable: Optional[Applicability] = None) -> List[Choice]:
    applicable = applicable or _always
    offered: Dict[str, int] = {}
    for finding in findings:
        for rid in {r.id for r in finding.remedies if r.id}:
            offered[rid] = offered.get(rid, 0) + 1
    verdicts: Dict[Tuple[str, str], Optional[str]] = {}

    def why_not(remedy: Remedy) -> Optional[str]:
        key = (remedy.id or remedy.summary, repr(sorted(remedy.action.items())))
        if key not in verdicts:
            verdicts[key] = "a manual step" if remedy.kind == MANUAL.name else applicable(remedy)
        return verdicts[key]

    return [_choose_one(f, prefer, offered, why_not) for f in findings]


def _always(remedy: Remedy) -> Optional[str]:
    return None


def _choose_one(finding: Finding, prefer: Sequence[str], offered: Dict[str, int], why_not: Applicability) -> Choice:
    remedies = list(finding.remedies)
    order = sorted(range(len(remedies)), key=lambda i: (rank(remedies[i]), -offered.get(remedies[i].id, 0), i))
    ranked = [remedies[i] for i in order]
    wanted = [r for key in prefer for r in ranked if prefer_matches(r.id, key)]
    passed: List[Tuple[Remedy, str]] = []
    for remedy in wanted:
        reason = why_not(remedy)
        if reason is None:
            return _made(finding, remedy, remedies, passed, preferred=True)
        passed.append((remedy, reason))
    for remedy in ranked:
        if remedy.kind == MANUAL.name:
            break
        reason = why_not(remedy)
        if reason is None:
            return _made(finding, remedy, remedies, passed)
        if all(remedy is not p for p, _ in passed):
            passed.append((remedy, reason))
    return Choice(finding, None, tuple(remedies), tuple(passed))


def _made(finding: Finding, chosen: Remedy, remedies: List[Remedy], passed: List[Tuple[Remedy, str]], preferred: bool = False) -> Choice:
    others = tuple(r for r in remedies if r is not chosen)
    return Choice(finding, chosen, others, tuple(passed), preferred)


def merge_actions(remedies: Sequence[Remedy]) -> Optional[Remedy]:
    """Remedies of one id chosen for several findings, as one: their `set` and `when` joined
    (cpu-half-kernels sets the precision, library-probes the precision and the weights).
    None when two of them disagree on a value."""
    first = remedies[0]
    merged: Dict[str, Any] = {}
    for remedy in remedies:
        if remedy.kind != first.kind:
            return None
        for key, value in remedy.action.items():
            if not isinstance(value, dict):
                if key in merged and merged[key] != value:
                    return None
                merged[key] = value
                continue
            into = merged.setdefault(key, {})
            for name, item in value.items():
                if name in into and into[name] != item:
                    return None
                into[name] = item
    return dataclasses.replace(first, action=merged)
