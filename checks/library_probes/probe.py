"""The library-probes probe: imports each installed library (a guarded step each: a crash or
hang is pinned on that library and the other's runs are kept), then runs each planned model
forward (and backward) as a guarded step, recording what happened and where.

Stdlib only, Python 3.8+: runs inside the worker; torch is passed in.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
import warnings
from typing import Any, Dict, List, Optional, Set, Tuple

from envdoctor.target.model import ProbeContext, available_devices, op_fact
from envdoctor.target.probekit.distributions import installed
from envdoctor.target.probekit.imports import find_module_spec, record_import
from envdoctor.target.probekit.ops import seeded_generator, synchronize
from envdoctor.target.probekit.steps import StepLost, step
from envdoctor.target.probekit.text import TORCH_DTYPE, dtype_name, error_text, exception_chain, installed_path, library_frame, warning_texts

from . import setups
from .models import LIBRARIES, MODELS, TinyModel, first_output

_MAX_FRAMES = 6


def _dispatch(path: Optional[str]) -> bool:
    """torch.nn.Module's call machinery: between every two frames of a model, never the culprit."""
    return bool(path) and str(path).endswith("torch/nn/modules/module.py")


def _frames(exc: BaseException, package: str) -> Tuple[Optional[str], List[str]]:
    """The innermost frame inside the library ("transformers/models/clip/modeling_clip.py:
    forward"), and the last few frames from the library's first one inwards (torch's, apex's),
    each relative to where its package is installed: no machine paths."""
    tb = traceback.extract_tb(exc.__traceback__)
    paths = [installed_path(f.filename, package) for f in tb]
    first = next((i for i, p in enumerate(paths) if p and p.split("/", 1)[0] == package), 0)
    shown = ["%s: %s" % (p or os.path.basename(f.filename), f.name) for f, p in zip(tb[first:], paths[first:]) if not _dispatch(p)]
    return library_frame(exc, package), shown[-_MAX_FRAMES:]


def _build(torch: Any, spec: TinyModel, module: Any) -> Any:
    """The model with the same random weights every time, without moving the global RNG."""
    saved = torch.get_rng_state()
    try:
        torch.manual_seed(0)
        return spec.build(module)
    finally:
        torch.set_rng_state(saved)


