"""The extension-abi probe: imports each installed compiled companion for real, as a
guarded step each (a segfaulting or hanging import is pinned on its package and the
probe resumes past it), and records what it is and what it was built for. A companion
released with this very torch (its exact pin) has its compiled library loaded alone
first: where that works the full import is skipped (torchvision's import brings all of
torch._dynamo, seconds on a GPU machine); where it fails, the full import records the
failure as the user's own import shows it. Every import runs with torch.compile deferred
(probekit.compile_deferral: bitsandbytes wraps its ops in it while it imports), its
outcome still the one the real torch.compile would give.

Stdlib only, Python 3.8+: runs inside the worker.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any, Dict, List, Optional, Pattern, Tuple

from envdoctor.target.model import ProbeContext, op_fact
from envdoctor.target.probekit.distributions import installed, requires
from envdoctor.target.probekit.fatbin import cuda_archs
from envdoctor.target.probekit.files import read_file
from envdoctor.target.probekit.imports import find_module_spec, record_import
from envdoctor.target.probekit.steps import StepLost, step
from envdoctor.target.probekit.text import exception_chain

APEX_MODULES = ("apex_C", "amp_C", "fused_layer_norm_cuda")  # docs/facts.md §5, compiled modules
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

# The packages whose compiled files are read for the GPU architectures they hold code for, and compiled modules of
# theirs that live beside the package rather than in it. Not triton (it compiles its kernels on the machine).
ARCH_READ = {"torchvision": (), "torchaudio": (), "xformers": (), "flash-attn": ("flash_attn_2_cuda",), "bitsandbytes": ()}
_COMPILED_SUFFIXES = (".so", ".pyd", ".dll")
_MAX_COMPILED_FILES = 64

# Companions whose compiled library loads alone as their own import loads it first (torchvision/extension.py:
# _load_library("_C") through torch.ops.load_library), and an operator it registers there: (library, namespace, op)
LOAD_ALONE = {"torchvision": ("_C", "torchvision", "nms")}


def _bnb_library(cuda: str) -> Pattern[str]:
    """bitsandbytes' library for a CUDA release ("128": `libbitsandbytes_cuda128.so`; a regex's digits match a family);
    releases before 0.43 had a `_nocublaslt` twin for GPUs below sm_75, read with it."""
    return re.compile(r"libbitsandbytes_cuda%s(_nocublaslt)?\.(so|dll)$" % cuda if cuda else r"(?!)")


def _bnb_archs(directory: Optional[str], torch_cuda: Optional[str]) -> Tuple[Dict[str, List[str]], Dict[str, List[str]]]:
    """bitsandbytes ships one library per CUDA release and loads the one named for torch's CUDA
    (`libbitsandbytes_cuda128.so` for 12.8), or for BNB_CUDA_VERSION where that is set (bitsandbytes/cextension.py,
    get_cuda_bnb_library_path; github.com/bitsandbytes-foundation/bitsandbytes); with a CPU or ROCm torch, none. The
    architectures of that one, and of its siblings for torch's CUDA major version, which torch's own CUDA runtime loads
    too (CUDA minor version compatibility): BNB_CUDA_VERSION picks one where the loaded one lacks a GPU's code."""
    loaded = _compiled_archs(directory, (), _bnb_library(re.sub(r"\D", "", os.environ.get("BNB_CUDA_VERSION") or torch_cuda or "")))
    major = (torch_cuda or "").split(".")[0]
    if not major.isdigit():
        return loaded, {}
    siblings = _compiled_archs(directory, (), _bnb_library(r"%s\d" % major))
    return loaded, {f: a for f, a in siblings.items() if f not in loaded}


def _compiled_archs(directory: Optional[str], modules: Tuple[str, ...], only: Optional[Pattern[str]] = None) -> Dict[str, List[str]]:
    """{file, relative to the package's folder: its CUDA architectures} for the compiled files that carry CUDA code
    (of those whose name `only` matches, where it is given)."""
    files: List[Tuple[str, str]] = []
    if directory and os.path.isdir(directory):
        for root, dirs, names in os.walk(directory):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            files += [(os.path.join(root, n), os.path.relpath(os.path.join(root, n), directory))
                      for n in sorted(names) if (n.endswith(_COMPILED_SUFFIXES) or ".so." in n) and (only is None or only.match(n))]
            if len(files) >= _MAX_COMPILED_FILES:
                break
    for module in modules:
        origin = getattr(find_module_spec(module), "origin", None)
        if origin and os.path.isfile(origin):
            files.append((origin, os.path.basename(origin)))
    found: Dict[str, List[str]] = {}
    for path, shown in files[:_MAX_COMPILED_FILES]:
        archs = cuda_archs(path)
        if archs:
            found[shown.replace(os.sep, "/")] = archs
    return found


