"""bf16-support: does each GPU compute bfloat16 natively, only through emulation,
or not at all?

Native bf16 needs compute capability 8.0 (Ampere) or newer (docs/facts.md §2).
Below that, torch's `torch.cuda.is_bf16_supported()` still returns True when a
bf16 tensor can merely be created ("emulation", docs/facts.md §2, torch v2.9.1
`torch/cuda/__init__.py`), and transformers' `is_torch_bf16_gpu_available()` is
just that call in recent releases, so `bf16=True` on a T4 or V100 is accepted and
runs slowly; older GPUs (P100, M40) fail the bf16 GEMM outright with
`CUBLAS_STATUS_NOT_SUPPORTED` (github.com/pytorch/pytorch/issues/57773,
github.com/opendatalab/MinerU/issues/1508). The probe therefore runs a real bf16
matmul on every CUDA device, compares it with fp32, and times it against fp16
and fp32. The CPU's bf16 kernels are the cpu-half-kernels check's subject; this
check records only whether one CPU bf16 matmul works.
"""

from __future__ import annotations

import re
import time
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.target.cuda_tables import GPU_CAPABILITY_PATTERNS
from envdoctor.target.intent import config_evidence, config_subject, dtype_names
from envdoctor.target.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, Target, available_devices
from envdoctor.target.platform.menus import bf16_gpu_step
from envdoctor.target.probekit.gpus import capability_tuple, device_index, identity
from envdoctor.target.probekit.ops import randn, run_op, seeded_generator
from envdoctor.target.probekit.steps import step
from envdoctor.target.probekit.text import dedupe, error_text
from envdoctor.target.prose import FAILED, said_with
from envdoctor.target.remedies.actions import config_remedy, pip_remedy

ID = "bf16-support"
NATIVE_CC = (8, 0)  # docs/facts.md §2: "BF16 requires compute capability 8.0 or higher"
MATMUL_N = 256  # the correctness matmul (vs fp32 on the same rounded inputs)
CPU_N = 64  # the CPU sanity matmul: milliseconds even without native CPU bf16
# Timing size: at 256 a matmul is a few microseconds on any GPU and the numbers are
# kernel-launch overhead; at 1024 emulated bf16 separates clearly from fp16 and
# still costs well under a millisecond per rep on a T4.
TIMING_N = 1024
TIMING_WARMUP = 2
TIMING_REPS = 10
TIMING_DTYPES = ("float32", "float16", "bfloat16")
# Failures that say bf16 itself is missing, and failures of the device in general.
_BF16_SPECIFIC = re.compile(r"BFloat16|CUDA_R_16BF|bf16|bfloat16", re.IGNORECASE)
_GENERIC = re.compile(r"out of memory|CUBLAS_STATUS_(NOT_INITIALIZED|ALLOC_FAILED)|CUDA error|CUDA driver|cudaError|device-side assert",
                      re.IGNORECASE)
# bf16 keeps 8 mantissa bits: its output rounding alone is ~4e-3 of the value; garbage is O(1).
TOLERANCE = 8e-2


# ---------------------------------------------------------------- probe


def _guard(fn: Any) -> Tuple[Any, Optional[str]]:
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001 - a failing query is a fact
        return None, error_text(exc)


def _matmul(torch: Any, n: int, device: str, dt: Any, seed: int) -> Tuple[Any, Any]:
    gen = seeded_generator(torch, seed)
    a, b = randn(torch, gen, n, n), randn(torch, gen, n, n)

    def fn() -> Any:
        return torch.matmul(a.to(device=device, dtype=dt), b.to(device=device, dtype=dt))

    def ref() -> Any:
        return torch.matmul(a.to(dt).float(), b.to(dt).float())

    return fn, ref


