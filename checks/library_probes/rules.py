"""The library-probes rules: a failing run is a finding, named after the config setting that
asked for it, with remedies whose effect was measured where the probe could measure it
(the bf16 or fp32 run of the same model on the same device).

Pure functions over the probe's facts and the target environment (env.intent: the training
config's Intent, or None); run in the parent.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.target.cuda_tables import CPU_INDEX
from envdoctor.target.intent import PART_NAMES, Intent, Setting, config_evidence, config_subject, dtype_names
from envdoctor.target.model import Finding, Remedy, Severity, Target
from envdoctor.target.platform.menus import gpu_runtime_step
from envdoctor.target.remedies.actions import config_remedy, pip_remedy
from envdoctor.target.versions import release_tuple

from .setups import Setup, other_half

ID = "library-probes"
# A CPU kernel missing in a half dtype (docs/facts.md §7 "What torch does on CPU": torch 2.0.1's
# layer_norm, addmm, conv2d, ...).
MISSING_KERNEL_RE = re.compile(r"not implemented for '(Half|BFloat16)'")
# Measured (tests/test_library_probes.py): torch 2.13's CPU runs every model here forward and
# backward in fp16 and bf16; torch 2.0.1's fails each of them in fp16.
KERNELS_MEASURED = (2, 13)
PHASES = {"build": "construction", "cast": "cast", "forward": "forward", "backward": "backward step"}


def runs(facts: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [o for o in facts.get("ops") or () if "mode" in o]


def imports(facts: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [o for o in facts.get("ops") or () if "module" in o]


def device_words(device: Optional[str]) -> str:
    return {"cpu": "the CPU", "mps": "MPS"}.get(device or "", device or "?")


def mode_words(mode: str) -> str:
    """'fp16', 'fp16 autocast (fp32 weights)'."""
    if mode.startswith("autocast-"):
        return "%s autocast (fp32 weights)" % mode[len("autocast-"):]
    return mode


def settings_of(run: Dict[str, Any], intent: Optional[Intent]) -> List[Setting]:
    """The intent's settings that asked for this run, dtype settings first."""
    if intent is None:
        return []
    found: List[Setting] = []
    for asked in run.get("asked_by") or ():
        name = asked.get("name")
        setting = intent.effective(name, asked.get("part") if name in PART_NAMES else None)
        if setting is not None and setting not in found:
            found.append(setting)
    return found


def _sibling(all_runs: Sequence[Dict[str, Any]], run: Dict[str, Any], setup: Optional[Setup]) -> Optional[Dict[str, Any]]:
    """The recorded run of `setup` (the same model and device in another mode)."""
    if setup is None:
        return None
    for other in all_runs:
        if (other.get("model"), other.get("device"), other.get("mode"), bool(other.get("training"))) == \
                (setup.model, setup.device, setup.mode, setup.training) and other is not run:
            return other
    return None


