"""The data envdoctor passes around: checks, facts, findings, remedies, reports.

Stdlib only, and importable by Python 3.8+: this module is loaded by the worker
inside the *target* interpreter, which may be an old environment.
"""

from __future__ import annotations

import enum
import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from envdoctor.target.intent import Intent
from envdoctor.target.platform.where import TERMINAL, Where

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
    """The status of one check: derived from its findings, or from the worker's fate."""

    OK = "ok"
    WARNING = "warning"
    ERROR = "error"
    CRASHED = "crashed"  # the probe killed the worker (signal, abort, exit)
    TIMEOUT = "timeout"  # the probe ran past its budget
    SKIPPED = "skipped"  # not applicable (e.g. torch does not import)


@dataclass(frozen=True)
class Remedy:
    """One way out, as data: words always, exact commands where a program can act.

    `kind` says who can apply it later: "pip", "config", "env" or "manual"
    (envdoctor.target.remedies.kinds). `action` is the machine-readable intent for
    `envdoctor fix`, in the closed vocabulary of its kind's keys (e.g. {"set":
    {"precision": "fp32"}} or {"uninstall": ["apex"]}); "manual" actions only inform.
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
    """How a failure of this family reads in a log (used by `explain`).

    `message` is a regex over the exception text ("Type: message") with every dtype
    spelled as its scalar type name (Half, Float, BFloat16: envdoctor.pipeline.explain.spelling).
    `frames` are regexes over the traceback's frame paths (forward slashes) that make
    the match stronger, or are needed when `frames_required`; `context` likewise over
    the lines around the error and the log's context lines (torch version, device,
    precision flags, out-of-memory hints). Where two families share a message, the one
    whose frames or context are present wins. A `supporting` signature names no cause of
    its own: its check's probe can reproduce what another check diagnosed (the real
    model code of the installed libraries), so `explain` runs it to confirm.
    `remedies` say what to change, known without probing; the check's findings on the
    live stack add the exact commands. `unless` names what rules the family out when the
    error or the lines around it show it: the trace of another cause that this error only
    follows (a device-side assert before a cuBLAS failure, a plain C symbol that no torch
    build ever exported). `confirmed_by` names live findings ("check-id:code") that confirm
    this reading of the message when another check's probe is the one that can tell (no CUDA
    device here confirms "not compiled with CUDA" read as a machine without CUDA). `across_ranks`:
    the cause lies between a job's processes (a rank that never came, another NCCL on one node), so
    a probe in one process cannot say it is not here; explain says how to confirm it instead.
    `last_only`: read only where it is the last error the log shows, what the run stopped on (a warning that
    many runs print on the way, and that explains a run only where nothing came after it). `in_code`: the cause
    lies in the code that ran (two dtypes it brought together, the operand layout it passed, a model it cast whole
    before GradScaler), which no probe runs: the probe can confirm that this stack fails the same way, not that the
    code did not, so a probe that saw nothing of it leaves the reading undecided rather than refuted.
    """

    code: str
    message: str
    frames: Tuple[str, ...] = ()
    frames_required: bool = False
    cause: str = ""
    context: Tuple[str, ...] = ()
    context_required: bool = False
    supporting: bool = False
    remedies: Tuple[Remedy, ...] = ()
    unless: Tuple[str, ...] = ()
    confirmed_by: Tuple[str, ...] = ()
    across_ranks: bool = False  # a cause between a job's processes: one process cannot reproduce it
    last_only: bool = False  # only as the log's last error
    in_code: bool = False  # a cause in the code that ran: a probe without it decides nothing

    @property
    def witnesses(self) -> Tuple[str, ...]:
        """The checks whose findings confirmed_by names: they are probed (and planned) beside this one's."""
        return tuple(w.split(":", 1)[0] for w in self.confirmed_by)


@dataclass(frozen=True)
class Gpu:
    """A GPU the run found: torch's device, or nvidia-smi's row when torch sees none."""

    name: str  # "NVIDIA A100-SXM4-80GB", "Tesla T4"
    device: Optional[str] = None  # "cuda:0"; None: seen by nvidia-smi only (a CPU torch on a GPU machine)
    capability: Optional[str] = None  # "8.0"
    bf16: Optional[bool] = None  # native bfloat16 as bf16-support measured it; None: not measured

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "device": self.device, "capability": self.capability, "bf16": self.bf16}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> Gpu:
        return cls(str(data.get("name") or "?"), data.get("device"), data.get("capability"), data.get("bf16"))


