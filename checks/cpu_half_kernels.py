"""cpu-half-kernels: does this torch have fp16 / bf16 kernels on the CPU, and do
they compute the right numbers? (seed 004: `"LayerNormKernelImpl" not
implemented for 'Half'` when autotrain ran SDXL DreamBooth in fp16 on a CPU.)"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, List, Sequence, Tuple

from envdoctor.target.cuda_tables import CPU_INDEX
from envdoctor.target.intent import Setting, config_evidence, config_subject, dtype_names
from envdoctor.target.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, Target, available_devices, op_fact
from envdoctor.target.platform.menus import gpu_runtime_step
from envdoctor.target.platform.where import TERMINAL, Where
from envdoctor.target.probekit.ops import randn, run_op, seeded_generator
from envdoctor.target.probekit.steps import step
from envdoctor.target.probekit.text import dtype_name, error_text, short_dtype
from envdoctor.target.remedies.actions import config_remedy, pip_remedy

ID = "cpu-half-kernels"
DTYPES = ("float16", "bfloat16")
# Largest max-relative error (vs fp32 on the same rounded inputs) a sound kernel shows
# on these tiny shapes; far above rounding noise, far below garbage.
TOLERANCE = {"float16": 2e-2, "bfloat16": 8e-2}


# Apple's MPS runs the same operations in half precision through its own kernels (Metal), with their
# own gaps; where torch has MPS the fp16 ops run there too (the reference stays fp32 on the CPU).
# bf16 on MPS is bf16-support's: torch gates it on macOS 14 as a whole, not op by op.
HALF_DEVICES = ("cpu", "mps")
DEVICE_DTYPES = {"cpu": DTYPES, "mps": ("float16",)}


def _cases(torch: Any, F: Any, dt: Any, device: str = "cpu") -> List[Tuple[str, Callable[[], Any], Callable[[], Any]]]:
    gen = seeded_generator(torch, 0)
    x2, w2, b1 = randn(torch, gen, 4, 16), randn(torch, gen, 8, 16), randn(torch, gen, 8)
    ln_w, ln_b = randn(torch, gen, 16), randn(torch, gen, 16)
    a3, b3 = randn(torch, gen, 2, 4, 8), randn(torch, gen, 2, 8, 4)
    img, kern, kb = randn(torch, gen, 1, 3, 8, 8), randn(torch, gen, 4, 3, 3, 3), randn(torch, gen, 4)
    gn_x, gn_w, gn_b = randn(torch, gen, 2, 4, 4, 4), randn(torch, gen, 4), randn(torch, gen, 4)
    q, k, v = randn(torch, gen, 1, 2, 4, 8), randn(torch, gen, 1, 2, 4, 8), randn(torch, gen, 1, 2, 4, 8)

    def h(t: Any) -> Any:  # the half-precision input, on the device probed
        return t.to(device=device, dtype=dt)

    def r(t: Any) -> Any:  # the same rounded values, in fp32, for the reference
        return t.to(dt).float()

    cases = [
        ("layer_norm", lambda: F.layer_norm(h(x2), (16,), h(ln_w), h(ln_b)), lambda: F.layer_norm(r(x2), (16,), r(ln_w), r(ln_b))),
        ("linear", lambda: F.linear(h(x2), h(w2), h(b1)), lambda: F.linear(r(x2), r(w2), r(b1))),
        ("matmul", lambda: torch.matmul(h(x2), h(w2).t()), lambda: torch.matmul(r(x2), r(w2).t())),
        ("bmm", lambda: torch.bmm(h(a3), h(b3)), lambda: torch.bmm(r(a3), r(b3))),
        ("conv2d", lambda: F.conv2d(h(img), h(kern), h(kb), padding=1), lambda: F.conv2d(r(img), r(kern), r(kb), padding=1)),
        ("group_norm", lambda: F.group_norm(h(gn_x), 2, h(gn_w), h(gn_b)), lambda: F.group_norm(r(gn_x), 2, r(gn_w), r(gn_b))),
        ("softmax", lambda: F.softmax(h(x2), dim=-1), lambda: F.softmax(r(x2), dim=-1)),
    ]
    if hasattr(F, "scaled_dot_product_attention"):
        cases.append(("scaled_dot_product_attention", lambda: F.scaled_dot_product_attention(h(q), h(k), h(v)),
                      lambda: F.scaled_dot_product_attention(r(q), r(k), r(v))))
    if hasattr(F, "rms_norm"):
        cases.append(("rms_norm", lambda: F.rms_norm(h(x2), (16,), h(ln_w)), lambda: F.rms_norm(r(x2), (16,), r(ln_w))))
    return cases


def _autocast(torch: Any, dt: Any) -> Dict[str, Any]:
    """CPU autocast: does it really compute in the requested dtype, or silently fall back?"""
    gen = seeded_generator(torch, 1)
    a, b = randn(torch, gen, 4, 16), randn(torch, gen, 16, 8)
    name = dtype_name(dt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with step("running autocast %s on cpu" % name, op="autocast", device="cpu", dtype=name), torch.autocast(device_type="cpu", dtype=dt):
                out = torch.mm(a, b)
        except Exception as exc:  # noqa: BLE001 - StepLost too: the failure is the fact
            return op_fact("autocast", "cpu", name, False, error_text(exc), None, error_type=getattr(exc, "error_type", type(exc).__name__))
    got = dtype_name(out.dtype)
    if got != name:
        message = "; ".join(sorted({str(w.message) for w in caught})) or "autocast computed in %s" % got
        return op_fact("autocast", "cpu", name, False, message, None, out_dtype=got)
    return op_fact("autocast", "cpu", name, True, None, None, out_dtype=got)


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    devices = available_devices(torch)
    facts: Dict[str, Any] = {
        "torch": torch.__version__,
        "accelerators": [d for d in devices if d != "cpu"],
        "ops": [],
    }
    selected = [d for d in HALF_DEVICES if d in ctx.select_devices(torch)]
    if not selected:
        facts["not_selected"] = True
        return facts
    import torch.nn.functional as F

    for device in selected:
        for name in DEVICE_DTYPES[device]:
            dt = getattr(torch, name, None)
            if dt is None:
                facts["ops"].append(op_fact("dtype", device, name, False, "torch has no %s" % name, None))
                continue
            for op, fn, ref in _cases(torch, F, dt, device):
                facts["ops"].append(run_op(torch, op, device, name, fn, ref))
            if device == "cpu":
                facts["ops"].append(_autocast(torch, dt))
    return facts


# ---------------------------------------------------------------- rules

# The words of the remedies the live findings and `explain` share.
FP32_ON_CPU = ("Train in fp32 on the CPU: accelerate/autotrain `mixed_precision: no`, transformers `fp16=False` / `bf16=False`, "
               "OneTrainer `train_dtype: FLOAT_32` and `weight_dtype: FLOAT_32`")


def _use_gpu(where: Where, label: str) -> Remedy:
    return Remedy("Move the run to a GPU (%s), where %s kernels exist" % (gpu_runtime_step(where), label), kind="manual", id="use-gpu")


def _remedies(dtype: str, ops: List[str], facts: Dict[str, Any], env: Target,
              asked: Sequence[Setting] = ()) -> Tuple[Remedy, ...]:
    label = short_dtype(dtype)
    # no GPU here: the CPU build, not GBs of CUDA libraries
    index = None if facts.get("accelerators") else CPU_INDEX
    names = dtype_names(asked)  # half weights run the same missing kernels
    return (
        config_remedy(FP32_ON_CPU, "precision-fp32", {n: "fp32" for n in names}, when=dict({n: label for n in names}, device="cpu")),
        _use_gpu(env.where, label),
        pip_remedy(
            "Upgrade torch: torch %s lacks CPU %s kernels for %s; measured, torch 2.13 runs all of them on the CPU"
            % (facts.get("torch", "?"), label, ", ".join(ops)),
            "torch-upgrade", env, upgrade=["torch"], index_url=index,
        ),
    )


def asked_on(env: Target, device: str, label: str, accelerators: List[str]) -> List[Setting]:
    """The training config's settings that ask for `label` ("fp16") on `device` ("cpu", "mps")."""
    intent = env.intent
    if intent is None or intent.runs_on(accelerators) != device:
        return []
    return intent.asks_dtype(label, bf16_gpu=False)  # on the CPU or MPS, "auto" finds no bf16 GPU