def _time(torch: Any, device: str) -> Dict[str, Any]:
    """Milliseconds per TIMING_N² matmul for fp32, fp16 and bf16 (after a warm-up)."""
    timing: Dict[str, Any] = {"n": TIMING_N, "reps": TIMING_REPS, "ms": {}, "errors": {}}
    tf32, _ = _guard(lambda: bool(torch.backends.cuda.matmul.allow_tf32))
    timing["tf32"] = tf32
    gen = seeded_generator(torch, 46)
    base_a, base_b = randn(torch, gen, TIMING_N, TIMING_N), randn(torch, gen, TIMING_N, TIMING_N)
    for name in TIMING_DTYPES:
        dt = getattr(torch, name)
        try:
            a, b = base_a.to(device=device, dtype=dt), base_b.to(device=device, dtype=dt)
            for _ in range(TIMING_WARMUP):
                torch.matmul(a, b)
            torch.cuda.synchronize(device)
            start = time.perf_counter()
            for _ in range(TIMING_REPS):
                torch.matmul(a, b)
            torch.cuda.synchronize(device)
            timing["ms"][name] = float("%.4g" % ((time.perf_counter() - start) * 1000.0 / TIMING_REPS))
            del a, b
        except Exception as exc:  # noqa: BLE001
            timing["errors"][name] = error_text(exc)
    return timing


def _probe_device(torch: Any, device: str, index: int, info: Dict[str, Any], ops: List[Dict[str, Any]]) -> None:
    with step("reading the identity of %s" % device, device=device):
        ident = identity(torch, device)
    info["name"], info["capability"] = ident["name"], ident["capability"]
    if ident.get("error"):  # not "error": that key means the bf16 probe itself failed
        info["identity_error"] = ident["error"]
    bf16 = torch.bfloat16
    with torch.cuda.device(index), step("asking torch about bf16 on %s" % device, device=device):
        # is_bf16_supported() asks about the *current* device
        info["is_bf16_supported"], err = _guard(lambda: bool(torch.cuda.is_bf16_supported()))
        if err:
            info["is_bf16_supported_error"] = err
        try:
            info["is_bf16_supported_native"] = bool(torch.cuda.is_bf16_supported(including_emulation=False))
            info["including_emulation_keyword"] = True
        except TypeError:  # an older torch without the keyword: there the plain call is the strict one
            info["is_bf16_supported_native"] = None
            info["including_emulation_keyword"] = False
        except Exception as exc:  # noqa: BLE001
            info["is_bf16_supported_native"] = None
            info["including_emulation_keyword"] = True
            info["is_bf16_supported_native_error"] = error_text(exc)
    with torch.cuda.device(index):
        ops.append(run_op(torch, "tensor", device, "bfloat16", lambda: torch.ones(4, dtype=bf16, device=device)))
        fn, ref = _matmul(torch, MATMUL_N, device, bf16, 45)
        matmul = run_op(torch, "matmul", device, "bfloat16", fn, ref, shape=[MATMUL_N, MATMUL_N, MATMUL_N])
        ops.append(matmul)
        if matmul["ok"] and _timing_is_evidence(info):
            with step("timing fp32/fp16/bf16 matmuls on %s" % device, device=device):
                info["timing"] = _time(torch, device)


def _timing_is_evidence(info: Dict[str, Any]) -> bool:
    """The timing is evidence for one finding alone, bf16-emulated: a GPU native by its capability, and not
    refuted by torch's strict answer, is not timed (0.25 s a GPU on an H200, each dtype's first cuBLAS
    kernels loaded for it; tests/fixtures/measurements/h200-check-times-stop47.txt)."""
    return (_cc(info) or (0, 0)) < NATIVE_CC or info.get("is_bf16_supported_native") is False


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    facts: Dict[str, Any] = {
        "torch": torch.__version__,
        "cuda_build": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "devices": [],
        "ops": [],
    }
    bf16 = getattr(torch, "bfloat16", None)
    if bf16 is None:
        facts["no_bfloat16"] = True
        return facts
    fn, ref = _matmul(torch, CPU_N, "cpu", bf16, 44)
    facts["cpu"] = run_op(torch, "matmul", "cpu", "bfloat16", fn, ref, shape=[CPU_N, CPU_N, CPU_N])
    if "mps" in ctx.select_devices(torch):  # Apple's GPU: bf16 needs macOS 14 and a torch that knows it
        fn, ref = _matmul(torch, CPU_N, "mps", bf16, 46)
        facts["mps"] = [run_op(torch, "tensor", "mps", "bfloat16", lambda: torch.ones(4, dtype=bf16, device="mps")),
                        run_op(torch, "matmul", "mps", "bfloat16", fn, ref, shape=[CPU_N, CPU_N, CPU_N])]
    devices = [d for d in ctx.select_devices(torch) if d.startswith("cuda")]
    if not devices:
        facts["cuda_seen"] = [d for d in available_devices(torch) if d.startswith("cuda")] if ctx.devices is not None else []
        return facts
    for device in devices:
        index = device_index(device)
        info: Dict[str, Any] = {"id": device, "index": index}
        facts["devices"].append(info)
        try:
            _probe_device(torch, device, index, info, facts["ops"])
        except Exception as exc:  # noqa: BLE001 - one broken GPU must not hide the others
            info["error"] = error_text(exc)
            info["error_type"] = type(exc).__name__
    return facts


