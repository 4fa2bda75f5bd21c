"""The apex rules: pure functions over the probe's facts and the Target, run in envdoctor's
own process and tested on snapshots recorded from real machines."""

from __future__ import annotations

import re
import shlex
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.target.model import Finding, Remedy, Severity, Target
from envdoctor.target.remedies.actions import pip_remedy
from envdoctor.target.remedies.commandline import UV, pip_command
from envdoctor.target.versions import release_tuple

from .probe import AMP_MARKER, CUDA_EXTENSIONS, ID, IMPOSTOR_MODULES, NVIDIA_MARKERS, mix
from .signatures import NO_AMP

# NVIDIA apex's setup.py: name="apex", version="0.1",
# description="PyTorch Extensions written by NVIDIA" (docs/facts.md §5 "Build checks").
NVIDIA_VERSION = "0.1"
NVIDIA_SUMMARY = "PyTorch Extensions written by NVIDIA"
NVIDIA_REPO = "https://github.com/NVIDIA/apex"


NORM_EXTENSION = "fused_layer_norm_cuda"  # what apex.normalization needs


IMPOSTOR_MARKERS = ("lib/libapex.py", "forms.py", "views.py", "scaffolds")


_IMPOSTOR_IMPORT_RE = re.compile(r"No module named '(%s)[\w.]*'" % "|".join(IMPOSTOR_MODULES))


SWAP_FIRST = (4, 17, 0)  # first transformers with the swap
SWAP_REMOVED = (5, 8, 0)  # first transformers without it


# A fused norm writes its output in the input dtype: a correct kernel stays within
# that dtype's rounding (fp16 ~1e-3, bf16 ~8e-3 of the largest value).
TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}

_DTYPE_MISMATCH_RE = re.compile(r"expected scalar type (\w+) but found (\w+)")
# A kernel with no code for the GPU it is launched on: cudaErrorNoKernelImageForDevice (209), and the older
# cudaErrorInvalidDeviceFunction (98) wording (docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html)
_NO_KERNEL_RE = re.compile(r"no kernel image is available for execution on the device|invalid device function")


def _extension_errors(facts: Dict[str, Any]) -> List[Tuple[str, str]]:
    out = []
    for ext in facts.get("extensions") or ():
        imp = ext.get("import") or {}
        if imp and not imp.get("ok"):
            out.append((ext["name"], imp.get("error") or imp.get("error_type") or "import failed"))
    return out


def _compiled(facts: Dict[str, Any], kinds: Sequence[str] = ("cpp", "cuda", "contrib")) -> List[str]:
    return [e["name"] for e in facts.get("extensions") or () if e.get("compiled") and e.get("kind") in kinds]


def classify(facts: Dict[str, Any]) -> Tuple[str, List[str], List[str]]:
    """("absent" | "impostor" | "nvidia" | "unknown", impostor evidence, NVIDIA evidence)."""
    dist = facts.get("distribution") or {}
    package = facts.get("package") or {}
    contents = package.get("contents") or {}
    imp = facts.get("import") or {}
    impostor: List[str] = []
    nvidia: List[str] = []
    version = dist.get("version")
    summary = dist.get("summary") or ""
    if version and version != NVIDIA_VERSION and release_tuple(version)[:2] == (0, 9):
        impostor.append("distribution apex %s (NVIDIA apex reports version %s)" % (version, NVIDIA_VERSION))
    if re.search(r"pyramid|velruse|recaptcha", summary, re.IGNORECASE):
        impostor.append("summary: %r" % summary)
    if dist.get("impostor_files"):
        impostor.append("its files include %s (the Pyramid toolkit)" % ", ".join(dist["impostor_files"]))
    found = [m for m in IMPOSTOR_MARKERS if contents.get(m)]
    if found and not dist.get("impostor_files"):
        impostor.append("%s holds %s (the Pyramid toolkit)" % (", ".join(package.get("locations") or ()), ", ".join(found)))
    if _IMPOSTOR_IMPORT_RE.search(imp.get("error") or ""):
        impostor.append("import apex: %s: %s" % (imp.get("error_type"), imp.get("error")))
    if version == NVIDIA_VERSION:
        nvidia.append("distribution apex %s" % version)
    if summary == NVIDIA_SUMMARY:
        nvidia.append("summary: %r" % summary)
    present = [m for m in NVIDIA_MARKERS if contents.get(m)]
    if present:
        nvidia.append("apex/%s present" % ", apex/".join(present))
    if impostor:
        return "impostor", impostor, nvidia
    if nvidia:
        return "nvidia", impostor, nvidia
    if dist or package.get("found"):
        return "unknown", impostor, nvidia
    return "absent", impostor, nvidia


