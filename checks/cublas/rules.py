"""The cublas rules: pure functions over the probe's facts and the Target, run in envdoctor's
own process and tested on snapshots recorded from real machines."""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.target.model import Finding, Remedy, Severity, Target
from envdoctor.target.probekit.gpus import capability_tuple, visible_devices_value
from envdoctor.target.probekit.text import dedupe, short_dtype
from envdoctor.target.remedies.actions import config_remedy, env_remedy, pip_remedy, torch_wheel

from .probe import ID

# Largest max-relative error (vs an fp32 CPU reference on the same rounded inputs) of
# a sound kernel at these sizes. fp32 allows TF32 (10-bit mantissa, on by default for
# cuDNN and when a user sets allow_tf32); fp16/bf16 are bounded by output rounding and
# cuBLAS's reduced-precision reductions. Garbage is of order 1 (or NaN).
TOLERANCE = {"float32": 1e-2, "float16": 2e-2, "bfloat16": 8e-2}

# "Almost nothing free": an init/alloc failure below this is out of memory, not a broken install.
LOW_FREE_BYTES = 256 * 1024 * 1024
LOW_FREE_FRACTION = 0.05

# cuBLAS / cuDNN statuses that mean "could not start or could not allocate".
_INIT_ALLOC = re.compile(r"(CUBLAS|CUDNN)_STATUS_(NOT_INITIALIZED|ALLOC_FAILED|INTERNAL_ERROR)|cublasCreate|cudnnCreate")
_OOM = re.compile(r"out of memory", re.IGNORECASE)


def _mib(n: Any) -> str:
    return "%.0f MiB" % (float(n) / 2**20) if float(n) < 2**30 else "%.1f GiB" % (float(n) / 2**30)


def _low(mem: Optional[Dict[str, Any]]) -> bool:
    if not mem or "free" not in mem:
        return False
    free, total = float(mem["free"]), float(mem.get("total") or 0)
    return free < LOW_FREE_BYTES or (total > 0 and free < LOW_FREE_FRACTION * total)


def _mem_text(label: str, mem: Optional[Dict[str, Any]]) -> Optional[str]:
    if not mem:
        return None
    if "free" in mem:
        return "%s: %s free of %s (torch.cuda.mem_get_info)" % (label, _mib(mem["free"]), _mib(mem.get("total") or 0))
    return "%s: torch.cuda.mem_get_info failed: %s" % (label, mem.get("error"))


def _wrong(fact: Dict[str, Any]) -> bool:
    err = fact.get("max_rel_err")
    if err is None:
        return False
    if isinstance(err, str):  # "nan" / "inf": the output was not finite
        return True
    return float(err) != float(err) or float(err) > TOLERANCE.get(fact.get("dtype", ""), 1e-2)


def _below_bf16(dev: Dict[str, Any], facts: Dict[str, Any]) -> bool:
    """bf16 GEMM on a pre-Ampere NVIDIA GPU is the bf16-support check's business."""
    cap = capability_tuple(dev.get("capability"))
    return not facts.get("hip") and cap is not None and cap < (8, 0)


def _label(dev: Dict[str, Any]) -> str:
    name = dev.get("name") or "unknown GPU"
    cap = dev.get("capability")
    return "%s %s%s" % (dev["id"], name, " (compute capability %s)" % cap if cap else "")


def _reinstall_remedy(facts: Dict[str, Any], env: Target, library: str) -> Remedy:
    """Reinstall exactly the cuBLAS / cuDNN build that this torch pins."""
    pins = [r.split(";")[0].strip() for r in facts.get("requirements") or () if library in r.lower()]
    version = str(facts.get("torch") or "")
    if pins:
        spec = pins[0]
        return pip_remedy(
            "Reinstall the %s that torch %s was built with (%s): a damaged or mismatched copy makes every handle fail"
            % ("cuBLAS" if library == "cublas" else "cuDNN", version, spec),
            "reinstall-%s" % library, env, install=[spec], force_reinstall=True,
            no_deps=spec.lower().startswith("nvidia-"),  # the nvidia-* wheels are leaves; do not touch torch
        )
    cuda = facts.get("cuda_build") or ""
    summary = ("Reinstall torch %s with the CUDA %s libraries it was built for (pip wheels bring cuBLAS/cuDNN as nvidia-*-cuXX "
               "packages; conda: reinstall pytorch-cuda from the same channel)" % (version, cuda or "?"))
    wheel = None if version.partition("+")[2].startswith("rocm") else torch_wheel(version, cuda)  # a ROCm build has no CUDA libraries
    if wheel:
        return pip_remedy(summary, "reinstall-torch-cuda", env, install=[wheel[0]], force_reinstall=True, index_url=wheel[1])
    return Remedy(summary, id="reinstall-torch-cuda")


