"""The apex probe: what runs in the worker, inside the target interpreter (torch arrives as
the argument), and the tables it measures against."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
import traceback
from typing import Any, Dict, List, Optional, Sequence

from envdoctor.target.model import ProbeContext
from envdoctor.target.probekit import distributions
from envdoctor.target.probekit.gpus import cuda_devices, identity
from envdoctor.target.probekit.imports import record_import
from envdoctor.target.probekit.ops import randn, run_op, seeded_generator
from envdoctor.target.probekit.steps import StepLost, step
from envdoctor.target.probekit.text import error_text, exception_text, short_dtype

ID = "apex"


# Compiled top-level modules (docs/facts.md §5 "Compiled modules"; names from setup.py).
CPP_EXTENSIONS = ("apex_C",)
CUDA_EXTENSIONS = (  # built by APEX_CUDA_EXT=1 / --cuda_ext
    "amp_C", "syncbn", "fused_layer_norm_cuda", "mlp_cuda", "fused_dense_cuda",
    "scaled_upper_triang_masked_softmax_cuda", "generic_scaled_masked_softmax_cuda",
    "scaled_masked_softmax_cuda", "scaled_softmax_cuda", "fused_rotary_positional_embedding",
    "fused_weight_gradient_mlp_cuda",
)
CONTRIB_EXTENSIONS = (  # one APEX_* flag each; also CUDA code
    "fused_adam_cuda", "fused_lamb_cuda", "fast_layer_norm", "xentropy_cuda", "focal_loss_cuda", "bnp",
    "transducer_joint_cuda", "transducer_loss_cuda", "cudnn_gbn_lib", "peer_memory_cuda", "nccl_p2p_cuda",
    "fast_bottleneck", "fused_conv_bias_relu", "distributed_adam_cuda", "distributed_lamb_cuda",
    "permutation_search_cuda", "fused_index_mul_2d", "group_norm_cuda", "group_norm_v2_cuda",
    "_apex_nccl_allocator", "_apex_gpu_direct_storage",
    "fmhalib", "fast_multihead_attn", "nccl_allocator",  # contrib modules of 2024-era apex
)
ALL_EXTENSIONS = CPP_EXTENSIONS + CUDA_EXTENSIONS + CONTRIB_EXTENSIONS


# What a package directory named apex holds: NVIDIA's layout, or the Pyramid toolkit's
# (docs/facts.md §5 "PyPI apex is unrelated": apex/{lib,ext,scaffolds,...}, forms.py, no normalization).
# apex/amp: NVIDIA removed apex.amp (with apex.parallel's DDP and apex.RNN) in github.com/NVIDIA/apex/pull/1896,
# May 2025, first without it the 25.07 tag; 25.05 is the last with it.
AMP_MARKER = "amp/__init__.py"
PACKAGE_MARKERS = (
    "normalization/fused_layer_norm.py", "optimizers", "multi_tensor_apply",
    "lib/libapex.py", "forms.py", "views.py", "scaffolds", AMP_MARKER,
)
NVIDIA_MARKERS = ("normalization/fused_layer_norm.py", "optimizers", "multi_tensor_apply")


IMPOSTOR_FILES = ("apex/lib/libapex.py", "apex/forms.py", "apex/views.py", "apex/scaffolds/__init__.py")
NVIDIA_FILES = ("apex/normalization/fused_layer_norm.py", "apex/optimizers/fused_adam.py")
# The Pyramid toolkit's requirements: its import dies on the first one missing.
IMPOSTOR_MODULES = ("pyramid_mailer", "pyramid", "velruse", "cryptacular", "zope", "wtforms", "wtforms_recaptcha")


# transformers' modeling files that hold the `T5LayerNorm = FusedRMSNorm` block (docs/facts.md §5 table).
TRANSFORMERS_MODELS = (
    ("t5", "models/t5/modeling_t5.py"),
    ("longt5", "models/longt5/modeling_longt5.py"),
    ("pix2struct", "models/pix2struct/modeling_pix2struct.py"),
    ("pop2piano", "models/pop2piano/modeling_pop2piano.py"),
)
_SWAP_RE = re.compile(r"from\s+apex\.normalization\s+import\s+FusedRMSNorm")


FLOATS = ("float32", "float16", "bfloat16")
HIDDEN = 64
RMS_EPS = 1e-6  # T5's layer_norm_epsilon
LN_EPS = 1e-5


def _error(exc: BaseException) -> Dict[str, Any]:
    info: Dict[str, Any] = {"ok": False, "error": error_text(exc), "error_type": getattr(exc, "error_type", type(exc).__name__)}
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not (f.filename.startswith("<") or "importlib" in f.filename or f.filename == __file__)]
    if frames:  # where it was raised, outside the import machinery and this probe
        info["where"] = "%s:%s" % (frames[-1].filename, frames[-1].lineno)
        info["frames"] = [f.filename for f in frames][-8:]
    return info


def _distribution() -> Optional[Dict[str, Any]]:
    """The installed distribution called apex, as its metadata describes it."""
    try:
        dist = distributions.distribution("apex")
    except Exception as exc:  # noqa: BLE001 - a broken record is a fact
        return {"error": exception_text(exc)}
    if dist is None:
        return None
    meta = dist.metadata
    try:
        files = [str(f).replace("\\", "/") for f in (dist.files or ())]
    except Exception:  # noqa: BLE001 - an unreadable RECORD
        files = []
    compiled = sorted({f for f in files if "/" not in f and f.split(".")[0] in ALL_EXTENSIONS})
    try:
        location: Optional[str] = str(dist.locate_file(""))
    except Exception:  # noqa: BLE001
        location = None
    return {
        "name": meta.get("Name"),
        "version": dist.version,
        "summary": meta.get("Summary"),
        "author": meta.get("Author"),
        "home_page": meta.get("Home-page"),
        "requires": list(dist.requires or ())[:12],
        "location": location,
        "file_count": len(files),
        "impostor_files": [f for f in IMPOSTOR_FILES if f in files],
        "nvidia_files": [f for f in NVIDIA_FILES if f in files],
        "compiled_files": compiled,
    }


def _package() -> Dict[str, Any]:
    """Where `import apex` would load from, and what that directory holds (nothing imported)."""
    try:
        spec = importlib.util.find_spec("apex")
    except Exception as exc:  # noqa: BLE001 - e.g. a broken finder
        return {"found": False, "error": "%s: %s" % (type(exc).__name__, exc)}
    if spec is None:
        return {"found": False}
    locations = [str(p) for p in (spec.submodule_search_locations or ())]
    origin = spec.origin if spec.origin not in (None, "namespace") else None
    contents = {}
    for marker in PACKAGE_MARKERS:
        contents[marker] = any(os.path.exists(os.path.join(loc, *marker.split("/"))) for loc in locations)
    return {"found": True, "origin": origin, "locations": locations, "namespace": origin is None, "contents": contents}


def _extensions() -> List[Dict[str, Any]]:
    """apex's compiled modules that find_spec can see, before any of them is imported."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found: List[Dict[str, Any]] = []
    for name in ALL_EXTENSIONS:
        try:
            spec = importlib.util.find_spec(name)
        except Exception as exc:  # noqa: BLE001
            found.append({"name": name, "origin": None, "compiled": False, "find_error": "%s: %s" % (type(exc).__name__, exc)})
            continue
        if spec is None or not spec.origin or spec.origin == "namespace":
            continue
        kind = "cpp" if name in CPP_EXTENSIONS else ("cuda" if name in CUDA_EXTENSIONS else "contrib")
        found.append({"name": name, "origin": spec.origin, "compiled": spec.origin.endswith(suffixes), "kind": kind})
    return found