def t5_routing(facts: Dict[str, Any]) -> Dict[str, Any]:
    """Which transformers models swap in apex FusedRMSNorm, and whether they will here."""
    tf = facts.get("transformers") or {}
    version = tf.get("version")
    models = tf.get("models") or {}
    read = {m: e for m, e in models.items() if isinstance(e, dict) and "swap" in e}
    if read:
        swapping = [m for m, e in read.items() if e.get("swap")]
        source = "source"
    elif version:  # no readable source: docs/facts.md §5 table
        v = release_tuple(version)
        swapping = []
        if SWAP_FIRST <= v < SWAP_REMOVED:
            swapping.append("t5")
            if v >= (4, 30):
                swapping += ["longt5", "pix2struct"]
            if v >= (4, 45):
                swapping.append("pop2piano")
        source = "version"
    else:
        return {"transformers": None, "models": [], "routed": False, "source": None}
    norm = facts.get("normalization_import") or {}
    return {
        "transformers": version,
        "models": swapping,
        "routed": bool(swapping) and bool(norm.get("ok")),
        "source": source,
        "file": (read.get("t5") or {}).get("file"),
        "line": (read.get("t5") or {}).get("line"),
    }


def _routing_line(route: Dict[str, Any]) -> str:
    where = " (%s line %s)" % (route["file"], route["line"]) if route.get("file") and route.get("line") else ""
    return ("transformers %s replaces the layer norms of %s with apex FusedRMSNorm because "
            "`from apex.normalization import FusedRMSNorm` imports here%s; 5.8.0 removed that swap"
            % (route.get("transformers"), ", ".join(route.get("models") or ()), where))


UPGRADE_STORY = ("`pip install --upgrade apex` only seemed to fix seed 002: it replaced NVIDIA apex with the unrelated "
                 "PyPI package named apex, whose import fails, so transformers fell back to its own T5LayerNorm")


def _uninstall_remedy(facts: Dict[str, Any], env: Target, why: str) -> Remedy:
    dist = facts.get("distribution") or {}
    if dist and not dist.get("error"):
        return pip_remedy(why, "apex-uninstall", env, uninstall=["apex"])
    where = ", ".join((facts.get("package") or {}).get("locations") or ()) or "the apex folder on sys.path"
    return Remedy("%s: no pip record owns it, so delete %s by hand" % (why, where), id="apex-remove-folder")


