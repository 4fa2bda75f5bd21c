"""fp8: float8 dtypes, their promotion with fp16/bf16/fp32, explicit casts,
`torch._scaled_mm`, and whether each GPU can do fp8 matmul (compute capability
8.9+). (seed 003: `Promotion for Float8 Types is not supported, attempted to
promote Float8_e4m3fn and Half` when DoRA met an fp8 SDXL base in OneTrainer.)"""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.target.cuda_tables import GPU_CAPABILITY_PATTERNS
from envdoctor.target.intent import config_evidence, config_subject
from envdoctor.target.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, Target
from envdoctor.target.probekit.gpus import capability_tuple, identity
from envdoctor.target.probekit.imports import find_module_spec
from envdoctor.target.probekit.ops import randn, run_op, seeded_generator
from envdoctor.target.probekit.text import error_text
from envdoctor.target.prose import FAILED, said_with
from envdoctor.target.remedies.actions import config_remedy, pip_remedy

ID = "fp8"
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
MAIN_FLOAT8 = ("float8_e4m3fn", "float8_e5m2")  # the two that training code uses
OTHERS = ("float16", "bfloat16", "float32")
FP8_MATMUL_CC = (8, 9)
# e4m3 keeps 3 mantissa bits (~6 % step), e5m2 2 bits (~12 %): a round trip
# beyond this is wrong, not rounding.
CAST_TOLERANCE = {"float8_e4m3fn": 0.1, "float8_e5m2": 0.2}


def _scaled_mm(torch: Any, device: str, f8: Any) -> Any:
    gen = seeded_generator(torch, 3)
    a = randn(torch, gen, 16, 32).to(device=device, dtype=f8)
    b = randn(torch, gen, 16, 32).to(device=device, dtype=f8).t()  # column-major, as cuBLASLt wants
    one = torch.tensor(1.0, device=device)
    out = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    return out[0] if isinstance(out, tuple) else out  # torch 2.1-2.3 returned (out, amax)


def _scaled_mm_ref(torch: Any, f8: Any) -> Any:
    gen = seeded_generator(torch, 3)
    a = randn(torch, gen, 16, 32).to(f8).float()
    b = randn(torch, gen, 16, 32).to(f8).float().t()
    return a @ b


# The float8 training backends accelerate hands `mixed_precision: fp8` to (its fp8_config
# `backend`: TE, MSAMP, AO; accelerate docs "Low precision training methods"), by the module
# each installs. Without one, Accelerator(mixed_precision="fp8") stops at start.
FP8_BACKENDS = {"transformer_engine": "TransformerEngine", "msamp": "MS-AMP", "torchao": "torchao"}
# accelerate's fp8_config `backend` words, by the module each needs
FP8_CONFIG_BACKENDS = {"te": "transformer_engine", "msamp": "msamp", "ao": "torchao"}


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    present = [name for name in FLOAT8 if hasattr(torch, name)]
    facts: Dict[str, Any] = {
        "torch": torch.__version__,
        "dtypes": present,
        "scaled_mm": hasattr(torch, "_scaled_mm"),
        "devices": [],
        "ops": [],
        "promote_types": [],
        # found, not imported: TransformerEngine's import loads CUDA
        "backends": [m for m in FP8_BACKENDS if find_module_spec(m) is not None],
    }
    if not present:
        return facts
    gen = seeded_generator(torch, 4)
    x = randn(torch, gen, 64)
    for f8_name in [n for n in MAIN_FLOAT8 if n in present]:
        f8 = getattr(torch, f8_name)
        for other in OTHERS:
            try:
                result = str(torch.promote_types(f8, getattr(torch, other))).replace("torch.", "")
                facts["promote_types"].append({"a": f8_name, "b": other, "ok": True, "result": result})
            except Exception as exc:  # noqa: BLE001
                facts["promote_types"].append({"a": f8_name, "b": other, "ok": False, "error": error_text(exc)})
    for device in ctx.select_devices(torch):
        if device == "mps":  # MPS has no float8 storage in the torch releases seen so far: moving a float8 tensor there is the test
            facts["devices"].append({"id": "mps"})
            for f8_name in [n for n in MAIN_FLOAT8 if n in present]:
                f8 = getattr(torch, f8_name)
                facts["ops"].append(run_op(torch, "cast", "mps", f8_name, lambda: x.to(dtype=f8).to("mps").to(torch.float16),
                                           lambda: x, to_dtype="float16"))
            continue
        info: Dict[str, Any] = {"id": device}
        if device.startswith("cuda"):
            info = identity(torch, device)
            cc = capability_tuple(info.get("capability"))
            if cc is not None:
                info["fp8_matmul_hardware"] = cc >= FP8_MATMUL_CC
        facts["devices"].append(info)
        for f8_name in [n for n in MAIN_FLOAT8 if n in present]:
            f8 = getattr(torch, f8_name)
            for other in OTHERS:
                dt = getattr(torch, other)
                facts["ops"].append(run_op(
                    torch, "add", device, f8_name,
                    lambda: x.to(device=device, dtype=f8) + x.to(device=device, dtype=dt),
                    other_dtype=other,
                ))
                facts["ops"].append(run_op(
                    torch, "cast", device, f8_name,
                    lambda: x.to(device=device, dtype=f8).to(dt),
                    lambda: x, to_dtype=other,
                ))
            facts["ops"].append(run_op(
                torch, "matmul", device, f8_name,
                lambda: x.reshape(8, 8).to(device=device, dtype=f8) @ x.reshape(8, 8).to(device=device, dtype=f8),
            ))
            if facts["scaled_mm"] and f8_name == "float8_e4m3fn":
                facts["ops"].append(run_op(
                    torch, "_scaled_mm", device, f8_name,
                    lambda: _scaled_mm(torch, device, f8),
                    lambda: _scaled_mm_ref(torch, f8),
                    out_dtype="bfloat16",
                ))
    return facts