def _severity(env: Target, asked: List[Setting], accelerators: List[str]) -> Severity:
    if asked:
        return Severity.ERROR
    if env.intent is not None:  # the config trains in another precision or on another device
        return Severity.INFO
    # Only a CPU-only machine trains on the CPU by default; with a GPU this matters
    # for offloaded parts and CPU inference.
    return Severity.WARNING if accelerators else Severity.ERROR


FP32_ON_MPS = ("Train in fp32 on MPS: accelerate/autotrain `mixed_precision: no`, transformers `fp16=False` / `bf16=False`, "
               "OneTrainer `train_dtype: FLOAT_32`")


def _mps_findings(facts: Dict[str, Any], env: Target) -> List[Finding]:
    """The same operations on Apple's MPS: a kernel MPS lacks, or one that returns garbage."""
    findings: List[Finding] = []
    ops = [o for o in facts.get("ops") or () if o.get("device") == "mps"]
    accelerators = list(facts.get("accelerators") or ())
    for dtype in DEVICE_DTYPES["mps"]:
        mine = [o for o in ops if o.get("dtype") == dtype]
        label = short_dtype(dtype)
        bad = [o for o in mine if not o.get("ok") or _garbage(o, dtype)]
        if not bad:
            continue
        asked = asked_on(env, "mps", label, accelerators)
        names = [o["op"] for o in bad]
        names_asked = dtype_names(asked)
        title = "%s on MPS: %d of %d operations fail or return wrong numbers (%s)" % (label, len(bad), len(mine), ", ".join(names))
        if asked:
            title = "%s asks for %s on MPS; this torch's MPS cannot run %s there" % (asked[0].where(), label, ", ".join(names))
        evidence = tuple("%s %s mps: %s" % (o["op"], label, o.get("error") or "max relative error %s vs fp32" % o.get("max_rel_err"))
                         for o in bad)
        findings.append(Finding(
            ID, "mps-%s-missing" % label, Severity.ERROR if asked else Severity.WARNING, title,
            config_evidence(env.intent, asked) + evidence,
            (config_remedy(FP32_ON_MPS, "precision-fp32-mps", {n: "fp32" for n in names_asked},
                           when=dict({n: label for n in names_asked}, device="mps")),
             pip_remedy("Upgrade torch (and macOS): torch %s's MPS lacks %s %s; MPS gains kernels with each release"
                        % (facts.get("torch", "?"), label, ", ".join(names)), "torch-upgrade", env, upgrade=["torch"])),
            dict({"device": "mps", "dtype": dtype, "ops": names}, **config_subject(asked)),
        ))
    return findings


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    findings: List[Finding] = _mps_findings(facts, env)
    ops = [o for o in facts.get("ops") or () if o.get("device") == "cpu"]
    accelerators = list(facts.get("accelerators") or ())
    for dtype in DTYPES:
        mine = [o for o in ops if o.get("dtype") == dtype]
        failed = [o for o in mine if not o.get("ok")]
        label = short_dtype(dtype)
        if failed:
            names = [o["op"] for o in failed]
            asked = asked_on(env, "cpu", label, accelerators)
            title = "%s on CPU: %d of %d operations fail (%s)" % (label, len(failed), len(mine), ", ".join(names))
            if asked:
                title = "%s asks for %s on the CPU; this torch has no %s %s there" % (asked[0].where(), label, label, ", ".join(names))
            findings.append(
                Finding(
                    ID,
                    "%s-missing" % label,
                    _severity(env, asked, accelerators),
                    title,
                    config_evidence(env.intent, asked) + tuple("%s %s cpu: %s" % (o["op"], label, o.get("error")) for o in failed),
                    _remedies(dtype, names, facts, env, asked),
                    dict({"device": "cpu", "dtype": dtype, "ops": names}, **config_subject(asked)),
                )
            )
        wrong = [o for o in mine if o.get("ok") and _garbage(o, dtype)]
        if wrong:
            findings.append(
                Finding(
                    ID,
                    "%s-wrong-results" % label,
                    Severity.ERROR,
                    "%s on CPU: %s run but return wrong numbers" % (label, ", ".join(o["op"] for o in wrong)),
                    tuple("%s %s cpu: max relative error %s vs fp32 (tolerance %g)" % (o["op"], label, o.get("max_rel_err"), TOLERANCE[dtype]) for o in wrong),
                    _remedies(dtype, [o["op"] for o in wrong], facts, env),
                    {"device": "cpu", "dtype": dtype, "ops": [o["op"] for o in wrong]},
                )
            )
    return findings