def build_remedies(facts: Dict[str, Any], env: Target, why: str, uninstall_first: bool = False,
                   arch_list: Optional[str] = None) -> Tuple[Remedy, ...]:
    """NVIDIA apex from a source checkout, against the installed torch (docs/facts.md §5 "Install"); with
    `arch_list`, for those GPU architectures (TORCH_CUDA_ARCH_LIST, read by torch's BuildExtension)."""
    cuda = facts.get("torch_cuda")
    torch_version = facts.get("torch")
    if torch_version is None:
        needs = "install a CUDA build of torch first: apex is compiled against the torch it finds"
    elif not cuda:
        # measured: apex 6424da3 setup.py on torch 2.13.0+cpu dies in get_cuda_bare_metal_version(CUDA_HOME=None)
        # even for a Python-only build, since torch leaves CUDA_HOME unset when it is not a CUDA build
        needs = ("but this torch (%s) is CPU-only: apex's setup.py cannot build against it at all (it needs CUDA_HOME, "
                 "which a CPU torch leaves unset); install a CUDA build of torch and an nvcc of the same CUDA version first"
                 % torch_version)
    else:
        needs = "needs nvcc %s (= torch.version.cuda of torch %s; setup.py refuses another version)" % (cuda, torch_version)
    arch_env = {"TORCH_CUDA_ARCH_LIST": arch_list} if arch_list else {}
    build_env = {**arch_env, "APEX_CPP_EXT": "1", "APEX_CUDA_EXT": "1"}
    arch = "".join("%s=%s " % (k, shlex.quote(v)) for k, v in arch_env.items())
    env_form = "".join("%s=%s " % (k, shlex.quote(v)) for k, v in build_env.items()) + pip_command(
        env.python, "install", "-v", "--no-build-isolation", ".", installer=env.installer)
    steps: Tuple[str, ...] = (pip_command(env.python, "uninstall", "-y", "apex", installer=env.installer),) if uninstall_first else ()
    steps += ("git clone %s" % NVIDIA_REPO, "cd apex", env_form)
    pip_version = release_tuple(facts.get("pip"))
    flags: Tuple[str, ...]
    if env.installer == UV or not pip_version or pip_version >= (23, 1):
        flags = ("--config-settings", '"--build-option=--cpp_ext"', "--config-settings", '"--build-option=--cuda_ext"')
        if env.installer == UV:
            flag_note = "uv pip passes them as --config-settings"
        elif pip_version:
            flag_note = "pip %s >= 23.1" % facts.get("pip")
        else:
            flag_note = "this Python has no pip: `%s -m ensurepip` first" % env.python
    else:
        flags = ('--global-option="--cpp_ext"', '--global-option="--cuda_ext"')
        flag_note = "pip %s < 23.1" % facts.get("pip")
    flag_form = arch + pip_command(env.python, "install", "-v", "--disable-pip-version-check", "--no-cache-dir", "--no-build-isolation",
                            *flags, "./", installer=env.installer)
    return (
        Remedy("%s: build NVIDIA apex from its source with the C++ and CUDA extensions, into this interpreter "
               "(NVIDIA apex is not on PyPI: the index's `apex` is the web toolkit); %s" % (why, needs),
               kind="manual", commands=steps, id="apex-build-from-source",
               action={"build_from_source": {"repo": NVIDIA_REPO, "env": build_env,
                                             "uninstall_first": uninstall_first}}),
        Remedy("The same build with command-line flags (%s), from inside the apex checkout" % flag_note,
               kind="manual", commands=(flag_form,), id="apex-build-from-source-flags"),
    )


def _rebuild_or_remove(facts: Dict[str, Any], env: Target, why_build: str, why_uninstall: str,
                       arch_list: Optional[str] = None) -> Tuple[Remedy, ...]:
    return (*build_remedies(facts, env, why_build, uninstall_first=True, arch_list=arch_list),
            _uninstall_remedy(facts, env, why_uninstall))


def _impostor(facts: Dict[str, Any], env: Target, evidence: List[str], nvidia: List[str]) -> Finding:
    dist = facts.get("distribution") or {}
    package = facts.get("package") or {}
    imp = facts.get("import") or {}
    lines = list(evidence)
    if imp.get("error") and not any(line.startswith("import apex") for line in lines):
        lines.append("import apex: %s: %s" % (imp.get("error_type"), imp["error"]))
    if not (package.get("contents") or {}).get("normalization/fused_layer_norm.py"):
        lines.append("no apex.normalization in %s" % ", ".join(package.get("locations") or ["(no apex package)"]))
    compiled = _compiled(facts)
    if compiled:
        lines.append("left over from an NVIDIA apex build: %s" % ", ".join(compiled))
    else:
        lines.append("none of NVIDIA apex's compiled modules (%s, amp_C, apex_C, ...) can be found" % NORM_EXTENSION)
    if nvidia:
        lines.append("also NVIDIA apex traces: %s" % "; ".join(nvidia))
    route = t5_routing(facts)
    if route.get("models"):
        lines.append("transformers %s tries `from apex.normalization import FusedRMSNorm` for %s; it fails here, so they fall "
                     "back to their own T5LayerNorm (%s)" % (route["transformers"], ", ".join(route["models"]), UPGRADE_STORY))
    return Finding(
        ID, "apex-impostor", Severity.ERROR,
        "the installed `apex` %s is the unrelated PyPI web toolkit (%s), not NVIDIA apex"
        % (dist.get("version") or "", dist.get("summary") or "Pyramid toolkit"),
        tuple(lines),
        (_uninstall_remedy(facts, env, "Uninstall it: nothing in a PyTorch stack uses the Pyramid toolkit"),
         *build_remedies(facts, env, "Only if your code needs NVIDIA apex (most do not: transformers falls back without it)")),
        {"package": "apex", "version": dist.get("version"), "location": dist.get("location") or package.get("origin")},
    )