def _foreign_libraries(facts: Dict[str, Any], env: Target, library: str) -> List[str]:
    """Loaded copies of the library that are not torch's own pip/conda ones."""
    prefix = str(env.prefix or "").rstrip("/")
    out = []
    for path in facts.get("libraries") or ():
        base = os.path.basename(path)
        if not base.startswith(library):
            continue
        if "site-packages" in path or "dist-packages" in path or "/torch/lib/" in path:
            continue
        if prefix not in ("", "/usr", "/usr/local") and path.startswith(prefix + "/lib/"):  # a conda environment's own lib/
            continue
        out.append(path)
    return out


def _ld_without(ld: str, foreign: List[str]) -> Optional[str]:
    """LD_LIBRARY_PATH minus the entries that provide the foreign copies (None: no entry does)."""
    entries = [e for e in ld.split(":") if e]
    keep = []
    for entry in entries:
        root = entry.rstrip("/")
        for tail in ("/lib64", "/lib"):
            if root.endswith(tail):
                root = root[: -len(tail)]
        deep = root.count("/") >= 3  # /usr/local/cuda-12.0, /opt/conda/envs/x: a toolkit root, not /usr
        if any(p.startswith(entry.rstrip("/") + "/") or (deep and p.startswith(root + "/")) for p in foreign):
            continue
        keep.append(entry)
    return ":".join(keep) if len(keep) < len(entries) else None


def _ld_remedy(facts: Dict[str, Any], env: Target, library: str) -> Remedy:
    name = "libcublas" if library == "cublas" else "libcudnn"
    ld = (facts.get("env") or {}).get("LD_LIBRARY_PATH") or ""
    foreign = _foreign_libraries(facts, env, name)
    if foreign:
        fixed = _ld_without(ld, foreign) if ld else None
        if fixed is not None:
            why = "This process loaded another %s than torch's own (%s) through LD_LIBRARY_PATH; drop that directory from it" % (
                name, ", ".join(foreign))
            if fixed:
                return env_remedy(why, "ld-library-path", set_env={"LD_LIBRARY_PATH": fixed})
            return env_remedy(why, "ld-library-path", unset_env=["LD_LIBRARY_PATH"])
        return Remedy("This process loaded another %s than torch's own (%s): find what puts it first (LD_LIBRARY_PATH, LD_PRELOAD, "
                      "/etc/ld.so.conf) and remove it" % (name, ", ".join(foreign)), kind="manual", id="ld-library-path")
    return Remedy("If LD_LIBRARY_PATH points at another CUDA toolkit's lib directory, its %s can shadow torch's own; the copies this "
                  "process really loaded are listed in the evidence%s" % (name, " (LD_LIBRARY_PATH=%s)" % ld if ld else ""),
                  kind="manual", id="ld-library-path")


def _library_remedies(facts: Dict[str, Any], env: Target, library: str) -> Tuple[Remedy, ...]:
    return (
        _reinstall_remedy(facts, env, library),
        Remedy("Check the driver: `nvidia-smi` must list this GPU without errors, and the driver must be new enough for CUDA %s "
               "(see the cuda-compat check)" % (facts.get("cuda_build") or "?"),
               kind="manual", commands=("nvidia-smi",), id="check-driver"),
        _ld_remedy(facts, env, library),
    )


def _visible_indices(facts: Dict[str, Any], healthy: List[Dict[str, Any]]) -> Optional[str]:
    """CUDA_VISIBLE_DEVICES value naming the healthy GPUs (physical ids when already remapped)."""
    if not healthy:
        return None
    current = (facts.get("env") or {}).get("CUDA_VISIBLE_DEVICES")
    return visible_devices_value(current, [int(dev.get("index", 0)) for dev in healthy])


