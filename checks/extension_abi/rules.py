"""The extension-abi rules: what each recorded import and pairing means, and the exact
remedy (the companion release paired with the installed torch, torch kept pinned).

Pure functions over the probe's facts and the target environment; run in the parent.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.target import cuda_tables as ct
from envdoctor.target.model import Finding, Remedy, Severity, Target
from envdoctor.target.remedies.actions import env_remedy, pip_remedy
from envdoctor.target.versions import release, release_tuple

from ..quantized_base import UNSET_BNB_CUDA_VERSION
from .pairing import (
    describe_variant,
    pairing,
    torch_custom,
    torch_variant,
    variant_mismatch,
)
from .probe import APEX_MODULES, DEFERRED

ID = "extension-abi"
PYTORCH_INDEX = "https://download.pytorch.org/whl/"
FLASH_ATTN_RELEASES = "https://github.com/Dao-AILab/flash-attention/releases/download"


def _install_remedies(facts: Dict[str, Any], env: Target, ext: Dict[str, Any], pair: Dict[str, Any],
                      broken: bool) -> Tuple[Remedy, ...]:
    name = ext.get("name") or ""
    dist = ext.get("dist") or name
    installed = ext.get("version")
    torch_version = (facts.get("torch") or {}).get("version")
    if name == "flash-attn":
        return _flash_attn_remedies(facts, env, ext)
    variant_gap = variant_mismatch(facts, ext)
    if name == "xformers" and variant_gap and variant_gap[1] == "cpu":
        # xformers publishes CUDA/ROCm builds only: no release works with a CPU-only torch.
        return (
            pip_remedy("xformers is a %s build and its kernels need a GPU; with this CPU-only torch, uninstall it "
                       "(diffusers and transformers fall back to torch's own attention)" % describe_variant(variant_gap[0]),
                       "uninstall-xformers", env, uninstall=[dist]),
            Remedy("Or, on a machine with an NVIDIA GPU, install a CUDA build of torch first (on Linux the PyPI default build, "
                   "`pip install torch==%s`; other CUDA versions from %scuXXX), then the xformers release paired with it"
                   % (release(torch_version), PYTORCH_INDEX),
                   id="cuda-torch-for-xformers"),
        )
    target = pair.get("paired")
    variant = torch_variant(facts)
    index_url = None
    spec = dist
    if target:
        spec = "%s==%s" % (dist, target)
        if name in ("torchvision", "torchaudio") and variant:
            spec += "+" + variant  # the local label makes pip replace a wrong-flavour build of the same release
    if (variant and name in ("torchvision", "torchaudio")) or (variant and variant != "cpu" and name == "xformers"):
        index_url = PYTORCH_INDEX + variant
    same = bool(target) and target == installed and spec == "%s==%s" % (dist, target)
    # the same release would count as satisfied: uninstall it first
    uninstall = [dist] if same or (not target and broken) else []
    if target:
        summary = "Install %s, the %s release paired with torch %s, keeping torch pinned" % (spec, name, torch_version)
        install = pip_remedy(summary, "install-%s-%s" % (name, target), env, uninstall=uninstall, install=[spec], index_url=index_url)
    else:
        summary = ("No %s release is paired with torch %s in envdoctor's tables: let pip pick one whose requirement admits it, "
                   "keeping torch pinned" % (name, torch_version))
        install = pip_remedy(summary, "install-%s-compatible" % name, env, uninstall=uninstall, upgrade=[spec], index_url=index_url)
    remedies = [install]
    if name == "torchaudio" and not target:
        remedies.append(pip_remedy("No torchaudio is published for torch releases after 2.11: if nothing imports torchaudio, uninstall it",
                                   "uninstall-torchaudio", env, uninstall=[dist]))
    if torch_custom(facts) and name in ("torchvision", "torchaudio", "xformers"):
        remedies.append(Remedy("This torch (%s) is a custom or container build: no published wheel is paired with it. Use the %s that "
                               "came with it, or build %s from source with `--no-build-isolation` against it"
                               % (torch_version, name, name), id="build-%s-from-source" % name))
    return tuple(remedies)


def _flash_attn_wheel(facts: Dict[str, Any], env: Target, ext: Dict[str, Any]) -> Optional[str]:
    """The name flash-attn's setup.py looks for on its GitHub release (docs/facts.md §4)."""
    torch = facts.get("torch") or {}
    version = ext.get("version")
    cuda = torch.get("cuda")
    abi = torch.get("cxx11_abi")
    key = release_tuple(version)
    if not key or not cuda or abi is None or not env.os.startswith("linux"):
        return None
    major = str(cuda).split(".")[0]
    if key[:3] >= (2, 7, 0):
        cu = major
    elif key[:2] == (2, 6):
        cu = "118" if major == "11" else "123"
    elif (2, 3, 6) <= key[:3] < (2, 6, 0):
        cu = "118" if major == "11" else "122"
    else:
        return None
    py = "cp" + "".join((env.python_version or "3").split(".")[:2])
    public = str(version).split("+")[0]
    return "%s/v%s/flash_attn-%s+cu%storch%scxx11abi%s-%s-%s-linux_x86_64.whl" % (
        FLASH_ATTN_RELEASES, public, public, cu, release(torch.get("dist_version") or torch.get("version"), 2),
        "TRUE" if abi else "FALSE", py, py)