def _control(all_runs: Sequence[Dict[str, Any]], run: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    setup = Setup.from_fact(run)
    return _sibling(all_runs, run, Setup(setup.model, setup.device, "fp32", None, setup.training, setup.part))


def _failure(run: Dict[str, Any], where: str = "") -> str:
    """"CLIPTextModel's forward fails<where>: <error>" (or crashed / did not return)."""
    if run.get("lost"):
        return "%s's %s %s" % (run.get("class"), "forward+backward" if run.get("training") else "forward", run.get("error"))
    phase = PHASES.get(run.get("phase") or "", run.get("phase") or "run")
    return "%s's %s fails%s: %s" % (run.get("class"), phase, where, run.get("error"))


def title_of(run: Dict[str, Any], settings: Sequence[Setting]) -> str:
    """'train.yaml:12 `mixed_precision: fp16` asks for fp16 on the CPU; CLIPTextModel's forward
    fails there: ...', or without a config 'CLIPTextModel's forward fails in fp16 on the CPU: ...'."""
    mode, device = mode_words(run.get("mode") or "?"), device_words(run.get("device"))
    if settings:
        where = list(dict.fromkeys(s.where() for s in settings))  # a precision that also casts the weights: one token
        return "%s %s for %s on %s; %s" % (" and ".join(where), "asks" if len(where) == 1 else "ask", mode, device, _failure(run, " there"))
    if run.get("lost"):
        return "%s in %s on %s" % (_failure(run), mode, device)
    return _failure(run, " in %s on %s" % (mode, device))


def _evidence(run: Dict[str, Any], related: Sequence[Tuple[str, Optional[Dict[str, Any]]]], stack: Sequence[str],
              intent: Optional[Intent], settings: Sequence[Setting]) -> Tuple[str, ...]:
    dtype_settings = _dtype_settings(settings)
    lines = list(config_evidence(intent, dtype_settings)) + ["%s (%s %s), %s parameters, %s weights%s on %s, %s" % (
        run.get("class"), run.get("library"), run.get("version"), "{:,}".format(run["parameters"]) if run.get("parameters") else "?",
        run.get("weights"), " under %s autocast" % run["autocast"] if run.get("autocast") else "", run.get("device"),
        "forward and backward" if run.get("training") else "forward")]
    if run.get("stored_as"):
        lines.append("the config stores these weights as %s; the model computes in %s" % (run["stored_as"], run.get("weights")))
    lines.append("%s: %s" % (run.get("error_type"), run.get("error")))
    lines += ["  caused by %s" % c for c in run.get("causes") or ()]
    if run.get("frame"):
        lines.append("raised in %s" % run["frame"])
    lines += ["  %s" % f for f in run.get("frames") or () if f != run.get("frame")][-4:]
    lines += list(stack)
    if str(run.get("norm_class") or "").startswith("apex."):
        lines.append("T5's layer norm is %s: transformers %s swaps it in for T5LayerNorm whenever apex.normalization imports"
                     % (run["norm_class"], run.get("version")))
    for label, other in related:
        if other is not None:
            lines.append("%s: %s" % (label, "passes" if other.get("ok") else "fails too: %s" % other.get("error")))
    return tuple(lines)


def _dtype_settings(settings: Sequence[Setting]) -> List[Setting]:
    return [s for s in settings if s.name in ("precision", "weight_dtype")]


def _set(settings: Sequence[Setting], value: str) -> Dict[str, str]:
    """The config action: what asked for the half precision goes to `value`."""
    return {name: value for name in dtype_names(settings)}


def _when(run: Dict[str, Any], settings: Sequence[Setting], half: str) -> Dict[str, Any]:
    return dict({"device": run.get("device")}, **{name: half for name in _set(settings, half)})


def _in_config(settings: Sequence[Setting], value: str) -> str:
    """"train.yaml:3 `mixed_precision: fp16` → bf16"."""
    return "; ".join("%s → %s" % (s.where(), value) for s in _dtype_settings(settings))


def _fails_in_apex(run: Dict[str, Any]) -> bool:
    """T5's layer norm is apex FusedRMSNorm and the failure was raised inside apex."""
    return str(run.get("norm_class") or "").startswith("apex.") and any(
        str(f).startswith("apex/") for f in [run.get("frame")] + list(run.get("frames") or ()))


def _remedies(run: Dict[str, Any], all_runs: Sequence[Dict[str, Any]], settings: Sequence[Setting], facts: Dict[str, Any],
              env: Target) -> Tuple[Remedy, ...]:
    setup = Setup.from_fact(run)
    half = setup.half
    device = run.get("device") or "cpu"
    accelerators = list(facts.get("accelerators") or ())
    control = _control(all_runs, run)
    target = other_half(setup)
    other = _sibling(all_runs, run, target)
    remedies: List[Remedy] = []
    if _fails_in_apex(run):
        remedies.append(pip_remedy(
            "Uninstall apex: transformers %s routes T5's layer norm through apex FusedRMSNorm whenever apex.normalization "
            "imports, and it fails here; without apex, T5 uses transformers' own T5LayerNorm" % run.get("version"),
            "uninstall-apex", env, uninstall=["apex"]))
    if half is None:  # the library itself does not run with this torch
        library = run.get("library") or "?"
        remedies.append(pip_remedy(
            "Upgrade %s, keeping torch pinned: %s %s fails in fp32 with torch %s" % (library, library, run.get("version"), facts.get("torch")),
            "upgrade-%s" % library, env, upgrade=[library]))
        return tuple(remedies)
    if target is not None and target.half and other is not None and other.get("ok"):
        value = target.half
        summary = "Use %s instead of %s%s; measured, %s's %s run passes on %s" % (
            value, half, " (%s)" % _in_config(settings, value) if _dtype_settings(settings) else "",
            run.get("class"), mode_words(target.mode), device_words(device))
        remedies.append(config_remedy(summary, "precision-%s" % value, _set(settings, value), when=_when(run, settings, half)))
    if device == "cpu":
        if control is None or control.get("ok"):
            measured = "; measured, the fp32 run passes" if control is not None else ""
            if _dtype_settings(settings):
                summary = "Compute in fp32 on the CPU (%s)%s" % (_in_config(settings, "fp32"), measured)
            else:
                summary = ("Train in fp32 on the CPU: accelerate/autotrain `mixed_precision: no`, transformers `fp16=False` / `bf16=False`, "
                           "OneTrainer `train_dtype: FLOAT_32` and `weight_dtype: FLOAT_32`%s" % measured)
            remedies.append(config_remedy(summary, "precision-fp32", _set(settings, "fp32"), when=_when(run, settings, half)))
        gpu = next((d for d in accelerators if d.startswith("cuda")), None)
        device_setting = next((s for s in settings if s.name == "device"), None)
        if gpu and device_setting is not None:
            remedies.append(config_remedy("Train on the GPU this machine has, %s (%s → cuda)"
                                          % (gpu, device_setting.where()), "device-cuda",
                                          {"device": "cuda"}, when={"device": "cpu"}))
        elif not accelerators:
            remedies.append(Remedy("Move the run to a GPU (%s), where %s kernels exist" % (gpu_runtime_step(env.where), half),
                                   kind="manual", id="use-gpu"))
        torch_release = release_tuple(facts.get("torch"))
        if MISSING_KERNEL_RE.search(run.get("error") or "") and torch_release and torch_release[:2] < KERNELS_MEASURED:
            remedies.append(pip_remedy(
                "Upgrade torch: torch %s has no CPU %s kernel here (%s); measured, torch 2.13 runs %s forward and backward in fp16 "
                "and bf16 on the CPU" % (facts.get("torch"), half, run.get("error"), run.get("class")),
                "torch-upgrade", env, upgrade=["torch"], index_url=None if accelerators else CPU_INDEX))
    return tuple(remedies)


def _severity(run: Dict[str, Any], facts: Dict[str, Any]) -> Severity:
    if facts.get("from_intent") or run.get("mode") == "fp32":
        return Severity.ERROR  # the config asked for it, or the library does not run at all
    # Without a config, as cpu-half-kernels: only a CPU-only machine trains on the CPU by default.
    return Severity.ERROR if run.get("device") == "cpu" and not facts.get("accelerators") else Severity.WARNING


def _lost_stack(facts: Dict[str, Any], run: Dict[str, Any]) -> Tuple[Optional[str], List[str]]:
    """The lost step this run stands for (its key) and the stack faulthandler left."""
    for lost in facts.get("lost_steps") or ():
        if lost.get("what") == run.get("what"):
            lines = [line for line in (lost.get("detail") or "").splitlines() if line.strip()][:6]
            return lost.get("key"), lines
    return None, []


def _subject(run: Dict[str, Any], settings: Sequence[Setting]) -> Dict[str, Any]:
    subject: Dict[str, Any] = {"model": run.get("model"), "class": run.get("class"), "library": run.get("library"),
                               "version": run.get("version"), "device": run.get("device"), "mode": run.get("mode"),
                               "phase": run.get("phase"), "training": run.get("training")}
    if run.get("part"):
        subject["part"] = run["part"]
    subject.update(config_subject(settings))
    return subject


def _folded(run: Dict[str, Any], all_runs: Sequence[Dict[str, Any]], facts: Dict[str, Any]) -> bool:
    """Without a config, a half run of a model whose fp32 run fails on that device is the
    same failure: the fp32 finding carries it."""
    if facts.get("from_intent") or run.get("mode") == "fp32":
        return False
    control = _control(all_runs, run)
    return control is not None and not control.get("ok")


def _run_finding(run: Dict[str, Any], all_runs: Sequence[Dict[str, Any]], facts: Dict[str, Any], env: Target,
                 intent: Optional[Intent]) -> Finding:
    settings = settings_of(run, intent)
    setup = Setup.from_fact(run)
    related: List[Tuple[str, Optional[Dict[str, Any]]]] = []
    target = other_half(setup)
    if target is not None:
        related.append(("the same model in %s" % mode_words(target.mode), _sibling(all_runs, run, target)))
    if setup.half is not None:
        related.append(("the same model in fp32", _control(all_runs, run)))
    else:
        related += [("the same model in %s" % o.get("mode"), o) for o in all_runs
                    if o is not run and (o.get("model"), o.get("device")) == (run.get("model"), run.get("device"))]
    key, stack = _lost_stack(facts, run)
    subject = _subject(run, settings)
    if key:
        subject.update(lost_step=key, state=run.get("lost"))
    return Finding(ID, "%s-fails" % run.get("mode"), _severity(run, facts), title_of(run, settings),
                   _evidence(run, related, stack, intent, settings), _remedies(run, all_runs, settings, facts, env), subject)


def _import_finding(op: Dict[str, Any], facts: Dict[str, Any], env: Target) -> Finding:
    library = op.get("package") or "?"
    version = op.get("version") or next((lib.get("version") for lib in facts.get("libraries") or () if lib.get("name") == library), None)
    evidence = ["import %s: %s: %s" % (op.get("module"), op.get("error_type"), op.get("error"))]
    evidence += ["  caused by %s" % c for c in op.get("causes") or ()]
    evidence += list(op.get("frames") or ())[-4:]
    spec = "%s==%s" % (library, version) if version else library
    return Finding(ID, "import-fails", Severity.ERROR if facts.get("from_intent") else Severity.WARNING,
                   "%s %s does not import: %s: %s" % (library, version or "", op.get("error_type"), op.get("error")),
                   tuple(evidence),
                   (pip_remedy("Reinstall %s with its dependencies, keeping torch pinned" % spec, "reinstall-%s" % library, env,
                               install=[spec], force_reinstall=True),),
                   {"library": library, "version": version, "module": op.get("module")})


def _non_finite(run: Dict[str, Any]) -> Finding:
    what = "its output" if run.get("finite") is False else "its gradients"
    return Finding(ID, "non-finite", Severity.WARNING,
                   "%s in %s on %s runs, but %s hold NaN or Inf" % (run.get("class"), mode_words(run.get("mode") or "?"),
                                                                    device_words(run.get("device")), what),
                   ("%s (%s %s), random weights, unit-scale inputs" % (run.get("class"), run.get("library"), run.get("version")),),
                   (), {"model": run.get("model"), "device": run.get("device"), "mode": run.get("mode")})


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    if facts.get("skipped"):
        return []
    intent = env.intent
    # A device the config asks for that torch cannot see is torch-install's finding (config-device-missing).
    findings = [_import_finding(op, facts, env) for op in imports(facts) if not op.get("ok") and not op.get("lost")]
    all_runs = runs(facts)
    for run in all_runs:
        if run.get("alternative_for"):
            continue  # measured for the remedies of the run it stands in for
        if not run.get("ok"):
            if not _folded(run, all_runs, facts):
                findings.append(_run_finding(run, all_runs, facts, env, intent))
        elif run.get("finite") is False or run.get("grads_finite") is False:
            findings.append(_non_finite(run))
    return findings


def summarize(facts: Dict[str, Any]) -> str:
    if facts.get("skipped"):
        return "skipped (--quick)"
    libraries = ["%s %s" % (lib["name"], lib.get("version")) for lib in facts.get("libraries") or () if lib.get("installed")]
    missing = ["%s asked, not seen" % u.get("device") for u in facts.get("unavailable") or ()]
    if missing:
        return "no runs: %s" % "; ".join(missing)
    if not libraries:
        return "neither transformers nor diffusers is installed"
    parts: List[str] = []
    all_runs = [r for r in runs(facts) if not r.get("alternative_for")]
    for device in dict.fromkeys(r.get("device") for r in all_runs):
        counts = []
        for mode in dict.fromkeys(r.get("mode") for r in all_runs if r.get("device") == device):
            mine = [r for r in all_runs if r.get("device") == device and r.get("mode") == mode]
            counts.append("%s %d/%d" % (mode, sum(1 for r in mine if r.get("ok")), len(mine)))
        parts.append("%s: %s" % (device, ", ".join(counts)))
    failed = [lib["name"] for lib in facts.get("libraries") or () if lib.get("installed") and lib.get("imported") is False]
    tail = (" · %s import fails" % ", ".join(failed)) if failed else ""
    return "%s · %s models pass%s" % (", ".join(libraries), "; ".join(parts) or "no runs", tail)