# ---------------------------------------------------------------- rules

# Plain tensor math is this check's; adapters on an fp8 base (DoRA off, a bf16 base) are dora-fp8's.
# Below compute capability 8.9 fp8 is storage only: what explain and the live finding both say.
COMPUTE_BF16 = Remedy("Compute in bf16 (capability 8.0+) or fp16; use fp8 only to store weights", id="compute-bf16")
PROMOTION_REMEDIES = (
    Remedy("Upcast fp8 weights before any math with other dtypes: `w.to(torch.bfloat16)` (what OneTrainer's fp8 fix does "
           "before the DoRA norm)", id="upcast-fp8"),
)


def _cast_wrong(fact: Dict[str, Any]) -> bool:
    err = fact.get("max_rel_err")
    if err is None:
        return False
    return isinstance(err, str) or float(err) > CAST_TOLERANCE.get(fact.get("dtype", ""), 0.2)


def fp8_weights(facts: Dict[str, Any], env: Target) -> List[Finding]:
    """fp8 weights (OneTrainer FLOAT_8, kohya fp8_base) need torch's float8 dtypes (2.1+)."""
    asked = env.intent.asks("weight_dtype", "fp8") if env.intent is not None else []
    if not asked or facts.get("dtypes"):
        return []
    version = facts.get("torch", "?")
    fallback = env.half
    return [Finding(ID, "config-fp8-weights-no-float8", Severity.ERROR,
                    "%s asks for fp8 weights; torch %s has no float8 dtypes" % (asked[0].where(), version),
                    config_evidence(env.intent, asked) + ("torch %s has none of %s" % (version, ", ".join(MAIN_FLOAT8)),),
                    (config_remedy("Load those weights in %s instead" % fallback, "weights-" + fallback, {"weight_dtype": fallback},
                                   when={"weight_dtype": "fp8"}),
                     pip_remedy("Or upgrade torch: float8 dtypes came in torch 2.1", "torch-upgrade", env, upgrade=["torch"])),
                    dict(config_subject(asked), dtype="fp8"))]