def _garbage(fact: Dict[str, Any], dtype: str) -> bool:
    err = fact.get("max_rel_err")
    if err is None:
        return False
    if isinstance(err, str):  # "nan" / "inf": the output was not finite
        return True
    return float(err) > TOLERANCE[dtype]


def summarize(facts: Dict[str, Any]) -> str:
    if facts.get("not_selected"):
        return "CPU not selected"
    ops = facts.get("ops") or []
    parts = []
    devices = [d for d in HALF_DEVICES if any(o.get("device") == d for o in ops)]
    for device in devices:
        for dtype in DEVICE_DTYPES[device]:
            mine = [o for o in ops if o.get("dtype") == dtype and o.get("device") == device]
            if not mine:
                continue
            good = [o for o in mine if o.get("ok")]
            errs = [float(o["max_rel_err"]) for o in good if isinstance(o.get("max_rel_err"), (int, float))]
            worst = (", max rel err %.1e" % max(errs)) if errs else ""
            where = "" if devices == ["cpu"] else "%s " % device
            parts.append("%s%s %d/%d ops%s" % (where, short_dtype(dtype), len(good), len(mine), worst))
    return "; ".join(parts)


# What `explain` can say from a traceback alone; the live findings add the exact commands.
EXPLAIN_REMEDIES = (
    Remedy(FP32_ON_CPU, id="precision-fp32"),
    _use_gpu(Where(TERMINAL), "half"),  # explain: where the failed run was is not known
    Remedy("Upgrade torch to 2.1 or newer: measured, torch 2.13 runs layer_norm, addmm, conv2d, bmm, group_norm and softmax "
           "in fp16 on the CPU (torch 2.0.1 runs none of them)", id="torch-upgrade"),
)