def _extension_failure(error: str, ext_errors: Sequence[Tuple[str, str]]) -> bool:
    """Is this op error just a compiled module that is missing or does not load (reported on its own)?"""
    if any(error == e for _, e in ext_errors) or "undefined symbol" in error:
        return True
    return bool(re.search(r"No module named '?%s'?" % NORM_EXTENSION, error))


def _norm_failures(facts: Dict[str, Any]) -> List[Dict[str, Any]]:
    ext_errors = _extension_errors(facts)
    return [o for o in facts.get("ops") or () if not o.get("ok") and not _extension_failure(o.get("error") or "", ext_errors)
            and not _NO_KERNEL_RE.search(o.get("error") or "")]


def _wrong_arch(facts: Dict[str, Any], env: Target, route: Dict[str, Any]) -> List[Finding]:
    """apex's kernels compiled for other GPUs than these: each fused norm fails to launch (recorded on an H200
    with apex built for sm_80 alone: no kernel image, and before envdoctor checked launches, garbage outputs)."""
    hit = [o for o in facts.get("ops") or () if not o.get("ok") and _NO_KERNEL_RE.search(o.get("error") or "")]
    if not hit:
        return []
    devices = sorted({o["device"] for o in hit})
    caps = sorted({d["capability"] for d in facts.get("devices") or () if d.get("id") in devices and d.get("capability")},
                  key=release_tuple)
    sms = ", ".join("sm_%s" % c.replace(".", "") for c in caps) or "this GPU's architecture"
    evidence = ["%d of %d fused-norm runs on %s fail: %s" % (
        len(hit), len(facts.get("ops") or ()), ", ".join(_device_name(facts, d) for d in devices), hit[0].get("error"))]
    origins = [e["origin"] for e in facts.get("extensions") or () if e.get("name") == NORM_EXTENSION and e.get("origin")]
    evidence.append("%s%s imports, so it was built for this torch; but apex compiles its kernels only for the GPU "
                    "architectures in TORCH_CUDA_ARCH_LIST at build time (apex's setup.py picks a default list where the "
                    "build machine shows no GPU), and this build holds no %s code and no PTX the driver could compile "
                    "for it: it was built on or for another GPU" % (NORM_EXTENSION, " (%s)" % origins[0] if origins else "", sms))
    if route.get("routed"):
        evidence.append(_routing_line(route))
    arch_list = ";".join(caps) or None
    return [Finding(
        ID, "apex-wrong-arch", Severity.ERROR,
        "apex's CUDA kernels were built for another GPU: its fused norms do not run on %s" % ", ".join(
            _device_name(facts, d) for d in devices),
        tuple(evidence),
        _rebuild_or_remove(facts, env, "Rebuild apex on this machine for %s" % sms,
                           "Or uninstall apex if nothing here needs it (transformers falls back to its own norms)",
                           arch_list=arch_list),
        {"package": "apex", "version": (facts.get("distribution") or {}).get("version"), "devices": devices,
         "capabilities": caps},
    )]


def _construct_lines(facts: Dict[str, Any], errors: Optional[Sequence[str]] = None) -> List[str]:
    """How building FusedRMSNorm(8) / FusedLayerNorm(8) failed (what building a T5 does first)."""
    lines = []
    for op, info in sorted((facts.get("construct") or {}).items()):
        if not info.get("ok") and (errors is None or info.get("error") in errors):
            lines.append("%s(8) raises %s: %s%s" % (op, info.get("error_type"), info.get("error"),
                                                  " (at %s)" % info["where"] if info.get("where") else ""))
    return lines


