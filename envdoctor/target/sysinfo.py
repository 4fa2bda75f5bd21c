"""System facts for a bug report, the part of `python -m torch.utils.collect_env`
that envdoctor did not have: OS, compilers, CPU and its half-precision
instruction sets, memory, driver, conda, package versions, torch's build.

Runs inside the *target* interpreter (worker side): standard library only at
module level, Python 3.8 syntax, never imports torch or any package it reports.
Nothing here raises: a fact that cannot be read is None, and what went wrong is
in "errors". The two dicts go into the JSON report unchanged.

collect_system() -> environment["system"], cheap (no lscpu, no nvidia-smi, the
compilers asked concurrently), meant to run in a thread while torch imports:
  os              str | None   "Debian GNU/Linux 12 (bookworm)" (/etc/os-release PRETTY_NAME, else platform)
  system          str | None   uname system: "Linux", "Darwin", "Windows"
  machine         str | None   uname machine: "x86_64", "aarch64", "arm64"
  kernel          str | None   uname release: "6.8.0-45-generic"
  libc            str | None   "glibc-2.36"; None where platform cannot tell (musl, macOS, Windows)
  python          dict | None  {version, implementation, bits, compiler, venv}
  conda           dict | None  {env: sys.prefix is a conda env, name: its name or None,
                               active: it is the env CONDA_PREFIX names}
  tools           dict         {gcc, clang, cmake, nvcc}: each None when not on PATH, else
                               {path, version ("12.2.0"), line (the --version line that says it), error}
  cpu             dict | None  {model, vendor, logical_cores, usable_cores, sockets, threads_per_core,
                               flags: {flag: bool} over CPU_FLAGS for this architecture, or None}
  memory          dict | None  {total_bytes, available_bytes}  (/proc/meminfo)
  nvidia_driver   str | None   "535.104.05" from /proc/driver/nvidia/version (no nvidia-smi)
  packages        dict         {distribution: version or None} for every name in PACKAGES
  errors          dict         {fact: "ExceptionType: message"} for facts that failed to read
  duration_s      float        wall time of collect_system()

torch_runtime(torch) -> environment["torch_runtime"], given an imported torch:
  version, debug, git_version, cuda (torch.version.cuda), hip, cudnn (int, CUDA builds only),
  cxx11_abi, cpu_capability ("AVX2", "AVX512", "DEFAULT", ...), mkl, mkldnn, openmp, xnnpack,
  num_threads, errors
"""

from __future__ import annotations

import importlib
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from envdoctor.target.probekit.files import read_file

# Paths are module constants so that tests can point them at missing or hostile files.
OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")
CPUINFO = "/proc/cpuinfo"
MEMINFO = "/proc/meminfo"
NVIDIA_VERSION = "/proc/driver/nvidia/version"
CPU_SYSFS = "/sys/devices/system/cpu"
TOOL_TIMEOUT_S = 5.0

SYSTEM_KEYS = ("os", "system", "machine", "kernel", "libc", "python", "conda", "tools", "cpu", "memory",
               "nvidia_driver", "packages", "errors", "duration_s")
TORCH_RUNTIME_KEYS = ("version", "debug", "git_version", "cuda", "hip", "cudnn", "cxx11_abi", "cpu_capability",
                      "mkl", "mkldnn", "openmp", "xnnpack", "num_threads", "errors")

# The instruction sets that decide whether CPU fp16/bf16 runs at all, natively or fast:
# /proc/cpuinfo flag names, per architecture (x86 "flags", ARM "Features").
CPU_FLAGS: Dict[str, Tuple[str, ...]] = {
    "x86": ("f16c", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_fp16",
            "avx512_bf16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16"),
    "arm": ("fphp", "asimdhp", "asimddp", "bf16", "i8mm", "sve", "sve2", "sme"),
}

# Distribution names; each is also tried with "_" for "-" (Python 3.8's importlib.metadata does not normalize).
PACKAGES = ("torch", "numpy", "triton", "pytorch-triton", "torchvision", "torchaudio", "xformers", "flash-attn",
            "bitsandbytes", "apex", "transformers", "diffusers", "peft", "accelerate", "deepspeed", "safetensors",
            "onnxruntime", "nvidia-cublas-cu12", "nvidia-cublas-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11",
            "cuda-toolkit")

