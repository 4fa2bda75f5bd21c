"""The cuda-compat probe: what runs in the worker, inside the target interpreter (torch arrives as
the argument), and the tables it measures against."""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from typing import Any, Dict, Sequence

from envdoctor.target import cuda_tables as ct
from envdoctor.target.model import ProbeContext
from envdoctor.target.probekit.commands import nvidia_smi_program, run_command
from envdoctor.target.probekit.distributions import installed_version
from envdoctor.target.probekit.gpus import cuda_devices, identity
from envdoctor.target.probekit.ops import attempt, randn, run_op, seeded_generator
from envdoctor.target.probekit.steps import step
from envdoctor.target.probekit.text import error_text, exception_text, warning_texts

ID = "cuda-compat"
SMI_FIELDS = ("index", "name", "driver_version", "compute_cap", "memory.total")
SMI_FALLBACK_FIELDS = ("index", "name", "driver_version", "memory.total")  # drivers without compute_cap
PROC_VERSION = "/proc/driver/nvidia/version"
_MAX_TEXT = 2000
FFT_N = 256  # a power of two: the plan every cuFFT has, so a failure is the library's, not the size's


def _nvidia_smi() -> Dict[str, Any]:
    program = nvidia_smi_program()
    fields: Sequence[str] = SMI_FIELDS
    first = run_command([program, "--query-gpu=" + ",".join(fields), "--format=csv,noheader"])
    facts = dict(first)
    facts["fields"] = list(fields)
    facts["fallback"] = None
    if first["returncode"] not in (None, 0) and "compute_cap" in (first["stdout"] + first["stderr"]):
        fields = SMI_FALLBACK_FIELDS  # 'Field "compute_cap" is not a valid field to query.' (old drivers)
        second = run_command([program, "--query-gpu=" + ",".join(fields), "--format=csv,noheader"])
        facts["fallback"] = second
        facts["fields"] = list(fields)
        source = second
    else:
        source = first
    facts["ok"] = source["returncode"] == 0
    facts["gpus"] = ct.parse_nvidia_smi_csv(source["stdout"], fields) if facts["ok"] else []
    return facts


def _proc_driver() -> Dict[str, Any]:
    facts: Dict[str, Any] = {"path": PROC_VERSION, "text": None, "version": None, "error": None}
    if not sys.platform.startswith("linux"):
        facts["error"] = "not Linux (%s)" % sys.platform
        return facts
    try:
        with open(PROC_VERSION) as handle:
            text = handle.read(_MAX_TEXT)
    except OSError as exc:
        facts["error"] = exception_text(exc)
        return facts
    facts["text"] = text.strip()
    facts["version"] = ct.parse_proc_driver_version(text)
    return facts


def _cu_error(lib: Any, code: int) -> str:
    import ctypes

    name = ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(ctypes.c_int(code), ctypes.byref(name)) == 0 and name.value:
            return "%s (%d)" % (name.value.decode("ascii", "replace"), code)
    except Exception:  # noqa: BLE001 - a very old libcuda without cuGetErrorName
        pass
    return "CUresult %d" % code


def _libcuda() -> Dict[str, Any]:
    """cuInit(0), cuDriverGetVersion, cuDeviceGetCount straight from the driver library."""
    import ctypes  # (here, where the probe runs: the parent imports this module with the check's declaration)

    facts: Dict[str, Any] = {"library": None, "loaded": False, "error": None, "cuInit": None,
                             "driver_version": None, "device_count": None}
    if sys.platform.startswith("win"):
        names = ["nvcuda.dll"]
        loader: Any = getattr(ctypes, "WinDLL", ctypes.CDLL)
    elif sys.platform.startswith("linux"):
        names = ["libcuda.so.1", "libcuda.so"]
        loader = ctypes.CDLL
    else:
        facts["error"] = "no CUDA driver library on %s" % sys.platform
        return facts
    errors = []
    lib = None
    for name in names:
        try:
            lib = loader(name)
        except OSError as exc:
            errors.append(exception_text(exc))
            continue
        facts["library"] = name
        break
    if lib is None:
        facts["error"] = "; ".join(errors)
        return facts
    facts["loaded"] = True
    try:
        rc = int(lib.cuInit(ctypes.c_uint(0)))
        facts["cuInit"] = "CUDA_SUCCESS" if rc == 0 else _cu_error(lib, rc)
        version = ctypes.c_int(0)
        rc_version = int(lib.cuDriverGetVersion(ctypes.byref(version)))
        if rc_version == 0:
            facts["driver_version"] = int(version.value)
        else:
            facts["error"] = "cuDriverGetVersion: %s" % _cu_error(lib, rc_version)
        if rc == 0:
            count = ctypes.c_int(0)
            rc_count = int(lib.cuDeviceGetCount(ctypes.byref(count)))
            facts["device_count"] = int(count.value) if rc_count == 0 else None
    except Exception as exc:  # noqa: BLE001 - a missing symbol is a fact
        facts["error"] = exception_text(exc)
    return facts