def fp8_training(facts: Dict[str, Any], env: Target) -> List[Finding]:
    """A config that computes in fp8 (accelerate `mixed_precision: fp8`, axolotl `fp8: true`)
    needs a GPU whose fp8 matmul ran here, and a float8 backend installed."""
    asked = env.intent.asks("precision", "fp8") if env.intent is not None else []
    if not asked:
        return []
    setting = asked[0]
    ops = facts.get("ops") or []
    able = [d for d in facts.get("devices") or () if d.get("fp8_matmul_hardware")
            and any(o["op"] == "_scaled_mm" and o["device"] == d["id"] and o.get("ok") for o in ops)]
    evidence = config_evidence(env.intent, asked)
    subject = dict(config_subject(asked), precision="fp8")
    if not able:
        gpus = [d for d in facts.get("devices") or () if "capability" in d]
        seen = ", ".join("%s (%s, compute capability %s)" % (d["id"], d.get("name"), d["capability"]) for d in gpus) or "no CUDA GPU"
        why = "torch %s has no float8 dtypes" % facts.get("torch", "?") if not facts.get("dtypes") else "fp8 matmul ran on no device here"
        fallback = env.half
        return [Finding(ID, "config-fp8-unsupported", Severity.ERROR,
                        "%s asks for fp8 mixed precision; %s" % (setting.where(), why),
                        evidence + ("devices: %s" % seen, "fp8 matmul (torch._scaled_mm) needs compute capability 8.9 or newer (Ada, Hopper, Blackwell)"),
                        (config_remedy("Compute in %s instead: accelerate `mixed_precision: %s`, axolotl `%s: true`" % (fallback, fallback, fallback),
                                       "precision-" + fallback, {"precision": fallback}, when={"precision": "fp8"}),
                         Remedy("Or train on an Ada, Hopper or Blackwell GPU (L4, L40S, RTX 4090, H100, B200), where fp8 matmul runs",
                                kind="manual", id="use-fp8-gpu")),
                        subject)]
    backend = env.intent.effective("fp8_backend") if env.intent is not None else None
    module = FP8_CONFIG_BACKENDS.get(str(backend.value)) if backend is not None and not backend.default else None
    if backend is not None and module is not None and module not in (facts.get("backends") or ()):
        installed = ", ".join(FP8_BACKENDS[m] for m in facts.get("backends") or ()) or "none"
        remedies: List[Remedy] = []
        if module == "torchao":
            remedies.append(pip_remedy("Install torchao, the backend the config names (it needs no build)", "torchao-install", env,
                                       install=["torchao"]))
        else:  # accelerate's fp8_config is reported, not rewritten: which backend to use is the user's call
            remedies.append(Remedy("Install %s (it builds against this torch's CUDA), or name an installed backend in "
                                   "`fp8_config.backend` (AO: torchao, `pip install torchao`)" % FP8_BACKENDS[module],
                                   kind="manual", id="fp8-backend-install"))
        remedies.append(config_remedy("Or compute in bf16: accelerate `mixed_precision: bf16`", "precision-bf16", {"precision": "bf16"},
                                      when={"precision": "fp8"}))
        return [Finding(ID, "config-fp8-backend-missing", Severity.ERROR,
                        "%s names the fp8 backend %s, which is not installed (installed: %s)" % (backend.where(), FP8_BACKENDS[module], installed),
                        evidence + config_evidence(env.intent, [backend]), tuple(remedies), dict(subject, fp8_backend=backend.value))]
    if not facts.get("backends"):
        return [Finding(ID, "config-fp8-no-backend", Severity.ERROR,
                        "%s asks for fp8 mixed precision; no float8 backend is installed (%s)" % (setting.where(), ", ".join(FP8_BACKENDS.values())),
                        evidence + ("fp8 matmul runs on %s" % ", ".join(d["id"] for d in able),),
                        (pip_remedy("Install torchao, the float8 backend that needs no build (accelerate fp8_config backend: AO)",
                                    "torchao-install", env, install=["torchao"]),
                         config_remedy("Or compute in bf16: accelerate `mixed_precision: bf16`", "precision-bf16", {"precision": "bf16"},
                                       when={"precision": "fp8"})),
                        subject)]
    return []