# argv, the regex of the line worth showing (else the first line), the regexes of the version in it, best first.
_VERSION = r"(\d+(?:\.\d+)+)"
TOOLS: Dict[str, Tuple[List[str], Optional[str], Tuple[str, ...]]] = {
    # "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0", "gcc (GCC) 11.4.1 20230605 (Red Hat 11.4.1-2)"
    "gcc": (["gcc", "--version"], None, (r"\)\s+" + _VERSION, _VERSION)),
    # "Ubuntu clang version 14.0.0-1ubuntu1.1", "Apple clang version 15.0.0 (clang-1500.3.9.4)"
    "clang": (["clang", "--version"], r"clang version", (r"version\s+" + _VERSION, _VERSION)),
    "cmake": (["cmake", "--version"], None, (r"version\s+" + _VERSION,)),
    # "Cuda compilation tools, release 13.0, V13.0.88": collect_env calls this the "CUDA runtime version"
    "nvcc": (["nvcc", "--version"], r"release \d+\.\d+, V", (r"release \d+\.\d+, V(\d+(?:\.\d+)*)",)),
}


def _exc(exc: BaseException) -> str:
    return "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__


def _guarded(errors: Dict[str, str], key: str, fn: Callable[[], Any]) -> Any:
    """fn(), or None with the failure recorded under `key`: one bad fact never costs the others."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - any failure is a missing fact, not a crash
        errors[key] = _exc(exc)
        return None


# ---------------------------------------------------------------- tools (subprocesses, run concurrently)


def _ask_tool(name: str) -> Optional[Dict[str, Any]]:
    argv, line_re, version_res = TOOLS[name]
    path = shutil.which(argv[0])
    if path is None:
        return None
    out: Dict[str, Any] = {"path": path, "version": None, "line": None, "error": None}
    try:
        # stdin closed: the worker's stdin carries the job line, a child must not read it
        proc = subprocess.run([path] + argv[1:], capture_output=True, stdin=subprocess.DEVNULL, timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        out["error"] = "`%s` did not answer within %g s" % (" ".join(argv), TOOL_TIMEOUT_S)
        return out
    except (OSError, subprocess.SubprocessError) as exc:
        out["error"] = _exc(exc)
        return out
    text = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        tail = (proc.stderr.decode("utf-8", "replace").strip() or text.strip())[-200:]
        out["error"] = "`%s` exited with %d%s" % (" ".join(argv), proc.returncode, ": " + tail if tail else "")
        return out
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = next((x for x in lines if line_re and re.search(line_re, x)), lines[0] if lines else None)
    if line:
        out["line"] = line[:200]
        versions = (re.search(pattern, line) for pattern in version_res)
        out["version"] = next((m.group(1) for m in versions if m), None)
    return out


def _start_tools() -> Callable[[], Dict[str, Any]]:
    """Ask every tool its version in its own thread; the returned join() collects them.
    The whole costs one subprocess latency, and overlaps the file reads done meanwhile."""
    results: Dict[str, Any] = {name: None for name in TOOLS}

    def ask(name: str) -> None:
        try:
            results[name] = _ask_tool(name)
        except Exception as exc:  # noqa: BLE001
            results[name] = {"path": None, "version": None, "line": None, "error": _exc(exc)}

    threads = [threading.Thread(target=ask, args=(name,), name="envdoctor-sysinfo-" + name, daemon=True) for name in TOOLS]
    for thread in threads:
        thread.start()

    def join() -> Dict[str, Any]:
        deadline = time.monotonic() + TOOL_TIMEOUT_S + 2.0  # subprocess.run kills at TOOL_TIMEOUT_S
        for name, thread in zip(TOOLS, threads):
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():  # cannot happen while subprocess.run keeps its timeout; never wait forever
                results[name] = {"path": None, "version": None, "line": None, "error": "still running"}
        return dict(results)

    return join


# ---------------------------------------------------------------- files and the platform module


def _os_name() -> Optional[str]:
    for path in OS_RELEASE:
        text = read_file(path)
        if text is None:
            continue
        match = re.search(r"^PRETTY_NAME=(.*)$", text, re.M)
        if match:
            return match.group(1).strip().strip("\"'") or None
    system = _uname("system")
    if system == "Darwin":
        return "macOS %s" % platform.mac_ver()[0]
    if system == "Windows":
        return "Windows %s (%s)" % (platform.release(), platform.version())
    return " ".join(p for p in (system, _uname("release")) if p) or None


def _uname(field: str) -> Optional[str]:
    """os.uname() where it exists: platform.uname() of Python 3.8 also runs `uname -p` in a shell."""
    if hasattr(os, "uname"):
        return str(getattr(os.uname(), {"system": "sysname"}.get(field, field))) or None
    return str(getattr(platform, field)()) or None


def _libc() -> Optional[str]:
    lib, version = platform.libc_ver()
    return "%s-%s" % (lib, version) if lib and version else None


def _python() -> Dict[str, Any]:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "bits": sys.maxsize.bit_length() + 1,
        "compiler": platform.python_compiler() or None,
        "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
    }


def _same_path(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def _conda() -> Dict[str, Any]:
    prefix = sys.prefix
    is_env = os.path.isdir(os.path.join(prefix, "conda-meta"))
    active_prefix = os.environ.get("CONDA_PREFIX")
    # the parent's activated env may be another one than the interpreter diagnosed
    active = bool(active_prefix) and _same_path(active_prefix or "", prefix)
    name = None
    if active:
        name = os.environ.get("CONDA_DEFAULT_ENV") or os.path.basename(prefix)
    elif is_env:
        name = os.path.basename(prefix) if os.path.basename(os.path.dirname(prefix)) == "envs" else "base"
    return {"env": is_env, "name": name, "active": active}


def _cpuinfo_first_block() -> Optional[Dict[str, str]]:
    """The first processor's `key: value` lines. Reading stops there: on a big
    machine the kernel builds the rest (one block per logical CPU) only if asked."""
    fields: Dict[str, str] = {}
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, sep, value = line.partition(":")
                if sep:
                    fields.setdefault(key.strip(), value.strip())
    except OSError:
        return None
    return fields


def _cpu_list_count(text: Optional[str]) -> Optional[int]:
    """'0-3,8-11' -> 8."""
    if not text or not text.strip():
        return None
    count = 0
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        count += int(high) - int(low) + 1 if high else 1
    return count


def _topology(online: Optional[int]) -> Tuple[Optional[int], Optional[int]]:
    """(sockets, threads per core) from cpu0's sysfs siblings: two small files, not one per CPU."""
    base = os.path.join(CPU_SYSFS, "cpu0", "topology")
    per_package = _cpu_list_count(read_file(os.path.join(base, "package_cpus_list")) or read_file(os.path.join(base, "core_siblings_list")))
    per_core = _cpu_list_count(read_file(os.path.join(base, "core_cpus_list")) or read_file(os.path.join(base, "thread_siblings_list")))
    sockets = online // per_package if online and per_package else None
    return sockets or None, per_core