@dataclass(frozen=True)
class Target:
    """The interpreter and machine one run judges: what every rule may know besides its own
    check's facts, and what the plan, verification, explain and the renderers read.

    Built once per run by envdoctor.pipeline.check.target from the worker's hello, its torch
    import and the probes' GPU facts, before any rule judges; stored in the Report (its
    "environment" holds the same values as JSON, and `from_report` reads them back)."""

    python: str = "python"  # the target interpreter's sys.executable: what commands name (its own pip)
    interpreter: Optional[str] = None  # the path envdoctor started the worker with (--python, resolved)
    python_version: Optional[str] = None  # "3.11.7"
    implementation: Optional[str] = None
    platform: Optional[str] = None  # platform.platform(): "Linux-6.1.0-x86_64-with-glibc2.36"
    sys_platform: Optional[str] = None  # sys.platform: "linux", "win32", "darwin"
    machine: Optional[str] = None  # "x86_64"
    prefix: Optional[str] = None  # sys.prefix of the target
    installer: str = "pip"  # what changes its packages: "pip", or "uv" in an environment uv made without pip
    externally_managed: bool = False  # PEP 668: the system's package manager owns it; pip refuses to install
    torch: Optional[str] = None  # torch.__version__, None when it does not import
    # torch's installed distribution version, what pip knows: "2.0.1" where torch.__version__ says
    # "2.0.1+cu117" (PyPI's CUDA wheels); a pin must name this one or pip cannot resolve it
    torch_distribution: Optional[str] = None
    torch_import: Dict[str, Any] = field(default_factory=dict)  # {"ok", "error_type", "error"}
    cuda_build: Optional[str] = None  # the CUDA torch was built for ("12.8"), None for a CPU build
    devices: Tuple[str, ...] = ()  # what torch can use: "cpu", "cuda:0", "mps"
    gpus: Tuple[Gpu, ...] = ()
    # the NVIDIA kernel driver loaded here ("580.95.05", /proc/driver/nvidia/version): an NVIDIA GPU
    # machine even where no torch and no nvidia-smi says which GPU
    nvidia_driver: Optional[str] = None
    intent: Optional[Intent] = None  # what the training config asks for (check --config), with where it says so
    rank: Optional[int] = None  # the distributed rank (check --distributed)
    where: Where = field(default_factory=lambda: Where(TERMINAL))  # Colab, Kaggle, a notebook, a terminal: menu steps follow it

    @property
    def torch_ok(self) -> bool:
        return bool(self.torch_import.get("ok")) if self.torch_import else self.torch is not None

    @property
    def bf16_gpu(self) -> bool:
        """A GPU with native bf16 here: where a config's "auto" precision means bf16."""
        return any(gpu.bf16 for gpu in self.gpus)

    @property
    def nvidia(self) -> bool:
        """An NVIDIA GPU on this machine, whether or not this torch can use it."""
        return bool(self.gpus) or bool(self.nvidia_driver)

    @property
    def half(self) -> str:
        """The half precision a run here falls back to (from fp8 or a quantized base): bf16 where
        each GPU has it natively, or on the CPU (whose kernels fix checks again), else fp16."""
        return "fp16" if self.gpus and not all(gpu.bf16 for gpu in self.gpus) else "bf16"

    @property
    def os(self) -> str:
        """"linux", "win32", "darwin": sys.platform, or derived from platform.platform()."""
        if self.sys_platform:
            return self.sys_platform
        head = (self.platform or "linux").split("-")[0].lower()
        return {"windows": "win32", "macos": "darwin"}.get(head, head)

    def to_dict(self) -> Dict[str, Any]:
        """The report environment's keys for these values."""
        return {
            "executable": self.python, "target_python": self.interpreter, "python": self.python_version,
            "implementation": self.implementation, "platform": self.platform, "sys_platform": self.sys_platform,
            "machine": self.machine, "prefix": self.prefix, "installer": self.installer,
            "externally_managed": self.externally_managed, "torch": self.torch, "torch_distribution": self.torch_distribution,
            "torch_import": dict(self.torch_import),
            "cuda_build": self.cuda_build, "devices": list(self.devices), "gpus": [g.to_dict() for g in self.gpus],
            "nvidia_driver": self.nvidia_driver,
            "intent": self.intent.to_dict() if self.intent else None, "rank": self.rank, "where": self.where.to_dict(),
        }

    @classmethod
    def from_report(cls, environment: Dict[str, Any]) -> Target:
        """From a report's "environment" object (a live run or a recorded fixture)."""
        torch_import = dict(environment.get("torch_import") or {})
        if not torch_import and "torch" in environment:
            torch_import = {"ok": environment.get("torch") is not None, "version": environment.get("torch")}
        return cls(
            python=environment.get("executable") or environment.get("target_python") or "python",
            interpreter=environment.get("target_python"),
            python_version=environment.get("python"),
            implementation=environment.get("implementation"),
            platform=environment.get("platform"),
            sys_platform=environment.get("sys_platform"),
            machine=environment.get("machine"),
            prefix=environment.get("prefix"),
            installer=environment.get("installer") or "pip",
            externally_managed=bool(environment.get("externally_managed")),
            torch=environment.get("torch"),
            torch_distribution=environment.get("torch_distribution"),
            torch_import=torch_import,
            cuda_build=environment.get("cuda_build"),
            devices=tuple(d for d in environment.get("devices") or () if isinstance(d, str)),
            gpus=tuple(Gpu.from_dict(g) for g in environment.get("gpus") or () if isinstance(g, dict)),
            nvidia_driver=environment.get("nvidia_driver") or (environment.get("system") or {}).get("nvidia_driver"),
            intent=Intent.from_dict(environment.get("intent")),
            rank=environment.get("rank"),
            where=Where.from_dict(environment.get("where")),
        )


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
# diagnose(facts, env); a plug-in's one-argument diagnose(facts) is still accepted.
Diagnose = Callable[..., List[Finding]]
Summarize = Callable[[Dict[str, Any]], str]