# ---------------------------------------------------------------- rules


def _cc(dev: Dict[str, Any]) -> Optional[Tuple[int, int]]:
    return capability_tuple(dev.get("capability"))


def _op(ops: List[Dict[str, Any]], device: str, op: str) -> Optional[Dict[str, Any]]:
    for o in ops:
        if o.get("device") == device and o.get("op") == op:
            return o
    return None


def _garbage(fact: Optional[Dict[str, Any]]) -> bool:
    if not fact or not fact.get("ok"):
        return False
    err = fact.get("max_rel_err")
    if err is None:
        return False
    if isinstance(err, str):  # "nan" / "inf": not finite
        return True
    return float(err) != float(err) or float(err) > TOLERANCE


def _errors(facts: Dict[str, Any], dev: Dict[str, Any]) -> List[str]:
    ops = facts.get("ops") or []
    tensor = _op(ops, dev["id"], "tensor")
    matmul = _op(ops, dev["id"], "matmul")
    errors = [dev.get("error"), (tensor or {}).get("error"), (matmul or {}).get("error")]
    if not matmul and not dev.get("error"):
        errors.append("no bf16 matmul was run")
    return dedupe([str(e) for e in errors if e])


def mode(facts: Dict[str, Any], dev: Dict[str, Any]) -> str:
    """"native", "emulated" or "none" for one CUDA device; "unknown" when the device failed
    for a reason that is not about bf16 (out of memory, cuBLAS not starting: the cublas and
    device-memory findings report those once)."""
    errors = _errors(facts, dev)
    if errors:
        if not any(_BF16_SPECIFIC.search(e) for e in errors) and any(_GENERIC.search(e) for e in errors):
            return "unknown"
        return "none"
    if facts.get("hip"):  # ROCm reports gfx versions as "capability"; bf16 is native on every supported AMD GPU
        return "native"
    cc = _cc(dev)
    if cc is None:
        return "native" if dev.get("is_bf16_supported_native") else "emulated"
    return "native" if cc >= NATIVE_CC else "emulated"


def _label(dev: Dict[str, Any]) -> str:
    return "%s %s%s" % (dev["id"], dev.get("name") or "unknown GPU",
                        " (compute capability %s)" % dev["capability"] if dev.get("capability") else "")


def _precision_remedies(dev: Dict[str, Any], env: Target) -> Tuple[Remedy, ...]:
    return (
        config_remedy("Compute in fp16 with loss scaling instead: accelerate `mixed_precision: fp16`, transformers `fp16=True` "
                      "(and `bf16=False`), OneTrainer `train_dtype: FLOAT_16`, vLLM `--dtype half`",
                      "precision-fp16", {"precision": "fp16"}, when={"device": dev["id"], "precision": "bf16"}),
        config_remedy("Or compute in fp32 (slowest, most memory, no overflow risk): accelerate `mixed_precision: no`, "
                      "transformers `fp16=False, bf16=False`",
                      "precision-fp32", {"precision": "fp32"}, when={"device": dev["id"], "precision": "bf16"}),
        Remedy("Or move to an Ampere or newer GPU (compute capability 8.0+: A100, A10G, L4, RTX 30xx/40xx, H100); %s"
               % bf16_gpu_step(env.where), kind="manual", id="use-ampere-gpu"),
    )


