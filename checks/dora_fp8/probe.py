"""Worker side: LoRA and DoRA adapters on a float8 (or other) base weight, for real.

With peft installed, each setup builds a tiny module around one 16x16 Linear whose weight
is stored in the base dtype, injects peft's LoRA layer into it (`inject_adapter_in_model`,
what diffusers' `add_adapter` calls), casts the adapter to the compute dtype, runs the
forward and, when training, one backward. Without peft (or with `--quick`), the same
adapters are written out in plain torch: the LoRA forward, and the DoRA weight
decomposition exactly as the trainers compute it, W + s·(B@A), its norm per output
feature, m·(W'/‖W'‖), then the linear. Every run is a guarded step.

Stdlib + torch only, Python 3.8+: runs inside the worker.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable, Dict, List, Optional

from envdoctor.target.model import ProbeContext
from envdoctor.target.probekit.distributions import installed_version
from envdoctor.target.probekit.imports import record_import
from envdoctor.target.probekit.ops import randn, seeded_generator, synchronize
from envdoctor.target.probekit.steps import StepLost, step
from envdoctor.target.probekit.text import dtype_name, error_text, library_frame, warning_texts

from .setups import FLOAT8, Setup, common, from_intent

FEATURES = 16
RANK = 4
ALPHA = 8  # scale alpha / rank = 2, as a typical config (alpha = 2 x rank)
MAX_WARNINGS = 5


def _tiny_model(torch: Any, setup: Setup) -> Any:
    """A module holding one Linear `proj` whose weight is stored in the base dtype and cast
    to the input's dtype in forward: what OneTrainer's LinearFp8 does
    (github.com/Nerogar/OneTrainer modules/module/quantized/LinearFp8.py, commit 171629c8) and
    diffusers' layerwise casting, since torch has no matmul between float8 and another dtype.
    Only the weight is float8 (LinearFp8 quantizes the weight, not the bias)."""
    functional = torch.nn.functional
    linear: Any = torch.nn.Linear  # torch is passed in: its classes are values here
    module: Any = torch.nn.Module

    class StoredLinear(linear):
        def forward(self, x: Any) -> Any:
            bias = None if self.bias is None else self.bias.to(x.dtype)
            return functional.linear(x, self.weight.to(x.dtype), bias)

    class Tiny(module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = StoredLinear(FEATURES, FEATURES)

        def forward(self, x: Any) -> Any:
            return self.proj(x)

    gen = seeded_generator(torch, 13)
    model = Tiny()
    base = getattr(torch, setup.base)
    bias_dtype = getattr(torch, setup.compute) if setup.base.startswith("float8") else base
    with torch.no_grad():
        model.proj.weight.data = (randn(torch, gen, FEATURES, FEATURES) * 0.25).to(device=setup.device, dtype=base)
        model.proj.bias.data = (randn(torch, gen, FEATURES) * 0.25).to(device=setup.device, dtype=bias_dtype)
    model.requires_grad_(False)  # the base is frozen; only the adapter trains
    return model


def _inputs(torch: Any, setup: Setup) -> Any:
    return randn(torch, seeded_generator(torch, 14), 2, FEATURES).to(device=setup.device, dtype=getattr(torch, setup.compute))


def _outcome(torch: Any, out: Any, params: List[Any], training: bool) -> Dict[str, Any]:
    """What a finished run produced: the output dtype, and whether output and gradients are usable."""
    result: Dict[str, Any] = {"out_dtype": dtype_name(out.dtype)}
    problems = []
    if not bool(torch.isfinite(out.detach().float()).all()):
        problems.append("the output is not finite")
    if training:
        missing = sum(1 for p in params if p.grad is None)
        broken = sum(1 for p in params if p.grad is not None and not bool(torch.isfinite(p.grad.float()).all()))
        result["grads"] = "%d of %d adapter tensors" % (len(params) - missing - broken, len(params))
        if missing:
            problems.append("no gradient reached %d of %d adapter tensors" % (missing, len(params)))
        if broken:
            problems.append("%d of %d adapter gradients are not finite" % (broken, len(params)))
    if problems:
        result.update(ok=False, error_type="WrongResult", error="; ".join(problems))
    return result


def _guarded(run: Dict[str, Any], what: str, phase: List[str], body: Callable[[], Dict[str, Any]],
             package: Optional[str] = None) -> Dict[str, Any]:
    """Run `body` as one guarded step; record ok, or the phase it failed in, the exception's
    type and text and the innermost frame inside `package`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with step(what, op=run["adapter"], device=run["device"], dtype=run["base_dtype"]):
                result = body()
        except StepLost as lost:
            run.update(ok=False, phase=phase[0], error_type=lost.error_type, error=lost.error, lost=lost.state)
            return run
        except Exception as exc:  # noqa: BLE001 - the failure is the fact
            run.update(ok=False, phase=phase[0], error_type=type(exc).__name__, error=error_text(exc))
            frame = library_frame(exc, package) if package else None
            if frame:
                run["frame"] = frame
            return run
    run["ok"] = True
    run.update(result)
    if not run["ok"]:
        run["phase"] = phase[0]
    seen = warning_texts(caught, MAX_WARNINGS)
    if seen:
        run["warnings"] = seen
    return run