def _no_summary(facts: Dict[str, Any]) -> str:
    return ""


@dataclass(frozen=True)
class Check:
    """One failure family: a probe that measures, rules that judge, signatures for `explain`.

    `probe(torch, ctx)` runs in the worker and returns JSON-able facts.
    `diagnose(facts, env)` and `summarize(facts)` are pure functions run in the parent;
    call `judge(facts, env)`, which also accepts plug-ins written as `diagnose(facts)`.
    """

    id: str
    title: str
    probe: Probe
    diagnose: Diagnose
    summarize: Summarize = _no_summary
    requires_torch: bool = True
    timeout_s: Optional[float] = None  # the default budget when the user gives no --timeout and more is expected
    order: int = 100  # cheap and foundational checks first, slow GPU ones last
    # Checks of another group run in a worker of their own, at the same time as the main
    # ones: the training libraries' imports (seconds) overlap torch's micro-ops.
    group: str = "main"
    # Distributions without which a worker of its own is not worth a second torch import:
    # when the target has none of them, the check runs in the main worker (and finds nothing).
    needs: Tuple[str, ...] = ()
    quick: bool = True  # False: `check --quick` skips it (the training libraries' imports cost seconds)
    # Its probe imports the training libraries (transformers, diffusers, peft) to run their own code: only where the
    # run asks for them (a config, --libraries, the check named by --only; envdoctor.pipeline.check.request)
    imports_libraries: bool = False
    # Its probe reads the training config's intent (which setups it runs): the configs as a fix plan leaves
    # them are probed again; any other check's facts are only judged again with the new intent.
    probe_reads_intent: bool = False
    signatures: Tuple[Signature, ...] = ()

    def judge(self, facts: Dict[str, Any], env: Target) -> List[Finding]:
        if _positional_arity(self.diagnose) >= 2:
            return list(self.diagnose(facts, env))
        return list(self.diagnose(facts))

    def validate(self) -> None:
        if not _ID_RE.match(self.id):
            raise ValueError("check id %r is not kebab-case" % (self.id,))
        if not callable(self.probe) or not callable(self.diagnose):
            raise ValueError("check %r: probe and diagnose must be callable" % (self.id,))


def _positional_arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: assume the current form
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


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
    """Every check's result and the environment they ran in. In a notebook a report shows itself:
    envdoctor.render.notebook gives the class its display when it loads (the model imports no renderer)."""

    environment: Dict[str, Any]  # the JSON "environment": the run's Target (Target.to_dict) and the system facts
    checks: List[CheckResult]
    target: Target = field(init=False, repr=False)  # read once from `environment`, which the run's Target wrote

    def __post_init__(self) -> None:
        self.target = Target.from_report(self.environment)

    @property
    def findings(self) -> List[Finding]:
        return [f for c in self.checks for f in c.findings]

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity is Severity.ERROR for f in self.findings) else 0

    def to_json(self, indent: Optional[int] = 2) -> str:
        import json

        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

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