def _ops_failing_with(facts: Dict[str, Any], errors: Sequence[str]) -> Optional[str]:
    """One evidence line: how many fused-norm runs failed with one of these errors."""
    hit = [o for o in facts.get("ops") or () if not o.get("ok") and (o.get("error") or "") in errors]
    if not hit:
        return None
    return "%d of %d fused-norm runs on %s fail with it" % (len(hit), len(facts.get("ops") or ()),
                                                        ", ".join(sorted({o["device"] for o in hit})))


def _wrong(o: Dict[str, Any]) -> bool:
    err = o.get("max_rel_err")
    if err is None:
        return False
    return isinstance(err, str) or float(err) > TOLERANCE.get(o.get("dtype") or "", 5e-2)


def _op_line(o: Dict[str, Any]) -> str:
    return "%s %s %s: %s" % (o.get("device"), o.get("op"), mix(o.get("dtype") or "?", o.get("weight_dtype") or "?"), o.get("error"))


def _device_name(facts: Dict[str, Any], device: str) -> str:
    for d in facts.get("devices") or ():
        if d.get("id") == device and d.get("name"):
            return "%s (%s, sm_%s)" % (device, d["name"], (d.get("capability") or "").replace(".", ""))
    return device


def _fused_findings(facts: Dict[str, Any], env: Target, route: Dict[str, Any]) -> List[Finding]:
    findings: List[Finding] = []
    failed = _norm_failures(facts)
    if failed:
        same = [o for o in failed if o.get("dtype") == o.get("weight_dtype")]
        mixed = [o for o in failed if o.get("dtype") != o.get("weight_dtype")]
        mismatched = [o for o in mixed if _DTYPE_MISMATCH_RE.search(o.get("error") or "")]
        mismatch_only = not same and len(mismatched) == len(mixed)
        severity = Severity.ERROR if (same or route.get("routed") or not mismatch_only) else Severity.WARNING
        per_device: Dict[str, List[str]] = {}
        for dev in sorted({o["device"] for o in failed}):
            for op in ("FusedRMSNorm", "FusedLayerNorm"):
                n = sum(1 for o in failed if o["device"] == dev and o["op"] == op)
                total = sum(1 for o in facts.get("ops") or () if o["device"] == dev and o["op"] == op)
                if n:
                    per_device.setdefault(dev, []).append("%s in %d of %d" % (op, n, total))
        title = "apex fused norms fail: " + "; ".join(
            "on %s %s input/weight dtype pairs" % (_device_name(facts, dev), ", ".join(parts)) for dev, parts in per_device.items())
        evidence = [_op_line(o) for o in failed]
        if mismatch_only:
            evidence.append("only pairs whose input and weight dtypes differ fail: FusedRMSNorm/FusedLayerNorm write the output "
                            "in the input's dtype and read the weight as that dtype (apex csrc/layer_norm_cuda.cpp)")
        if route.get("routed"):
            evidence.append(_routing_line(route))
            if mismatched:
                evidence.append("T5 loaded in fp16/bf16 keeps its `wo` projections in fp32 (_keep_in_fp32_modules), so fp32 hidden "
                                "states meet half-precision norm weights: seed 002's `expected scalar type Float but found Half`")
            evidence.append(UPGRADE_STORY + "; it is not a fix: never install apex from PyPI")
        remedies: List[Remedy] = []
        if route.get("routed"):
            remedies.append(_uninstall_remedy(facts, env, "Uninstall apex: transformers then builds T5 with its own T5LayerNorm, "
                                                     "which handles mixed dtypes"))
        if not mismatch_only:
            remedies.extend(build_remedies(facts, env, "Rebuild apex against this torch", uninstall_first=True))
        if mismatched:
            remedies.append(Remedy("Give each fused norm an input of its weight's dtype: load the model in one dtype (e.g. bf16 "
                                   "throughout), or run it under torch.autocast, where apex casts input and weight alike",
                                   id="apex-norm-same-dtype"))
        if route.get("routed"):
            remedies.append(pip_remedy("Or upgrade transformers to 5.8.0 or later, which no longer swaps in apex FusedRMSNorm "
                                       "(a major upgrade from 4.x)", "transformers-upgrade", env, install=["transformers>=5.8.0"]))
        if not route.get("routed"):
            remedies.append(_uninstall_remedy(facts, env, "Or uninstall apex if nothing here needs it"))
        findings.append(Finding(
            ID, "apex-fused-norm-fails", severity, title, tuple(evidence), tuple(remedies),
            {"package": "apex", "devices": sorted({o["device"] for o in failed}),
             "combinations": [{"op": o["op"], "device": o["device"], "dtype": o["dtype"], "weight_dtype": o.get("weight_dtype")}
                              for o in failed]},
        ))
    wrong = [o for o in facts.get("ops") or () if o.get("ok") and _wrong(o)]
    if wrong:
        findings.append(Finding(
            ID, "apex-fused-norm-wrong-results", Severity.ERROR,
            "apex fused norms run but compute wrong values on %s" % ", ".join(sorted({o["device"] for o in wrong})),
            tuple("%s %s %s: max relative error %s vs the fp32 torch reference"
                  % (o["device"], o["op"], mix(o["dtype"], o.get("weight_dtype") or "?"), o["max_rel_err"]) for o in wrong),
            _rebuild_or_remove(facts, env, "Rebuild apex for this GPU and torch", "Or uninstall apex (transformers falls back to its own norms)"),
            {"package": "apex", "devices": sorted({o["device"] for o in wrong})},
        ))
    return findings


