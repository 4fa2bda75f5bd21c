"""Does this environment reproduce what the log shows? Pure: a diagnosis set beside the
live report of its check's probe (and of the supporting probes that run the real model
code).

Confirmed when a probe here fails with the same message (the signature matches the
probe's own error) or the same operation fails in the same dtypes, or when the check
finds the same cause here (the impostor apex, a missing extension). Not reproduced when
the same operation, dtype and device runs here ("here torch 2.13.0 runs layer_norm
float16 on cpu"): the log came from another machine or another torch. Unknown (None)
when the probe could not run, the failure needs a device this machine lacks, or its cause lies in
the code that ran and no probe ran that code (Signature.in_code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from envdoctor.pipeline.explain.match import Diagnosis
from envdoctor.pipeline.explain.spelling import canonical
from envdoctor.target.model import CheckResult, Finding, Remedy, Report, Severity, Status


@dataclass(frozen=True)
class Verdict:
    confirmed: Optional[bool]
    text: str
    remedies: Tuple[Remedy, ...] = ()


def _op_facts(facts: Any) -> Iterator[Dict[str, Any]]:
    """Every micro-op outcome recorded anywhere in a check's facts ({"op", "ok", ...})."""
    if isinstance(facts, dict):
        if "ok" in facts and ("op" in facts or "error" in facts):
            yield facts
        for value in facts.values():
            yield from _op_facts(value)
    elif isinstance(facts, list):
        for value in facts:
            yield from _op_facts(value)


def describe(fact: Dict[str, Any]) -> str:
    """'layer_norm float16 on cpu', 'linear input fp32 × weight fp16 on cpu', 'dora (float16) on a
    float8_e4m3fn base, in torch, on cpu'."""
    device = " on %s" % fact["device"] if fact.get("device") else ""
    if fact.get("adapter"):
        return "%s (%s) on a %s base, in %s,%s" % (fact["adapter"], fact.get("adapter_dtype"), fact.get("base_dtype"),
                                                   fact.get("library") or "torch", device)
    what = fact.get("mix") or fact.get("dtype") or ""
    name = fact.get("op") or fact.get("name") or fact.get("model") or "the probe"
    return " ".join(p for p in (str(name), str(what)) if p) + device


def _dtypes_of(fact: Dict[str, Any]) -> List[str]:
    names = [fact.get(k) for k in ("dtype", "weight_dtype", "bias_dtype", "other_dtype", "to_dtype")]
    return [str(n) for n in names if n]


# Ops whose failure is the library's whatever the dtype (cuFFT without kernels for the GPU fails every transform):
# the same op on the same device is as close as a log without a dtype can come
_ANY_DTYPE_OPS = frozenset({"fft"})


def _related(fact: Dict[str, Any], diagnosis: Diagnosis) -> int:
    """How closely a probe's op is the log's: 2 same op and dtypes, 1 same op, 0 other."""
    inv = diagnosis.involved
    if not inv.op or fact.get("op") != inv.op:
        return 0
    if inv.device and fact.get("device") and not str(fact["device"]).startswith(inv.device):
        return 0
    if not inv.dtypes and inv.op in _ANY_DTYPE_OPS:
        return 2
    return 2 if set(inv.dtypes) <= set(_dtypes_of(fact)) and inv.dtypes else 1


def _live_remedies(result: Optional[CheckResult], code: str, only_code: bool = False) -> Tuple[Remedy, ...]:
    """The live findings' remedies, this code's first; `only_code`: this code's alone (where another check's
    finding witnessed the reading, the own check's other warnings are another matter)."""
    if result is None:
        return ()
    findings = [f for f in result.findings if f.severity.rank >= Severity.WARNING.rank and (f.code == code or not only_code)]
    findings.sort(key=lambda f: f.code != code)
    return tuple(r for f in findings for r in f.remedies)


