"""extension-abi: do the compiled extensions of this stack (torchvision, torchaudio,
triton, xformers, flash-attn, bitsandbytes, NVIDIA apex) load against the
installed torch, and are their versions the ones paired with it?

The probe imports each installed extension for real (that is the only test that
counts: `undefined symbol: ...`, `operator torchvision::nms does not exist`,
xformers' "can't load C++/CUDA extensions" warning), recording the exception,
the warnings, log records and anything written to stdout/stderr during the
import. The rules compare the installed versions with the pins each companion
declares (its Requires-Dist) and with the release tables below, and give the
exact pip command that installs the companion paired with the installed torch,
with torch pinned on the same command line so that pip cannot swap it.

It runs late (order 70): importing extensions registers operators and can print,
warn or even crash, and should not disturb the checks before it.
"""

from __future__ import annotations

import faulthandler
import importlib
import importlib.util
import logging
import os
import platform
import re
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.commands import pip_for as _pip
from envdoctor.cuda_tables import TORCHAUDIO_FOR_TORCH, TORCHVISION_FOR_TORCH
from envdoctor.distributions import installed as _dist_version
from envdoctor.microops import error_text
from envdoctor.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, op_fact

ID = "extension-abi"

PYTORCH_INDEX = "https://download.pytorch.org/whl/"
FLASH_ATTN_RELEASES = "https://github.com/Dao-AILab/flash-attention/releases/download"

# ---------------------------------------------------------------- data tables
#
# torchvision releases whose pin is a range rather than the exact torch release.
TORCHVISION_RANGE_PINS: Dict[str, str] = {"0.29.1": ">=2.14.0", "0.29.2": ">=2.14.0"}

# No torchaudio release exists for torch >= 2.12 (PyPI stops at 2.11.0, §3a).
TORCHAUDIO_UNPINNED = ("2.11.0",)

# xformers -> the torch release its PyPI wheel pins (GPU-FACTS.md §4 "xformers → torch").
XFORMERS_TORCH_PIN: Dict[str, str] = {
    "0.0.16": "1.13.1",
    "0.0.20": "2.0.1", "0.0.21": "2.0.1", "0.0.22": "2.0.1",
    "0.0.22.post7": "2.1.0", "0.0.23": "2.1.1", "0.0.23.post1": "2.1.2",
    "0.0.24": "2.2.0", "0.0.25": "2.2.1", "0.0.25.post1": "2.2.2",
    "0.0.26.post1": "2.3.0", "0.0.27": "2.3.1",
    "0.0.27.post2": "2.4.0", "0.0.28": "2.4.1", "0.0.28.post1": "2.4.1",
    "0.0.28.post2": "2.5.0", "0.0.28.post3": "2.5.1", "0.0.29": "2.5.1", "0.0.29.post1": "2.5.1",
    "0.0.29.post2": "2.6.0", "0.0.29.post3": "2.6.0",
    "0.0.30": "2.7.0", "0.0.31": "2.7.1", "0.0.31.post1": "2.7.1",
    "0.0.32.post1": "2.8.0", "0.0.32.post2": "2.8.0",
    "0.0.33": "2.9.0", "0.0.33.post1": "2.9.0", "0.0.33.post2": "2.9.1",
    "0.0.34": "2.10.0",
}
XFORMERS_RANGE_PINS: Dict[str, str] = {"0.0.35": ">=2.10"}  # first unpinned release (§4)
XFORMERS_UNPINNED_FROM = ((2, 10, 0), "0.0.35")  # torch >= 2.10 without an exact pin -> 0.0.35

# bitsandbytes: torch requirement of the PyPI wheels (GPU-FACTS.md §4 "bitsandbytes"),
# newest first: (first bitsandbytes release of the row, requirement, newest release of the row).
BITSANDBYTES_RANGES: Tuple[Tuple[str, str, str], ...] = (
    ("0.50.0", ">=2.4,<3", "0.50.2"),
    ("0.48.0", ">=2.3,<3", "0.49.2"),
    ("0.46.0", ">=2.2,<3", "0.47.0"),
    ("0.45.0", ">=2.0,<3", "0.45.5"),
)

# flash-attn prebuilt wheels: the `cu` tag of the name by flash-attn release (§4 "flash-attn prebuilt wheel names").
# cxx11abi in the name must equal torch._C._GLIBCXX_USE_CXX11_ABI of the installed torch: FALSE for PyPI
# torch <= 2.6 (2.6.0+cu126 already TRUE), TRUE from 2.7 (§3a "C++11 ABI"); the wrong one gives `undefined symbol`.

APEX_MODULES = ("apex_C", "amp_C", "fused_layer_norm_cuda")  # GPU-FACTS.md §5, compiled modules
# Packages whose import outcomes are recorded here but judged by their own check,
# so that one broken module is one finding: apex's compiled modules → the `apex` check.
DEFERRED = ("apex",)

# (name shown, distribution names, top-level module, modules to import in order)
EXTENSIONS: Tuple[Tuple[str, Tuple[str, ...], str, Tuple[str, ...]], ...] = (
    ("triton", ("triton", "pytorch-triton", "pytorch-triton-rocm"), "triton", ("triton",)),
    ("torchvision", ("torchvision",), "torchvision", ("torchvision",)),
    ("torchaudio", ("torchaudio",), "torchaudio", ("torchaudio",)),
    ("xformers", ("xformers",), "xformers", ("xformers", "xformers.ops")),
    ("flash-attn", ("flash-attn", "flash_attn"), "flash_attn", ("flash_attn",)),
    ("bitsandbytes", ("bitsandbytes",), "bitsandbytes", ("bitsandbytes",)),
)

_MAX_TEXT = 3000

# ---------------------------------------------------------------- probe (worker side)