SIGNATURES = (
    # Any kernel but a CUDA one (those are bf16-support's); the closing quote is optional because
    # people paste the line cut short.
    # (not a kernel of CUDA's or MPS's, "arange_mps"; nor "_", the name PyG's extensions give their dispatch, whose kernels
    # lacking a dtype is the extension's release, not the CPU: torch_cluster's radius before its bf16 support)
    Signature("fp16-missing", r"(?<!\w)\"?(?!\w{0,80}(cuda|_mps\b))(?!_\")\w{1,80}\"? not implemented for '(?i:Half|BFloat16)",
              # the CPU named near it (or in the kernel's own name: slow_conv2d_cpu), or a torch before 2.1 (the releases
              # without these kernels)
              context=(r"[Dd]evice[ :=\"']+cpu|[Uu]sing cpu|(?i:on cpu)\b|--device cpu|use_cpu|_cpu_?\"? not implemented",
                       r"\btorch(==| |-)(1\.\d+|2\.0)(\.\d+)?\b"),
              cause="this torch has no CPU kernel for the operation in half precision (torch before 2.1 lacks fp16 "
                    "layer_norm, addmm, conv2d, bmm, group_norm and softmax on the CPU)",
              remedies=EXPLAIN_REMEDIES),
    # torch 0.x had no CPU operations on HalfTensor at all: "'torch.HalfTensor' object has no attribute 'sub_'"
    Signature("fp16-missing", r"'(Half|BFloat16)' object has no attribute '\w+'",
              cause="this torch has no CPU operations on half tensors", remedies=EXPLAIN_REMEDIES),
    # torch before 1.x named the TH function: "_th_addmm is not implemented for type torch.HalfTensor"
    # (and torch 1.0's THNN: "_thnn_conv2d_forward is not implemented for type torch.HalfTensor")
    Signature("fp16-missing", r"_th(nn)?_\w+ is not implemented for type (torch\.)?(Half|BFloat16)",
              cause="this torch has no CPU kernel for the operation in half precision", remedies=EXPLAIN_REMEDIES),
    # The libraries refuse before any kernel runs: transformers TrainingArguments (src/transformers/training_args.py):
    # "FP16 Mixed precision training with AMP or APEX (`--fp16`) and FP16 half precision evaluation
    # (`--fp16_full_eval`) can only be used on CUDA or NPU devices ..." (older: "... can only be used on CUDA
    # devices."); accelerate: "fp16 mixed precision requires a GPU (not 'mps')."
    # CTranslate2 (faster-whisper, whisperX) refusing its float16 compute type on the CPU: "Requested float16 compute type,
    # but the target device or backend do not support efficient float16 computation"; diffusers' DiffusionPipeline.to
    # (src/diffusers/pipelines/pipeline_utils.py): "Pipelines loaded with `dtype=torch.float16` cannot run with `cpu` device."
    Signature("fp16-refused", r"Mixed precision training with AMP or APEX \(`?--fp16`?\).*can only be used on (CUDA|cuda)|"
                              r"fp16 mixed precision requires a GPU|"
                              r"Pipelines loaded with `?(torch_)?dtype=Half`? cannot run with `?cpu`? device|"
                              r"Requested (int8_)?(b)?float16 compute type, but the target device or backend do not support|"
                              # (Lightning 1.3-1.4's accelerator connector: "You have asked for native AMP on CPU, but AMP is
                              # only available on GPU.")
                              r"You have asked for native AMP on CPU, but AMP is only available on GPU",
              cause="the training library refuses fp16 where no CUDA GPU is used (the CPU, or a Mac's MPS): half-precision "
                    "training needs a GPU", remedies=EXPLAIN_REMEDIES[:2]),
    # Ultralytics' exporter (ultralytics/engine/exporter.py) exporting on the CPU: "half=True only compatible with GPU export,
    # i.e. use device=0" (YOLOv5's export.py: "--half only compatible with GPU export, i.e. use --device 0"); a warning it
    # exports on after, so only where the run stopped on it
    # (and optimum's ONNX exporter, optimum/exporters/onnx/__main__.py: "FP16 export is supported only when exporting on
    # GPU. Please pass the option `--device cuda`.", raised)
    Signature("fp16-refused", r"(--half|half=True) only compatible with GPU export|FP16 export is supported only when exporting on GPU",
              last_only=True,
              cause="the exporter refuses fp16 where no CUDA GPU is used (the CPU): a half-precision export needs a GPU",
              remedies=EXPLAIN_REMEDIES[:2]),
    # The same told in words: half precision asked of the CPU and refused ("--device cpu doesn't work due to missing
    # fp16-support in pytorch"); not whisper's own warning, which already fell back ("FP16 is not supported on CPU; using
    # FP32 instead"); or CTranslate2's refusal retold ("Target device doesn't support float16 computation (Can't use GPU)")
    # (and torch 1.0-1.3's own words, which name the CPU as its type: "_thnn_conv2d_forward not supported on CPUType for
    # Half")
    Signature("fp16-missing", r"(?i)^(?=.*?(\bcpu(type)?\b|\btarget device\b|\bcan'?t use (the )?gpu\b))(?=.*?\b(fp16|float16|half)\b)"
                              r"(?=.*?(\bmissing\b|\bnot supported\b|\bno support\b|"
                              r"\bunsupported\b|\bdo(es)?(n't| not) (support|work)\b|\bnot implemented\b))",
              # (nor a library's fallback told with the precision it took instead: Lightning's "... but AMP with fp16 is not
              # supported on CPU. Using `precision='bf16-mixed'` instead.")
              unless=(r"(?i)using\W{0,3}(FP32|float32|precision=\W?bf16[\w-]*\W?|bf16[\w-]*)\W{0,3} instead",),
              cause="half precision was asked of the CPU, where this torch lacks the kernels (torch before 2.1)",
              remedies=EXPLAIN_REMEDIES),
    # (a warning: torch disables autocast and the run goes on; it explains a run only where the run stopped on it)
    Signature("fp16-missing", r"In CPU autocast, but the target dtype is not supported", last_only=True,
              cause="CPU autocast does not support the requested half dtype in this torch", remedies=EXPLAIN_REMEDIES),
)

CHECK = Check(
    id=ID,
    title="half-precision kernels on CPU",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    order=10,
    signatures=SIGNATURES,
)