def _support_evidence(dev: Dict[str, Any]) -> List[str]:
    out = []
    if dev.get("is_bf16_supported") is not None:
        out.append("torch.cuda.is_bf16_supported() = %s" % dev["is_bf16_supported"])
    if dev.get("including_emulation_keyword"):
        if dev.get("is_bf16_supported_native") is not None:
            out.append("torch.cuda.is_bf16_supported(including_emulation=False) = %s" % dev["is_bf16_supported_native"])
    elif dev.get("including_emulation_keyword") is False:
        out.append("this torch has no is_bf16_supported(including_emulation=...) keyword")
    if dev.get("is_bf16_supported") and dev.get("is_bf16_supported_native") is False:
        out.append("is_bf16_supported() is True only because a bf16 tensor can be created (emulation); "
                   "transformers and accelerate accept bf16 on that answer")
    return out


def _timing_evidence(dev: Dict[str, Any]) -> List[str]:
    timing = dev.get("timing") or {}
    ms = timing.get("ms") or {}
    if "bfloat16" not in ms:
        return []
    parts = ["%s %.3g ms" % (name, ms[name]) for name in TIMING_DTYPES if name in ms]
    text = "%d×%d matmul: %s" % (timing.get("n", TIMING_N), timing.get("n", TIMING_N), ", ".join(parts))
    if ms.get("float16"):
        text += " (bf16 takes %.1f× the fp16 time)" % (float(ms["bfloat16"]) / float(ms["float16"]))
    return [text]


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    if facts.get("no_bfloat16"):
        return [Finding(ID, "no-bfloat16", Severity.WARNING, "torch %s has no bfloat16 dtype" % facts.get("torch"),
                        ("hasattr(torch, 'bfloat16') is False",),
                        (pip_remedy("Use fp16 or fp32, or upgrade torch", "torch-upgrade", env, upgrade=["torch"]),), {})]
    devices = facts.get("devices") or []
    mps = _mps(facts, env)
    if not devices:
        return mps + [_no_cuda(facts)]
    findings: List[Finding] = mps
    ops = facts.get("ops") or []
    for dev in devices:
        kind = mode(facts, dev)
        matmul = _op(ops, dev["id"], "matmul")
        subject = {"device": dev["id"], "name": dev.get("name"), "capability": dev.get("capability"), "dtype": "bfloat16", "bf16": kind}
        label = _label(dev)
        if kind == "emulated":
            findings.append(
                Finding(ID, "bf16-emulated", Severity.WARNING,
                        "%s has no native bf16: bf16 runs emulated and slow" % label,
                        ("native bf16 needs compute capability 8.0 (Ampere) or newer", *_support_evidence(dev), *_timing_evidence(dev),
                         "bf16 %d×%d matmul works: max relative error %s vs fp32"
                         % (MATMUL_N, MATMUL_N, (matmul or {}).get("max_rel_err"))),
                        _precision_remedies(dev, env), subject)
            )
        elif kind == "unknown":
            findings.append(
                Finding(ID, "bf16-not-judged", Severity.INFO,
                        "%s: bf16 support not judged, the GPU failed for another reason (see the cublas / device-memory findings)" % label,
                        tuple("%s: %s" % (dev["id"], e) for e in _errors(facts, dev)), (), subject)
            )
        elif kind == "none":
            errors = _errors(facts, dev)
            native_capable = facts.get("hip") or (_cc(dev) or (0, 0)) >= NATIVE_CC
            if native_capable:
                title = "%s should run bf16 natively, but bf16 fails there" % label
                code = "bf16-fails"
            else:
                title = "%s has no native bf16, and bf16 fails there (not even emulated)" % label
                code = "bf16-unsupported"
            findings.append(
                Finding(ID, code, Severity.ERROR, title,
                        tuple(["%s bf16: %s" % (dev["id"], e) for e in errors] + _support_evidence(dev)),
                        _precision_remedies(dev, env) + ((Remedy("Run `envdoctor check --only cublas` on this GPU: a bf16 GEMM failing on an "
                                                            "Ampere+ GPU points at cuBLAS or the torch build", id="check-cublas"),)
                                                    if native_capable else ()),
                        subject)
            )
        if _garbage(matmul):
            findings.append(
                Finding(ID, "bf16-wrong-results", Severity.ERROR, "%s: bf16 matmul runs but returns wrong numbers" % label,
                        ("%s bf16 %d×%d matmul: max relative error %s vs fp32 (tolerance %g)"
                         % (dev["id"], MATMUL_N, MATMUL_N, (matmul or {}).get("max_rel_err"), TOLERANCE),),
                        _precision_remedies(dev, env)[:2], subject)
            )
    return findings


