"""Rules: what the adapter runs on a float8 (or quantized) base mean for this user.

A failing DoRA/LoRA on a float8 base is an ERROR that names the config lines when the
training config asks for exactly that (DoRA on, a trained part's weights in fp8), and an
INFO note otherwise: nobody asked, but this stack cannot do it. Remedies are offered only
where a control run measured that they work (plain LoRA on the same base, DoRA on a bf16
base, upcasting before the DoRA math).

Pure functions, run in the parent; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.target.intent import QUANTIZED, Intent, Setting
from envdoctor.target.model import Finding, Remedy, Severity, Target
from envdoctor.target.probekit.text import dedupe
from envdoctor.target.remedies.actions import config_remedy

ID = "dora-fp8"
Run = Dict[str, Any]

# Where a run stopped, in words: peft's phases, then the plain-torch stages.
PHASES = {
    "build": "while building the base layer",
    "inject": "while adding the adapter",
    "forward": "in the forward",
    "backward": "in the backward",
    "merge": "at W + s·(B@A)",
    "norm": "at the weight norm",
    "rescale": "at m·(W'/‖W'‖)",
    "linear": "at the adapted linear",
    "base": "at the base linear",
    "adapter": "at the adapter's B(A(x))",
}
ONETRAINER_UPCAST_FIX = "2925dc8f"  # github.com/Nerogar/OneTrainer: "add support for DoRA training on quantized base models"


@dataclass(frozen=True)
class Asked:
    """What the config asks of the adapter family: the settings that say so."""

    dora: Optional[Setting]  # the effective `dora` setting, when it is true
    bases: Tuple[Setting, ...]  # weight_dtype settings of trained parts that are float8 or quantized
    adapter: Optional[Setting]

    def float8(self) -> Tuple[Setting, ...]:
        return tuple(s for s in self.bases if s.value == "fp8")

    def full(self) -> bool:
        return self.adapter is not None and self.adapter.value == "full"


def asked(intent: Optional[Intent]) -> Optional[Asked]:
    if intent is None:
        return None
    trained = intent.trained_parts()
    bases = tuple(s for s in intent.asks("weight_dtype", *QUANTIZED) if trained is None or s.part in trained)
    dora = intent.asks("dora", True)
    return Asked(dora[0] if dora else None, bases, intent.effective("adapter"))


# ---------------------------------------------------------------- runs


def _float8(run: Run) -> bool:
    return str(run.get("base_dtype", "")).startswith("float8")


def _library(run: Run) -> str:
    return "%s %s" % (run.get("library"), run.get("version"))


def _in(run: Run) -> str:
    """'peft 0.21.2', or for the plain-torch runs what they are."""
    if run.get("library") == "peft":
        return _library(run)
    return "%s (plain-torch DoRA math)" % _library(run)  # why not peft: the summary says (absent, --quick, not asked)


def _label(run: Run) -> str:
    adapter = "DoRA" if run.get("adapter") == "dora" else "LoRA"
    if run.get("upcast"):
        adapter += " upcasting the base first"
    return "%s %s, %s base, %s adapter, %s" % (_library(run), adapter, run.get("base_dtype"), run.get("adapter_dtype"), run.get("device"))


def run_line(run: Run) -> str:
    """One evidence line: the run, and its exact outcome."""
    if run.get("ok"):
        done = "forward and backward" if run.get("training") else "forward"
        return "%s: passes (%s)" % (_label(run), done)
    where = [PHASES.get(str(run.get("phase")), "in %s" % run.get("phase"))]
    if run.get("frame"):
        where.append("in %s" % run["frame"])
    return "%s: %s: %s (%s)" % (_label(run), run.get("error_type"), run.get("error"), ", ".join(where))


def _outcome(runs: Sequence[Run]) -> str:
    if not runs:
        return "not run"
    good = sum(1 for r in runs if r.get("ok"))
    return "ok" if good == len(runs) else "fails" if not good else "%d/%d ok" % (good, len(runs))


def _passed(runs: Sequence[Run]) -> bool:
    return bool(runs) and all(r.get("ok") for r in runs)


# ---------------------------------------------------------------- remedies


def _dora_off(dora: Optional[Setting]) -> Remedy:
    where = " (%s)" % dora.where() if dora else ""
    return config_remedy(
        "Turn DoRA off%s and train plain LoRA: measured, LoRA on the same float8 base passes "
        "(OneTrainer `lora_decompose: false`, peft `use_dora=False`)" % where,
        "dora-off", {"dora": False})


def _base_bf16(bases: Sequence[Setting], adapter: str) -> Remedy:
    where = " (%s)" % ", ".join(s.where() for s in bases) if bases else ""
    return config_remedy(
        "Load the trained part's base weights in bf16 instead of fp8%s: measured, %s on a bf16 base passes "
        "(OneTrainer `weight_dtype: BFLOAT_16`)" % (where, adapter),
        # only the trained parts' float8 weights: a frozen part may stay in fp8
        "base-bf16", {"weight_dtype": "bf16"}, when={"weight_dtype": "fp8"}, parts=[s.part for s in bases if s.part])


UPCAST = Remedy(
    "In your own DoRA code, cast the float8 base weight to the adapter's dtype before W + s·(B@A) (what OneTrainer "
    "does since commit %s): measured, that passes on this stack" % ONETRAINER_UPCAST_FIX,
    id="upcast-fp8")


# ---------------------------------------------------------------- findings


def _dora_finding(runs: List[Run], ask: Optional[Asked]) -> Optional[Finding]:
    dora = [r for r in runs if r.get("adapter") == "dora" and _float8(r) and not r.get("upcast")]
    failed = [r for r in dora if not r.get("ok")]
    if not failed:
        return None
    lora = [r for r in runs if r.get("adapter") == "lora" and _float8(r)]
    control = [r for r in runs if r.get("adapter") == "dora" and r.get("base_dtype") == "bfloat16"]
    upcast = [r for r in runs if r.get("upcast")]
    is_asked = ask is not None and ask.dora is not None and bool(ask.float8())
    library = _in(failed[0])
    devices = dedupe(str(r.get("device")) for r in failed)
    if is_asked and ask is not None and ask.dora is not None:
        title = "DoRA on float8 base weights fails in %s: %s with %s" % (
            library, ask.dora.where(), ", ".join(s.where() for s in ask.float8()))
    else:
        title = "DoRA on float8 base weights fails in %s on %s (no config asks for it; a run that does will fail)" % (
            library, ", ".join(devices))
    evidence = [run_line(r) for r in failed]
    evidence += [run_line(r) for r in lora + control + upcast]
    remedies: List[Remedy] = []
    if _passed(lora):
        remedies.append(_dora_off(ask.dora if ask else None))
    if _passed(control):
        remedies.append(_base_bf16(ask.float8() if ask else (), "DoRA"))
    if _passed(upcast):
        remedies.append(UPCAST)
    subject = {"adapter": "dora", "base_dtype": failed[0].get("base_dtype"), "library": failed[0].get("library"),
               "version": failed[0].get("version"), "devices": devices, "asked": is_asked,
               "error_type": failed[0].get("error_type"), "frame": failed[0].get("frame")}
    return Finding(ID, "dora-float8-base", Severity.ERROR if is_asked else Severity.INFO, title,
                   tuple(dedupe(evidence)), tuple(remedies), subject)


def _lora_finding(runs: List[Run], ask: Optional[Asked]) -> Optional[Finding]:
    failed = [r for r in runs if r.get("adapter") == "lora" and _float8(r) and not r.get("ok")]
    if not failed:
        return None
    control = [r for r in runs if r.get("adapter") == "lora" and r.get("base_dtype") == "bfloat16"]
    is_asked = ask is not None and ask.dora is None and not ask.full() and bool(ask.float8())
    library = _in(failed[0])
    if is_asked and ask is not None:
        title = "LoRA on float8 base weights fails in %s: %s" % (library, ", ".join(s.where() for s in ask.float8()))
    else:
        title = "LoRA on float8 base weights fails in %s on %s" % (library, ", ".join(dedupe(str(r.get("device")) for r in failed)))
    remedies = [_base_bf16(ask.float8() if ask else (), "LoRA")] if _passed(control) else []
    subject = {"adapter": "lora", "base_dtype": failed[0].get("base_dtype"), "library": failed[0].get("library"),
               "version": failed[0].get("version"), "asked": is_asked}
    return Finding(ID, "lora-float8-base", Severity.ERROR if is_asked else Severity.INFO, title,
                   tuple(run_line(r) for r in failed + control), tuple(remedies), subject)


def _other_failures(runs: List[Run], ask: Optional[Asked]) -> List[Finding]:
    """Adapters failing on a bf16/fp16/fp32 base: not the float8 family, but the run that the
    config asks for (or a control that a remedy relies on) does not work here."""
    findings = []
    for run in runs:
        if _float8(run) or run.get("ok"):
            continue
        is_asked = ask is not None and run.get("role") == "asked"
        adapter = "DoRA" if run.get("adapter") == "dora" else "LoRA"
        title = "%s on a %s base with a %s adapter fails in %s on %s" % (
            adapter, run.get("base_dtype"), run.get("adapter_dtype"), _library(run), run.get("device"))
        # outside the float8 family: the kernels' own checks (cpu-half-kernels, library-probes)
        # carry the error and its remedies; here it is the adapter's view of the same failure
        findings.append(Finding(ID, "adapter-fails", Severity.WARNING if is_asked else Severity.INFO, title,
                                (run_line(run),), (), {k: run.get(k) for k in ("adapter", "base_dtype", "adapter_dtype", "device")}))
    return findings


def _not_probed(facts: Dict[str, Any], intent: Optional[Intent]) -> Optional[Finding]:
    items = facts.get("not_probed") or []
    if not items:
        return None
    lines = []
    for item in items:
        what = item.get("base") or item.get("device") or item.get("adapter")
        setting = None
        if intent is not None and item.get("part"):
            setting = intent.effective("weight_dtype", item["part"])
        elif intent is not None and item.get("device"):
            setting = intent.effective("device")
        where = " (%s)" % setting.where() if setting else ""
        lines.append("%s%s: %s" % (what, where, item.get("reason")))
    return Finding(ID, "not-probed", Severity.INFO, "not probed here: %s" % ", ".join(
        dedupe(str(i.get("base") or i.get("device") or i.get("adapter")) for i in items)), tuple(lines), (), {})


def _peft_import(facts: Dict[str, Any]) -> Optional[Finding]:
    failed = [f for f in facts.get("imports") or () if not f.get("ok")]
    if not failed:
        return None
    fact = failed[0]
    return Finding(ID, "peft-import-fails", Severity.INFO,
                   "peft %s does not import: the adapters were probed in plain torch instead" % (facts.get("peft") or ""),
                   ("import peft: %s: %s" % (fact.get("error_type"), fact.get("error")),), (), {"package": "peft"})


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    intent = env.intent
    ask = asked(intent)
    runs = list(facts.get("runs") or ())
    found = [_peft_import(facts), _dora_finding(runs, ask), _lora_finding(runs, ask)]
    findings = [f for f in found if f is not None]
    findings += _other_failures(runs, ask)
    note = _not_probed(facts, intent)
    if note is not None:
        findings.append(note)
    return findings


def _why_torch_only(facts: Dict[str, Any]) -> str:
    if facts.get("quick"):
        return "--quick"
    if facts.get("peft") and facts.get("libraries") is False:
        return "peft %s not imported: no config asks for an adapter; --libraries runs it" % facts["peft"]
    return "no peft"


def summarize(facts: Dict[str, Any]) -> str:
    runs = list(facts.get("runs") or ())
    if not runs:
        return "no float8 dtypes in this torch" if not facts.get("float8") else "nothing to probe"
    head = "peft %s" % facts.get("peft") if facts.get("library") == "peft" else "plain-torch DoRA math (%s)" % _why_torch_only(facts)
    parts = [head]
    groups: Dict[str, List[Run]] = {}
    for run in runs:
        base = "float8" if _float8(run) else str(run.get("base_dtype"))
        adapter = "DoRA" if run.get("adapter") == "dora" else "LoRA"
        key = "%s on %s%s" % (adapter, base, " upcast first" if run.get("upcast") else "")
        groups.setdefault(key, []).append(run)
    parts += ["%s %s" % (key, _outcome(group)) for key, group in groups.items()]
    if not facts.get("float8"):
        parts.append("no float8 dtypes in torch %s" % facts.get("torch"))
    return " · ".join(parts)