def _import(name: str, attrs: Sequence[str] = (), version: Optional[str] = None) -> Dict[str, Any]:
    """Import one apex module with the probe kit's recorder, as a guarded step: a compiled
    extension that crashes or hangs on import is pinned on it and the probe goes on past it.
    Returns {"ok", "error", "error_type", "where", "frames", "file"} as the rules read them."""
    fact = record_import("apex", name, version)
    info: Dict[str, Any] = {"ok": bool(fact["ok"]), "file": fact.get("file")}
    if fact.get("lost"):
        info["lost"] = fact["lost"]
    if not fact["ok"]:
        info["error"], info["error_type"] = fact.get("error"), fact.get("error_type")
        frames = [f for f in fact.get("frames") or () if not (f.startswith("<") or "importlib" in f or "probekit" in f)]
        if frames:  # where it was raised, outside the import machinery and the recorder
            info["where"] = frames[-1].rsplit(" in ", 1)[0]
            info["frames"] = [f.rsplit(":", 1)[0] if ":" in f.rsplit(" in ", 1)[0] else f for f in
                              (g.rsplit(" in ", 1)[0] for g in frames)][-8:]
        return info
    module = sys.modules.get(name)
    missing = [a for a in attrs if not hasattr(module, a)]
    if missing:
        info.update(ok=False, error_type="ImportError",
                    error="cannot import name %r from %r (%s)" % (missing[0], name, getattr(module, "__file__", None)))
    return info