# torch gates bf16 on MPS by the OS: "MPS BFloat16 is only supported on MacOS 14 or newer" (a TypeError from
# aten/src/ATen/mps, pytorch/pytorch); older releases said "BFloat16 is not supported on MPS".
MPS_BF16 = ("Use fp16 or fp32 on MPS (`--bf16 false --fp16 true`, `torch_dtype=torch.float16`, OneTrainer `FLOAT_16`), "
            "or update macOS to 14 (Sonoma) or newer")


def _mps(facts: Dict[str, Any], env: Target) -> List[Finding]:
    """bf16 on Apple's MPS: the ops run there, or fail as they do before macOS 14."""
    bad = [o for o in facts.get("mps") or () if not o.get("ok") or _garbage(o)]
    if not bad:
        return []
    accelerators = ["mps"]
    asked = env.intent.asks_dtype("bf16") if env.intent is not None and env.intent.runs_on(accelerators) == "mps" else []
    title = "bf16 fails on MPS (%s)" % ", ".join(o["op"] for o in bad)
    if asked:
        title = "%s asks for bf16 on MPS; bf16 fails there" % asked[0].where()
    names = dtype_names(asked)
    return [Finding(ID, "bf16-mps", Severity.ERROR if asked else Severity.WARNING, title,
                    config_evidence(env.intent, asked) + tuple("mps bf16 %s: %s" % (o["op"], o.get("error") or
                                                               "max relative error %s vs fp32" % o.get("max_rel_err")) for o in bad),
                    (config_remedy(MPS_BF16, "mps-fp16", {n: "fp16" for n in names}, when=dict({n: "bf16" for n in names}, device="mps")),
                     pip_remedy("Upgrade torch as well: releases older than the macOS 14 gate have no bf16 on MPS at all",
                                "torch-upgrade", env, upgrade=["torch"])),
                    dict({"device": "mps", "dtype": "bfloat16"}, **config_subject(asked)))]


def _cpu_text(facts: Dict[str, Any]) -> str:
    cpu = facts.get("cpu") or {}
    if not cpu:
        return "CPU bf16 matmul not run"
    if cpu.get("ok"):
        return "CPU bf16 matmul ok (max rel err %s)" % cpu.get("max_rel_err")
    return "CPU bf16 matmul fails: %s" % cpu.get("error")


def _no_cuda(facts: Dict[str, Any]) -> Finding:
    seen = facts.get("cuda_seen") or []
    if seen:
        return Finding(ID, "no-cuda-selected", Severity.INFO, "no CUDA device selected: bf16 support not probed on GPUs",
                       ("CUDA devices present but not selected: %s" % ", ".join(seen), _cpu_text(facts)), (), {})
    if facts.get("cuda_build") is None and not facts.get("hip"):
        why = "torch %s is a CPU-only build (torch.version.cuda is None)" % facts.get("torch")
    else:
        why = "torch %s is built for CUDA %s but torch.cuda.is_available() is False" % (facts.get("torch"), facts.get("cuda_build"))
    return Finding(ID, "no-cuda-device", Severity.INFO, "no CUDA device: bf16 support is checked on CUDA GPUs only",
                   (why, _cpu_text(facts), "CPU bf16 kernels are covered by the cpu-half-kernels check"), (), {})


def summarize(facts: Dict[str, Any]) -> str:
    if facts.get("no_bfloat16"):
        return "no bfloat16 dtype in this torch"
    devices = facts.get("devices") or []
    if not devices:
        head = "no CUDA device selected" if facts.get("cuda_seen") else "no CUDA device"
        return "%s · GPUs only; %s" % (head, _cpu_text(facts))
    parts = []
    for dev in devices:
        cap = " (%s)" % dev["capability"] if dev.get("capability") else ""
        kind = mode(facts, dev)
        parts.append("%s%s bf16 %s" % (dev["id"], cap, "not judged (the GPU failed)" if kind == "unknown" else kind))
    return " · ".join(parts)