def _nvidia(facts: Dict[str, Any], env: Target) -> List[Finding]:
    findings: List[Finding] = []
    dist = facts.get("distribution") or {}
    imp = facts.get("import") or {}
    norm = facts.get("normalization_import") or {}
    route = t5_routing(facts)
    subject = {"package": "apex", "version": dist.get("version")}
    if imp.get("skipped"):
        return findings  # torch does not import: torch-install says why
    ext_errors = _extension_errors(facts)
    abi = [(n, e) for n, e in ext_errors if "undefined symbol" in e]
    for label, info in (("import apex", imp), ("import apex.normalization", norm)):
        if info and not info.get("ok") and "undefined symbol" in (info.get("error") or "") and not any(e == info["error"] for _, e in abi):
            abi.append((label, info["error"]))
    if abi:
        evidence = ["%s: %s" % (n, e) for n, e in abi]
        evidence.append("these modules were compiled against another torch than the installed %s (C++ symbols differ between "
                        "torch releases)" % facts.get("torch"))
        evidence.extend(_construct_lines(facts, [e for _, e in abi]))
        ops_line = _ops_failing_with(facts, [e for _, e in abi])
        if ops_line:
            evidence.append(ops_line)
        if route.get("routed"):
            evidence.append(_routing_line(route))
        findings.append(Finding(
            ID, "apex-extension-abi", Severity.ERROR,
            "apex's compiled extensions were built for another torch: %s fail to load" % ", ".join(n for n, _ in abi),
            tuple(evidence),
            _rebuild_or_remove(facts, env, "Rebuild apex from source against the installed torch %s" % facts.get("torch"),
                               "Or uninstall apex if nothing here needs it (transformers falls back to its own norms)"),
            dict(subject, modules=[n for n, _ in abi]),
        ))
    other = [(n, e) for n, e in ext_errors if "undefined symbol" not in e]
    if other:
        findings.append(Finding(
            ID, "apex-extension-broken", Severity.ERROR,
            "apex's compiled extensions fail to load: %s" % ", ".join(n for n, _ in other),
            tuple(["%s: %s" % (n, e) for n, e in other] + _construct_lines(facts, [e for _, e in other])
                  + [line for line in [_ops_failing_with(facts, [e for _, e in other])] if line]),
            _rebuild_or_remove(facts, env, "Rebuild apex from source in this environment", "Or uninstall apex if nothing here needs it"),
            dict(subject, modules=[n for n, _ in other]),
        ))
    if not imp.get("ok") or not norm.get("ok"):
        failed = imp if not imp.get("ok") else norm
        if "undefined symbol" not in (failed.get("error") or ""):
            silent = failed.get("error_type") in ("ImportError", "ModuleNotFoundError")
            fallback = ("transformers falls back to T5LayerNorm silently" if silent
                        else "transformers logs \"discovered apex but it failed to load, falling back to T5LayerNorm\"")
            findings.append(Finding(
                ID, "apex-import-fails", Severity.WARNING,
                "NVIDIA apex is installed but `%s` fails"
                % ("import apex" if failed is imp else "from apex.normalization import FusedRMSNorm"),
                ("%s: %s" % (failed.get("error_type"), failed.get("error")), "at %s" % failed.get("where"), fallback),
                _rebuild_or_remove(facts, env, "Rebuild apex from source against this torch", "Or uninstall apex if nothing here needs it"),
                subject,
            ))
        return findings
    cuda_found = _compiled(facts, ("cuda",))
    no_ext = NORM_EXTENSION not in cuda_found and not any(n == NORM_EXTENSION for n, _ in ext_errors)
    if no_ext:
        routed = route.get("routed")
        gpu = bool(facts.get("devices"))
        evidence = []
        if not cuda_found:
            evidence.append("no CUDA extension of apex can be found (%s, amp_C, ... : importlib.util.find_spec returns None): "
                            "a Python-only build" % NORM_EXTENSION)
        else:
            evidence.append("%s is missing (found: %s)" % (NORM_EXTENSION, ", ".join(cuda_found)))
        evidence.extend(_construct_lines(facts))
        missing_ops = [o for o in facts.get("ops") or () if not o.get("ok") and NORM_EXTENSION in (o.get("error") or "")]
        if missing_ops:
            evidence.append("%d fused-norm runs on %s fail: %s"
                            % (len(missing_ops), ", ".join(sorted({o["device"] for o in missing_ops})), missing_ops[0].get("error")))
        else:
            evidence.append("apex.normalization imports, and its layers fail when built or at their first CUDA forward")
        if routed:
            evidence.append(_routing_line(route))
        uninstall = _uninstall_remedy(facts, env, "Uninstall apex: transformers then uses its own T5LayerNorm")
        if facts.get("torch_cuda"):
            remedies = (*build_remedies(facts, env, "Rebuild apex with its CUDA extensions", uninstall_first=True), uninstall)
        else:  # a CPU torch: nothing to build the extensions against
            remedies = (uninstall,)
        findings.append(Finding(
            ID, "apex-no-cuda-extensions", Severity.ERROR if (routed or gpu) else Severity.WARNING,
            "apex was built without %s: its fused layers fail%s" % (
                "its CUDA extensions" if not cuda_found else NORM_EXTENSION,
                " and transformers still routes %s through them" % ", ".join(route["models"]) if routed else ""),
            tuple(evidence), remedies, dict(subject, missing=[NORM_EXTENSION] if cuda_found else list(CUDA_EXTENSIONS)),
        ))
    findings.extend(_wrong_arch(facts, env, route))
    findings.extend(_fused_findings(facts, env, route))
    if facts.get("fused_ops") == "no CUDA device":
        findings.append(Finding(
            ID, "apex-no-cuda-device", Severity.INFO, "no CUDA device: apex's fused norms were not run",
            ("torch %s sees no CUDA device; on CPU inputs apex FusedRMSNorm/FusedLayerNorm fall back to plain PyTorch, so "
             "running them there would prove nothing" % facts.get("torch"),),
            (), subject,
        ))
    if route.get("routed") and not any(f.severity is Severity.ERROR for f in findings):
        findings.append(Finding(
            ID, "apex-t5-fused-rmsnorm", Severity.INFO,
            "transformers %s builds T5-family layer norms from apex FusedRMSNorm" % route["transformers"],
            (_routing_line(route),), (), dict(subject, models=route["models"]),
        ))
    return findings