def _flags(fields: Dict[str, str]) -> Optional[Dict[str, bool]]:
    if "flags" in fields:
        wanted = CPU_FLAGS["x86"]
        present = set(fields["flags"].split())
    elif "Features" in fields:
        wanted = CPU_FLAGS["arm"]
        present = set(fields["Features"].split())
    else:
        return None
    return {flag: flag in present for flag in wanted}


def _cpu() -> Dict[str, Any]:
    fields = _cpuinfo_first_block() or {}
    online = _cpu_list_count(read_file(os.path.join(CPU_SYSFS, "online"))) or os.cpu_count()
    sockets, threads_per_core = _topology(online)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        # not platform.processor(): on Linux it runs `uname -p`, and on macOS it says only "arm"
        "model": fields.get("model name") or fields.get("Processor"),
        "vendor": fields.get("vendor_id") or fields.get("CPU implementer"),
        "logical_cores": online,
        "usable_cores": usable,  # after taskset / cgroup cpusets: what torch's threads can use
        "sockets": sockets,
        "threads_per_core": threads_per_core,
        "flags": _flags(fields),
    }


def _memory() -> Optional[Dict[str, Any]]:
    text = read_file(MEMINFO)
    if text is None:
        return None
    values = {m.group(1): int(m.group(2)) * 1024 for m in re.finditer(r"^(MemTotal|MemAvailable):\s+(\d+)\s*kB", text, re.M)}
    return {"total_bytes": values.get("MemTotal"), "available_bytes": values.get("MemAvailable")}