class Built:
    """Each model built once per check (a build is a third of a run's time), then reset to its
    fp32 weights before every later run, so that no run sees another's casts or gradients."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.models: Dict[str, Tuple[Any, Dict[str, Any]]] = {}

    def model(self, spec: TinyModel, module: Any) -> Any:
        if spec.key not in self.models:
            model = _build(self.torch, spec, module)
            self.models[spec.key] = (model, {k: v.detach().clone() for k, v in model.state_dict().items()})
            return model
        model, weights = self.models[spec.key]
        model.to(dtype=self.torch.float32)
        model.load_state_dict(weights)
        for param in model.parameters():
            param.grad = None
        return model


def _keep_fp32(torch: Any, model: Any, weights: str) -> List[str]:
    """Leave the model as from_pretrained(torch_dtype=...) loads it, which is how trainers and
    pipelines get their half weights: transformers keeps `_keep_in_fp32_modules` (T5's `wo`) in
    fp32 when loading in fp16, and `_keep_in_fp32_modules_strict` in fp16 and bf16
    (modeling_utils.py, `_get_dtype_plan`; matched against the parameter name's parts)."""
    keep = set(getattr(model, "_keep_in_fp32_modules", None) or ()) if weights == "fp16" else set()
    if weights in setups.HALF:
        keep |= set(getattr(model, "_keep_in_fp32_modules_strict", None) or ())
    kept: List[str] = []
    for name, param in model.named_parameters():
        hits = [k for k in keep if k in name.split(".")]
        if hits:
            param.data = param.data.to(torch.float32)
            kept += [k for k in hits if k not in kept]
    return kept


def _finite(torch: Any, tensor: Any) -> bool:
    return bool(torch.isfinite(tensor.detach().float()).all())


class _Phases:
    """fact["phase"]: how far a run got (the phase a failure happened in); fact["phases_s"]: the
    seconds each phase took."""

    def __init__(self, fact: Dict[str, Any]) -> None:
        self.fact = fact
        self.fact["phases_s"] = {}
        self.start = time.perf_counter()

    def __call__(self, phase: Optional[str]) -> None:
        now = time.perf_counter()
        if self.fact.get("phase"):
            self.fact["phases_s"][self.fact["phase"]] = round(now - self.start, 4)
        self.fact["phase"], self.start = phase, now


def _execute(torch: Any, spec: TinyModel, module: Any, setup: setups.Setup, built: Built, fact: Dict[str, Any]) -> None:
    """Build, cast, forward, backward, each a phase of the fact."""
    phase = _Phases(fact)
    phase("build")
    model = built.model(spec, module)
    fact["parameters"] = sum(p.numel() for p in model.parameters())
    if spec.describe is not None:
        fact.update(spec.describe(model))
    phase("cast")
    weights = getattr(torch, TORCH_DTYPE[setup.weights])
    model = model.to(device=setup.device, dtype=weights)
    kept = _keep_fp32(torch, model, setup.weights)
    if kept:
        fact["kept_fp32"] = kept
    model.train(setup.training)  # dropout on while training, as the trainer's model.train()
    model.requires_grad_(setup.training)
    inputs = spec.inputs(torch, seeded_generator(torch, 0), setup.device, weights)
    autocast: Any = contextlib.nullcontext()
    if setup.autocast:
        device_type = setup.device.split(":")[0]
        autocast = torch.autocast(device_type=device_type, dtype=getattr(torch, TORCH_DTYPE[setup.autocast]))
    phase("forward")
    with autocast, (contextlib.nullcontext() if setup.training else torch.no_grad()):
        out = first_output(model(**inputs))
        synchronize(torch, setup.device)
        fact["out_dtype"] = dtype_name(out.dtype)
        fact["finite"] = _finite(torch, out)
        loss = out.float().pow(2).mean() if setup.training else None
    if loss is not None:
        phase("backward")
        loss.backward()
        synchronize(torch, setup.device)
        grads = [p.grad.reshape(-1).float() for p in model.parameters() if p.grad is not None]
        fact["grads_finite"] = _finite(torch, torch.cat(grads)) if grads else None
    phase(None)


def run_setup(torch: Any, spec: TinyModel, module: Any, setup: setups.Setup, version: Optional[str], built: Built) -> Dict[str, Any]:
    """One run as a guarded step, recorded as an op fact: op = the class, dtype = the mode."""
    fact = op_fact(spec.label, setup.device, setup.mode, False)
    fact.update(setup.to_fact())
    fact.update({"library": spec.library, "version": version, "class": spec.label})
    what = "running %s %s on %s (%s)" % (spec.label, setup.mode, setup.device,
                                          "forward+backward" if setup.training else "forward")
    fact["what"] = what
    # (imported here, where a probe runs: the parent imports this module with the check's declaration)
    from envdoctor.target.probekit.capture import LibraryLog

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, LibraryLog(spec.library) as log:
        warnings.simplefilter("always")
        try:
            with step(what, op=spec.label, device=setup.device, dtype=setup.mode, package=spec.library, version=version):
                _execute(torch, spec, module, setup, built, fact)
            fact["ok"] = True
        except StepLost as lost:
            fact.update(error=lost.error, error_type=lost.error_type, lost=lost.state)
        except Exception as exc:  # noqa: BLE001 - the failure is the fact
            frame, frames = _frames(exc, spec.library)
            fact.update(error=error_text(exc), error_type=type(exc).__name__, frame=frame, frames=frames)
            causes = exception_chain(exc)[1:]
            if causes:
                fact["causes"] = causes
    fact["duration_s"] = round(time.perf_counter() - start, 4)
    if caught:
        fact["warnings"] = warning_texts(caught, 5)
    if log.records:
        fact["log"] = log.records[:5]
    return fact


def _absent(fact: Dict[str, Any], name: str) -> bool:
    """The import failed because the module (or a package above it) is not in this release."""
    parts = name.split(".")
    prefixes = [".".join(parts[:i]) for i in range(2, len(parts) + 1)]
    error = fact.get("error") or ""
    return fact.get("error_type") == "ModuleNotFoundError" and any("No module named '%s'" % p in error for p in prefixes)


def _import_model(spec: TinyModel, version: Optional[str]) -> Tuple[Any, Dict[str, Any]]:
    """The module defining the class, imported as a guarded step: its own submodule, or the
    next place in spec.modules when this release does not have that one."""
    fact: Dict[str, Any] = {}
    for i, name in enumerate(spec.modules):
        fact = record_import(spec.library, name, version)
        if i + 1 < len(spec.modules) and _absent(fact, name):
            continue  # another layout
        module = sys.modules.get(name) if fact.get("ok") else None
        if module is not None and not hasattr(module, spec.label):
            fact.update(ok=False, error_type="AttributeError", error="module '%s' has no attribute '%s'" % (name, spec.label))
            module = None
        return module, fact
    return None, fact


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    if ctx.options.get("quick"):  # `check --quick`: the library imports are the slow part
        return {"skipped": "quick", "libraries": [], "ops": []}
    devices = available_devices(torch)
    facts: Dict[str, Any] = {
        "torch": torch.__version__,
        "accelerators": [d for d in devices if d != "cpu"],
        "libraries": [],
        "ops": [],
    }
    plan = setups.plan(ctx.options.get("intent") or None, ctx.select_devices(torch))
    facts["from_intent"] = plan.from_intent
    facts["unavailable"] = plan.unavailable
    threads = torch.get_num_threads()
    # Tiny tensors gain nothing from intra-op threads, and this worker runs beside the main
    # one: measured on 2 busy cores, a UNet run takes 0.04 s on one thread and 0.15-0.3 s on two.
    torch.set_num_threads(1)
    try:
        _probe_libraries(torch, plan, facts)
    finally:
        torch.set_num_threads(threads)
    return facts


def _probe_libraries(torch: Any, plan: setups.Plan, facts: Dict[str, Any]) -> None:
    done = {s.key for s in plan.setups}
    for library in LIBRARIES:
        wanted = [s for s in plan.setups if MODELS[s.model].library == library]
        if wanted:
            _probe_library(torch, library, wanted, plan, done, facts)
    facts["imports_s"] = round(sum(o.get("import_s") or 0.0 for o in facts["ops"]), 3)
    facts["runs_s"] = round(sum(o.get("duration_s") or 0.0 for o in facts["ops"]), 3)


def _installed(library: str) -> bool:
    """Installed as a distribution, or importable all the same (a source checkout on the path);
    find_spec of a top-level name runs none of its code."""
    return installed((library,))[0] is not None or find_module_spec(library) is not None


def _probe_library(torch: Any, library: str, wanted: List[setups.Setup], plan: setups.Plan, done: Set[str],
                   facts: Dict[str, Any]) -> None:
    """Import one library and its model modules, then run its setups (and, for a failing run
    the intent asked for, the alternatives that measure the remedies)."""
    version = installed((library,))[1]
    entry: Dict[str, Any] = {"name": library, "version": version, "installed": _installed(library)}
    facts["libraries"].append(entry)
    if not entry["installed"]:
        return
    top = record_import(library, library, version)
    facts["ops"].append(top)
    entry["version"] = version or top.get("version")
    entry["imported"] = bool(top.get("ok"))
    if not top.get("ok"):
        return
    modules: Dict[str, Any] = {}
    for key in [m for m in MODELS if any(s.model == m for s in wanted)]:
        modules[key], fact = _import_model(MODELS[key], entry["version"])
        fact["for_model"] = key
        facts["ops"].append(fact)
    built = Built(torch)
    queue = list(wanted)
    while queue:
        setup = queue.pop(0)
        if modules.get(setup.model) is None:
            continue  # its import failed: that op is the fact
        fact = run_setup(torch, MODELS[setup.model], modules[setup.model], setup, entry["version"], built)
        facts["ops"].append(fact)
        if not fact["ok"] and plan.from_intent and setup.alternative_for is None:
            extra = [a for a in setups.alternatives(setup, plan.setups) if a.key not in done]
            done.update(a.key for a in extra)
            queue[0:0] = extra