def _nvcc() -> Dict[str, Any]:
    """The CUDA toolkit on PATH (used to *build* extensions such as apex). It is not the
    CUDA torch runs with: torch brings its own runtime (collect_env confuses the two)."""
    path = shutil.which("nvcc")
    facts: Dict[str, Any] = {"label": "CUDA toolkit on PATH (nvcc), not torch's CUDA runtime", "path": path,
                             "release": None, "version": None, "error": None}
    if path is None:
        facts["error"] = "nvcc not on PATH"
        return facts
    run = run_command([path, "--version"])
    if run["error"]:
        facts["error"] = run["error"]
        return facts
    facts.update(ct.parse_nvcc_version(run["stdout"]))
    return facts


def _fft(torch: Any, device: str) -> Dict[str, Any]:
    """One float32 rfft on the device against the CPU's: the cuFFT this torch brings, run for real. The tables say
    when it has no kernels for a GPU (CUFFT_FIRST_CUDA); the op says whether it runs here (conda's or a newer
    nvidia-cufft than torch's own pin can make it work, a damaged one can make it fail)."""
    x = randn(torch, seeded_generator(torch, 60), FFT_N)

    def fn() -> Any:
        return torch.view_as_real(torch.fft.rfft(x.to(device)))

    def ref() -> Any:
        return torch.view_as_real(torch.fft.rfft(x))

    return run_op(torch, "fft", device, "float32", fn, ref, shape=[FFT_N])


def _torch_facts(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    version = getattr(torch, "version", None)
    C: Any = getattr(torch, "_C", None)
    t: Dict[str, Any] = {
        "version": str(getattr(torch, "__version__", "")),
        "cuda": getattr(version, "cuda", None),
        "hip": getattr(version, "hip", None),
        "compiled_with_cuda": hasattr(C, "_cuda_getDeviceCount"),
        "arch_flags": None,
        "arch_list": [],
        "is_available": False,
        "device_count": 0,
        "available_warnings": [],
        "init_error": None,
        "init_warnings": [],
        "devices": [],
    }
    # get_arch_list() returns [] whenever CUDA is unavailable in older torch: read the
    # compiled-in flags directly, they are what the kernels were built for.
    if hasattr(C, "_cuda_getArchFlags"):
        try:
            t["arch_flags"] = C._cuda_getArchFlags()
        except Exception as exc:  # noqa: BLE001
            t["arch_flags_error"] = exception_text(exc)
    try:
        t["arch_list"] = list(torch.cuda.get_arch_list())
    except Exception as exc:  # noqa: BLE001
        t["arch_list_error"] = exception_text(exc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            t["is_available"] = bool(torch.cuda.is_available())
            t["device_count"] = int(torch.cuda.device_count())
        except Exception as exc:  # noqa: BLE001
            t["available_error"] = exception_text(exc)
    t["available_warnings"] = warning_texts(caught)
    # torch caches the device count and warns only once per process (c10 device_count);
    # torch.cuda.init() raises the full reason every time ("...driver ... too old (found
    # version N)", "Found no NVIDIA driver", "No CUDA GPUs are available", "Torch not
    # compiled with CUDA enabled").
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.cuda.init()
        except Exception as exc:  # noqa: BLE001
            t["init_error"] = "%s: %s" % (type(exc).__name__, error_text(exc))
    t["init_warnings"] = warning_texts(caught)
    for index in range(t["device_count"] if t["is_available"] else 0):
        with step("reading the identity of cuda:%d" % index, device="cuda:%d" % index):
            dev = identity(torch, "cuda:%d" % index)
        if not dev.get("error"):
            dev["total_memory"], error = attempt(lambda: int(torch.cuda.get_device_properties(index).total_memory))
            if error:
                dev["error"] = error
        t["devices"].append(dev)
    # Only on the selected GPUs, where the cublas check makes a context anyway: the FFT then costs the cuFFT load alone
    selected = set(cuda_devices(torch, ctx)) if t["is_available"] else set()
    for dev in t["devices"]:
        if dev.get("id") in selected and not dev.get("error"):
            dev["fft"] = _fft(torch, dev["id"])
    return t


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    facts: Dict[str, Any] = {
        "env": {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")},
        "nvidia_smi": _nvidia_smi(),
        "proc_driver": _proc_driver(),
        "libcuda": _libcuda(),
        "nvcc": _nvcc(),
        "packages": {name: installed_version(name) for name in ("torch", "torchvision", "torchaudio")},
        "torch_import": {k: v for k, v in (ctx.options.get("torch_import") or {}).items()
                         if k in ("ok", "error", "error_type", "version")},
        "torch": None,
    }
    if torch is not None:
        facts["torch"] = _torch_facts(torch, ctx)
    return facts