def _memory_remedies(facts: Dict[str, Any], dev: Dict[str, Any], others: List[Dict[str, Any]]) -> Tuple[Remedy, ...]:
    remedies = [
        Remedy("Free the GPU: find the processes that hold its memory with `nvidia-smi` (or the query below) and stop them; "
               "a crashed earlier run, a notebook kernel or another rank of the same job on this GPU are the usual holders",
               kind="manual", commands=("nvidia-smi", "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"),
               id="free-gpu"),
        config_remedy("Use a smaller batch size (or gradient accumulation, gradient checkpointing) so the run fits next to what else "
                      "is resident", "smaller-batch", {}, reduce=["batch_size"]),
    ]
    visible = _visible_indices(facts, others)
    if visible:
        remedies.append(env_remedy("Set CUDA_VISIBLE_DEVICES to the GPUs that have free memory (here: %s)" % visible,
                                   "visible-devices", set_env={"CUDA_VISIBLE_DEVICES": visible}))
    elif len(facts.get("devices") or ()) > 1:
        remedies.append(Remedy("Set CUDA_VISIBLE_DEVICES to a GPU with free memory (none of the probed ones has any now)",
                               id="visible-devices"))
    return tuple(remedies)


def _device_failures(dev: Dict[str, Any], ops: List[Dict[str, Any]], facts: Dict[str, Any]) -> List[Tuple[str, Dict[str, Any]]]:
    """(step, record) for every failed step of one device, in probe order."""
    failures: List[Tuple[str, Dict[str, Any]]] = []
    start = dev.get("mem_start") or {}
    if "error" in start:
        failures.append(("context", {"error": start["error"], "mem_after_failure": None}))
    if dev.get("error"):
        failures.append(("probe", dev))
    handle = dev.get("handle")
    if handle and not handle.get("ok"):
        failures.append(("handle", handle))
    for o in ops:
        if o.get("ok"):
            continue
        if o["op"] == "gemm" and o.get("dtype") == "bfloat16" and _below_bf16(dev, facts):
            continue
        failures.append(("%s %s" % (o["op"], o.get("dtype")), o))
    return failures


def _healthy(dev: Dict[str, Any], ops: List[Dict[str, Any]], facts: Dict[str, Any]) -> bool:
    return not _device_failures(dev, ops, facts) and not _low(dev.get("mem_start"))


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    devices = facts.get("devices") or []
    if not devices:
        return [_no_cuda(facts)]
    findings: List[Finding] = []
    all_ops = facts.get("ops") or []
    cudnn = facts.get("cudnn") or {}
    if cudnn.get("error"):
        findings.append(
            Finding(ID, "cudnn-failed", Severity.ERROR, "cuDNN does not load: %s" % cudnn["error"],
                    ("torch.backends.cudnn.version(): %s" % cudnn["error"],), _library_remedies(facts, env, "cudnn"), {"library": "cudnn"})
        )
    for dev in devices:
        ops = [o for o in all_ops if o.get("device") == dev["id"]]
        others = [d for d in devices if d is not dev and _healthy(d, [o for o in all_ops if o.get("device") == d["id"]], facts)]
        findings.extend(_diagnose_device(facts, env, dev, ops, others))
    return findings