def _transformers() -> Dict[str, Any]:
    """Does the installed transformers swap T5's norm for apex FusedRMSNorm? Read from its
    source text, without importing transformers (seconds, and it may import apex)."""
    info: Dict[str, Any] = {"version": distributions.installed_version("transformers")}
    try:
        spec = importlib.util.find_spec("transformers")
    except Exception as exc:  # noqa: BLE001
        info["error"] = "%s: %s" % (type(exc).__name__, exc)
        return info
    if spec is None or not spec.submodule_search_locations:
        info["found"] = False
        return info
    info["found"] = True
    root = next(iter(spec.submodule_search_locations))
    info["location"] = root
    models: Dict[str, Any] = {}
    for model, rel in TRANSFORMERS_MODELS:
        path = os.path.join(root, *rel.split("/"))
        if not os.path.isfile(path):
            models[model] = {"file": None}
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError as exc:
            models[model] = {"file": path, "error": str(exc)}
            continue
        match = _SWAP_RE.search(text)
        entry: Dict[str, Any] = {"file": path, "swap": match is not None}
        if match is not None:
            entry["line"] = text.count("\n", 0, match.start()) + 1
        models[model] = entry
    info["models"] = models
    return info


def mix(a: str, b: str) -> str:
    return "input %s × weight %s" % (short_dtype(a), short_dtype(b))


def _fused_forward(torch: Any, cls: Any, device: str, x: Any, w: Any, b: Any, in_dt: str, w_dt: str, eps: float) -> Any:
    def run() -> Any:
        module = cls(HIDDEN, eps=eps)
        with torch.no_grad():
            module.weight.copy_(w)
            if b is not None:
                module.bias.copy_(b)
        module = module.to(device=device, dtype=getattr(torch, w_dt))
        with torch.no_grad():
            return module(x.to(device=device, dtype=getattr(torch, in_dt)))

    return run


def _reference(torch: Any, F: Any, x: Any, w: Any, b: Any, in_dt: str, w_dt: str, eps: float) -> Any:
    def ref() -> Any:  # the rounded inputs, in fp32 on the CPU
        xr = x.to(getattr(torch, in_dt)).float()
        wr = w.to(getattr(torch, w_dt)).float()
        if b is not None:
            return F.layer_norm(xr, (HIDDEN,), wr, b.to(getattr(torch, w_dt)).float(), eps)
        if hasattr(F, "rms_norm"):
            return F.rms_norm(xr, (HIDDEN,), wr, eps)
        return xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + eps) * wr

    return ref


