"""The data envdoctor passes around: checks, facts, findings, remedies, reports.

Stdlib only, and importable by Python 3.8+: this module is loaded by the worker
inside the *target* interpreter, which may be an old environment.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

SCHEMA = "envdoctor/1"

_ID_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class Severity(str, enum.Enum):
    OK = "ok"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.OK: 0, Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3}


class Status(str, enum.Enum):
    """Outcome of one check: derived from its findings, or from the worker's fate."""

    OK = "ok"
    WARNING = "warning"
    ERROR = "error"
    CRASHED = "crashed"  # the probe killed the worker (signal, abort, exit)
    TIMEOUT = "timeout"  # the probe ran past its budget
    SKIPPED = "skipped"  # not applicable (e.g. torch does not import)


# What `envdoctor fix` will understand, per remedy kind: verbs and their modifiers.
ACTION_KEYS: Dict[str, Tuple[str, ...]] = {
    # install/upgrade: requirement strings; uninstall: distribution names
    "pip": ("install", "upgrade", "uninstall", "index_url", "force_reinstall", "no_deps", "no_build_isolation", "build_env"),
    # set: {setting: value} on the training config's intent; when: the values it applies to; reduce: settings to lower
    "config": ("set", "when", "reduce"),
    "env": ("set_env", "unset_env"),
    "manual": ("build_from_source", "driver_min"),
}


@dataclass(frozen=True)
class Remedy:
    """One way out, as data: words always, exact commands where a program can act.

    `kind` says who can apply it later: "pip", "config", "env" or "manual".
    `action` is the machine-readable intent for `envdoctor fix`, in the closed
    vocabulary of ACTION_KEYS for its kind (e.g. {"set": {"precision": "fp32"}}
    or {"uninstall": ["apex"]}); "manual" actions only inform.
    """

    summary: str
    kind: str = "manual"
    commands: Tuple[str, ...] = ()
    id: str = ""
    action: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "summary": self.summary,
            "commands": list(self.commands),
            "action": dict(self.action),
        }


@dataclass(frozen=True)
class Finding:
    """A judged fact: what is wrong (or notable), the evidence, and the remedies."""

    check: str
    code: str
    severity: Severity
    title: str
    evidence: Tuple[str, ...] = ()
    remedies: Tuple[Remedy, ...] = ()
    subject: Dict[str, Any] = field(default_factory=dict)  # device / dtype / op / package

    def to_dict(self) -> Dict[str, Any]:
        return {
            "check": self.check,
            "code": self.code,
            "severity": self.severity.value,
            "title": self.title,
            "evidence": list(self.evidence),
            "remedies": [r.to_dict() for r in self.remedies],
            "subject": dict(self.subject),
        }


@dataclass(frozen=True)
class Signature:
    """How a failure of this family reads in a traceback (used by `explain`).

    `message` is a regex over the exception text; `frames` are regexes over
    frame file paths that, when present, make the match stronger (or are
    required when `frames_required`).
    """

    code: str
    message: str
    frames: Tuple[str, ...] = ()
    frames_required: bool = False
    cause: str = ""


@dataclass
class ProbeContext:
    """What a probe is told by the runner: which devices and options apply."""

    devices: Optional[List[str]] = None  # None: every device the worker finds
    options: Dict[str, Any] = field(default_factory=dict)

    def select_devices(self, torch: Any) -> List[str]:
        """Device strings to probe: the requested ones, or every available device."""
        found = available_devices(torch)
        if self.devices is None:
            return found
        wanted: List[str] = []
        for spec in self.devices:
            if spec == "cuda":
                wanted.extend(d for d in found if d.startswith("cuda"))
            elif spec in found:
                wanted.append(spec)
        return wanted

    def to_dict(self) -> Dict[str, Any]:
        return {"devices": self.devices, "options": dict(self.options)}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> ProbeContext:
        return cls(devices=data.get("devices"), options=dict(data.get("options") or {}))


def available_devices(torch: Any) -> List[str]:
    """cpu, then cuda:N, then mps, as far as this torch can see them."""
    devices = ["cpu"]
    try:
        if torch.cuda.is_available():
            devices.extend("cuda:%d" % i for i in range(torch.cuda.device_count()))
    except Exception:  # noqa: BLE001 - a broken CUDA init is reported by the checks that probe it
        pass
    try:
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            devices.append("mps")
    except Exception:  # noqa: BLE001
        pass
    return devices


Probe = Callable[[Any, ProbeContext], Dict[str, Any]]
Diagnose = Callable[[Dict[str, Any]], List[Finding]]
Summarize = Callable[[Dict[str, Any]], str]