def _package_dir(spec: Any) -> Optional[str]:
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    if locations:
        return str(locations[0])
    origin = getattr(spec, "origin", None)
    return os.path.dirname(origin) if origin and os.path.isabs(origin) else None


def _build_version(directory: Optional[str]) -> Optional[str]:
    """`__version__` of the package's version.py (torchvision: '0.28.0+cu130'), read, not imported."""
    if not directory:
        return None
    for name in ("version.py", "__init__.py"):
        text = read_file(os.path.join(directory, name), 20000)
        if text:
            match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
            if match:
                return match.group(1)
    return None


def _xformers_built_for(directory: Optional[str]) -> Optional[Dict[str, Any]]:
    """xformers/cpp_lib.json: what its C++ library was compiled against."""
    if not directory:
        return None
    text = read_file(os.path.join(directory, "cpp_lib.json"), 20000)
    if not text:
        return None
    try:
        version = json.loads(text).get("version") or {}
    except (ValueError, AttributeError):
        return None
    return {k: version.get(k) for k in ("torch", "cuda", "hip", "python") if k in version}


def _xformers_load_error() -> Optional[List[str]]:
    """xformers swallows the C++ library's load failure at import; it keeps the exception."""
    lib = sys.modules.get("xformers._cpp_lib")
    exc = getattr(lib, "_cpp_library_load_exception", None) if lib is not None else None
    return exception_chain(exc) if isinstance(exc, BaseException) else None


def _apex(facts: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """NVIDIA apex's compiled modules, or a note that the installed apex is not NVIDIA's."""
    dist, version = installed(("apex",))
    spec = find_module_spec("apex")
    directory = _package_dir(spec) if spec is not None else None
    compiled = [m for m in APEX_MODULES if find_module_spec(m) is not None]
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
        "dist_version": installed(("torch",))[1],
        "cuda": getattr(version_mod, "cuda", None),
        "hip": getattr(version_mod, "hip", None),
    }
    try:
        info["cxx11_abi"] = bool(torch._C._GLIBCXX_USE_CXX11_ABI)
    except Exception:  # noqa: BLE001
        info["cxx11_abi"] = None
    # torch's own pins on its companions (e.g. `triton==3.5.1; platform_system == "Linux"`).
    info["requires"] = [r for r in requires("torch") if re.match(r"\s*(pytorch-)?triton", r)]
    return info


# `triton==3.5.1; ...`, `torch==2.11.0`, and as older metadata writes them, `triton (==2.0.0) ; ...`
def _exact_pin(line: str, names: Tuple[str, ...]) -> Optional[str]:
    """The version of an exact pin (`==`) on one of `names` in a Requires-Dist line, or None."""
    match = re.match(r"^\s*(%s)\s*\(?\s*==\s*([\w.+!-]+?)\s*\)?\s*(?:;|$)" % "|".join(map(re.escape, names)), line)
    return match.group(2) if match else None


def _the_pinned_triton(torch_facts: Dict[str, Any], version: Optional[str]) -> Optional[str]:
    """The pin of torch's that the installed triton is exactly (`triton==2.0.0; ...`), or None.
    That pair is the one torch's own release was built and tested with; importing triton to learn
    more loads all of its LLVM (hundreds of MB, seconds on an old stack) for what torch only needs
    when it compiles (torch.compile, Triton kernels)."""
    for line in torch_facts.get("requires") or ():
        if version and _exact_pin(line, ("triton", "pytorch-triton")) == version:
            return "triton==%s" % version
    return None