def _diagnose_device(facts: Dict[str, Any], env: Target, dev: Dict[str, Any], ops: List[Dict[str, Any]], others: List[Dict[str, Any]]) -> List[Finding]:
    label = _label(dev)
    subject = {"device": dev["id"], "name": dev.get("name"), "capability": dev.get("capability")}
    failures = _device_failures(dev, ops, facts)
    findings: List[Finding] = []
    if failures:
        first_step = failures[0][0]
        readings: List[Dict[str, Any]] = [rec["mem_after_failure"] for _, rec in failures if rec.get("mem_after_failure")]
        mem_fail = next((m for m in readings if "free" in m), readings[0] if readings else None)
        texts = [str(rec.get("error") or "") for _, rec in failures]
        oom_text = any(_OOM.search(t) for t in texts)
        init_alloc = any(_INIT_ALLOC.search(t) for t in texts)
        low = _low(mem_fail) or _low(dev.get("mem_start"))
        evidence = ["%s %s: %s" % (dev["id"], step, rec.get("error")) for step, rec in failures]
        evidence += [t for t in (_mem_text("at start", dev.get("mem_start")), _mem_text("right after the first failure", mem_fail)) if t]
        evidence = dedupe(evidence)
        if oom_text or (init_alloc and low):
            free = (mem_fail or {}).get("free", (dev.get("mem_start") or {}).get("free"))
            total = (mem_fail or {}).get("total", (dev.get("mem_start") or {}).get("total"))
            how = "%s free of %s" % (_mib(free), _mib(total)) if free is not None and total else "memory exhausted"
            findings.append(
                Finding(ID, "cublas-init-oom", Severity.ERROR,
                        "%s is out of memory (%s): cuBLAS/cuDNN cannot start there, which reads as %s"
                        % (label, how, _short(texts[0])),
                        tuple(evidence), _memory_remedies(facts, dev, others), dict(subject, step=first_step))
            )
            return findings
        handle_failed = any(step in ("context", "probe", "handle") for step, _ in failures)
        if handle_failed:
            known = mem_fail if mem_fail and "free" in mem_fail else dev.get("mem_start")
            memory = " although %s of GPU memory are free" % _mib(known["free"]) if known and "free" in known else ""
            what = "cuBLAS could not start" if first_step == "handle" else "CUDA could not start on this GPU"
            findings.append(
                Finding(ID, "cublas-init-failed", Severity.ERROR,
                        "%s: %s%s: %s" % (label, what, memory, _short(texts[0])),
                        tuple(evidence + _library_evidence(facts, "libcublas")),
                        _library_remedies(facts, env, "cublas") + _other_gpu_remedy(facts, others), dict(subject, step=first_step))
            )
        else:
            gemm = [(s, r) for s, r in failures if s.startswith("gemm")]
            if gemm:
                findings.append(
                    Finding(ID, "gemm-failed", Severity.ERROR,
                            "%s: %s GEMM fails" % (label, "/".join(short_dtype(r.get("dtype")) for _, r in gemm)),
                            tuple(dedupe(["%s %s: %s" % (dev["id"], s, r.get("error")) for s, r in gemm]
                                          + [t for t in (_mem_text("at start", dev.get("mem_start")),) if t]
                                          + _library_evidence(facts, "libcublas"))),
                            _library_remedies(facts, env, "cublas") + _other_gpu_remedy(facts, others),
                            dict(subject, dtypes=[r.get("dtype") for _, r in gemm]))
                )
        conv = [(s, r) for s, r in failures if s.startswith("conv2d") and not (handle_failed and r.get("error") in texts[:1])]
        if conv:
            version = (facts.get("cudnn") or {}).get("version")
            cudnn_off = Remedy("Work around it by turning cuDNN off (slower convolutions): `torch.backends.cudnn.enabled = False`",
                               kind="manual", id="cudnn-off")
            findings.append(
                Finding(ID, "cudnn-failed", Severity.ERROR,
                        "%s: cuDNN convolution fails (cuDNN %s): %s" % (label, version, _short(str(conv[0][1].get("error")))),
                        tuple(dedupe(["%s %s: %s" % (dev["id"], s, r.get("error")) for s, r in conv]
                                      + _library_evidence(facts, "libcudnn"))),
                        (*_library_remedies(facts, env, "cudnn"), cudnn_off),
                        dict(subject, library="cudnn"))
            )
    # Low free memory with everything passing is the device-memory check's finding, with the processes holding it.
    wrong = [o for o in ops if o.get("ok") and _wrong(o)]
    for op_name, code in (("gemm", "gemm-wrong-results"), ("conv2d", "cudnn-wrong-results")):
        bad = [o for o in wrong if o["op"] == op_name]
        if not bad:
            continue
        library = "cublas" if op_name == "gemm" else "cudnn"
        what = "GEMM" if op_name == "gemm" else "convolution"
        evidence = ["%s %s %s: max relative error %s vs an fp32 CPU reference (tolerance %g)"
                    % (dev["id"], op_name, o.get("dtype"), o.get("max_rel_err"), TOLERANCE.get(o.get("dtype", ""), 1e-2)) for o in bad]
        recheck = Remedy("Do not train on this GPU until a tiny %s is right again; re-run `envdoctor check --only cublas` "
                         "after each change" % what, id="recheck")
        findings.append(
            Finding(ID, code, Severity.ERROR,
                    "%s: %s %s runs but returns wrong numbers" % (label, "/".join(short_dtype(o.get("dtype")) for o in bad), what),
                    tuple(evidence + _library_evidence(facts, "lib" + library)),
                    (*_library_remedies(facts, env, library), recheck, *_other_gpu_remedy(facts, others)),
                    dict(subject, dtypes=[o.get("dtype") for o in bad]))
        )
    return findings