def _nvidia_driver() -> Optional[str]:
    """The kernel module's version line, read with the parser cuda-compat uses (imported
    here, in the facts thread, so the worker's start before `import torch` stays short)."""
    from envdoctor.target.cuda_tables import parse_proc_driver_version

    return parse_proc_driver_version(read_file(NVIDIA_VERSION, 4096))


def _packages(errors: Dict[str, str]) -> Dict[str, Optional[str]]:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError as exc:  # pragma: no cover - Python 3.7
        errors["packages"] = _exc(exc)
        return {name: None for name in PACKAGES}
    found: Dict[str, Optional[str]] = {}
    for name in PACKAGES:
        found[name] = None
        for spelling in dict.fromkeys((name, name.replace("-", "_"))):
            try:
                found[name] = version(spelling)
                break
            except PackageNotFoundError:
                continue
            except Exception as exc:  # noqa: BLE001 - a corrupt METADATA is one missing version
                errors["packages." + name] = _exc(exc)
                break
    return found


def collect_system() -> Dict[str, Any]:
    """The cheap system facts (keys: SYSTEM_KEYS, described in the module docstring). Never raises."""
    start = time.perf_counter()
    errors: Dict[str, str] = {}
    join_tools = _guarded(errors, "tools", _start_tools)  # first: the subprocesses run while we read files
    facts: Dict[str, Any] = {
        "os": _guarded(errors, "os", _os_name),
        "system": _guarded(errors, "system", lambda: _uname("system")),
        "machine": _guarded(errors, "machine", lambda: _uname("machine")),
        "kernel": _guarded(errors, "kernel", lambda: _uname("release")),
        "libc": _guarded(errors, "libc", _libc),
        "python": _guarded(errors, "python", _python),
        "conda": _guarded(errors, "conda", _conda),
        "tools": None,
        "cpu": _guarded(errors, "cpu", _cpu),
        "memory": _guarded(errors, "memory", _memory),
        "nvidia_driver": _guarded(errors, "nvidia_driver", _nvidia_driver),
        "packages": _guarded(errors, "packages", lambda: _packages(errors)) or {name: None for name in PACKAGES},
    }
    facts["tools"] = (_guarded(errors, "tools", join_tools) if join_tools else None) or {name: None for name in TOOLS}
    facts["errors"] = errors
    facts["duration_s"] = round(time.perf_counter() - start, 4)
    return facts


def _submodule(torch: Any, name: str) -> Any:
    """torch.<name>, importing it where torch does not at its own import (torch.backends.xnnpack)."""
    module = torch
    for part in name.split("."):
        module = getattr(module, part, None)
        if module is None:
            return importlib.import_module("%s.%s" % (torch.__name__, name))
    return module


def torch_runtime(torch: Any) -> Dict[str, Any]:
    """How the imported torch was built and what its CPU backend uses (keys: TORCH_RUNTIME_KEYS). Never raises."""
    errors: Dict[str, str] = {}

    def get(key: str, fn: Callable[[], Any]) -> Any:
        return _guarded(errors, key, fn)

    cuda = get("cuda", lambda: torch.version.cuda)
    facts: Dict[str, Any] = {
        "version": get("version", lambda: str(torch.__version__)),
        "debug": get("debug", lambda: bool(torch.version.debug)),
        "git_version": get("git_version", lambda: torch.version.git_version),
        "cuda": cuda,
        "hip": get("hip", lambda: getattr(torch.version, "hip", None)),
        # only a CUDA build links cuDNN; asking a CPU build would be a meaningless None anyway
        "cudnn": get("cudnn", lambda: torch.backends.cudnn.version()) if cuda else None,
        "cxx11_abi": get("cxx11_abi", lambda: bool(torch._C._GLIBCXX_USE_CXX11_ABI)),
        "cpu_capability": get("cpu_capability", lambda: torch.backends.cpu.get_cpu_capability()),
        "mkl": get("mkl", lambda: bool(torch.backends.mkl.is_available())),
        "mkldnn": get("mkldnn", lambda: bool(torch.backends.mkldnn.is_available())),
        "openmp": get("openmp", lambda: bool(torch.backends.openmp.is_available())),
        "xnnpack": get("xnnpack", lambda: bool(_submodule(torch, "backends.xnnpack").enabled)),
        "num_threads": get("num_threads", lambda: int(torch.get_num_threads())),
    }
    facts["errors"] = errors
    return facts