def _mps(ops: List[Dict[str, Any]], env: Target) -> List[Finding]:
    """float8 on Apple's MPS: torch refuses the dtype there ("Trying to convert Float8_e4m3fn to the MPS
    backend but it does not have support for that dtype", aten/src/ATen/native/mps/OperationUtils.mm;
    ComfyUI's fp8 checkpoints on Macs, github.com/Comfy-Org/ComfyUI/issues/6995)."""
    refused = [o for o in ops if o["device"] == "mps" and o["op"] == "cast" and not o.get("ok")]
    if not refused:
        return []
    asked = env.intent.asks("weight_dtype", "fp8") if env.intent is not None and env.intent.runs_on(["mps"]) == "mps" else []
    title = "float8 cannot live on MPS: %s" % ", ".join(sorted({o["dtype"] for o in refused}))
    if asked:
        title = "%s asks for fp8 weights on MPS; MPS has no float8" % asked[0].where()
    return [Finding(ID, "float8-mps", Severity.ERROR if asked else Severity.INFO, title,
                    config_evidence(env.intent, asked) + tuple(sorted({"mps %s: %s" % (o["dtype"], o.get("error")) for o in refused})),
                    (config_remedy("Load those weights in fp16 on the Mac (fp8 checkpoints are upcast when loaded)", "weights-fp16",
                                   {"weight_dtype": "fp16"}, when={"weight_dtype": "fp8"}),),
                    dict(config_subject(asked), device="mps", dtype="fp8"))]


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    findings: List[Finding] = fp8_weights(facts, env) + fp8_training(facts, env)
    version = facts.get("torch", "?")
    if not facts.get("dtypes"):
        return findings + [
            Finding(ID, "no-float8", Severity.INFO, "no float8 dtypes in this torch (%s)" % version,
                    ("torch %s has none of %s" % (version, ", ".join(MAIN_FLOAT8)),),
                    (pip_remedy("fp8 weights need torch 2.1 or later; or load the weights in bf16/fp16", "torch-upgrade", env,
                                upgrade=["torch"]),),
                    {"torch": version})
        ]
    ops = facts.get("ops") or []
    rejected = [o for o in ops if o["op"] == "add" and not o.get("ok")]
    if rejected:
        findings.append(
            Finding(ID, "float8-promotion", Severity.INFO,
                    "float8 does not promote: math between fp8 and fp16/bf16/fp32 tensors fails unless cast first",
                    tuple(sorted({"%s: %s" % (o["device"], o.get("error")) for o in rejected})),
                    PROMOTION_REMEDIES, {"dtypes": sorted({o["dtype"] for o in rejected})})
        )
    wrong = [o for o in ops if o["op"] == "cast" and o.get("ok") and _cast_wrong(o)]
    if wrong:
        findings.append(
            Finding(ID, "cast-wrong-results", Severity.ERROR, "float8 casts return wrong values",
                    tuple("%s %s→%s: max relative error %s" % (o["device"], o["dtype"], o.get("to_dtype"), o.get("max_rel_err")) for o in wrong),
                    (Remedy("Reinstall torch; do not train with fp8 weights on this stack"),), {})
        )
    findings += _mps(ops, env)
    broken_casts = [o for o in ops if o["op"] == "cast" and not o.get("ok") and o["device"] != "mps"]
    if broken_casts:
        findings.append(
            Finding(ID, "cast-fails", Severity.WARNING, "explicit float8 casts fail",
                    tuple("%s %s→%s: %s" % (o["device"], o["dtype"], o.get("to_dtype"), o.get("error")) for o in broken_casts),
                    (Remedy("Keep the weights in bf16 on this device"),), {})
        )
    if not facts.get("scaled_mm"):
        findings.append(
            Finding(ID, "no-scaled-mm", Severity.INFO, "torch._scaled_mm is missing: no fp8 matmul in this torch (%s)" % version,
                    ("hasattr(torch, '_scaled_mm') is False",), (), {})
        )
    for dev in facts.get("devices") or ():
        if "capability" not in dev:
            continue
        mm = [o for o in ops if o["op"] == "_scaled_mm" and o["device"] == dev["id"]]
        if not dev.get("fp8_matmul_hardware"):
            findings.append(
                Finding(ID, "no-fp8-hardware", Severity.INFO,
                        "%s (%s, compute capability %s) cannot run fp8 matmul: fp8 weights are only storage there"
                        % (dev["id"], dev.get("name"), dev["capability"]),
                        ("fp8 matmul (torch._scaled_mm) needs compute capability 8.9 or newer (Ada, Hopper, Blackwell)",),
                        (COMPUTE_BF16,),
                        {"device": dev["id"], "capability": dev["capability"]})
            )
        elif mm and not mm[0].get("ok"):
            findings.append(
                Finding(ID, "scaled-mm-fails", Severity.WARNING,
                        "%s (%s) should run fp8 matmul but torch._scaled_mm fails" % (dev["id"], dev.get("name")),
                        (mm[0].get("error") or "",),
                        (pip_remedy("Upgrade torch to a release whose _scaled_mm supports this GPU", "torch-upgrade", env,
                                    upgrade=["torch"]),),
                        {"device": dev["id"]})
            )
    return findings