def _flash_attn_remedies(facts: Dict[str, Any], env: Target, ext: Dict[str, Any]) -> Tuple[Remedy, ...]:
    torch = facts.get("torch") or {}
    dist = ext.get("dist") or "flash-attn"
    version = ext.get("version")
    spec = "%s==%s" % (dist, version) if version else dist
    remedies = [
        pip_remedy("Reinstall flash-attn for this torch (%s, C++11 ABI %s): its setup.py then fetches the prebuilt wheel matching torch, "
                   "CUDA and ABI, or compiles one; --no-cache-dir keeps pip from reusing the wheel built for the old torch"
                   % (torch.get("version"), "TRUE" if torch.get("cxx11_abi") else "FALSE"),
                   "flash-attn-reinstall", env, uninstall=[dist], install=[spec], no_build_isolation=True, no_cache=True),
    ]
    wheel = _flash_attn_wheel(facts, env, ext)
    if wheel:
        remedies.append(pip_remedy("Or install the prebuilt wheel for exactly this torch, CUDA and C++ ABI, if the release has one",
                                   "flash-attn-wheel", env, install=[wheel], no_deps=True, force_reinstall=True))
    remedies.append(pip_remedy("Or build it from source against this torch", "flash-attn-build", env, install=[spec],
                               no_build_isolation=True, no_cache=True,
                               build_env={"FLASH_ATTENTION_FORCE_BUILD": "TRUE", "MAX_JOBS": "4"}))
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
            describe_variant(variant[0]), variant[0], torch.get("version"), describe_variant(variant[1]))
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


def _missing_dependency_remedy(env: Target, ext: Dict[str, Any], missing: str) -> Remedy:
    name = ext.get("name") or "?"
    version = ext.get("version")
    spec = "%s==%s" % (ext.get("dist") or name, version) if version else (ext.get("dist") or name)
    return pip_remedy("Install %s's missing dependency %s: naming the installed release makes pip fill in its dependencies, "
                      "with torch pinned" % (name, missing), "install-deps-%s" % name, env, install=[spec])


def _load_warned(op: Dict[str, Any]) -> bool:
    """Imported, but said that its compiled part did not load (xformers, torchvision)."""
    return bool(op.get("ok")) and bool(op.get("extension_error") or any(_LOAD_WARNING_RE.search(t) for t in _texts(op)))