# How missing bf16 reads in tracebacks (sources in the comments):
# What `explain` can say from a traceback alone; the live findings measure this machine's GPUs.
BF16_REMEDIES = (
    Remedy("Use fp16 on this GPU (accelerate `--mixed_precision fp16`, transformers `fp16=True`, vLLM `--dtype half`), or "
           "fp32", id="precision-fp16"),
    Remedy("Or move to an Ampere or newer GPU (compute capability 8.0+: A100, A10G, L4, RTX 30xx/40xx, H100)", id="use-ampere-gpu"),
)

# The GPUs named in a log that have no native bf16 (compute capability below 8.0), from the one name -> capability table
_BELOW_AMPERE = "|".join(pattern for pattern, cap in GPU_CAPABILITY_PATTERNS if cap < NATIVE_CC)

# bf16 asked of a GPU by name below sm_80, in a raised error or in words
BF16_BELOW_AMPERE = "bf16 was asked of a GPU without native bf16 (compute capability below 8.0: Pascal, Volta, Turing)"

SIGNATURES = (
    # torch's own answer told in words: "torch.cuda.is_bf16_supported() returned False" (-> False, is False)
    Signature("bf16-unsupported", r"(?i:\bis_bf16_supported\(\)`?\s*(is |returns? |returned |returning |gives? |still |always "
                                  r"|->\s*|=\s*|:\s*)*`?False\b)",
              cause="torch reports no native bf16 on this GPU (compute capability below 8.0, or a build or driver without it)",
              remedies=BF16_REMEDIES),
    # vLLM: vllm/worker/worker.py `_check_if_gpu_supports_dtype` (github.com/vllm-project/vllm), e.g.
    # "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has
    # compute capability 7.5." (github.com/vllm-project/vllm/issues/1157, /issues/946)
    # (or only the message's end, where a paste lost its start: "... You can use float16 instead by explicitly setting the
    # `dtype` flag in CLI, for example: --dtype=half.")
    Signature("bf16-unsupported", r"(?i)bfloat16 is only supported on GPUs with compute capability of at least 8\.0|"
                                  r"You can use float16 instead by explicitly setting the ?`dtype` flag",
              cause="the GPU has compute capability below 8.0 (no native bf16); use fp16 (`--dtype half`) or fp32",
              remedies=BF16_REMEDIES),
    # transformers TrainingArguments._validate_args (src/transformers/training_args.py, huggingface/transformers @ 00349ae8):
    # "Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to train the model on CPU."
    # + " You need Ampere+ GPU with cuda>=11.0."; older releases: "Your setup doesn't support bf16/gpu. You need
    # torch>=1.10, using Ampere GPU with cuda>=11.0".
    Signature("bf16-unsupported", r"Your setup doesn't support bf16/(gpu|\(cpu, tpu, neuroncore\))",
              cause="transformers found no bf16-capable accelerator (pre-Ampere GPU with an older transformers/torch, "
                    "or no CUDA at all) while bf16=True",
              remedies=BF16_REMEDIES),
    # accelerate Accelerator.__init__ (src/accelerate/accelerator.py, huggingface/accelerate):
    # "bf16 mixed precision requires PyTorch >= 1.10 and a supported device."
    Signature("bf16-unsupported", r"bf16 mixed precision requires PyTorch >= 1\.10( and a supported device)?",
              cause="accelerate's `mixed_precision: bf16` on a device where torch reports no bf16 support",
              remedies=BF16_REMEDIES),
    # Pre-Ampere GPUs whose cuBLAS has no bf16 GEMM (P100 sm_60, M40 sm_52):
    # github.com/pytorch/pytorch/issues/57773, github.com/opendatalab/MinerU/issues/1508
    Signature("bf16-unsupported", r"CUBLAS_STATUS_NOT_SUPPORTED when calling `cublas\w*\(.*CUDA_R_16BF",
              cause="cuBLAS on this GPU has no bf16 GEMM (compute capability below 7.x); use fp16 or fp32",
              remedies=BF16_REMEDIES),
    # torch 1.x CUDA 10.x builds had no bf16 GEMM at all (github.com/pytorch/pytorch/issues/67682)
    Signature("bf16-unsupported", r"at::cuda::blas::gemm: not implemented for .*BFloat16",
              cause="this torch build (CUDA 10.x) has no bf16 GEMM; upgrade to a CUDA 11+ build or use fp16",
              remedies=BF16_REMEDIES),
    # A CUDA kernel without a bf16 instantiation, e.g. "max_all_cuda", "replication_pad1d_cuda",
    # "_thnn_fused_gru_cell_cuda" (github.com/pytorch/pytorch/issues/99433, /issues/116763).
    Signature("bf16-unsupported", r"\"\w*cuda\w*\" not implemented for 'BFloat16'",
              cause="this torch has no CUDA bf16 kernel for the operation (older torch, or an op without bf16 coverage)",
              remedies=BF16_REMEDIES),
    # torch.autocast on a GPU without bf16 (torch/amp/autocast_mode.py, pytorch/pytorch): "Current CUDA Device does
    # not support bfloat16. Please switch dtype to float16." (github.com/karpathy/nanoGPT/pull/277)
    Signature("bf16-unsupported", r"Current CUDA Device does not support (bfloat16|BFloat16)|"
                                  # torch.compile's own warning for a GPU below sm_80 ("NVIDIA GeForce RTX 2060 does not support
                                  # bfloat16 compilation natively, skipping")
                                  r"does not support bfloat16 compilation natively",
              cause="autocast was asked for bf16 on a GPU without it (compute capability below 8.0)", remedies=BF16_REMEDIES),
    # transformers' guard for TF32, Ampere's other precision: "--tf32 requires Ampere or a newer GPU arch, cuda>=11 and torch>=1.7"
    Signature("bf16-unsupported", r"--tf32 requires Ampere or a newer GPU arch",
              cause="TF32 (like bf16) needs an Ampere or newer GPU (compute capability 8.0+)",
              remedies=(Remedy("Turn tf32 off (`--tf32 false`) on this GPU, or move to an Ampere or newer GPU", id="tf32-off"),)),
    # xformers' dispatcher lists why each kernel was refused: "bf16 is only supported on A100+ GPUs"
    # (github.com/XLabs-AI/x-flux-comfyui/issues/24); Triton's ptxas refuses bf16 PTX below sm_80:
    # "Feature '.bf16' requires .target sm_80 or higher" (however a UI retells it: "'.bf16' requires .target sm_80 or higher
    # - Error -"); and LLVM finding no instruction for a bf16 intrinsic on the GPU's ISA ("LLVM ERROR: Cannot select:
    # intrinsic %llvm.amdgcn.fdot2.bf16.bf16", RDNA2 without bf16 arithmetic: github.com/unslothai/unsloth/issues/7922)
    Signature("bf16-unsupported", r"bf16 is only supported on A100\+ GPUs|'\.bf16' requires \.target sm_80|"
                                  r"LLVM ERROR: Cannot select: [^\n]*\bbf16\b",
              cause="a kernel library or compiler (xformers, Triton, LLVM) has no bf16 code for this device: a GPU below "
                    "compute capability 8.0, an AMD GPU without bf16 arithmetic, or a CPU backend without it",
              remedies=BF16_REMEDIES),
    # torch's memory-efficient attention finds no cutlass kernel for the dtype on this GPU: it has no bf16 kernels
    # below sm_80 (aten/src/ATen/native/transformers/cuda/mem_eff_attention/kernels/cutlassF.h; V100 and T4 in
    # github.com/meta-pytorch/gpt-fast/issues/49, where float16 works)
    Signature("bf16-unsupported", r"cutlassF: no kernel found to launch",
              unless=(r"xFormers wasn't built with CUDA|not built with CUDA support",),
              cause="scaled_dot_product_attention's memory-efficient kernel has no bf16 kernel below compute capability "
                    "8.0 (V100, T4, RTX 20xx); run attention in float16 or fp32",
              remedies=BF16_REMEDIES),
    # Apple MPS before macOS 14 has no bf16: "TypeError: BFloat16 is not supported on MPS"
    # (github.com/hiyouga/LlamaFactory/issues/2090)
    # (or MPSGraph's own assertion, when autocast's bf16 reaches a graph compiled for f32: "MPSGraphExecutable.mm:2565: failed
    # assertion `Incompatible element type ... expected element type f32 but received bf16'"; github.com/hvoss-tech/AutoForge/issues/35)
    # (and the MPS backend refusing the dtype as a tensor moves to it: "Trying to convert BFloat16 to the MPS backend but
    # it does not have support for that dtype", a model cast to bf16 moved to "mps" on macOS before 14)
    Signature("bf16-mps", r"(BFloat16|bfloat16) is not supported on MPS|MPS BFloat16 is only supported on MacOS 14|"
                          r"Trying to convert BFloat16 to the MPS backend|"
                          # (an MPS kernel without a bf16 instantiation: "\"arange_mps\" not implemented for 'BFloat16'")
                          r"\"\w*_mps\w*\" not implemented for 'BFloat16'|"
                          # (the graph given bf16: "expected element type f32 but received bf16"; not one built for bf16
                          # and given f32, which is a dtype mix)
                          r"MPS\w*\.mm:\d+: failed assertion\b(?!.{0,300}?\bexpected element type (bf16|bfloat16)\b)"
                          r".{0,300}?\b(bf16|bfloat16)\b",
              cause="this Mac's MPS backend has no bfloat16 (macOS before 14, or an older torch)",
              remedies=(Remedy(MPS_BF16, id="mps-fp16"),)),
    # Read weakest: one raised error (its exception type on the line: not a poster's prose) that names a GPU without native
    # bf16 and bf16 together, in whatever library's words (lit-gpt's "KeyError: 'flop count not found for t4 with
    # precision: bf16-mixed'"; github.com/Lightning-AI/litgpt/issues/205)
    Signature("bf16-unsupported", r"(?i)^(?=.*?\b\w*(Error|Exception)\b:)(?=.*?(%s))(?=.*?\b(bf16|bfloat16)\b)" % _BELOW_AMPERE,
              cause=BF16_BELOW_AMPERE,
              remedies=BF16_REMEDIES),
    # ... and a title or a sentence that says so in words: bf16 and a GPU without it and a failure, in one line ("bf16 not
    # supported on T4", "Ошибка bf16 на RTX 2080", "bf16=True não funciona no Colab com T4"); not a question that only names
    # them ("how do I enable bf16 on a T4?")
    Signature("bf16-unsupported", said_with(("bf16", "bfloat16"), _BELOW_AMPERE, FAILED),
              cause=BF16_BELOW_AMPERE,
              remedies=BF16_REMEDIES),
    # a kernel library refusing bf16 as a dtype, in its own words ("RuntimeError: un-supported dtype: bfloat16", VPTQ's
    # kernels on a T4 before they emulated bf16 on GPUs without it; github.com/microsoft/VPTQ/pull/51)
    Signature("bf16-unsupported", r"(?i:\b(un-?supported|not supported)\b[^\n]{0,30}\b(dtype|data ?type)\b[^\n]{0,20}\bb(float)?16\b|"
                                  r"\b(dtype|data ?type)\b[^\n]{0,20}\bb(float)?16\b[^\n]{0,30}\b(un-?supported|not supported)\b)",
              # (not xformers' listing of a kernel refusing another dtype, the bf16 it names being what it does support:
              # "`flshattF` is not supported because: dtype=torch.float32 (supported: {torch.bfloat16, torch.float16})")
              unless=(r"dtype=(torch\.)?(float32|Float|float64|Double) \(supported: \{",),
              cause="a kernel library has no bf16 path here: most often a GPU below compute capability 8.0, where the "
                    "library has no bf16 kernels",
              remedies=BF16_REMEDIES),
    # (a frame whose file is CUDA's: not a conda environment named cuda118, nor torch.cuda.amp's decorator around a CPU op)
    Signature("bf16-unsupported", r"\"\w+\" not implemented for 'BFloat16'", frames=(r"[^/\\]*cuda[^/\\]*\.py$",), frames_required=True,
              cause="an operation has no bf16 kernel on this device; run it in fp16/fp32 or upgrade torch",
              remedies=BF16_REMEDIES),
)

CHECK = Check(
    id=ID,
    title="bfloat16 on each GPU",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    timeout_s=120.0,  # first CUDA use on several GPUs
    order=45,
    signatures=SIGNATURES,
)