def summarize(facts: Dict[str, Any]) -> str:
    if not facts.get("dtypes"):
        return "no float8 dtypes in this torch"
    ops = facts.get("ops") or []
    promo = [o for o in ops if o["op"] == "add"]
    promo_ok = sum(1 for o in promo if o.get("ok"))
    hw = [d for d in facts.get("devices") or () if d.get("fp8_matmul_hardware")]
    parts = [
        "%d float8 dtypes" % len(facts["dtypes"]),
        "promotion %s" % ("rejected" if promo and not promo_ok else "%d/%d accepted" % (promo_ok, len(promo))),
        "_scaled_mm %s" % ("present" if facts.get("scaled_mm") else "missing"),
    ]
    if hw:
        parts.append("fp8 matmul on %s" % ", ".join(d["id"] for d in hw))
    return " · ".join(parts)


KEEP_BF16 = Remedy("Keep the weights in bf16 (or fp16) where they meet other dtypes: store in fp8 only what is cast "
                   "before use", id="base-bf16")
FAST_MODE_OFF = Remedy("Turn the fp8 fast mode off (compute in bf16/fp16), or use a torch built with CUDA 12.1+ on an Ada/Hopper GPU",
                       id="fp8-fast-off")

FLOAT8_MATMUL_MIX = r"(mat1 and mat2|self and mat2) (must|to) have the same dtype[^\n]{0,40}Float8_\w+"

# Any GPU named in a log, from the one name -> capability table (fp8 needs 8.9+; the gate's own words say the rest)
_GPU_NAMES = "|".join(pattern for pattern, _cap in GPU_CAPABILITY_PATTERNS)

# fp8 matmuls asked of a GPU without them, in torch's words or the user's
NO_FP8_MATMUL = "fp8 matmul needs compute capability 8.9+ (Ada, Hopper)"

# GPUs without fp8 matmuls (below compute capability 8.9), by name
_BELOW_ADA = "|".join(pattern for pattern, cap in GPU_CAPABILITY_PATTERNS if cap < (8, 9))