def _lost_step(facts: Dict[str, Any], op: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The lost step (crashed or hung an earlier worker) this failed import op stands for."""
    if not op.get("lost"):
        return None
    return next((s for s in facts.get("lost_steps") or () if s.get("what") == op.get("what")), None)


def _stack(step: Dict[str, Any], limit: int = 6) -> List[str]:
    """The headline and innermost frames faulthandler left when the step crashed or hung
    (the engine keeps them, innermost first, in the lost step's detail)."""
    return [line for line in (step.get("detail") or "").splitlines() if line.strip()][:limit]


def _no_kernel_for_gpu(facts: Dict[str, Any], env: Target, ext: Dict[str, Any], pair: Dict[str, Any]) -> List[Finding]:
    """A companion whose compiled CUDA code covers none of a GPU here: no cubin for its architecture (binary compatible
    within a major version) and no PTX old enough to be compiled for it. Each of its kernels then fails to launch with
    "no kernel image is available for execution on the device" (CUDA C++ Programming Guide, "Binary Compatibility" and
    "PTX Compatibility"); torch's own arch list is cuda-compat's. A package is judged by all its files together: one
    of them may hold kernels for some GPUs only by design (xformers' FlashAttention-3 module: sm_80 and sm_90)."""
    archs: Dict[str, List[str]] = ext.get("cuda_archs") or {}
    findings: List[Finding] = []
    for gpu in env.gpus if archs else ():
        cap = ct.parse_capability(gpu.capability)
        if cap is None or any(ct.arch_coverage(a, cap) is not None for a in archs.values()):
            continue
        name, version = ext.get("name") or "?", ext.get("version") or ""
        sm = "sm_%d%d" % cap
        evidence = ["%s: CUDA code for %s" % (f, " ".join(a)) for f, a in sorted(archs.items())]
        evidence.append("no %s code there, nor PTX of its architecture or an older one that the driver could compile for it: each of "
                        "its kernels fails on %s with \"no kernel image is available for execution on the device\"" % (sm, gpu.name))
        build = Remedy("Or build %s from source for this GPU against the installed torch: TORCH_CUDA_ARCH_LIST=%s with "
                       "`pip install --no-build-isolation --no-cache-dir` in its source tree" % (name, ct.capability_text(cap)),
                       id="build-extension-for-gpu")
        findings.append(Finding(
            ID, "no-kernel-for-gpu", Severity.ERROR,
            "%s %s has no CUDA code for %s (%s): its compiled kernels cannot run there" % (name, version, gpu.name, sm),
            tuple(evidence), (*_unloaded_library_remedy(ext, cap, sm), *_install_remedies(facts, env, ext, pair, broken=True), build),
            {"package": name, "version": ext.get("version"), "gpu": gpu.name, "capability": gpu.capability,
             "files": sorted(archs)}))
    return findings


def _unloaded_library_remedy(ext: Dict[str, Any], cap: Tuple[int, int], sm: str) -> Tuple[Remedy, ...]:
    """bitsandbytes' library for another release of torch's CUDA major version that has code for the GPU (its
    CUDA 12.6 library keeps Pascal's sm_60, which its 12.8 one dropped): BNB_CUDA_VERSION makes bitsandbytes load it,
    on torch's own CUDA runtime (bitsandbytes/cextension.py; CUDA minor version compatibility)."""
    covering = [f for f, a in (ext.get("cuda_archs_unloaded") or {}).items() if ct.arch_coverage(a, cap) is not None]
    releases = sorted((m.group(1) for m in (re.search(r"cuda(\d+)", f) for f in covering) if m), key=int)
    if not releases:
        return ()
    newest = releases[-1]
    return (env_remedy("Load bitsandbytes' library built for CUDA %s, which has %s code and runs on torch's CUDA runtime: "
                       "BNB_CUDA_VERSION=%s" % (_bnb_release(newest), sm, newest), "bnb-cuda-version",
                       set_env={"BNB_CUDA_VERSION": newest}),)


def _bnb_release(digits: str) -> str:
    """A CUDA release as bitsandbytes' library names and BNB_CUDA_VERSION spell it ("126"), written "12.6"."""
    return "%s.%s" % (digits[:-1], digits[-1])


def _bnb_library_unloadable(facts: Dict[str, Any], ext: Dict[str, Any]) -> List[Finding]:
    """BNB_CUDA_VERSION names the library bitsandbytes loads (bitsandbytes/cextension.py): one built for another CUDA
    major release than torch's needs that release's runtime, which torch's wheels do not bring, so each of its kernels
    fails ("libcudart.so.12: cannot open shared object file" under a CUDA 13 torch); one it does not ship fails the same
    way ("No compatible CUDA binary found at .../libbitsandbytes_cuda139.so"). Within torch's major release it
    loads on torch's own runtime (CUDA minor version compatibility): bitsandbytes 0.50.2's CUDA 13.2 library ran 4-bit
    layers under torch 2.11.0+cu130 on an H200 (tests/fixtures/measurements/h200-failures/)."""
    value = ext.get("bnb_cuda_version") or ""
    named = re.sub(r"\D", "", value)
    torch = facts.get("torch") or {}
    torch_cuda = torch.get("cuda") or ""
    if len(named) < 3 or not torch_cuda:
        return []
    name, version = ext.get("name") or "bitsandbytes", ext.get("version") or ""
    library = "libbitsandbytes_cuda%s" % named
    major, torch_major = named[:-1], torch_cuda.split(".")[0]
    if not any(f.startswith(library) for f in ext.get("cuda_archs") or {}):
        title = ("BNB_CUDA_VERSION=%s makes %s %s load a library for CUDA %s that it does not ship (%s.so): each of its "
                 "kernels fails" % (value, name, version, _bnb_release(named), library))
    elif major != torch_major:
        title = ("BNB_CUDA_VERSION=%s makes %s %s load its library for CUDA %s, but torch is built with CUDA %s: that library "
                 "needs CUDA %s's runtime, so each of its kernels fails" % (value, name, version, _bnb_release(named), torch_cuda,
                                                                             major))
    else:
        return []
    shipped = sorted(re.sub(r"\.(so|dll)$", "", f) for f in {**(ext.get("cuda_archs") or {}), **(ext.get("cuda_archs_unloaded") or {})})
    evidence = ["BNB_CUDA_VERSION=%s" % value, "torch %s: CUDA %s" % (torch.get("version"), torch_cuda)]
    if shipped:
        evidence.append("%s's libraries for torch's CUDA %s: %s" % (name, torch_major, ", ".join(shipped)))
    return [Finding(ID, "bnb-cuda-version-unloadable", Severity.ERROR, title, tuple(evidence), (UNSET_BNB_CUDA_VERSION,),
                    {"package": name, "version": ext.get("version"), "bnb_cuda_version": value, "torch_cuda": torch_cuda})]


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
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
        pair = pairing(facts, ext)
        variant = variant_mismatch(facts, ext)
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
            step = _lost_step(facts, first)
            if step is not None:  # it killed or hung the interpreter: name it, keep the pairing remedies
                findings.append(Finding(ID, "import-crashed" if step.get("state") == "crashed" else "import-hangs", Severity.ERROR,
                                        "%s %s" % (step.get("what"), step.get("error")),
                                        tuple(_stack(step) + context + (["likely cause: %s" % cause] if cause else [])),
                                        _install_remedies(facts, env, ext, pair, broken=True),
                                        dict(subject, module=first.get("module"), lost_step=step.get("key"), state=step.get("state"))))
            else:
                if missing:
                    title = "%s %s does not import: its dependency %s is missing" % (name, version or "", missing)
                    remedies: Tuple[Remedy, ...] = (_missing_dependency_remedy(env, ext, missing),)
                else:
                    title = "%s %s does not import: %s: %s" % (name, version or "", first.get("error_type"), first.get("error"))
                    if cause:
                        evidence.insert(1 + len(first.get("causes") or ()), "likely cause: %s" % cause)
                    remedies = _install_remedies(facts, env, ext, pair, broken=True)
                findings.append(Finding(ID, "import-fails", Severity.ERROR, title, tuple(evidence + context), remedies,
                                        dict(subject, module=first.get("module"), error_type=first.get("error_type"))))
        elif warned:
            evidence = _evidence(warned) + (["likely cause: %s" % cause] if cause else [])
            findings.append(Finding(ID, "extension-not-loaded", Severity.WARNING,
                                    "%s %s imports, but its compiled C++/CUDA part does not load" % (name, version or ""),
                                    tuple(evidence + context), _install_remedies(facts, env, ext, pair, broken=True),
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
                                    _install_remedies(facts, env, ext, pair, broken=bool(failed or warned)),
                                    dict(subject, expected_torch=pair["expected"], paired=target)))
        findings.extend(_no_kernel_for_gpu(facts, env, ext, pair))
        findings.extend(_bnb_library_unloadable(facts, ext))
        if variant and not failed and not warned:  # with a symptom, the variant is named as its likely cause
            findings.append(Finding(
                ID, "cuda-variant-mismatch", Severity.WARNING,
                "%s %s is a %s build but torch %s is %s" % (name, ext.get("build_version"), describe_variant(variant[0]), torch_version,
                                                            describe_variant(variant[1])),
                ("%s %s (+%s) beside torch %s (%s)" % (name, ext.get("build_version"), variant[0], torch_version, variant[1]), outcome),
                _install_remedies(facts, env, ext, pair, broken=True),
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
        lost = next((o.get("lost") for o in mine if o.get("lost")), None)
        if ext.get("not_imported"):
            state = "not imported: %s" % ext["not_imported"]
        elif lost:
            state = "import crashed the interpreter" if lost == "crashed" else "import hangs"
        elif any(not o.get("ok") for o in mine):
            state = "import fails"
        elif any(_load_warned(o) for o in mine):
            state = "C++ part not loaded"
        else:
            state = "imports"
        if pairing(facts, ext).get("mismatch"):
            state += ", built for another torch"
        parts.append("%s %s %s" % (ext.get("name"), ext.get("version") or "", state))
    return "torch %s · %s" % ((facts.get("torch") or {}).get("version"), " · ".join(parts))