def _fused_ops(torch: Any, norm: Any, devices: List[str]) -> List[Dict[str, Any]]:
    import torch.nn.functional as F

    gen = seeded_generator(torch, 60)
    x = randn(torch, gen, 4, HIDDEN)
    w = 1.0 + 0.1 * randn(torch, gen, HIDDEN)
    b = 0.1 * randn(torch, gen, HIDDEN)
    ops: List[Dict[str, Any]] = []
    for device in devices:
        for op, bias, eps in (("FusedRMSNorm", None, RMS_EPS), ("FusedLayerNorm", b, LN_EPS)):
            cls = getattr(norm, op, None)
            if cls is None:
                continue
            for in_dt in FLOATS:
                for w_dt in FLOATS:
                    ops.append(run_op(
                        torch, op, device, in_dt,
                        _fused_forward(torch, cls, device, x, w, bias, in_dt, w_dt, eps),
                        _reference(torch, F, x, w, bias, in_dt, w_dt, eps),
                        weight_dtype=w_dt, mix=mix(in_dt, w_dt),
                    ))
    return ops


def _cuda_devices(torch: Any, ctx: ProbeContext) -> List[Dict[str, Any]]:
    devices = []
    for device in cuda_devices(torch, ctx):
        try:
            with step("starting CUDA on %s" % device, device=device):
                devices.append(identity(torch, device))
        except StepLost as lost:
            devices.append({"id": device, "error": lost.error, "error_type": lost.error_type})
    return devices


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    facts: Dict[str, Any] = {
        "pip": distributions.installed_version("pip"),
        "torch": getattr(torch, "__version__", None) if torch is not None else None,
        "torch_cuda": getattr(getattr(torch, "version", None), "cuda", None) if torch is not None else None,
        "distribution": _distribution(),
        "package": _package(),
        "extensions": _extensions(),  # found before anything below imports them
        "transformers": _transformers(),
        "devices": [],
        "ops": [],
    }
    package = facts["package"]
    if not package.get("found"):
        facts["import"] = {"ok": False, "skipped": "no module named apex"}
        return facts
    nvidia_shaped = any(package.get("contents", {}).get(m) for m in NVIDIA_MARKERS)
    if torch is None and nvidia_shaped:
        # NVIDIA apex imports torch at once; the worker already failed to import it.
        facts["import"] = {"ok": False, "skipped": "torch does not import"}
        return facts
    version = (facts["distribution"] or {}).get("version")
    facts["import"] = _import("apex", version=version)
    if torch is None:
        return facts  # the impostor (or something else) was imported for its error; no torch, no ops
    for ext in facts["extensions"]:
        if ext.get("compiled"):
            ext["import"] = _import(ext["name"], version=version)
    # exactly what transformers tries before it swaps T5LayerNorm for FusedRMSNorm
    facts["normalization_import"] = _import("apex.normalization", ("FusedRMSNorm",), version=version)
    if not facts["normalization_import"].get("ok"):
        facts["fused_ops"] = "apex.normalization does not import"
        return facts
    norm = importlib.import_module("apex.normalization")
    # Building the layers is what transformers does when it builds T5: some apex versions
    # import fused_layer_norm_cuda right in __init__ (no forward, so fine on CPU).
    facts["construct"] = {}
    for op in ("FusedRMSNorm", "FusedLayerNorm"):
        try:
            with step("building apex %s(8)" % op, package="apex", op=op, version=version):
                getattr(norm, op)(8)
            facts["construct"][op] = {"ok": True}
        except Exception as exc:  # noqa: BLE001
            facts["construct"][op] = _error(exc)
    facts["devices"] = _cuda_devices(torch, ctx)
    usable = [d["id"] for d in facts["devices"] if "error" not in d]
    if not usable:
        facts["fused_ops"] = "no CUDA device"
        return facts
    facts["fused_ops"] = "run"
    facts["ops"] = _fused_ops(torch, norm, usable)
    return facts