def _other_gpu_remedy(facts: Dict[str, Any], others: List[Dict[str, Any]]) -> Tuple[Remedy, ...]:
    visible = _visible_indices(facts, others)
    if not visible:
        return ()
    return (env_remedy("Meanwhile run on the GPUs that pass: CUDA_VISIBLE_DEVICES=%s" % visible, "visible-devices",
                       set_env={"CUDA_VISIBLE_DEVICES": visible}),)


def _library_evidence(facts: Dict[str, Any], library: str) -> List[str]:
    loaded = [p for p in facts.get("libraries") or () if os.path.basename(p).startswith(library)]
    out = ["loaded %s" % p for p in loaded[:3]]
    pins = [r for r in facts.get("requirements") or () if library.replace("lib", "") in r.lower()]
    if pins:
        out.append("torch %s requires %s" % (facts.get("torch"), pins[0].split(";")[0].strip()))
    return out


def _short(text: str) -> str:
    text = text.strip().splitlines()[0] if text.strip() else text
    return text if len(text) <= 120 else text[:117] + "..."


def _no_cuda(facts: Dict[str, Any]) -> Finding:
    seen = facts.get("cuda_seen") or []
    if seen:
        return Finding(ID, "no-cuda-selected", Severity.INFO, "no CUDA device selected: cuBLAS/cuDNN not probed",
                       ("CUDA devices present but not selected: %s" % ", ".join(seen),), (), {})
    if facts.get("cuda_build") is None and not facts.get("hip"):
        why = "torch %s is a CPU-only build (torch.version.cuda is None)" % facts.get("torch")
    else:
        why = "torch %s is built for CUDA %s but torch.cuda.is_available() is False" % (facts.get("torch"), facts.get("cuda_build"))
    evidence = (why, *(w for w in facts.get("warnings") or () if "CUDA" in w))
    return Finding(ID, "no-cuda-device", Severity.INFO, "no CUDA device: cuBLAS/cuDNN not probed", evidence, (), {})


def summarize(facts: Dict[str, Any]) -> str:
    devices = facts.get("devices") or []
    if not devices:
        return "no CUDA device selected" if facts.get("cuda_seen") else "no CUDA device"
    ops = facts.get("ops") or []
    parts = []
    for dev in devices:
        mine = [o for o in ops if o.get("device") == dev["id"]]
        failures = _device_failures(dev, mine, facts)
        wrong = [o for o in mine if o.get("ok") and _wrong(o)]
        if failures:
            parts.append("%s %s" % (dev["id"], _status_word(str(failures[0][1].get("error") or failures[0][0]))))
        elif wrong:
            parts.append("%s wrong %s results" % (dev["id"], "/".join(short_dtype(o.get("dtype")) for o in wrong)))
        else:
            errs = [float(o["max_rel_err"]) for o in mine if o["op"] == "gemm" and isinstance(o.get("max_rel_err"), (int, float))]
            parts.append("%s ok (%d GEMMs%s)" % (dev["id"], len([o for o in mine if o["op"] == "gemm"]),
                                                 ", max rel err %.1e" % max(errs) if errs else ""))
    cudnn = facts.get("cudnn") or {}
    if cudnn.get("version"):
        parts.append("cuDNN %s%s" % (cudnn["version"], "" if cudnn.get("enabled") else " (disabled)"))
    return " · ".join(parts)


def _status_word(text: str) -> str:
    m = re.search(r"(CUBLAS|CUDNN)_STATUS_\w+", text)
    if m:
        return m.group(0)
    if _OOM.search(text):
        return "out of memory"
    return "failed: %s" % _short(text)[:60]