def _dist_requires(dist: Optional[str]) -> List[str]:
    if not dist:
        return []
    try:
        from importlib.metadata import requires

        return list(requires(dist) or [])
    except Exception:  # noqa: BLE001
        return []


def _find_spec(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None


def _package_dir(spec: Any) -> Optional[str]:
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    if locations:
        return str(locations[0])
    origin = getattr(spec, "origin", None)
    return os.path.dirname(origin) if origin and os.path.isabs(origin) else None


def _read(path: str, limit: int = 20000) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return None


def _build_version(directory: Optional[str]) -> Optional[str]:
    """`__version__` of the package's version.py (torchvision: '0.28.0+cu130'), read, not imported."""
    if not directory:
        return None
    for name in ("version.py", "__init__.py"):
        text = _read(os.path.join(directory, name))
        if text:
            match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
            if match:
                return match.group(1)
    return None


def _xformers_built_for(directory: Optional[str]) -> Optional[Dict[str, Any]]:
    """xformers/cpp_lib.json: what its C++ library was compiled against."""
    if not directory:
        return None
    text = _read(os.path.join(directory, "cpp_lib.json"))
    if not text:
        return None
    try:
        import json

        version = json.loads(text).get("version") or {}
    except (ValueError, AttributeError):
        return None
    return {k: version.get(k) for k in ("torch", "cuda", "hip", "python") if k in version}


_FAULT_FD: List[int] = []  # a dup of the worker's stderr that faulthandler writes to from the first capture on


class _OutputCapture:
    """Send fds 1 and 2 to a temporary file while an extension imports, so that C-level
    prints and logging's last-resort handler are recorded. faulthandler is pointed at a
    copy of the real stderr first, so a crash inside the import still reaches the runner."""

    def __init__(self) -> None:
        self.text = ""
        self._saved: List[Tuple[int, int]] = []
        self._file: Any = None
        self._streams: List[Tuple[str, Any, Any]] = []  # (sys attribute, original, replacement)

    @staticmethod
    def _flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> _OutputCapture:
        try:
            self._flush()
            if faulthandler.is_enabled() and not _FAULT_FD:
                _FAULT_FD.append(os.dup(2))  # same destination as fd 2; kept open for the worker's life
                faulthandler.enable(file=_FAULT_FD[0])
            self._file = tempfile.TemporaryFile()
            for fd in (1, 2):
                self._saved.append((fd, os.dup(fd)))
                os.dup2(self._file.fileno(), fd)
            # Python-level streams that do not write to fds 1/2 (a notebook, a test runner) are
            # pointed at them for the duration, so that print() is recorded too.
            for attr, fd in (("stdout", 1), ("stderr", 2)):
                stream = getattr(sys, attr)
                try:
                    same = stream is not None and stream.fileno() == fd
                except Exception:  # noqa: BLE001 - io.UnsupportedOperation and friends
                    same = False
                if not same:
                    replacement = open(fd, "w", encoding="utf-8", errors="replace", closefd=False)
                    self._streams.append((attr, stream, replacement))
                    setattr(sys, attr, replacement)
        except Exception:  # noqa: BLE001 - no capture is better than a broken probe
            self._restore()
        return self

    def _restore(self) -> None:
        self._flush()
        for attr, original, replacement in self._streams:
            setattr(sys, attr, original)
            try:
                replacement.close()
            except Exception:  # noqa: BLE001
                pass
        self._streams = []
        for fd, saved in self._saved:
            try:
                os.dup2(saved, fd)
            except OSError:
                pass
            try:
                os.close(saved)
            except OSError:
                pass
        self._saved = []

    def __exit__(self, *exc: Any) -> None:
        self._restore()
        if self._file is not None:
            try:
                self._file.seek(0)
                self.text = self._file.read(64 * 1024).decode("utf-8", "replace")
            finally:
                self._file.close()


class _LogCapture(logging.Handler):
    """Log records of WARNING and above emitted during an import (xformers warns this way)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.records.append("%s: %s" % (record.name, record.getMessage()))
        except Exception:  # noqa: BLE001
            pass


def _chain(exc: Optional[BaseException]) -> List[str]:
    """The exception and its causes, 'Type: message', outermost first."""
    seen: List[str] = []
    depth = 0
    while exc is not None and depth < 5:
        text = "%s: %s" % (type(exc).__name__, error_text(exc))
        if text not in seen:
            seen.append(text)
        exc = exc.__cause__ or exc.__context__
        depth += 1
    return seen


_LIBRARY_RE = re.compile(r"Could not load this library: (\S+)")


def _dlopen_errors(texts: Sequence[str]) -> List[Dict[str, Any]]:
    """torch.ops.load_library hides the loader's reason behind 'Could not load this library:
    PATH'; loading PATH once more with ctypes gives it (e.g. `libc10_cuda.so: cannot open
    shared object file`). Only paths that already failed to load are tried."""
    paths: List[str] = []
    for text in texts:
        for match in _LIBRARY_RE.finditer(text or ""):
            path = match.group(1).rstrip(".,;:'\")")
            if path not in paths and os.path.isfile(path):
                paths.append(path)
    results: List[Dict[str, Any]] = []
    for path in paths[:3]:
        try:
            import ctypes

            ctypes.CDLL(path)
        except OSError as exc:
            results.append({"path": path, "ok": False, "error": error_text(exc)})
        except Exception as exc:  # noqa: BLE001
            results.append({"path": path, "ok": False, "error": "%s: %s" % (type(exc).__name__, error_text(exc))})
        else:
            results.append({"path": path, "ok": True, "error": None})
    return results


def _import(package: str, module: str, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Import `module` once, recording outcome, time, warnings, logs and captured output."""
    already = module in sys.modules
    saved_env = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    handler = _LogCapture()
    root = logging.getLogger()
    root.addHandler(handler)
    exc_info: Optional[BaseException] = None
    loaded: Any = None
    start = time.perf_counter()
    try:
        with _OutputCapture() as output, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                loaded = importlib.import_module(module)
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - the failure is the fact
                exc_info = exc
    finally:
        elapsed = time.perf_counter() - start
        root.removeHandler(handler)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    warning_texts: List[str] = []
    for w in caught:
        text = "%s: %s" % (w.category.__name__, w.message)
        if text not in warning_texts:
            warning_texts.append(text)
    extra: Dict[str, Any] = {
        "package": package,
        "module": module,
        "import_s": round(elapsed, 3),
        "warnings": warning_texts[:10],
        "log": handler.records[:10],
        "stderr": output.text.strip()[-_MAX_TEXT:],
    }
    if already:
        extra["already_imported"] = True
    if exc_info is None:
        extra["version"] = str(getattr(loaded, "__version__", "") or "") or None
        extra["file"] = getattr(loaded, "__file__", None)
        fact = op_fact("import %s" % module, "", "", True, None, None, **extra)
    else:
        frames = traceback.extract_tb(exc_info.__traceback__)[-6:]
        extra["error_type"] = type(exc_info).__name__
        extra["causes"] = _chain(exc_info)[1:]
        extra["frames"] = ["%s:%s in %s" % (f.filename, f.lineno, f.name) for f in frames]
        fact = op_fact("import %s" % module, "", "", False, error_text(exc_info), None, **extra)
    texts = [fact.get("error") or ""] + list(extra.get("causes") or []) + warning_texts + handler.records + [extra["stderr"]]
    dlopen = _dlopen_errors(texts)
    if dlopen:
        fact["dlopen"] = dlopen
    return fact


def _xformers_load_error() -> Optional[List[str]]:
    """xformers swallows the C++ library's load failure at import; it keeps the exception."""
    lib = sys.modules.get("xformers._cpp_lib")
    exc = getattr(lib, "_cpp_library_load_exception", None) if lib is not None else None
    return _chain(exc) if isinstance(exc, BaseException) else None


def _apex(facts: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """NVIDIA apex's compiled modules, or a note that the installed apex is not NVIDIA's."""
    dist, version = _dist_version(("apex",))
    spec = _find_spec("apex")
    directory = _package_dir(spec) if spec is not None else None
    compiled = [m for m in APEX_MODULES if _find_spec(m) is not None]
    if dist is None and spec is None and not compiled:
        return None
    impostor = bool(version and version.startswith("0.9.")) or bool(
        directory and os.path.isfile(os.path.join(directory, "lib", "libapex.py")))
    if impostor:
        facts["skipped"].append({"name": "apex", "version": version,
                                 "reason": "the PyPI package 'apex' %s is not NVIDIA apex (the apex check reports it)" % version})
        return None
    if not compiled:
        facts["skipped"].append({"name": "apex", "version": version,
                                 "reason": "NVIDIA apex without compiled modules (a Python-only build; the apex check reports it)"})
        return None
    return {"name": "apex", "dist": dist, "version": version, "location": directory, "modules": compiled}


def _torch_facts(torch: Any) -> Dict[str, Any]:
    version_mod = getattr(torch, "version", None)
    info: Dict[str, Any] = {
        "version": str(getattr(torch, "__version__", "")),
        "dist_version": _dist_version(("torch",))[1],
        "cuda": getattr(version_mod, "cuda", None),
        "hip": getattr(version_mod, "hip", None),
    }
    try:
        info["cxx11_abi"] = bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    except Exception:  # noqa: BLE001
        info["cxx11_abi"] = None
    # torch's own pins on its companions (e.g. `triton==3.5.1; platform_system == "Linux"`).
    info["requires"] = [r for r in _dist_requires("torch") if re.match(r"\s*(pytorch-)?triton", r)]
    return info


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    facts: Dict[str, Any] = {
        "python": sys.executable,
        "python_version": platform.python_version(),
        "platform": sys.platform,
        "machine": platform.machine(),
        "torch": _torch_facts(torch),
        "extensions": [],
        "skipped": [],
        "ops": [],
    }
    for name, dists, top, modules in EXTENSIONS:
        dist, version = _dist_version(dists)
        spec = _find_spec(top)
        if spec is None:
            if dist is not None:
                facts["skipped"].append({"name": name, "version": version,
                                         "reason": "distribution %s %s is installed but module %s is missing" % (dist, version, top)})
            continue
        directory = _package_dir(spec)
        entry: Dict[str, Any] = {
            "name": name,
            "dist": dist,
            "version": version,
            "build_version": _build_version(directory),
            "requires_torch": [r for r in _dist_requires(dist) if re.match(r"\s*torch\b(?![-_.\w])", r)],
            "location": directory,
        }
        if name == "xformers":
            entry["built_for"] = _xformers_built_for(directory)
        facts["extensions"].append(entry)
        for module in modules:
            env = {"TORCHVISION_WARN_WHEN_EXTENSION_LOADING_FAILS": "1"} if name == "torchvision" else None
            fact = _import(name, module, env)
            facts["ops"].append(fact)
            if name == "xformers" and module == "xformers":
                load_error = _xformers_load_error()
                if load_error:
                    fact["extension_error"] = load_error
            if not fact["ok"]:
                break  # the submodules cannot import either
        if entry["version"] is None:
            entry["version"] = next((o.get("version") for o in facts["ops"] if o.get("package") == name and o.get("version")), None)
    apex = _apex(facts)
    if apex is not None:
        facts["extensions"].append(apex)
        for module in apex.pop("modules"):
            facts["ops"].append(_import("apex", module))
    return facts


# ---------------------------------------------------------------- version helpers (parent side, stdlib)

_VERSION_RE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)(?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?\d*)?"
                         r"(?:[-_.]?(?:post|rev|r)[-_.]?(\d+))?(?:[-_.]?dev[-_.]?\d*)?(?:\+([\w.]+))?\s*$", re.I)


def _vkey(version: Optional[str]) -> Optional[Tuple[Tuple[int, ...], int]]:
    """(release padded to 4, post number): enough to compare the versions of this stack.
    Pre-releases and local labels compare as their release (2.4.0a0+nv24.06 as 2.4.0)."""
    match = _VERSION_RE.match(version or "")
    if not match:
        return None
    release = tuple(int(p) for p in match.group(1).split("."))
    release = (release + (0, 0, 0, 0))[:4]
    return release, int(match.group(2) or 0)


def _release(version: Optional[str], parts: int = 3) -> Optional[str]:
    key = _vkey(version)
    return ".".join(str(p) for p in key[0][:parts]) if key else None


def _local(version: Optional[str]) -> Optional[str]:
    match = _VERSION_RE.match(version or "")
    return match.group(3) if match else None


def _satisfies(version: Optional[str], specifier: str) -> Optional[bool]:
    """Does `version` meet a PEP 440 specifier like '==2.13.0', '>=2.4,<3', '==2.10.*'?
    None when either side cannot be read."""
    key = _vkey(version)
    if key is None:
        return None
    for clause in [c.strip() for c in specifier.split(",") if c.strip()]:
        match = re.match(r"^(===|~=|==|!=|<=|>=|<|>)\s*(\S+)$", clause)
        if not match:
            return None
        op, target = match.groups()
        if target.endswith(".*"):
            prefix = tuple(int(p) for p in target[:-2].split(".") if p.isdigit())
            same = key[0][: len(prefix)] == prefix
            if (op == "==" and not same) or (op == "!=" and same):
                return False
            continue
        other = _vkey(target)
        if other is None:
            return None
        if op == "~=":
            head = tuple(int(p) for p in target.split("+")[0].split(".")[:-1] if p.isdigit())
            if key < other or key[0][: len(head)] != head:
                return False
            continue
        ok = {
            "==": key == other, "===": key == other, "!=": key != other,
            "<=": key <= other, ">=": key >= other, "<": key < other, ">": key > other,
        }[op]
        if not ok:
            return False
    return True


_REQ_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?\s*([^;()]*)\)?\s*(?:;\s*(.*))?$")


def _requirement(lines: Sequence[str], names: Sequence[str]) -> Optional[str]:
    """The specifier of the first requirement line on one of `names`, outside extras."""
    wanted = {n.lower().replace("_", "-") for n in names}
    for line in lines or ():
        match = _REQ_RE.match(line)
        if not match:
            continue
        name, spec, marker = match.groups()
        if name.lower().replace("_", "-") not in wanted or (marker and "extra" in marker):
            continue
        return spec.replace(" ", "")
    return None


# ---------------------------------------------------------------- rules


def _torch_pin(facts: Dict[str, Any]) -> str:
    torch = facts.get("torch") or {}
    return "torch==%s" % (torch.get("dist_version") or torch.get("version"))


def _torch_variant(facts: Dict[str, Any]) -> Optional[str]:
    """'cpu', 'cu126', 'rocm6.2' for the builds download.pytorch.org serves; None for a PyPI
    default build (no local label) or a custom one."""
    torch = facts.get("torch") or {}
    label = _local(torch.get("dist_version") or torch.get("version"))
    if label and re.match(r"^(cpu|cu\d+|rocm[\d.]+|xpu)$", label):
        return label
    return None


def _torch_custom(facts: Dict[str, Any]) -> bool:
    """A torch built from source or shipped by a container (2.4.0a0+f70bd71a48.nv24.06): no wheel is paired with it."""
    torch = facts.get("torch") or {}
    version = torch.get("dist_version") or torch.get("version") or ""
    label = _local(version)
    return bool((label and _torch_variant(facts) is None) or re.search(r"(a|b|rc)\d+|dev", version.split("+")[0]))


def _variant_of(version: Optional[str]) -> Optional[str]:
    label = _local(version)
    return label if label and re.match(r"^(cpu|cu\d+|rocm[\d.]+)$", label) else None


def _torch_cuda_variant(facts: Dict[str, Any]) -> Optional[str]:
    """The CUDA flavour of the installed torch as a wheel label: 'cpu', 'cu130', 'rocm6.2'."""
    torch = facts.get("torch") or {}
    label = _variant_of(torch.get("dist_version") or torch.get("version"))
    if label:
        return label
    if torch.get("hip"):
        return "rocm%s" % ".".join(str(torch["hip"]).split(".")[:2])
    if torch.get("cuda"):
        return "cu" + "".join(str(torch["cuda"]).split(".")[:2])
    return "cpu"


def _describe_variant(label: str) -> str:
    if label == "cpu":
        return "CPU-only"
    match = re.match(r"^cu(\d+)(\d)$", label)
    if match:
        return "CUDA %s.%s" % match.groups()
    return label.replace("rocm", "ROCm ")


def _expected_torch(ext: Dict[str, Any]) -> Tuple[Optional[str], str]:
    """(torch specifier the installed extension was built for, where that came from)."""
    spec = _requirement(ext.get("requires_torch") or (), ("torch",))
    if spec:
        return spec, "its Requires-Dist"
    name, version = ext.get("name"), ext.get("version")
    if name == "torchvision":
        if version in TORCHVISION_RANGE_PINS:
            return TORCHVISION_RANGE_PINS[version], "envdoctor's torchvision table"
        pinned = [t for t, v in TORCHVISION_FOR_TORCH.items() if v == _release(version)]
        return ("==" + pinned[0], "envdoctor's torchvision table") if pinned else (None, "")
    if name == "torchaudio":
        pinned = [t for t, v in TORCHAUDIO_FOR_TORCH.items() if v == _release(version) and v not in TORCHAUDIO_UNPINNED]
        return ("==" + pinned[0], "envdoctor's torchaudio table") if pinned else (None, "")
    if name == "xformers":
        if version in XFORMERS_TORCH_PIN:
            return "==" + XFORMERS_TORCH_PIN[version], "envdoctor's xformers table"
        if version in XFORMERS_RANGE_PINS:
            return XFORMERS_RANGE_PINS[version], "envdoctor's xformers table"
        return None, ""
    if name == "bitsandbytes":
        for first, requirement, _newest in BITSANDBYTES_RANGES:
            if _satisfies(version, ">=" + first):
                return requirement, "envdoctor's bitsandbytes table"
        return None, ""
    return None, ""


def _triton_pin(facts: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """(distribution, specifier) torch itself requires for triton, e.g. ('triton', '==3.5.1')."""
    for line in (facts.get("torch") or {}).get("requires") or ():
        match = _REQ_RE.match(line)
        if match and match.group(2):
            return match.group(1), match.group(2).replace(" ", "")
    return None


def _paired_version(facts: Dict[str, Any], ext: Dict[str, Any]) -> Optional[str]:
    """The release of this companion built for the installed torch (None: not known)."""
    torch = facts.get("torch") or {}
    release = _release(torch.get("dist_version") or torch.get("version"))
    name = ext.get("name")
    if release is None:
        return None
    if name == "torchvision":
        return TORCHVISION_FOR_TORCH.get(release)
    if name == "torchaudio":
        return TORCHAUDIO_FOR_TORCH.get(release)
    if name == "xformers":
        newest = None
        for xf, pinned_torch in XFORMERS_TORCH_PIN.items():
            if pinned_torch == release:
                newest = xf  # the table is in release order: keep the last (newest) one
        if newest:
            return newest
        key = _vkey(release)
        if key and key[0][:3] >= XFORMERS_UNPINNED_FROM[0]:
            return XFORMERS_UNPINNED_FROM[1]
        return None
    if name == "bitsandbytes":
        for _first, requirement, newest_bnb in BITSANDBYTES_RANGES:
            if _satisfies(release, requirement):
                return newest_bnb
        return "0.43.3" if _satisfies(release, "<2.0") else None
    if name == "triton":
        pin = _triton_pin(facts)
        if pin and pin[1].startswith("=="):
            return pin[1][2:].split(";")[0]
        return None
    return None


def _pairing(facts: Dict[str, Any], ext: Dict[str, Any]) -> Dict[str, Any]:
    """Is the installed companion the one paired with the installed torch?"""
    torch = facts.get("torch") or {}
    torch_version = torch.get("dist_version") or torch.get("version")
    result: Dict[str, Any] = {"mismatch": False, "expected": None, "source": "", "paired": _paired_version(facts, ext)}
    if ext.get("name") == "triton":
        pin = _triton_pin(facts)
        if pin:
            result["expected"], result["source"] = pin[1], "torch's Requires-Dist (%s)" % pin[0]
            result["mismatch"] = _satisfies(ext.get("version"), pin[1]) is False
        return result
    expected, source = _expected_torch(ext)
    result["expected"], result["source"] = expected, source
    if expected:
        result["mismatch"] = _satisfies(torch_version, expected) is False
    return result


def _variant_mismatch(facts: Dict[str, Any], ext: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """(companion's CUDA flavour, torch's) when they cannot work together: CPU vs CUDA or
    different CUDA major versions. torchvision/torchaudio carry it in their local version,
    xformers in cpp_lib.json (CUDA 1208 -> cu128)."""
    mine: Optional[str] = None
    if ext.get("name") in ("torchvision", "torchaudio"):
        mine = _variant_of(ext.get("build_version"))
    elif ext.get("name") == "xformers":
        built = ext.get("built_for") or {}
        if built.get("hip"):
            mine = "rocm%s" % ".".join(str(built["hip"]).split(".")[:2])
        elif isinstance(built.get("cuda"), int) and built["cuda"] >= 100:
            mine = "cu%d%d" % (built["cuda"] // 100, built["cuda"] % 100)  # xformers writes CUDA 12.8 as 1208
    theirs = _torch_cuda_variant(facts)
    if not mine or not theirs or mine == theirs:
        return None
    if mine.startswith("cu") and theirs.startswith("cu") and mine[2:-1] == theirs[2:-1]:
        return None  # same CUDA major version: works by minor-version compatibility
    return mine, theirs


def _install_remedies(facts: Dict[str, Any], ext: Dict[str, Any], pair: Dict[str, Any], broken: bool) -> Tuple[Remedy, ...]:
    name = ext.get("name") or ""
    dist = ext.get("dist") or name
    installed = ext.get("version")
    torch_pin = _torch_pin(facts)
    if name == "flash-attn":
        return _flash_attn_remedies(facts, ext)
    variant_gap = _variant_mismatch(facts, ext)
    if name == "xformers" and variant_gap and variant_gap[1] == "cpu":
        # xformers publishes CUDA/ROCm builds only: no release works with a CPU-only torch.
        return (
            Remedy("xformers is a %s build and its kernels need a GPU; with this CPU-only torch, uninstall it "
                   "(diffusers and transformers fall back to torch's own attention)" % _describe_variant(variant_gap[0]),
                   kind="pip", commands=(_pip(facts, "uninstall", "-y", dist),), id="uninstall-xformers",
                   action={"uninstall": [dist]}),
            Remedy("Or, on a machine with an NVIDIA GPU, install a CUDA build of torch first (on Linux the PyPI default build, "
                   "`pip install torch==%s`; other CUDA versions from %scuXXX), then the xformers release paired with it"
                   % (_release((facts.get("torch") or {}).get("version")), PYTORCH_INDEX),
                   id="cuda-torch-for-xformers"),
        )
    target = pair.get("paired")
    variant = _torch_variant(facts)
    index_url = None
    spec = dist
    if target:
        spec = "%s==%s" % (dist, target)
        if name in ("torchvision", "torchaudio") and variant:
            spec += "+" + variant  # the local label makes pip replace a wrong-flavour build of the same release
    if (variant and name in ("torchvision", "torchaudio")) or (variant and variant != "cpu" and name == "xformers"):
        index_url = PYTORCH_INDEX + variant
    install = ["install", spec, torch_pin] + (["--index-url", index_url] if index_url else [])
    same = bool(target) and target == installed and spec == "%s==%s" % (dist, target)
    commands: List[str] = []
    action: Dict[str, Any] = {"install": [spec, torch_pin]}
    if index_url:
        action["index_url"] = index_url
    if same or (not target and broken):
        commands.append(_pip(facts, "uninstall", "-y", dist))  # the same release would count as satisfied
        action["uninstall"] = [dist]
    if not target:
        install.insert(1, "--upgrade")
        action["upgrade"] = True
    commands.append(_pip(facts, *install))
    if target:
        summary = "Install %s, the %s release paired with torch %s, keeping torch pinned" % (spec, name, (facts.get("torch") or {}).get("version"))
    else:
        summary = ("No %s release is paired with torch %s in envdoctor's tables: let pip pick one whose requirement admits it, "
                   "keeping torch pinned" % (name, (facts.get("torch") or {}).get("version")))
    remedies = [Remedy(summary, kind="pip", commands=tuple(commands), id="install-%s-%s" % (name, target or "compatible"), action=action)]
    if name == "torchaudio" and not target:
        remedies.append(Remedy("No torchaudio is published for torch releases after 2.11: if nothing imports torchaudio, uninstall it",
                               kind="pip", commands=(_pip(facts, "uninstall", "-y", dist),), id="uninstall-torchaudio",
                               action={"uninstall": [dist]}))
    if _torch_custom(facts) and name in ("torchvision", "torchaudio", "xformers"):
        remedies.append(Remedy("This torch (%s) is a custom or container build: no published wheel is paired with it. Use the %s that "
                               "came with it, or build %s from source with `--no-build-isolation` against it"
                               % ((facts.get("torch") or {}).get("version"), name, name), id="build-%s-from-source" % name))
    return tuple(remedies)


def _flash_attn_wheel(facts: Dict[str, Any], ext: Dict[str, Any]) -> Optional[str]:
    """The name flash-attn's setup.py looks for on its GitHub release (GPU-FACTS.md §4)."""
    torch = facts.get("torch") or {}
    version = ext.get("version")
    cuda = torch.get("cuda")
    abi = torch.get("cxx11_abi")
    key = _vkey(version)
    if not key or not cuda or abi is None or not str(facts.get("platform", "linux")).startswith("linux"):
        return None
    major = str(cuda).split(".")[0]
    if key[0][:3] >= (2, 7, 0):
        cu = major
    elif key[0][:2] == (2, 6):
        cu = "118" if major == "11" else "123"
    elif (2, 3, 6) <= key[0][:3] < (2, 6, 0):
        cu = "118" if major == "11" else "122"
    else:
        return None
    py = "cp" + "".join((facts.get("python_version") or "3").split(".")[:2])
    public = str(version).split("+")[0]
    return "%s/v%s/flash_attn-%s+cu%storch%scxx11abi%s-%s-%s-linux_x86_64.whl" % (
        FLASH_ATTN_RELEASES, public, public, cu, _release(torch.get("dist_version") or torch.get("version"), 2),
        "TRUE" if abi else "FALSE", py, py)


def _flash_attn_remedies(facts: Dict[str, Any], ext: Dict[str, Any]) -> Tuple[Remedy, ...]:
    torch = facts.get("torch") or {}
    dist = ext.get("dist") or "flash-attn"
    version = ext.get("version")
    spec = "%s==%s" % (dist, version) if version else dist
    torch_pin = _torch_pin(facts)
    remedies = [
        Remedy("Reinstall flash-attn for this torch (%s, C++11 ABI %s): its setup.py then fetches the prebuilt wheel matching torch, "
               "CUDA and ABI, or compiles one; --no-cache-dir keeps pip from reusing the wheel built for the old torch"
               % (torch.get("version"), "TRUE" if torch.get("cxx11_abi") else "FALSE"),
               kind="pip",
               commands=(_pip(facts, "uninstall", "-y", dist),
                         _pip(facts, "install", "--no-build-isolation", "--no-cache-dir", spec, torch_pin)),
               id="flash-attn-reinstall", action={"uninstall": [dist], "install": [spec, torch_pin], "no_build_isolation": True}),
    ]
    wheel = _flash_attn_wheel(facts, ext)
    if wheel:
        remedies.append(Remedy("Or install the prebuilt wheel for exactly this torch, CUDA and C++ ABI, if the release has one",
                               kind="pip", commands=(_pip(facts, "install", "--no-deps", "--force-reinstall", wheel),),
                               id="flash-attn-wheel", action={"install": [wheel], "no_deps": True}))
    remedies.append(Remedy("Or build it from source against this torch", kind="pip",
                           commands=("FLASH_ATTENTION_FORCE_BUILD=TRUE MAX_JOBS=4 " + _pip(facts, "install", "--no-build-isolation",
                                                                                          "--no-cache-dir", spec, torch_pin),),
                           id="flash-attn-build", action={"install": [spec, torch_pin], "build_env": {"FLASH_ATTENTION_FORCE_BUILD": "TRUE"},
                                                          "no_build_isolation": True}))
    return tuple(remedies)


_SYMBOL_RE = re.compile(r"undefined symbol: (\S+)")
_MISSING_LIB_RE = re.compile(r"(lib[\w.+-]+\.so[\w.]*): cannot open shared object file")


def _texts(op: Dict[str, Any]) -> List[str]:
    out = [op.get("error") or ""] + list(op.get("causes") or []) + list(op.get("extension_error") or [])
    out += [d.get("error") or "" for d in op.get("dlopen") or ()]
    out += list(op.get("warnings") or []) + list(op.get("log") or []) + [op.get("stderr") or ""]
    return [t for t in out if t]


def _cause(facts: Dict[str, Any], ext: Dict[str, Any], ops: Sequence[Dict[str, Any]], pair: Dict[str, Any],
           variant: Optional[Tuple[str, str]]) -> str:
    """The most likely reason, in words, from the recorded texts."""
    torch = facts.get("torch") or {}
    text = "\n".join(t for op in ops for t in _texts(op))
    symbol = _SYMBOL_RE.search(text)
    if symbol:
        name = symbol.group(1)
        abi = torch.get("cxx11_abi")
        if "__cxx11" in name and abi is False:
            return "it was built with the C++11 ABI (cxx11abiTRUE) but this torch uses the old ABI"
        if abi is True and "__cxx11" not in name and re.search(r"Ss(?![a-z])|RKSs|basic_string", name):
            return "it was built with the old C++ ABI (cxx11abiFALSE) but this torch uses the C++11 ABI"
        return "it was built against another torch release (undefined symbol %s)" % name
    if variant:
        return "it is a %s build (+%s) but torch %s is %s" % (
            _describe_variant(variant[0]), variant[0], torch.get("version"), _describe_variant(variant[1]))
    if pair.get("mismatch"):
        return "it was built for torch%s but torch %s is installed" % (pair.get("expected"), torch.get("version"))
    missing = _MISSING_LIB_RE.search(text)
    if missing:
        return "a library it was linked against is missing: %s" % missing.group(1)
    return ""


def _missing_module(ops: Sequence[Dict[str, Any]], ext: Dict[str, Any]) -> Optional[str]:
    """A plain missing Python dependency (No module named 'numpy'), not the extension itself."""
    for op in ops:
        if op.get("error_type") == "ModuleNotFoundError":
            match = re.search(r"No module named '([\w.]+)'", op.get("error") or "")
            if match:
                top = match.group(1).split(".")[0]
                own = {str(ext.get("name") or "").replace("-", "_"), "flash_attn_2_cuda"} | set(APEX_MODULES)
                if top not in own:
                    return top
    return None


_LOAD_WARNING_RE = re.compile(
    r"xFormers can't load C\+\+/CUDA extensions|Failed to load '\w+' extension|Couldn't load custom C\+\+ ops|"
    r"compiled with different CUDA (major )?versions")


def _evidence(ops: Sequence[Dict[str, Any]], limit: int = 12) -> List[str]:
    lines: List[str] = []
    for op in ops:
        if not op.get("ok"):
            lines.append("%s: %s: %s" % (op.get("op"), op.get("error_type"), op.get("error")))
            lines += ["  caused by %s" % c for c in op.get("causes") or ()]
        lines += ["xformers C++ library: %s" % e for e in op.get("extension_error") or ()]
        lines += ["loading %s: %s" % (d.get("path"), d.get("error")) for d in op.get("dlopen") or () if not d.get("ok")]
        for text in list(op.get("log") or []) + list(op.get("warnings") or []):
            if op.get("extension_error") and "WARNING[XFORMERS]" in text:
                continue  # the same text as the kept exception above
            if _LOAD_WARNING_RE.search(text) or not op.get("ok"):
                lines.append(text)
        stderr = (op.get("stderr") or "").strip()
        if stderr and (_LOAD_WARNING_RE.search(stderr) or not op.get("ok")):
            lines += ["stderr: %s" % line for line in stderr.splitlines()[-4:]]
    seen: List[str] = []
    for line in lines:
        if line not in seen:
            seen.append(line)
    return seen[:limit]


def _missing_dependency_remedy(facts: Dict[str, Any], ext: Dict[str, Any], missing: str) -> Remedy:
    name = ext.get("name") or "?"
    version = ext.get("version")
    spec = "%s==%s" % (ext.get("dist") or name, version) if version else (ext.get("dist") or name)
    return Remedy("Install %s's missing dependency %s: naming the installed release makes pip fill in its dependencies, "
                  "with torch pinned" % (name, missing),
                  kind="pip", commands=(_pip(facts, "install", spec, _torch_pin(facts)),), id="install-deps-%s" % name,
                  action={"install": [spec, _torch_pin(facts)]})


def _load_warned(op: Dict[str, Any]) -> bool:
    """Imported, but said that its compiled part did not load (xformers, torchvision)."""
    return bool(op.get("ok")) and bool(op.get("extension_error") or any(_LOAD_WARNING_RE.search(t) for t in _texts(op)))


def diagnose(facts: Dict[str, Any]) -> List[Finding]:
    findings: List[Finding] = []
    torch_version = (facts.get("torch") or {}).get("version")
    all_ops = facts.get("ops") or []
    for ext in facts.get("extensions") or ():
        name = ext.get("name") or "?"
        if name in DEFERRED:
            continue
        version = ext.get("version")
        ops = [o for o in all_ops if o.get("package") == name]
        failed = [o for o in ops if not o.get("ok")]
        warned = [o for o in ops if _load_warned(o)]
        pair = _pairing(facts, ext)
        variant = _variant_mismatch(facts, ext)
        subject = {"package": name, "version": version, "torch": torch_version}
        context: List[str] = []
        if pair.get("expected") and name == "triton":
            context.append("torch %s requires triton%s (%s); installed triton is %s" % (torch_version, pair["expected"], pair["source"], version))
        elif pair.get("expected"):
            context.append("%s %s requires torch%s (%s); installed torch is %s" % (name, version, pair["expected"], pair["source"], torch_version))
        built_for = ext.get("built_for") or {}
        if built_for.get("torch"):
            context.append("xformers' C++ library was built for PyTorch %s with CUDA %s, Python %s"
                           % (built_for.get("torch"), built_for.get("cuda"), built_for.get("python")))
        cause = _cause(facts, ext, failed or warned, pair, variant)
        if failed:
            first = failed[0]
            evidence = _evidence(failed + warned)
            missing = _missing_module(failed, ext)
            if missing:
                title = "%s %s does not import: its dependency %s is missing" % (name, version or "", missing)
                remedies: Tuple[Remedy, ...] = (_missing_dependency_remedy(facts, ext, missing),)
            else:
                title = "%s %s does not import: %s: %s" % (name, version or "", first.get("error_type"), first.get("error"))
                if cause:
                    evidence.insert(1 + len(first.get("causes") or ()), "likely cause: %s" % cause)
                remedies = _install_remedies(facts, ext, pair, broken=True)
            findings.append(Finding(ID, "import-fails", Severity.ERROR, title, tuple(evidence + context), remedies,
                                    dict(subject, module=first.get("module"), error_type=first.get("error_type"))))
        elif warned:
            evidence = _evidence(warned) + (["likely cause: %s" % cause] if cause else [])
            findings.append(Finding(ID, "extension-not-loaded", Severity.WARNING,
                                    "%s %s imports, but its compiled C++/CUDA part does not load" % (name, version or ""),
                                    tuple(evidence + context), _install_remedies(facts, ext, pair, broken=True),
                                    dict(subject, module=warned[0].get("module"))))
        outcome = "the import failed" if failed else ("the import worked with warnings" if warned else "the import worked")
        if pair.get("mismatch"):
            target = pair.get("paired")
            if name == "triton":
                title = "triton %s is not the release torch %s requires (triton%s)" % (version, torch_version, pair["expected"])
            else:
                title = "%s %s is built for torch%s, not for the installed torch %s" % (name, version, pair["expected"], torch_version)
            if target:
                title += "; the paired release is %s==%s" % (ext.get("dist") or name, target)
            findings.append(Finding(ID, "version-mismatch", Severity.WARNING, title, tuple([*context, outcome]),
                                    _install_remedies(facts, ext, pair, broken=bool(failed or warned)),
                                    dict(subject, expected_torch=pair["expected"], paired=target)))
        if variant and not failed and not warned:  # with a symptom, the variant is named as its likely cause
            findings.append(Finding(
                ID, "cuda-variant-mismatch", Severity.WARNING,
                "%s %s is a %s build but torch %s is %s" % (name, ext.get("build_version"), _describe_variant(variant[0]), torch_version,
                                                            _describe_variant(variant[1])),
                ("%s %s (+%s) beside torch %s (%s)" % (name, ext.get("build_version"), variant[0], torch_version, variant[1]), outcome),
                _install_remedies(facts, ext, pair, broken=True),
                dict(subject, build=variant[0], torch_build=variant[1])))
    return findings


def summarize(facts: Dict[str, Any]) -> str:
    extensions = facts.get("extensions") or []
    if not extensions:
        return "no compiled extensions installed"
    ops = facts.get("ops") or []
    parts = []
    for ext in extensions:
        mine = [o for o in ops if o.get("package") == ext.get("name")]
        if any(not o.get("ok") for o in mine):
            state = "import fails"
        elif any(_load_warned(o) for o in mine):
            state = "C++ part not loaded"
        else:
            state = "imports"
        if _pairing(facts, ext).get("mismatch"):
            state += ", built for another torch"
        parts.append("%s %s %s" % (ext.get("name"), ext.get("version") or "", state))
    return "torch %s · %s" % ((facts.get("torch") or {}).get("version"), " · ".join(parts))


_EXT_FRAMES = (r"(site|dist)-packages[/\\](torchvision|torchaudio|xformers|flash_attn|bitsandbytes|triton|apex)[/\\]",
               r"flash_attn_2_cuda|amp_C|apex_C|fused_layer_norm_cuda")

SIGNATURES = (
    Signature("import-fails", r"undefined symbol: \S+", frames=_EXT_FRAMES,
              cause="a compiled extension was built against another torch release or another C++ ABI (cxx11abi TRUE/FALSE) "
                    "than the installed torch"),
    Signature("import-fails", r"operator torchvision::\w+ does not exist", frames=(r"torchvision",),
              cause="torchvision's C++ ops (_C) did not load: the installed torchvision does not match torch "
                    "(another release, or a CUDA build beside a CPU-only torch)"),
    Signature("import-fails", r"Couldn't load custom C\+\+ ops", frames=(r"torchvision",),
              cause="torchvision's C++ ops did not load: torchvision and torch do not match"),
    Signature("import-fails", r"DLL load failed( while importing \w+)?",
              cause="a compiled extension cannot load on Windows: built for another torch or CUDA, or a DLL it needs is missing"),
    Signature("import-fails", r"flash_attn_2_cuda\S*:? (undefined symbol|cannot open shared object file)|No module named '?flash_attn_2_cuda'?",
              frames=(r"flash_attn",),
              cause="flash-attn's compiled module is missing or was built for another torch, CUDA or C++ ABI (cxx11abi)"),
    Signature("import-fails", r"Could not load this library: \S*(torchvision|torchaudio|xformers)\S*",
              cause="a companion's C++ library does not load against the installed torch (wrong release or CUDA build)"),
    Signature("extension-not-loaded", r"xFormers can't load C\+\+/CUDA extensions\. xFormers was built for",
              cause="xformers was built for another torch, CUDA or Python: its memory-efficient attention kernels are unavailable"),
    Signature("cuda-variant-mismatch", r"Detected that PyTorch and torchvision were compiled with different CUDA (major )?versions",
              cause="torchvision was built for another CUDA major version than torch"),
)

CHECK = Check(
    id=ID,
    title="compiled extensions vs torch",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    requires_torch=True,
    timeout_s=180.0,
    order=70,
    signatures=SIGNATURES,
)
