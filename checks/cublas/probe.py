"""The cublas probe: what runs in the worker, inside the target interpreter (torch arrives as
the argument), and the tables it measures against."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple

from envdoctor.target.model import ProbeContext, available_devices
from envdoctor.target.probekit.distributions import requires
from envdoctor.target.probekit.gpus import cuda_devices, device_index, identity, memory
from envdoctor.target.probekit.ops import attempt, randn, run_op, seeded_generator
from envdoctor.target.probekit.steps import step
from envdoctor.target.probekit.text import error_text

ID = "cublas"

GEMM_DTYPES = ("float32", "float16", "bfloat16")
CONV_DTYPES = ("float32", "float16")
GEMM_N = 64
_LIBRARY_NAMES = ("libcublas", "libcublasLt", "libcudnn", "libcudart")


def _cudnn(torch: Any) -> Dict[str, Any]:
    cudnn = torch.backends.cudnn
    info: Dict[str, Any] = {"enabled": bool(getattr(cudnn, "enabled", False))}
    info["available"], err = attempt(lambda: bool(cudnn.is_available()))
    if err:
        info["available_error"] = err
    # version() loads libcudnn and raises on a version mismatch ("cuDNN version incompatibility: ...")
    info["version"], err = attempt(lambda: cudnn.version())
    if err:
        info["error"] = err
    return info


def _cuda_requirements() -> List[str]:
    """torch's own pins on its CUDA math libraries (pip installs), e.g.
    `nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux"` or, from torch 2.11,
    `cuda-toolkit[cublas,cudart,...]==13.0.2` (docs/facts.md §3a)."""
    # conda or a source build: no metadata, no pins
    return [r for r in requires("torch") if "cublas" in r.lower() or "cudnn" in r.lower()]


def _loaded_libraries() -> List[str]:
    """Which libcublas / libcudnn files this process really mapped (Linux)."""
    found: List[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                base = os.path.basename(path)
                if base.startswith(_LIBRARY_NAMES) and path not in found:
                    found.append(path)
    except OSError:
        return []
    return found


def _gemm(torch: Any, a: Any, b: Any, device: str, dt: Any) -> Tuple[Any, Any]:
    def fn() -> Any:
        return torch.matmul(a.to(device=device, dtype=dt), b.to(device=device, dtype=dt))

    def ref() -> Any:
        return torch.matmul(a.to(dt).float(), b.to(dt).float())

    return fn, ref


def _conv(torch: Any, F: Any, tensors: Tuple[Any, Any, Any], device: str, dt: Any) -> Tuple[Any, Any]:
    img, kern, bias = tensors

    def fn() -> Any:
        return F.conv2d(img.to(device=device, dtype=dt), kern.to(device=device, dtype=dt), bias.to(device=device, dtype=dt), padding=1)

    def ref() -> Any:
        return F.conv2d(img.to(dt).float(), kern.to(dt).float(), bias.to(dt).float(), padding=1)

    return fn, ref


def _probe_device(torch: Any, F: Any, device: str, index: int, info: Dict[str, Any], ops: List[Dict[str, Any]], cudnn_on: bool) -> None:
    with step("starting CUDA on %s" % device, device=device):
        info["mem_start"] = memory(torch, index)
        ident = identity(torch, device)
    info["name"], info["capability"] = ident["name"], ident["capability"]
    if ident.get("error"):
        info["identity_error"] = ident["error"]
    gen = seeded_generator(torch, 50)
    a, b = randn(torch, gen, GEMM_N, GEMM_N), randn(torch, gen, GEMM_N, GEMM_N)
    conv_in = (randn(torch, gen, 1, 3, 16, 16), randn(torch, gen, 8, 3, 3, 3), randn(torch, gen, 8))
    with torch.cuda.device(index):
        try:
            with step("creating the cuBLAS handle on %s" % device, device=device, op="cublas handle"):
                torch.cuda.current_blas_handle()
            info["handle"] = {"ok": True, "error": None}
        except Exception as exc:  # noqa: BLE001 - CUBLAS_STATUS_NOT_INITIALIZED & co. are the facts (and a lost step)
            info["handle"] = {"ok": False, "error": error_text(exc), "error_type": getattr(exc, "error_type", type(exc).__name__),
                              "mem_after_failure": memory(torch, index)}
        for name_ in GEMM_DTYPES:
            dt = getattr(torch, name_, None)
            if dt is None:
                continue
            fn, ref = _gemm(torch, a, b, device, dt)
            fact = run_op(torch, "gemm", device, name_, fn, ref, shape=[GEMM_N, GEMM_N, GEMM_N])
            if not fact["ok"]:
                fact["mem_after_failure"] = memory(torch, index)
            ops.append(fact)
        for name_ in CONV_DTYPES:
            fn, ref = _conv(torch, F, conv_in, device, getattr(torch, name_))
            fact = run_op(torch, "conv2d", device, name_, fn, ref, cudnn=cudnn_on)
            if not fact["ok"]:
                fact["mem_after_failure"] = memory(torch, index)
            ops.append(fact)


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    facts: Dict[str, Any] = {
        "torch": torch.__version__,
        "cuda_build": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "devices": [],
        "ops": [],
    }
    devices = cuda_devices(torch, ctx)
    if not devices:
        # Cheap on a CPU-only build: is_available() answers without touching a driver.
        facts["cuda_seen"] = [d for d in available_devices(torch) if d.startswith("cuda")] if ctx.devices is not None else []
        return facts
    facts["env"] = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")}
    facts["requirements"] = _cuda_requirements()
    facts["cudnn"] = cudnn = _cudnn(torch)
    facts["tf32"] = {
        "matmul": attempt(lambda: bool(torch.backends.cuda.matmul.allow_tf32))[0],
        "cudnn": attempt(lambda: bool(torch.backends.cudnn.allow_tf32))[0],
    }
    import torch.nn.functional as F

    cudnn_on = bool(cudnn.get("enabled") and cudnn.get("available"))
    for device in devices:
        index = device_index(device)
        info: Dict[str, Any] = {"id": device, "index": index}
        facts["devices"].append(info)
        try:
            _probe_device(torch, F, device, index, info, facts["ops"], cudnn_on)
        except Exception as exc:  # noqa: BLE001 - one broken GPU must not hide the others
            info["error"] = error_text(exc)
            info["error_type"] = type(exc).__name__
            info["mem_after_failure"] = memory(torch, index)
    facts["libraries"] = _loaded_libraries()
    return facts
