"""cuda-compat: does the torch CUDA build fit this NVIDIA driver, and does it carry
kernels for every GPU? Reads the driver without torch (nvidia-smi, /proc, libcuda
through ctypes), so it also says which wheel to install when torch is missing or a
CPU-only build sits on a GPU machine.

Data (minimum drivers, arch lists, wheels) come from envdoctor/target/cuda_tables.py,
built from docs/facts.md §1–§3; the error texts in SIGNATURES from §6.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import warnings
from typing import Any, Dict, List, Optional, Sequence

from envdoctor.target import cuda_tables as ct
from envdoctor.target.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, Target
from envdoctor.target.probekit.distributions import installed_version
from envdoctor.target.probekit.gpus import identity
from envdoctor.target.probekit.ops import attempt
from envdoctor.target.probekit.steps import step
from envdoctor.target.probekit.text import error_text, exception_text, warning_texts
from envdoctor.target.remedies.actions import env_remedy, pip_remedy

ID = "cuda-compat"
SMI_FIELDS = ("index", "name", "driver_version", "compute_cap", "memory.total")
SMI_FALLBACK_FIELDS = ("index", "name", "driver_version", "memory.total")  # drivers without compute_cap
SMI_TIMEOUT_S = 10.0
PROC_VERSION = "/proc/driver/nvidia/version"
NO_KERNEL_IMAGE = "CUDA error: no kernel image is available for execution on the device"
DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"
_MAX_TEXT = 2000

# ---------------------------------------------------------------- probe: driver without torch


def _run(argv: List[str], timeout: float = SMI_TIMEOUT_S) -> Dict[str, Any]:
    """Run a command (argv list, never a shell) and record exactly what happened."""
    out: Dict[str, Any] = {"argv": argv, "returncode": None, "stdout": "", "stderr": "", "error": None}
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, text=True)
    except (OSError, subprocess.SubprocessError) as exc:  # FileNotFoundError: no such program
        out["error"] = exception_text(exc)
        return out
    out["returncode"] = proc.returncode
    out["stdout"] = (proc.stdout or "")[:_MAX_TEXT]
    out["stderr"] = (proc.stderr or "")[:_MAX_TEXT]
    return out


def _smi_program() -> str:
    """nvidia-smi from PATH; WSL keeps it in /usr/lib/wsl/lib, often off PATH."""
    if shutil.which("nvidia-smi") is None and os.path.exists("/usr/lib/wsl/lib/nvidia-smi"):
        return "/usr/lib/wsl/lib/nvidia-smi"
    return "nvidia-smi"


def _nvidia_smi() -> Dict[str, Any]:
    program = _smi_program()
    fields: Sequence[str] = SMI_FIELDS
    first = _run([program, "--query-gpu=" + ",".join(fields), "--format=csv,noheader"])
    facts = dict(first)
    facts["fields"] = list(fields)
    facts["fallback"] = None
    if first["returncode"] not in (None, 0) and "compute_cap" in (first["stdout"] + first["stderr"]):
        fields = SMI_FALLBACK_FIELDS  # 'Field "compute_cap" is not a valid field to query.' (old drivers)
        second = _run([program, "--query-gpu=" + ",".join(fields), "--format=csv,noheader"])
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
    name = ctypes.c_char_p()
    try:
        if lib.cuGetErrorName(ctypes.c_int(code), ctypes.byref(name)) == 0 and name.value:
            return "%s (%d)" % (name.value.decode("ascii", "replace"), code)
    except Exception:  # noqa: BLE001 - a very old libcuda without cuGetErrorName
        pass
    return "CUresult %d" % code


def _libcuda() -> Dict[str, Any]:
    """cuInit(0), cuDriverGetVersion, cuDeviceGetCount straight from the driver library."""
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
    run = _run([path, "--version"])
    if run["error"] or run["returncode"] != 0:
        facts["error"] = run["error"] or "exit status %s: %s" % (run["returncode"], run["stderr"].strip()[-300:])
        return facts
    facts.update(ct.parse_nvcc_version(run["stdout"]))
    return facts


# ---------------------------------------------------------------- probe: torch


def _torch_facts(torch: Any) -> Dict[str, Any]:
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
        facts["torch"] = _torch_facts(torch)
    return facts


# ---------------------------------------------------------------- rules


class _Gpu:
    def __init__(self, ident: str, name: str, cap: Optional[ct.Capability], source: str) -> None:
        self.id = ident
        self.name = name
        self.cap = cap
        self.source = source

    def label(self) -> str:
        return "%s (%s, compute capability %s)" % (self.id, self.name, ct.capability_text(self.cap))


class _View:
    """What the raw facts say, derived once: driver, GPUs, torch build."""

    def __init__(self, facts: Dict[str, Any], env: Target) -> None:
        self.facts = facts
        self.env = env
        self.system = env.os
        self.machine = str(env.machine or "x86_64")
        self.python = ct.release_key(env.python_version)  # "3.11.7" -> (3, 11)
        self.smi = facts.get("nvidia_smi") or {}
        self.proc = facts.get("proc_driver") or {}
        self.lib = facts.get("libcuda") or {}
        self.torch: Optional[Dict[str, Any]] = facts.get("torch")
        self.smi_gpus = [g for g in self.smi.get("gpus") or [] if isinstance(g, dict)]
        self.driver: Optional[str] = None
        self.driver_source = ""
        for gpu in self.smi_gpus:
            if ct.parse_driver(gpu.get("driver_version")):
                self.driver, self.driver_source = gpu["driver_version"], "nvidia-smi"
                break
        if self.driver is None and self.proc.get("version"):
            self.driver, self.driver_source = self.proc["version"], PROC_VERSION
        self.driver_cuda = ct.cuda_from_driver_api(self.lib.get("driver_version"))
        self.driver_cuda_source = "cuDriverGetVersion" if self.driver_cuda else ""
        if self.driver_cuda is None and self.torch:
            n = ct.found_version(" ".join(self._torch_texts()))
            self.driver_cuda = ct.cuda_from_driver_api(n)
            self.driver_cuda_source = "torch (found version %s)" % n if n else ""
        self.visible = (facts.get("env") or {}).get("CUDA_VISIBLE_DEVICES")
        self.torch_gpus = [
            _Gpu(d.get("id", "cuda:?"), d.get("name") or "?", ct.parse_capability(d.get("capability")), "torch")
            for d in (self.torch or {}).get("devices") or [] if not d.get("error")
        ]
        self.physical = [
            _Gpu("GPU %s" % g.get("index", i), g.get("name") or "?",
                 ct.parse_capability(g.get("compute_cap")) or ct.capability_from_name(g.get("name")), "nvidia-smi")
            for i, g in enumerate(self.smi_gpus)
        ]

    def _torch_texts(self) -> List[str]:
        t = self.torch or {}
        init = "torch.cuda.init(): %s" % t["init_error"] if t.get("init_error") else ""
        return [*(t.get("available_warnings") or []), init, *(t.get("init_warnings") or [])]

    def torch_evidence(self) -> List[str]:
        return [x for x in self._torch_texts() if x]

    @property
    def gpus_present(self) -> bool:
        return bool(self.physical or self.torch_gpus or (self.lib.get("device_count") or 0) > 0)

    def judged_gpus(self) -> List[_Gpu]:
        """The GPUs a run will use: torch's view when it has one (it honours
        CUDA_VISIBLE_DEVICES), else nvidia-smi's, narrowed by CUDA_VISIBLE_DEVICES indices.
        When the variable hides them all, every GPU: a wheel must still fit the machine."""
        if self.torch_gpus:
            return self.torch_gpus
        if self.visible is None:
            return self.physical
        picked: List[_Gpu] = []
        for token in self.visible.split(","):
            token = token.strip()
            if not token.isdigit() or int(token) >= len(self.physical):
                return picked if picked else self.physical
            picked.append(self.physical[int(token)])
        return picked

    def capabilities(self) -> List[ct.Capability]:
        return sorted({g.cap for g in self.judged_gpus() if g.cap is not None})

    def driver_text(self) -> str:
        parts = []
        if self.driver:
            top = ct.max_cuda_for_driver(self.driver, self.system)
            parts.append("driver %s (%s%s)" % (self.driver, self.driver_source,
                                               ", supports CUDA <= %d.%d" % top if top else ""))
        if self.driver_cuda:
            parts.append("CUDA driver API %d.%d (%s)" % (self.driver_cuda + (self.driver_cuda_source,)))
        return "; ".join(parts) or "driver version unknown"

    def installed(self, name: str) -> Optional[str]:
        return (self.facts.get("packages") or {}).get(name)

    def wheel(self, prefer: Optional[str] = None) -> Optional[ct.WheelChoice]:
        return ct.choose_wheel(self.capabilities(), self.driver, self.driver_cuda, self.python,
                               self.system, self.machine, prefer)


def _wheel_remedy(view: _View, choice: Optional[ct.WheelChoice], summary: str, rid: str) -> Remedy:
    if choice is None:
        return Remedy(
            "No torch wheel in envdoctor's tables fits this driver, these GPUs and Python %s: upgrade the NVIDIA "
            "driver, or pick a build by hand at https://pytorch.org/get-started/previous-versions/"
            % (view.env.python_version or "?"),
            kind="manual", id=rid,
        )
    with_vision = bool(view.installed("torchvision"))
    with_audio = bool(view.installed("torchaudio"))
    notes = ["torch %s built for CUDA %d.%d (arch %s)" % (choice.torch, choice.cuda[0], choice.cuda[1], " ".join(choice.arch))]
    if choice.support == "minor-compat":
        row = ct.min_driver(choice.cuda, view.system)
        notes.append("it runs on this driver through CUDA minor-version compatibility; PTX JIT "
                     "(torch.compile/Triton kernels) wants driver >= %s" % row)
    if with_vision and choice.torchvision:
        notes.append("torchvision %s is its pair" % choice.torchvision)
    if with_audio and not choice.torchaudio:
        notes.append("no torchaudio exists for torch %s: uninstall torchaudio or keep torch <= 2.11" % choice.torch)
    return pip_remedy("%s: %s" % (summary, "; ".join(notes)), rid, view.env,
                      install=choice.requirements(with_vision, with_audio), index_url=choice.index_url)


def _driver_remedy(view: _View, need: str, cuda: ct.Cuda) -> Remedy:
    return Remedy(
        "Upgrade the NVIDIA driver to >= %s, the minimum for torch's CUDA %d.%d build (NVIDIA CUDA Toolkit release notes); any newer "
        "driver works: %s" % (need, cuda[0], cuda[1], DRIVER_DOWNLOAD),
        kind="manual", id="driver-upgrade", action={"driver_min": need},
    )


def _visible_finding(view: _View, severity: Severity) -> Optional[Finding]:
    if view.visible is None or not view.physical:
        return None  # nothing hidden on a machine without GPUs
    shown = ct.visible_device_count(view.visible, len(view.physical))
    if shown is None or shown > 0:
        return None
    evidence = ["CUDA_VISIBLE_DEVICES=%r" % view.visible,
                "nvidia-smi sees %d GPU(s): %s" % (len(view.physical), ", ".join(g.label() for g in view.physical))]
    if (view.torch or {}).get("cuda"):
        evidence += view.torch_evidence()
    if view.lib.get("cuInit") and view.lib.get("cuInit") != "CUDA_SUCCESS":
        evidence.append("cuInit(0): %s" % view.lib["cuInit"])
    return Finding(
        ID, "cuda-visible-devices-hides-all", severity,
        "CUDA_VISIBLE_DEVICES=%r hides every GPU from CUDA: torch will see no device" % view.visible,
        tuple(evidence),
        (env_remedy("Unset CUDA_VISIBLE_DEVICES (or list the GPU indices to use, e.g. CUDA_VISIBLE_DEVICES=0)",
                    "unset-cuda-visible-devices", unset_env=["CUDA_VISIBLE_DEVICES"]),),
        {"variable": "CUDA_VISIBLE_DEVICES", "value": view.visible},
    )


def _no_device(view: _View) -> Finding:
    evidence = []
    smi = view.smi
    if smi.get("error"):
        evidence.append("nvidia-smi: %s" % smi["error"])
    else:
        fb = smi.get("fallback") or smi
        text = (fb.get("stdout") or fb.get("stderr") or "").strip()
        evidence.append("nvidia-smi: exit status %s%s" % (fb.get("returncode"), ": " + text.splitlines()[0] if text else ""))
    evidence.append("%s: %s" % (PROC_VERSION, view.proc.get("version") or view.proc.get("error")))
    if view.lib.get("loaded"):
        evidence.append("libcuda: cuInit %s, %s device(s)" % (view.lib.get("cuInit"), view.lib.get("device_count")))
    else:
        evidence.append("libcuda: %s" % view.lib.get("error"))
    evidence += view.torch_evidence()
    remedies: List[Remedy] = []
    t = view.torch
    if t and t.get("cuda"):
        remedies.append(pip_remedy(
            "If this machine should have an NVIDIA GPU, install its driver (%s). If it has none, the CPU wheel of "
            "torch is GBs smaller than this CUDA %s build" % (DRIVER_DOWNLOAD, t["cuda"]),
            "torch-cpu-wheel", view.env, install=["torch==%s+cpu" % t["version"].split("+")[0]],
            index_url=ct.DOWNLOAD_INDEX + "cpu",
        ))
    title = "no CUDA device: no NVIDIA GPU or driver found"
    if view.driver:
        title = "no CUDA device: NVIDIA driver %s is installed but no GPU is visible" % view.driver
    return Finding(ID, "no-cuda-device", Severity.INFO, title, tuple(evidence), tuple(remedies), {"device": "cuda"})


def _driver_findings(view: _View, build: ct.Cuda) -> List[Finding]:
    t = view.torch or {}
    support = ct.driver_support(build, view.driver, view.driver_cuda, view.system)
    if support in ("full", "unknown"):
        return []
    row = ct.min_driver(build, view.system)
    family = ct.family_min_driver(build[0], view.system)
    subject = {"package": "torch", "version": t.get("version"), "cuda": t.get("cuda"), "driver": view.driver}
    if support == "minor-compat":
        return [Finding(
            ID, "driver-minor-compat", Severity.WARNING,
            "torch is built for CUDA %s but the driver supports an older CUDA %d.x: it runs through minor-version "
            "compatibility, PTX JIT (torch.compile/Triton, +PTX kernels) may fail" % (t.get("cuda"), build[0]),
            (view.driver_text(), "CUDA %s wants driver >= %s for every feature (NVIDIA CUDA Toolkit release notes)" % (t.get("cuda"), row)),
            (_driver_remedy(view, row or family or "?", build),),
            subject,
        )]
    evidence = [view.driver_text(),
                "torch %s is built for CUDA %s: needs driver >= %s (CUDA %d.x minor-version compatibility: >= %s)"
                % (t.get("version"), t.get("cuda"), row or "?", build[0], family or "none")]
    evidence += view.torch_evidence()
    choice = view.wheel(prefer=t.get("version"))
    return [Finding(
        ID, "driver-too-old", Severity.ERROR,
        "the NVIDIA driver is too old for this torch (CUDA %s build): CUDA is unavailable" % t.get("cuda"),
        tuple(evidence),
        (_driver_remedy(view, row or family or "?", build),
         _wheel_remedy(view, choice, "Or install the torch wheel built for this driver", "torch-wheel-for-driver")),
        subject,
    )]


def _arch_findings(view: _View, arch: Any) -> List[Finding]:
    t = view.torch or {}
    findings: List[Finding] = []
    entries = " ".join(a.text for a in ct.parse_arch_list(arch)) or "(empty)"
    for gpu in view.judged_gpus():
        if gpu.cap is None:
            continue
        cover = ct.arch_coverage(arch, gpu.cap)
        if cover is not None and cover[0] == "native":
            continue
        choice = view.wheel(prefer=t.get("version"))
        subject = {"device": gpu.id, "name": gpu.name, "capability": ct.capability_text(gpu.cap),
                   "package": "torch", "version": t.get("version")}
        if cover is None:
            evidence = [
                "%s; torch %s carries %s" % (gpu.label(), t.get("version"), entries),
                "%s and no PTX compute_XY with XY <= %d%d: kernels fail with \"%s\""
                % ("no sm_%d%d cubin (Jetson parts need their exact one)" % gpu.cap if gpu.cap in ct.EXACT_ONLY
                   else "no cubin sm_%dY with Y <= %d" % gpu.cap, gpu.cap[0], gpu.cap[1], NO_KERNEL_IMAGE),
            ]
            if any(a.kind == "sm" and a.major == gpu.cap[0] for a in ct.parse_arch_list(arch)):
                evidence.append("torch's _check_cubins() warning compares only the major version (sm_%d*), so it "
                                "does not fire for this GPU" % gpu.cap[0])
            findings.append(Finding(
                ID, "no-kernel-image", Severity.ERROR,
                "%s has no kernels in this torch build: every CUDA op will fail with \"no kernel image is available\""
                % gpu.label(),
                tuple(evidence + [w for w in view.torch_evidence() if "sm_" in w or "capability" in w]),
                (_wheel_remedy(view, choice, "Install a torch wheel that carries sm_%d%d" % gpu.cap, "torch-wheel-for-gpu"),),
                subject,
            ))
        else:
            build = ct.parse_cuda(t.get("cuda"))
            jit_blocked = build is not None and ct.driver_support(build, view.driver, view.driver_cuda, view.system) == "minor-compat"
            evidence = ["%s; torch %s carries %s" % (gpu.label(), t.get("version"), entries),
                        "first use JIT-compiles every kernel (minutes), needs a driver as new as torch's CUDA %s, and the "
                        "bundled cuBLAS/cuDNN may still lack kernels for this GPU" % t.get("cuda")]
            if jit_blocked:
                evidence.append("%s is older than CUDA %s: the JIT fails with \"the provided PTX was compiled with an "
                                "unsupported toolchain\"" % (view.driver_text(), t.get("cuda")))
            findings.append(Finding(
                ID, "ptx-jit-only", Severity.ERROR if jit_blocked else Severity.WARNING,
                "%s has no native kernels in this torch build, only PTX (%s) that the driver must JIT-compile"
                % (gpu.label(), cover[1]),
                tuple(evidence),
                (_wheel_remedy(view, choice, "Install a torch wheel with native sm_%d%d kernels" % gpu.cap, "torch-wheel-for-gpu"),),
                subject,
            ))
    return findings


def _mismatch_finding(view: _View) -> Optional[Finding]:
    texts = [view.smi.get("stdout") or "", view.smi.get("stderr") or "", view.lib.get("cuInit") or ""]
    hit = [x.strip().splitlines()[0] for x in texts if "Driver/library version mismatch" in x or "SYSTEM_DRIVER_MISMATCH" in x]
    if not hit:
        return None
    return Finding(
        ID, "driver-library-mismatch", Severity.ERROR,
        "the loaded NVIDIA kernel module and the user-space driver library differ (driver updated without reboot)",
        tuple(hit + ["%s: %s" % (PROC_VERSION, view.proc.get("version") or view.proc.get("error"))] + view.torch_evidence()),
        (Remedy("Reboot the machine (or unload and reload the nvidia kernel modules) so that the kernel module "
                "matches the installed driver", kind="manual", id="reboot-after-driver-update"),),
        {"driver": view.driver},
    )


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    view = _View(facts, env)
    t = view.torch
    findings: List[Finding] = []

    mismatch = _mismatch_finding(view)
    if mismatch is not None and not view.gpus_present:
        return [mismatch]
    if not view.gpus_present:
        if t and t.get("hip"):
            return [_rocm_info(view)]
        build = ct.parse_cuda((t or {}).get("cuda"))
        too_old = [f for f in (_driver_findings(view, build) if build else []) if f.code == "driver-too-old"]
        if too_old:  # a driver answered (e.g. torch's "found version N") but is too old to list GPUs
            return too_old
        return [_no_device(view)]
    if mismatch is not None:
        findings.append(mismatch)

    if t is None:  # torch missing or not importable: torch-install reports that as an error
        choice = view.wheel()
        imp = facts.get("torch_import") or {}
        findings.append(Finding(
            ID, "torch-wheel-for-driver", Severity.INFO,
            "torch is not importable; the CUDA wheel for this driver and these GPUs is %s"
            % ("torch %s from %s" % (choice.torch, choice.index_url) if choice else "not in envdoctor's tables"),
            tuple(x for x in (view.driver_text(), "GPUs: " + ", ".join(g.label() for g in view.judged_gpus()),
                              imp.get("error")) if x),
            (_wheel_remedy(view, choice, "Install torch for this driver", "torch-wheel-for-driver"),),
            {"package": "torch"},
        ))
        hidden = _visible_finding(view, Severity.WARNING)
        return findings + ([hidden] if hidden else [])

    if t.get("hip"):
        findings.append(_rocm_info(view))
        if view.physical and not t.get("is_available"):
            choice = view.wheel()
            findings.append(Finding(
                ID, "rocm-torch-on-nvidia", Severity.WARNING,
                "this is a ROCm (AMD) build of torch but the GPUs here are NVIDIA: it sees none of them",
                ("torch %s (HIP %s)" % (t.get("version"), t.get("hip")),
                 "nvidia-smi: " + ", ".join(g.label() for g in view.physical)),
                (_wheel_remedy(view, choice, "Install the CUDA build of torch", "torch-wheel-for-driver"),),
                {"package": "torch", "version": t.get("version")},
            ))
        return findings

    build = ct.parse_cuda(t.get("cuda"))
    if build is None:  # CPU-only wheel on a machine with an NVIDIA GPU
        choice = view.wheel(prefer=t.get("version"))
        evidence = ["torch %s is a CPU-only build (torch.version.cuda is None)" % t.get("version"),
                    view.driver_text(),
                    "GPUs: " + ", ".join(g.label() for g in (view.physical or view.torch_gpus))]
        if t.get("init_error"):
            evidence.append("torch.cuda.init(): %s" % t["init_error"])
        findings.append(Finding(
            ID, "cpu-only-torch", Severity.ERROR,
            "torch %s is a CPU-only build on a machine with an NVIDIA GPU: nothing will run on the GPU" % t.get("version"),
            tuple(evidence),
            (_wheel_remedy(view, choice, "Install the CUDA build of torch for this driver", "torch-cuda-wheel"),),
            {"package": "torch", "version": t.get("version")},
        ))
        hidden = _visible_finding(view, Severity.WARNING)
        return findings + ([hidden] if hidden else [])

    driver = _driver_findings(view, build)
    findings.extend(driver)
    hidden = _visible_finding(view, Severity.ERROR)
    if hidden is not None:
        findings.append(hidden)
    arch = t.get("arch_flags") if t.get("arch_flags") is not None else t.get("arch_list")
    if ct.parse_arch_list(arch):
        findings.extend(_arch_findings(view, arch))
    explained = any(f.severity is Severity.ERROR for f in findings)
    if not t.get("is_available") and not explained:
        findings.append(Finding(
            ID, "cuda-init-failed", Severity.ERROR,
            "torch %s (CUDA %s) cannot initialise CUDA although NVIDIA GPUs are present" % (t.get("version"), t.get("cuda")),
            tuple([view.driver_text()] + view.torch_evidence()
                  + (["cuInit(0): %s" % view.lib["cuInit"]] if view.lib.get("cuInit") else [])),
            (Remedy("Run `nvidia-smi`; check that /dev/nvidia* exist in this container (--gpus all) and that the driver "
                    "loads; then retry", kind="manual", id="check-driver"),),
            {"package": "torch", "version": t.get("version")},
        ))
    return findings


def _rocm_info(view: _View) -> Finding:
    t = view.torch or {}
    return Finding(
        ID, "rocm-build", Severity.INFO,
        "torch %s is a ROCm build (HIP %s): NVIDIA driver and arch rules do not apply" % (t.get("version"), t.get("hip")),
        ("torch.version.hip = %s" % t.get("hip"), "devices: %s" % (", ".join(
            "%s (%s)" % (d.get("id"), d.get("name")) for d in t.get("devices") or []) or "none")),
        (), {"package": "torch", "version": t.get("version")},
    )


def summarize(facts: Dict[str, Any]) -> str:
    view = _View(facts, Target())
    t = view.torch
    parts: List[str] = []
    if view.driver or view.driver_cuda:
        parts.append(view.driver_text().split(" (")[0])
    else:
        parts.append("no NVIDIA driver")
    if t is None:
        parts.append("torch not importable")
    elif t.get("hip"):
        parts.append("torch ROCm %s" % t.get("hip"))
    else:
        parts.append("torch %s" % ("CUDA %s" % t["cuda"] if t.get("cuda") else "CPU-only"))
    gpus = view.judged_gpus() or view.physical
    if gpus:
        parts.append("%d GPU(s): %s" % (len(gpus), ", ".join("%s %s" % (g.name, ct.capability_text(g.cap)) for g in gpus)))
        if view.physical and not view.torch_gpus and ct.visible_device_count(view.visible, len(view.physical)) == 0:
            parts[-1] += " (all hidden by CUDA_VISIBLE_DEVICES=%r)" % view.visible
    else:
        parts.append("no GPU")
    nvcc = facts.get("nvcc") or {}
    if nvcc.get("release"):
        parts.append("nvcc %s on PATH (build toolkit)" % nvcc["release"])
    return " · ".join(parts)


# What `explain` can say from a traceback alone; the live findings name the exact wheel for this GPU and driver.
WHEEL_FOR_GPU = Remedy("Install the torch wheel built for this GPU's architecture and this driver: `envdoctor check --only "
                       "cuda-compat` names it and `envdoctor fix` installs it (a GPU newer than the torch, e.g. sm_120 on a "
                       "cu12.4 wheel, needs a newer torch)", id="torch-wheel-for-gpu")
DRIVER_UPGRADE = Remedy("Or update the NVIDIA driver to one that supports torch's CUDA version (`nvidia-smi` shows the driver's "
                        "CUDA)", id="driver-upgrade")
CUDA_TORCH = Remedy("Install a CUDA build of torch (Linux: the PyPI default; Windows: the download.pytorch.org cuXXX index for "
                    "your driver) into the interpreter that runs the script", id="torch-cuda-wheel")
VISIBLE_GPU = Remedy("Make a GPU visible: check CUDA_VISIBLE_DEVICES, give the container the GPUs (--gpus all), pick a GPU "
                     "runtime in Colab; `nvidia-smi` must list one", id="visible-devices")
REBOOT = Remedy("Reboot (or reload the nvidia kernel modules) so that the driver's kernel module and libraries are the same "
                "release", id="reboot-after-driver-update")

SIGNATURES = (
    Signature("no-kernel-image", r"no kernel image is available for execution on the device",
              cause="the GPU's compute capability has no cubin (and no usable PTX) in torch or an extension",
              remedies=(WHEEL_FOR_GPU, DRIVER_UPGRADE)),
    Signature("no-kernel-image", r"with CUDA capability sm_(\d+) is not compatible with the current PyTorch installation",
              frames=(r"torch/cuda/__init__\.py",),
              cause="torch was not built for this GPU's architecture",
              remedies=(WHEEL_FOR_GPU, DRIVER_UPGRADE)),
    Signature("driver-too-old", r"CUDA driver version is insufficient for CUDA runtime version",
              cause="the NVIDIA driver is older than the CUDA runtime bundled with torch or an extension",
              remedies=(DRIVER_UPGRADE, WHEEL_FOR_GPU)),
    Signature("driver-too-old", r"The NVIDIA driver on your system is too old \(found version (\d+)\)",
              frames=(r"torch/cuda/__init__\.py",),
              cause="the driver's CUDA version (1000*major+10*minor) is below torch's CUDA build",
              remedies=(DRIVER_UPGRADE, WHEEL_FOR_GPU)),
    Signature("driver-too-old", r"the provided PTX was compiled with an unsupported toolchain",
              cause="PTX from a newer CUDA toolkit than the driver supports (JIT needs the toolkit's full driver row)",
              remedies=(DRIVER_UPGRADE, WHEEL_FOR_GPU)),
    Signature("no-cuda-device", r"Found no NVIDIA driver on your system",
              cause="no NVIDIA driver (libcuda) is installed or loaded",
              remedies=(VISIBLE_GPU,)),
    Signature("cpu-only-torch", r"Torch not compiled with CUDA enabled",
              frames=(r"torch/cuda/__init__\.py",), cause="a CPU-only torch wheel was asked to use CUDA",
              remedies=(CUDA_TORCH,)),
    Signature("cuda-visible-devices-hides-all", r"no CUDA-capable device is detected|No CUDA GPUs are available",
              cause="CUDA sees no GPU: CUDA_VISIBLE_DEVICES hides them, the container lacks --gpus, or there is none",
              remedies=(VISIBLE_GPU,)),
    Signature("driver-library-mismatch", r"Driver/library version mismatch|system has unsupported display driver / cuda driver combination",
              cause="the NVIDIA kernel module and user-space library differ, usually until a reboot after a driver update",
              remedies=(REBOOT,)),
)

CHECK = Check(
    id=ID,
    title="CUDA build vs driver vs GPU",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    requires_torch=False,
    order=40,
    signatures=SIGNATURES,
)