SIGNATURES = (
    # fp8 asked of a GPU without it, told in words in one line ("Flux fp8 モデルが RTX 2080 Ti で動かない", "fp8 training fails on
    # A100"); not a question that only names them
    Signature("no-fp8-hardware", said_with(("fp8", "float8"), _BELOW_ADA, FAILED),
              cause=NO_FP8_MATMUL,
              remedies=(COMPUTE_BF16,)),
    Signature("float8-promotion", r"Promotion for Float8 Types is not supported, attempted to promote (\w+) and (\w+)|"
                                  # (a matmul's own dtype check, float8 weights against bf16 activations: "expected mat1 and
                                  # mat2 to have the same dtype, but got: c10::BFloat16 != c10::Float8_e4m3fn")
                                  + FLOAT8_MATMUL_MIX,
              cause="a float8 tensor met a tensor of another dtype in one operation: torch never promotes float8",
              remedies=PROMOTION_REMEDIES + (KEEP_BF16,)),
    Signature("float8-promotion", r"not implemented for 'Float8_\w+",
              cause="an operation has no kernel for float8: cast to bf16/fp16 before it",
              remedies=PROMOTION_REMEDIES + (KEEP_BF16,)),
    Signature("no-fp8-hardware", r"_scaled_mm is only supported on CUDA devices with compute capability|"
                                 r"torch\._scaled_mm is only supported on (CUDA devices|GPUs|devices) with",
              cause=NO_FP8_MATMUL,
              remedies=(COMPUTE_BF16,)),
    # fp8 matmuls go through cuBLASLt, which refuses them below sm_89 or with a CUDA before 12.1 (torch cu118 wheels;
    # github.com/kijai/ComfyUI-CogVideoXWrapper/issues/136)
    Signature("no-fp8-hardware", r"(?m)CUBLAS_STATUS_NOT_SUPPORTED when calling( `cublasLt|[ \t]*$)|"  # or cut there
                                 # (and however the status is spelled: a translated or retyped log, cublasLt's own call failing)
                                 r"NOT_SUPPORTED when calling .?cublasLt|cublasLt\w+\(.*\) failed",
              context=(r"fp8|float8|Float8|e4m3|_scaled_mm|--fast|fast ?mode",), context_required=True,
              cause="cuBLASLt has no fp8 matmul here: the GPU is below compute capability 8.9, or torch's CUDA is older than 12.1",
              remedies=(FAST_MODE_OFF,)),
    # torch built without the fp8 matmul kernel for its platform (aten/src/ATen/native/cuda/Blas.cpp: "_scaled_mm_out_cuda
    # is not compiled for this platform."): a CUDA before 12.1 build, or a GPU it has no fp8 path for
    # A kernel library naming the fp8 kernel it has none of for this GPU (lmdeploy's turbomind: "No feasible kernel found
    # for the problem: sm75_f16_e4m3b128_f16" on an RTX 2080 Ti; its fix refuses fp8 below sm_89 up front,
    # github.com/InternLM/lmdeploy/pull/4875)
    Signature("no-fp8-hardware", r"(?i:no (feasible|suitable|matching|available) kernel[^\n]{0,80}\bsm_?[1-8]\d\w*(e4m3|e5m2|fp8))",
              cause="the library has no fp8 kernel for this GPU: fp8 matmuls need compute capability 8.9 or newer",
              remedies=(COMPUTE_BF16,)),
    # Transformer Engine's fp8 recipes on a GPU without cuBLAS kernels for them ("Unable to find suitable cuBLAS GEMM
    # algorithm" with MXFP8BlockScaling on an RTX 5090, sm_120; TE now refuses such a recipe up front:
    # github.com/NVIDIA/TransformerEngine/pull/2073)
    Signature("no-fp8-hardware", r"Unable to find suitable cuBLAS GEMM algorithm", context=(r"(?i)\b(mx|nv)?fp[48]|float8",),
              context_required=True,
              cause="cuBLAS has no GEMM for this fp8 recipe on this GPU (Transformer Engine's MXFP8 block scaling needs "
                    "data-center Blackwell, sm_100; per-tensor fp8 needs sm_89+)",
              remedies=(COMPUTE_BF16,)),
    Signature("no-fp8-hardware", r"_scaled_mm\w* is not compiled for this platform",
              cause="this torch has no fp8 matmul (_scaled_mm) for this platform: a build with a CUDA before 12.1, or a GPU "
                    "below compute capability 8.9",
              remedies=(FAST_MODE_OFF,)),
    # CUTLASS's fp8 GEMM behind torch._scaled_mm's row-wise scaling refusing the GPU ("RuntimeError: cutlass cannot
    # initialize": that path is Hopper's, sm_90; github.com/pytorch/pytorch/issues/130359)
    Signature("no-fp8-hardware", r"cutlass cannot initialize", context=(r"_scaled_mm|float8|fp8",), context_required=True,
              cause="torch._scaled_mm's row-wise fp8 path (CUTLASS) runs on Hopper GPUs (sm_90) only",
              remedies=(Remedy("Use tensor-wise fp8 scaling on Ada GPUs (torchao: `Float8LinearConfig` without row-wise "
                               "scaling), or compute in bf16; row-wise scaling needs a Hopper GPU", id="fp8-tensorwise"),
                        COMPUTE_BF16)),
    # ptxas refuses fp8 conversions the target or the PTX version lacks: "Feature 'cvt with .e4m3x2/.e5m2x2 on sm_89'
    # requires PTX ISA .version 8.1 or later" (a Triton that capped PTX at 8.0; github.com/triton-lang/triton/pull/3910)
    # or "... requires .target sm_89 or higher" on an older GPU (PTX ISA notes, cvt: e4m3x2/e5m2x2 need sm_89)
    Signature("no-fp8-hardware", r"Feature '[^']*e[45]m[23]x2[^']*' requires (PTX ISA \.version|\.target sm_)",
              cause="the GPU compiler refused fp8 conversions: the GPU is below sm_89, or the Triton that ships with this "
                    "torch emits too old a PTX version for them",
              remedies=(Remedy("Upgrade torch (and the Triton it pins) on an Ada/Hopper GPU, or compute in bf16/fp16", id="triton-upgrade"),)),
    Signature("float8-mps", r"Trying to convert Float8_\w+ to the MPS backend",
              cause="Apple's MPS has no float8 dtype: fp8 weights cannot be moved to the Mac's GPU",
              remedies=(Remedy("Load fp8 checkpoints as fp16 on a Mac (ComfyUI `--fp16-unet`, diffusers `torch_dtype=torch.float16`), "
                               "or use a bf16/fp16 release of the model", id="weights-fp16"),)),
    # Triton compiles fp8 (e4m3, "fp8e4nv") for sm_89+ only: "type fp8e4nv not supported in this architecture. The supported
    # fp8 dtypes are ('fp8e4b15', 'fp8e5')"; Transformer Engine: "Device compute capability 8.9 or higher required for FP8
    # execution" (older: "9.x required"); newer Triton: "fp8e4nv data type is not supported on CUDA arch < 89"; vLLM's guard:
    # "The quantization method fp8 is not supported for the current GPU. Minimum capability: 90. Current capability: 86."
    Signature("no-fp8-hardware", r"type fp8e4nv not supported in this architecture|fp8e4nv data type is not supported on CUDA arch|"
                                 r"[Dd]evice compute capability (8\.9|9\.\w) (or higher )?required for FP8|"
                                 r"quantization method fp8 is not supported for the current GPU|"
                                 # Triton's tl.dot on a target without fp8 MMA ("AssertionError: Unsupported lhs dtype fp8e4nv"),
                                 # and a CUTLASS fp8 MMA compiled without it ("cutlass::arch::Mma<..., cutlass::float_e4m3_t,
                                 # ...> ... not implemented": a build whose arch list lacks sm_89)
                                 r"Unsupported [lr]hs dtype fp8e\w+|cutlass::arch::Mma<[^\n]*float_e[45]m[23]_t[^\n]*not implemented|"
                                 # transformers' fp8 quantizers (quantizers/quantizer_fbgemm_fp8.py raises for < 9.0;
                                 # quantizer_finegrained_fp8.py raised for < 8.9, newer releases dequantize to bf16)
                                 r"FP8 quantized models is only supported on GPUs with compute capability >= (8\.9|9\.0)",
              cause="fp8 kernels (Triton, Transformer Engine, vLLM, transformers' fp8 quantizers) need compute capability 8.9 or newer "
                    "(Ada, Hopper, Blackwell)",
              remedies=(COMPUTE_BF16,)),
    # ROCm: torch's own gate on the ROCm release ("Float8_e4m3fn is only supported for ROCm 6.5 and above"), and
    # MI300 (gfx942), whose float8 is the fnuz variant: "Cannot convert ScalarType Float8_e4m3fn to hipDataType"
    Signature("no-fp8-hardware", r"Float8_e4m3fn\w* is only supported for ROCm|Cannot convert ScalarType Float8_\w+ to hipDataType",
              cause="this ROCm build of torch has no kernel for this float8 variant here (the ROCm release gates e4m3fn; MI300 "
                    "GPUs compute in the fnuz variants, torch.float8_e4m3fnuz)",
              remedies=(Remedy("On ROCm, use the float8 variant the GPU has (MI300: torch.float8_e4m3fnuz; torchao configs take "
                               "the dtype) or a torch built for a newer ROCm; else load the weights in bf16", id="rocm-fp8-variant"),
                        COMPUTE_BF16)),
    # and the converse on NVIDIA: the fnuz variants are AMD MI300's, and torch's CUDA build has no cuBLAS type for them
    # ("false INTERNAL ASSERT FAILED at .../ATen/cuda/CUDADataType.h ... Cannot convert ScalarType Float8_e4m3fnuz to
    # cudaDataType", as torch 2.11 raised it on an H200: tests/fixtures/measurements/h200-failures/)
    Signature("float8-variant", r"Cannot convert ScalarType Float8_\w+fnuz to cudaDataType", in_code=True,
              cause="the code asked an NVIDIA GPU for AMD's float8 variant (fnuz): NVIDIA GPUs compute in the OCP variants, "
                    "torch.float8_e4m3fn and torch.float8_e5m2",
              remedies=(Remedy("On NVIDIA GPUs use torch.float8_e4m3fn (weights, activations) or torch.float8_e5m2 (gradients); "
                               "the fnuz variants are for AMD MI300", id="nvidia-fp8-variant"),)),
    # torch._scaled_mm's operand rules (aten/src/ATen/native/cuda/Blas.cpp): the first operand row-major and the second
    # column-major ("Only multiplication of row-major and column-major matrices is supported by cuBLASLt", as an H200 said it
    # for a weight passed row-major: tests/fixtures/measurements/h200-failures/), both dimensions multiples of 16 ("mat2 shape
    # (896x2389) must be divisible by 16"; torch 2.11: "Expected trailing dimension of mat1 to be divisible by 16"), and never
    # two e5m2 operands ("Multiplication of two Float8_e5m2 matrices is not supported"): the code that called it broke one
    Signature("scaled-mm-operands", r"Only multiplication of row-major and column-major matrices is supported by cuBLASLt|"
                                    r"\bmat[12] shape \(\d+x\d+\) must be divisible by 16|"
                                    r"Expected (trailing|both) dimensions? of mat[12] to be divisible by 16|"
                                    r"Multiplication of two Float8_e5m2 matrices is (not supported|unsupported)", in_code=True,
              cause="torch._scaled_mm was called against its operand rules: the first operand row-major and the second "
                    "column-major, every dimension a multiple of 16, at most one operand in e5m2",
              remedies=(Remedy("Pass a row-major (out, in) weight as `w.t()`, a transposed view with no `.contiguous()` after "
                               "it; pad dimensions to multiples of 16 (or keep such layers in bf16); quantize one operand to "
                               "e4m3 - or let torchao's Float8Linear call it", id="scaled-mm-operands"),)),
    # Read weakest, by structure rather than one tool's words: one line that names fp8, a GPU's capability or architecture,
    # and a gate ("FP8 is only supported on GPUs with compute capability >= 8.9", "fp8 requires an Ada or Hopper GPU") -
    # and no adapter, which is dora-fp8's reading of the same words
    # (a GPU named by its model counts as the device: "Does it mean that 3090 no longer supports FP8?"; so does fp8's own
    # threshold and AMD's fp8 GPUs: torchao's "Float8 dynamic activation quantization is only supported on CUDA>=8.9 and
    # MI300+", github.com/vllm-project/vllm/issues/36805)
    Signature("no-fp8-hardware", r"(?i)^(?!.*?\b(q?lora|dora|adapter)s?\b)(?=.*?(fp8|float8|e4m3|e5m2))"
                                 r"(?=.*?(compute capability|\bcapability\b|\bsm_?\d{2,3}\b|\bcc ?\d|\barch\b|architecture|\bgpus?\b|"
                                 # (but not cuDNN's or a library's version: "requires cuDNN >= 8.9"; and the threshold as
                                 # get_device_capability()'s tuple: ">= (8, 9)")
                                 r"(?<!cudnn )(?<!cudnn >= )(?<!cudnn>=)(?<!version )(?<![\d.])8\.9(?![\d.])|\(8, ?9\)|"
                                 r"get_device_capability|\bMI3\d\d|"
                                 r"\bhardware\b|\bampere\b|\bada\b|\bhopper\b|%s))(?=.*?(not supported|unsupported|only supported|"
                                 r"\brequires?\b|\brequired\b|\bminimum\b|\bat least\b|>=|not available|does(n't| not) support|"
                                 r"no longer supports?))" % _GPU_NAMES,
              cause="fp8 kernels need compute capability 8.9 or newer (Ada, Hopper, Blackwell), and a torch/CUDA built for them",
              remedies=(COMPUTE_BF16,)),
    # (and kohya's sd-scripts saying it before it loads the base: "fp8_base requires torch>=2.1.0", train_network.py)
    Signature("no-float8", r"module 'torch' has no attribute 'float8_\w+'|fp8_base requires torch>=2\.1",
              cause="this torch predates float8 dtypes (2.1)",
              remedies=(Remedy("fp8 weights need torch 2.1 or later; or load the weights in bf16/fp16", id="torch-upgrade"),)),
)

CHECK = Check(
    id=ID,
    title="float8",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    order=30,
    signatures=SIGNATURES,
)