def judge(diagnosis: Diagnosis, results: Sequence[CheckResult], environment: Dict[str, Any],
          supporting: Sequence[str] = ()) -> Verdict:
    """`results`: the probed checks' results; the diagnosis's own check and the `supporting`
    ones (the real model code) may confirm it, another diagnosis's probe may not."""
    own = next((r for r in results if r.id == diagnosis.check), None)
    torch = environment.get("torch") or "no torch"
    witness = _witness(diagnosis, results)
    if witness is not None:  # the witness's remedies are the exact ones for this machine (cuda-compat's wheel)
        return Verdict(True, "confirmed here: %s" % witness.title,
                       tuple(witness.remedies) + _live_remedies(own, diagnosis.code, only_code=True))
    live = _live_remedies(own, diagnosis.code)
    if own is None or own.status in (Status.SKIPPED, Status.CRASHED, Status.TIMEOUT):
        why = (own.summary or own.status.value) if own else "not run"
        return Verdict(None, "could not be probed here (%s)" % why)
    pattern = re.compile(diagnosis.signature.message)
    failing: List[Tuple[int, int, Dict[str, Any]]] = []
    running: List[Dict[str, Any]] = []
    for result in (r for r in results if r.id == diagnosis.check or r.id in supporting):
        for fact in _op_facts(result.facts):
            related = _related(fact, diagnosis)
            if fact.get("ok") is False and isinstance(fact.get("error"), str):
                same = bool(pattern.search(canonical(fact["error"])))
                if same or related:
                    failing.append((int(same), related, fact))
            elif fact.get("ok") is True and related == 2:
                running.append(fact)
    if failing:
        alike, _, fact = max(failing, key=lambda item: (item[0], item[1]))
        how = "with the same message" if alike else "too"
        return Verdict(True, "confirmed here (torch %s): %s fails %s: %s" % (torch, describe(fact), how, fact["error"]), live)
    found = [f for f in own.findings if f.code == diagnosis.code and f.severity.rank >= Severity.WARNING.rank]
    if found:
        return Verdict(True, "confirmed here: %s" % found[0].title, live)
    if diagnosis.signature.across_ranks:
        return Verdict(None, "one process cannot reproduce it: it lies between the job's ranks (`check --distributed` under "
                             "the launcher confirms it)%s" % ("; this machine: " + own.summary if own.summary else ""), live)
    if running:
        return Verdict(False, "this environment does not reproduce it: here torch %s runs %s; the log came from another "
                              "machine or another torch" % (torch, describe(running[0])), live)
    device = diagnosis.involved.device
    if device in _ACCELERATORS and not any(str(d).startswith(device) for d in environment.get("devices") or ()):
        return Verdict(None, "cannot be reproduced here: this machine has no %s%s" % (
            _ACCELERATORS[device], " (%s)" % own.summary if own.summary else ""), live)
    seen = "; ".join(_seen(own, diagnosis, results))
    if diagnosis.signature.in_code:  # the probes ran none of the code that failed: nothing here says it did not
        return Verdict(None, "not decided here: the cause lies in the code that ran, which the probes do not run%s"
                             % ("; they saw " + seen if seen else ""), live)
    return Verdict(False, "this environment does not reproduce it%s" % (": " + seen if seen else ""), live)


def _seen(own: CheckResult, diagnosis: Diagnosis, results: Sequence[CheckResult]) -> List[str]:
    """What the probes saw: the own check's summary, and each witness's where another check's probe is the one that can
    tell (DataLoader's shared memory is read by distributed's /dev/shm)."""
    witnesses = [r for r in results if r.id in diagnosis.signature.witnesses and r.id != own.id and r.summary]
    return ([own.summary] if own.summary else []) + ["%s: %s" % (r.id, r.summary) for r in witnesses]


# The devices a log can name that a machine may lack, as a sentence names them
_ACCELERATORS = {"cuda": "CUDA GPU", "xpu": "Intel GPU (XPU)", "mps": "Apple GPU (MPS)"}


def _witness(diagnosis: Diagnosis, results: Sequence[CheckResult]) -> Optional[Finding]:
    """The live finding another check made that confirms this reading (Signature.confirmed_by)."""
    wanted = set(diagnosis.signature.confirmed_by)
    return next((f for r in results for f in r.findings if "%s:%s" % (r.id, f.code) in wanted), None)


_RANK = {True: 0, None: 1, False: 2}


def apply_verdicts(diagnoses: List[Diagnosis], report: Report, supporting: Sequence[str] = ()) -> None:
    """Judge each diagnosis live; where one error was read two ways (two families matched the same
    message), the reading this machine confirms goes first: the probe decides, not the wording."""
    for diagnosis in diagnoses:
        verdict = judge(diagnosis, report.checks, report.environment, supporting)
        diagnosis.confirmed, diagnosis.confirmation = verdict.confirmed, verdict.text
        diagnosis.remedies = _merged(verdict.remedies, diagnosis.remedies)
    lines = [d.error.line for d in diagnoses]
    for line in set(lines):
        places = [i for i, at in enumerate(lines) if at == line]
        readings = sorted((diagnoses[i] for i in places), key=lambda d: _RANK[d.confirmed])
        for i, diagnosis in zip(places, readings):
            diagnoses[i] = diagnosis


def _merged(first: Sequence[Remedy], then: Sequence[Remedy]) -> List[Remedy]:
    seen: List[Remedy] = []
    for remedy in [*first, *then]:
        if not any((remedy.id and remedy.id == s.id) or remedy.summary == s.summary for s in seen):
            seen.append(remedy)
    return seen