def has_amp(facts: Dict[str, Any]) -> Optional[bool]:
    """Whether the apex that `import apex` loads holds apex.amp (None: not recorded, older snapshots)."""
    return ((facts.get("package") or {}).get("contents") or {}).get(AMP_MARKER)


def _no_amp(facts: Dict[str, Any]) -> List[Finding]:
    if has_amp(facts) is not False:
        return []
    dist = facts.get("distribution") or {}
    where = ", ".join((facts.get("package") or {}).get("locations") or ()) or "apex"
    return [Finding(
        ID, "apex-no-amp", Severity.INFO,
        "this NVIDIA apex has no apex.amp: code written for it (`from apex import amp`, `amp.initialize`) fails here",
        ("no amp/ in %s: NVIDIA removed apex.amp, apex.parallel's DistributedDataParallel and apex.RNN "
         "(github.com/NVIDIA/apex/pull/1896; 25.05 is the last tag with them)" % where,
         "torch's own torch.amp (autocast, GradScaler) does what apex.amp did; transformers, accelerate and Lightning "
         "use it for fp16/bf16"),
        (NO_AMP,), {"package": "apex", "version": dist.get("version"), "missing": ["apex.amp"]},
    )]


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    kind, impostor, nvidia = classify(facts)
    if kind == "absent":
        return []
    if kind == "impostor":
        return [_impostor(facts, env, impostor, nvidia)]
    if kind == "unknown":
        dist = facts.get("distribution") or {}
        package = facts.get("package") or {}
        evidence = [
            "distribution: %s" % ("apex %s, %r" % (dist.get("version"), dist.get("summary")) if dist else "none"),
            "package: %s" % (", ".join(package.get("locations") or ()) or "none importable"),
        ]
        if (facts.get("import") or {}).get("error"):
            evidence.append("import apex: %s" % facts["import"]["error"])
        return [Finding(
            ID, "apex-unrecognized", Severity.WARNING,
            "an `apex` is installed that is neither NVIDIA apex nor the known PyPI toolkit",
            tuple(evidence),
            (_uninstall_remedy(facts, env, "Uninstall it if nothing here needs it"),
             *build_remedies(facts, env, "If you need NVIDIA apex", uninstall_first=True)),
            {"package": "apex", "version": dist.get("version")},
        )]
    return _nvidia(facts, env) + _no_amp(facts)