def peft_run(torch: Any, peft: Any, setup: Setup) -> Dict[str, Any]:
    """peft's own LoRA / DoRA layer on the tiny model."""
    run = dict(setup.to_dict(), library="peft", version=str(getattr(peft, "__version__", "") or "") or None)
    phase = ["build"]

    def body() -> Dict[str, Any]:
        model = _tiny_model(torch, setup)
        phase[0] = "inject"
        config = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=["proj"], use_dora=setup.adapter == "dora")
        peft.inject_adapter_in_model(config, model)
        # The trainer keeps the adapter in the compute dtype (peft made it fp32 or the base's dtype).
        params = [p for p in model.parameters() if p.requires_grad]
        for p in params:
            p.data = p.data.to(getattr(torch, setup.compute))
        phase[0] = "forward"
        out = model(_inputs(torch, setup))
        if setup.training:
            phase[0] = "backward"
            out.float().square().mean().backward()
        synchronize(torch, setup.device)
        return _outcome(torch, out, params, setup.training)

    what = "running peft %s on a %s base, %s adapter, on %s" % (setup.adapter, setup.base, setup.compute, setup.device)
    return _guarded(run, what, phase, body, "peft")


def torch_run(torch: Any, setup: Setup, upcast: bool = False) -> Dict[str, Any]:
    """The same adapter in plain torch. DoRA is computed as peft's DoraLinearLayer
    (peft/tuners/lora/dora.py: get_weight_norm, then magnitude / norm) and OneTrainer's
    DoRAModule.forward do it; OneTrainer before commit 2925dc8f ("add support for DoRA
    training on quantized base models", github.com/Nerogar/OneTrainer
    modules/module/LoRAModule.py) added the stored weight as it was (seed 003), since then it
    upcasts it to the adapter's dtype first: `upcast` runs that fix."""
    run = dict(setup.to_dict(), library="torch", version=str(torch.__version__))
    if setup.adapter == "dora":
        run["upcast"] = upcast
    phase = ["build"]
    functional = torch.nn.functional

    def body() -> Dict[str, Any]:
        compute = getattr(torch, setup.compute)
        gen = seeded_generator(torch, 13)
        weight = (randn(torch, gen, FEATURES, FEATURES) * 0.25).to(device=setup.device, dtype=getattr(torch, setup.base))
        bias = (randn(torch, gen, FEATURES) * 0.25).to(device=setup.device, dtype=compute)
        lora_a = (randn(torch, gen, RANK, FEATURES) * 0.25).to(device=setup.device, dtype=compute).requires_grad_()
        lora_b = (randn(torch, gen, FEATURES, RANK) * 0.25).to(device=setup.device, dtype=compute).requires_grad_()
        x = _inputs(torch, setup)
        scale = ALPHA / RANK
        params = [lora_a, lora_b]
        if setup.adapter == "dora":
            # the magnitude starts as the base weight's norm, computed in fp32 (peft and OneTrainer alike)
            magnitude = torch.linalg.norm(weight.float(), dim=1, keepdim=True).to(compute).requires_grad_()
            params.append(magnitude)
            phase[0] = "merge"  # W + s·(B@A)
            merged = (weight.to(compute) if upcast else weight) + (lora_b @ lora_a) * scale
            phase[0] = "norm"  # ‖W'‖ per output feature, treated as a constant (DoRA paper, section 4.3)
            norm = torch.linalg.norm(merged.detach(), dim=1, keepdim=True)
            phase[0] = "rescale"  # m·(W'/‖W'‖)
            adapted = magnitude * (merged / norm)
            phase[0] = "linear"
            out = functional.linear(x, adapted, bias)
        else:
            phase[0] = "base"  # the stored weight cast to the input's dtype, as LinearFp8 does
            out = functional.linear(x, weight.to(compute), bias)
            phase[0] = "adapter"  # + s·B(A(x))
            out = out + functional.linear(functional.linear(x, lora_a), lora_b) * scale
        if setup.training:
            phase[0] = "backward"
            out.float().square().mean().backward()
        synchronize(torch, setup.device)
        return _outcome(torch, out, params, setup.training)

    label = setup.adapter + (" (upcast first)" if upcast else "")
    what = "running torch %s on a %s base, %s adapter, on %s" % (label, setup.base, setup.compute, setup.device)
    return _guarded(run, what, phase, body)


def _import_peft(facts: Dict[str, Any]) -> Any:
    """peft, imported as a guarded step (it imports transformers: seconds); None when absent or broken.
    Any `peft.*` import runs peft/__init__.py, which loads every tuner: importing less is not possible."""
    version = installed_version("peft")
    if not version:
        facts["peft"] = None
        return None
    fact = record_import("peft", "peft", version)
    facts["peft"] = version
    facts["imports"].append(fact)
    if not fact.get("ok"):
        return None
    return importlib.import_module("peft")


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    intent = ctx.options.get("intent")
    found = ctx.select_devices(torch)
    facts: Dict[str, Any] = {
        "torch": torch.__version__,
        "float8": hasattr(torch, FLOAT8),
        "intent": intent or None,
        "quick": bool(ctx.options.get("quick")),
        "libraries": ctx.options.get("libraries", True) is not False,  # a caller that does not say: as before, peft where it is
        "imports": [],
        "runs": [],
        "not_probed": [],
    }
    if intent:
        setups, not_probed = from_intent(intent, found)
    else:
        setups, not_probed = common(found), []
    facts["not_probed"] = not_probed
    if not facts["float8"]:
        dropped = sorted({s.base for s in setups if s.base.startswith("float8")})
        facts["not_probed"].extend({"base": b, "reason": "torch %s has no %s dtype" % (torch.__version__, b)} for b in dropped)
        setups = [s for s in setups if not s.base.startswith("float8")]
    peft = None
    if facts["quick"] or not facts["libraries"]:
        facts["peft"] = installed_version("peft")
    elif setups:
        peft = _import_peft(facts)
    facts["library"] = "peft" if peft is not None else "torch"
    for setup in setups:
        if peft is not None:
            facts["runs"].append(peft_run(torch, peft, setup))
            continue
        facts["runs"].append(torch_run(torch, setup))
        if setup.adapter == "dora" and setup.base.startswith("float8"):
            facts["runs"].append(torch_run(torch, setup, upcast=True))
    return facts