def _no_summary(facts: Dict[str, Any]) -> str:
    return ""


@dataclass(frozen=True)
class Check:
    """One failure family: a probe that measures, rules that judge, signatures for `explain`.

    `probe(torch, ctx)` runs in the worker and returns JSON-able facts.
    `diagnose(facts)` and `summarize(facts)` are pure functions run in the parent.
    """

    id: str
    title: str
    probe: Probe
    diagnose: Diagnose
    summarize: Summarize = _no_summary
    requires_torch: bool = True
    timeout_s: Optional[float] = None  # overrides --timeout when larger work is expected
    order: int = 100  # cheap and foundational checks first, slow GPU ones last
    signatures: Tuple[Signature, ...] = ()

    def validate(self) -> None:
        if not _ID_RE.match(self.id):
            raise ValueError("check id %r is not kebab-case" % (self.id,))
        if not callable(self.probe) or not callable(self.diagnose):
            raise ValueError("check %r: probe and diagnose must be callable" % (self.id,))


def op_fact(
    op: str,
    device: str,
    dtype: str,
    ok: bool,
    error: Optional[str] = None,
    max_rel_err: Optional[float] = None,
    **extra: Any,
) -> Dict[str, Any]:
    """One micro-op outcome, in the shape every check records in facts["ops"]."""
    fact: Dict[str, Any] = {
        "op": op,
        "device": device,
        "dtype": dtype,
        "ok": ok,
        "error": error,
        "max_rel_err": max_rel_err,
    }
    fact.update(extra)
    return fact


@dataclass
class CheckResult:
    id: str
    title: str
    status: Status
    facts: Dict[str, Any] = field(default_factory=dict)
    findings: List[Finding] = field(default_factory=list)
    summary: str = ""
    duration_s: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status.value,
            "summary": self.summary,
            "duration_s": self.duration_s,
            "facts": self.facts,
            "findings": [f.to_dict() for f in self.findings],
        }


def status_from_findings(findings: Sequence[Finding]) -> Status:
    worst = max((f.severity.rank for f in findings), default=0)
    if worst >= Severity.ERROR.rank:
        return Status.ERROR
    if worst >= Severity.WARNING.rank:
        return Status.WARNING
    return Status.OK


@dataclass
class Report:
    environment: Dict[str, Any]
    checks: List[CheckResult]

    @property
    def findings(self) -> List[Finding]:
        return [f for c in self.checks for f in c.findings]

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity is Severity.ERROR for f in self.findings) else 0

    def summary(self) -> Dict[str, Any]:
        statuses = {s.value: 0 for s in Status}
        for c in self.checks:
            statuses[c.status.value] += 1
        severities = {s.value: 0 for s in Severity if s is not Severity.OK}
        for f in self.findings:
            if f.severity is not Severity.OK:
                severities[f.severity.value] += 1
        return {
            "checks": len(self.checks),
            "status": statuses,
            "findings": severities,
            "exit_code": self.exit_code,
        }

    def to_dict(self) -> Dict[str, Any]:
        return {
            "schema": SCHEMA,
            "environment": self.environment,
            "checks": [c.to_dict() for c in self.checks],
            "summary": self.summary(),
        }


def remedy_from_dict(data: Dict[str, Any]) -> Remedy:
    return Remedy(
        summary=data["summary"],
        kind=data.get("kind", "manual"),
        commands=tuple(data.get("commands") or ()),
        id=data.get("id", ""),
        action=dict(data.get("action") or {}),
    )


def finding_from_dict(data: Dict[str, Any]) -> Finding:
    return Finding(
        check=data["check"],
        code=data["code"],
        severity=Severity(data["severity"]),
        title=data["title"],
        evidence=tuple(data.get("evidence") or ()),
        remedies=tuple(remedy_from_dict(r) for r in data.get("remedies") or ()),
        subject=dict(data.get("subject") or {}),
    )


def report_from_dict(data: Dict[str, Any]) -> Report:
    """Rebuild a Report from its JSON form (fixtures, redaction, notebooks)."""
    checks = [
        CheckResult(
            id=c["id"],
            title=c.get("title", c["id"]),
            status=Status(c["status"]),
            facts=c.get("facts") or {},
            findings=[finding_from_dict(f) for f in c.get("findings") or ()],
            summary=c.get("summary", ""),
            duration_s=c.get("duration_s"),
        )
        for c in data.get("checks") or ()
    ]
    return Report(environment=dict(data.get("environment") or {}), checks=checks)