def summarize(facts: Dict[str, Any]) -> str:
    kind, _, _ = classify(facts)
    dist = facts.get("distribution") or {}
    if kind == "absent":
        return "apex not installed"
    if kind == "impostor":
        return "impostor: PyPI `apex` %s (Pyramid web toolkit), not NVIDIA apex" % (dist.get("version") or "")
    if kind == "unknown":
        return "unrecognised apex %s" % (dist.get("version") or "")
    parts = ["NVIDIA apex %s" % (dist.get("version") or "(source tree)")]
    imp = facts.get("import") or {}
    if imp.get("skipped"):
        return "%s · not imported: %s" % (parts[0], imp["skipped"])
    compiled = _compiled(facts)
    broken = _extension_errors(facts)
    if not _compiled(facts, ("cuda",)):
        parts.append("no CUDA extensions (Python-only build)")
    else:
        parts.append("%d compiled extensions%s" % (len(compiled), ", %d fail to load" % len(broken) if broken else ""))
    if not imp.get("ok") or not (facts.get("normalization_import") or {}).get("ok"):
        parts.append("apex.normalization does not import")
    ops = facts.get("ops") or []
    if ops:
        per: Dict[Tuple[str, str], List[bool]] = {}
        for o in ops:
            per.setdefault((o["device"], o["op"]), []).append(bool(o.get("ok")) and not _wrong(o))
        parts.append(", ".join("%s %d/%d on %s" % (op, sum(v), len(v), dev) for (dev, op), v in per.items()))
    elif facts.get("fused_ops"):
        parts.append(facts["fused_ops"])
    if has_amp(facts) is False:
        parts.append("no apex.amp")
    route = t5_routing(facts)
    if route.get("routed"):
        parts.append("T5 → FusedRMSNorm (transformers %s)" % route["transformers"])
    return " · ".join(parts)