def _released_with_torch(requirements: List[str], torch_facts: Dict[str, Any]) -> Optional[str]:
    """`torch==X` where the companion's Requires-Dist lines pin exactly the installed torch and every other dependency
    they name unconditionally is installed: then only its compiled library can keep its import from working."""
    torch_release = str(torch_facts.get("dist_version") or "").partition("+")[0]  # `==2.13.0` admits 2.13.0+cpu (PEP 440)
    if not torch_release or torch_release not in [_exact_pin(r, ("torch",)) for r in requirements]:
        return None
    for line in requirements:
        name = re.match(r"\s*([A-Za-z0-9][\w.-]*)", line)
        if name and ";" not in line and name.group(1).lower() != "torch" and installed((name.group(1),))[0] is None:
            return None  # a missing dependency: the full import shows it as the user will meet it
    return "torch==%s" % torch_release


def _load_alone(torch: Any, name: str, directory: Optional[str], version: Optional[str],
                spec: Optional[Tuple[str, str, str]] = None) -> Optional[Dict[str, Any]]:
    """Load the companion's compiled library as its import would, and look its operator up (`spec`, else LOAD_ALONE's):
    an op fact when both work, None when they do not (the full import then records the failure)."""
    library, namespace, operator = spec or LOAD_ALONE[name]
    try:
        files = sorted(os.listdir(directory)) if directory else []
    except OSError:
        return None
    path = next((os.path.join(str(directory), f) for f in files if f.split(".")[0] == library and f.endswith(_COMPILED_SUFFIXES)), None)
    if path is None:
        return None
    what = "loading %s's %s%s" % (name, library, " " + version if version else "")
    start = time.perf_counter()
    try:
        with step(what, package=name, module="%s.%s" % (name, library), version=version):
            torch.ops.load_library(path)
            getattr(getattr(torch.ops, namespace), operator)
    except StepLost:
        return None
    except Exception:  # noqa: BLE001 - the full import then says it as the user meets it
        return None
    return op_fact("load %s.%s" % (name, library), "", "", True, None, None, package=name, module="%s.%s" % (name, library),
                   import_s=round(time.perf_counter() - start, 3), file=path, operator="%s::%s" % (namespace, operator))


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    facts: Dict[str, Any] = {
        "torch": _torch_facts(torch),
        "extensions": [],
        "skipped": [],
        "ops": [],
    }
    for name, dists, top, modules in EXTENSIONS:
        dist, version = installed(dists)
        spec = find_module_spec(top)
        if spec is None:
            if dist is not None:
                facts["skipped"].append({"name": name, "version": version,
                                         "reason": "distribution %s %s is installed but module %s is missing" % (dist, version, top)})
            continue
        directory = _package_dir(spec)
        requirements = requires(dist)
        entry: Dict[str, Any] = {
            "name": name,
            "dist": dist,
            "version": version,
            "build_version": _build_version(directory),
            "requires_torch": [r for r in requirements if re.match(r"\s*torch\b(?![-_.\w])", r)],
            "location": directory,
        }
        if name == "xformers":
            entry["built_for"] = _xformers_built_for(directory)
        if name in ARCH_READ:
            if name == "bitsandbytes":
                entry["cuda_archs"], entry["cuda_archs_unloaded"] = _bnb_archs(directory, facts["torch"].get("cuda"))
                if os.environ.get("BNB_CUDA_VERSION"):  # bitsandbytes' own override of the library it loads
                    entry["bnb_cuda_version"] = os.environ["BNB_CUDA_VERSION"]
            else:
                entry["cuda_archs"] = _compiled_archs(directory, ARCH_READ[name])
        facts["extensions"].append(entry)
        pin = _the_pinned_triton(facts["torch"], version) if name == "triton" else None
        if pin:
            entry["not_imported"] = "the release torch pins (%s)" % pin
            continue
        released = _released_with_torch(requirements, facts["torch"]) if name in LOAD_ALONE else None
        loaded = _load_alone(torch, name, directory, version) if released else None
        if loaded is not None:
            facts["ops"].append(loaded)
            entry["not_imported"] = "the release paired with %s, its compiled %s loaded alone" % (
                released, loaded["module"].rpartition(".")[2])
            continue
        for module in modules:
            env = {"TORCHVISION_WARN_WHEN_EXTENSION_LOADING_FAILS": "1"} if name == "torchvision" else None
            # torch.compile deferred: bitsandbytes wraps a dozen ops in it while it imports (torch._dynamo, seconds)
            fact = record_import(name, module, version, env, defer_compile=torch)
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
            facts["ops"].append(record_import("apex", module, apex.get("version")))
    return facts
