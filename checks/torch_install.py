"""torch-install: is torch importable, what build is it, which devices does it
see, and which of the packages it is usually mixed with are installed."""

from __future__ import annotations

import platform
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.target.cuda_tables import CPU_INDEX
from envdoctor.target.intent import config_subject
from envdoctor.target.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, Target, available_devices
from envdoctor.target.platform.menus import gpu_runtime_step
from envdoctor.target.probekit.distributions import installed_version, user_site_shadowing
from envdoctor.target.probekit.gpus import identity
from envdoctor.target.probekit.steps import step
from envdoctor.target.probekit.text import exception_text
from envdoctor.target.remedies.actions import config_remedy, env_remedy, pip_remedy, torch_wheel

from .cuda_compat.signatures import BUILD_DOES_NOT_FIT, CHECKPOINT_SAVED_ON_CUDA, CUDA_UNAVAILABLE, TORCH_DISABLES_CUDA, WEBUI_CUDA_TEST, unavailable

ID = "torch-install"

# Distribution names of the libraries this stack is mixed with.
COMPANIONS = (
    "numpy", "transformers", "diffusers", "peft", "accelerate", "apex", "xformers", "flash-attn",
    "bitsandbytes", "triton", "torchvision", "torchaudio", "deepspeed", "safetensors",
)


def _guard(fn: Any, default: Any = None) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a failing query is recorded, not raised
        return {"error": exception_text(exc)} if default is None else default


def _build(torch: Any) -> Dict[str, Any]:
    version = torch.version
    cuda_build = getattr(version, "cuda", None)
    build: Dict[str, Any] = {
        "version": torch.__version__,
        "git_version": getattr(version, "git_version", None),
        "cuda": cuda_build,
        "hip": getattr(version, "hip", None),
        "debug": getattr(version, "debug", None),
        "cxx11_abi": _guard(lambda: bool(torch._C._GLIBCXX_USE_CXX11_ABI)),
        "cpu_capability": _guard(lambda: torch.backends.cpu.get_cpu_capability()),
        "cudnn": _guard(lambda: torch.backends.cudnn.version()) if cuda_build else None,
        "arch_list": _guard(lambda: list(torch.cuda.get_arch_list()), []) if cuda_build else [],
    }
    build["kind"] = "ROCm" if build["hip"] else ("CUDA %s" % cuda_build if cuda_build else "CPU-only")
    return build


def _devices(torch: Any, build: Dict[str, Any]) -> List[Dict[str, Any]]:
    devices = [
        {
            "id": "cpu",
            "type": "cpu",
            "name": platform.processor() or platform.machine(),
            "capability": build.get("cpu_capability"),
            "threads": _guard(lambda: torch.get_num_threads()),
        }
    ]
    for dev in available_devices(torch)[1:]:
        if dev.startswith("cuda"):
            with step("reading the identity of %s" % dev, device=dev):
                info = identity(torch, dev)
                props = _guard(lambda: torch.cuda.get_device_properties(info["index"]))
            if not isinstance(props, dict):
                info["total_memory"] = int(props.total_memory)
                info["multi_processor_count"] = getattr(props, "multi_processor_count", None)
            devices.append({"type": "cuda", **info})
        else:
            devices.append({"id": dev, "type": dev})
    return devices


def _numpy_interop(torch: Any) -> Dict[str, Any]:
    try:
        torch.zeros(2).numpy()
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": exception_text(exc)}
    return {"ok": True}


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    import warnings

    facts: Dict[str, Any] = {
        "torch_import": ctx.options.get("torch_import") or {},
        "torch_dist": installed_version("torch"),
        "packages": {name: installed_version(name) for name in COMPANIONS},
        "user_site": user_site_shadowing(),
    }
    if torch is None:
        return facts
    facts["build"] = build = _build(torch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        facts["cuda_available"] = _guard(lambda: bool(torch.cuda.is_available()), False)
        facts["devices"] = _devices(torch, build)
    facts["cuda_init_warnings"] = sorted({str(w.message) for w in caught})
    facts["mps"] = {
        "built": _guard(lambda: bool(torch.backends.mps.is_built()), False),
        "available": _guard(lambda: bool(torch.backends.mps.is_available()), False),
    }
    facts["numpy_interop"] = _numpy_interop(torch)
    seen = {d["id"] for d in facts["devices"]}
    wanted = [] if ctx.options.get("devices_optional") else (ctx.devices or [])
    facts["missing_devices"] = [
        d for d in wanted if d not in seen and not (d == "cuda" and any(s.startswith("cuda") for s in seen))
    ]
    return facts


# ---------------------------------------------------------------- rules


def _install_remedies(env: Target, reinstall: Optional[str]) -> Tuple[Remedy, ...]:
    if reinstall:
        # the same build from the index that serves it (+cpu from the CPU index), else PyPI's
        requirement, index = torch_wheel(reinstall) or ("torch==%s" % reinstall.split("+")[0], None)
        return (
            pip_remedy("Reinstall the same torch release with its dependencies (its CUDA libraries come as separate packages)",
                       "torch-reinstall", env, install=[requirement], force_reinstall=True, index_url=index),
        )
    # PyPI's Linux torch brings GBs of CUDA libraries: where no NVIDIA GPU is here, the CPU build comes first
    cpu_first = env.os == "linux" and not env.nvidia
    default = pip_remedy("Or the default build (on Linux a CUDA build, several GB), for an NVIDIA GPU this machine does not show"
                         if cpu_first else "Install torch. On Linux the default build is a CUDA build (several GB)",
                         "torch-install", env, install=["torch"])
    cpu = pip_remedy("Install torch's CPU build: this machine shows no NVIDIA GPU" if cpu_first
                     else "Or, on a machine without an NVIDIA GPU, the CPU build", "torch-install-cpu", env, install=["torch"],
                     index_url=CPU_INDEX)
    return (cpu, default) if cpu_first else (default, cpu)


def _frames(text: str, limit: int = 4) -> List[str]:
    """The innermost `File ...` lines of a traceback or faulthandler dump: where it broke."""
    frames = [line.strip() for line in text.splitlines() if line.strip().startswith("File ")]
    return frames[-limit:]


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    findings: List[Finding] = []
    imp = facts.get("torch_import") or {}
    dist = facts.get("torch_dist")
    if not imp.get("ok"):
        error = imp.get("error") or "torch did not import"
        if imp.get("error_type") == "ModuleNotFoundError" and not dist:
            findings.append(
                Finding(ID, "torch-missing", Severity.ERROR, "torch is not installed in %s" % env.python,
                        (error,), _install_remedies(env, None))
            )
        else:
            evidence = [error] + _frames(imp.get("stderr") or imp.get("traceback") or "")
            code = "torch-import-crashed" if imp.get("error_type") in ("Crash", "Timeout") else "torch-import-failed"
            findings.append(
                Finding(ID, code, Severity.ERROR,
                        "torch %s is installed but does not import" % (dist or ""), tuple(evidence),
                        _install_remedies(env, dist),
                        {"package": "torch", "version": dist})
            )
        return findings + user_site(facts)  # a user-site torch that does not import is the usual one
    packages = facts.get("packages") or {}
    warnings_text = " ".join(imp.get("warnings") or [])
    if not packages.get("numpy"):
        findings.append(
            Finding(ID, "numpy-missing", Severity.WARNING, "numpy is not installed: tensor.numpy() and most data pipelines fail",
                    tuple(imp.get("warnings") or ()) or ("no numpy distribution found",),
                    (pip_remedy("Install numpy", "numpy-install", env, install=["numpy"]),),
                    {"package": "numpy"})
        )
    elif not (facts.get("numpy_interop") or {}).get("ok", True) or "compiled using NumPy 1.x" in warnings_text:
        evidence = [(facts.get("numpy_interop") or {}).get("error") or ""] + list(imp.get("warnings") or [])
        findings.append(
            Finding(ID, "numpy-abi", Severity.WARNING,
                    "numpy %s does not work with this torch build" % packages.get("numpy"), tuple(e for e in evidence if e),
                    (pip_remedy("Install a numpy this torch was built against (torch older than 2.3 needs numpy 1.x)", "numpy-downgrade",
                                env, install=["numpy<2"]),
                     Remedy("Or upgrade torch to a release built against numpy 2", kind="manual")),
                    {"package": "numpy", "version": packages.get("numpy")})
        )
    for device in facts.get("missing_devices") or ():
        findings.append(
            Finding(ID, "device-missing", Severity.ERROR, "the requested device %s is not visible to torch" % device,
                    tuple(facts.get("cuda_init_warnings") or ()) or ("devices seen: %s" % ", ".join(d["id"] for d in facts.get("devices") or ()),),
                    (Remedy("Check CUDA_VISIBLE_DEVICES, the driver (`nvidia-smi`) and that torch is a CUDA build; "
                            "`envdoctor check` without --device lists what torch sees."),),
                    {"device": device})
        )
    findings.extend(training_device(facts, env))
    findings.extend(distributed_device(facts, env))
    findings.extend(user_site(facts))
    return findings


def user_site(facts: Dict[str, Any]) -> List[Finding]:
    """`pip install --user` copies that win over this environment's own (outside a venv the user site
    comes first on sys.path): the environment's torch or numpy is not what runs."""
    found = facts.get("user_site") or {}
    shadowing = found.get("shadowing") or []
    if not shadowing:
        return []
    key = [s for s in shadowing if s["name"] in ("torch", "numpy") + COMPANIONS]
    listed = ", ".join("%s %s over %s" % (s["name"], s["user"], s["env"]) for s in (key or shadowing)[:6])
    return [Finding(ID, "user-site-shadows", Severity.ERROR if key else Severity.WARNING,
                    "%d package%s in your user site shadow%s this environment's own: %s" % (
                        len(shadowing), "s" if len(shadowing) > 1 else "", "" if len(shadowing) > 1 else "s", listed),
                    ("user site (pip install --user): %s, before the environment's site-packages on sys.path" % found.get("path"),)
                    + tuple("%s: %s in the user site, %s in the environment" % (s["name"], s["user"], s["env"]) for s in shadowing[:20]),
                    (env_remedy("Keep the user site out of this environment's runs (PYTHONNOUSERSITE=1)", "no-user-site",
                                set_env={"PYTHONNOUSERSITE": "1"}),
                     Remedy("Or remove the user-site copies: `python -m pip uninstall NAME` with the interpreter that installed "
                            "them with --user, outside any venv", kind="manual", id="remove-user-site")),
                    {"user_site": found.get("path"), "names": [s["name"] for s in shadowing]})]


# accelerate's distributed types that start one process per GPU (DistributedType, accelerate utils/dataclasses.py;
# `accelerate launch` hands MULTI_GPU to torch.distributed with NCCL, "ProcessGroupNCCL is only supported with GPUs")
GPU_DISTRIBUTED = ("multi_gpu", "deepspeed", "fsdp", "megatron_lm")


def distributed_device(facts: Dict[str, Any], env: Target) -> List[Finding]:
    """A config that launches one process per GPU (accelerate `distributed_type: MULTI_GPU`, DeepSpeed, FSDP)
    where torch sees no GPU. Reported, not rewritten: the launch settings are `accelerate config`'s to write."""
    intent = env.intent
    setting = intent.effective("distributed") if intent else None
    if setting is None or setting.default or str(setting.value) not in GPU_DISTRIBUTED:
        return []
    seen = [str(d.get("id")) for d in facts.get("devices") or ()]
    if any(d.startswith("cuda") for d in seen):
        return []
    subject = dict(config_subject([setting]), distributed=setting.value)
    return [Finding(ID, "config-distributed-no-gpu", Severity.ERROR,
                    "%s launches one process per GPU; this torch sees no GPU" % setting.where(),
                    ("devices seen: %s" % ", ".join(seen),),
                    (Remedy("Run `accelerate config` again on this machine (it writes `distributed_type: 'NO'`, or MULTI_CPU "
                            "for several CPU processes), or launch with `accelerate launch --cpu`", kind="manual", id="distributed-cpu"),
                     Remedy("Or run where a GPU is visible (%s)" % gpu_runtime_step(env.where), kind="manual", id="use-gpu")),
                    subject)]


def training_device(facts: Dict[str, Any], env: Target) -> List[Finding]:
    """The training config's device against the devices torch sees: a forced `cuda` with no
    GPU fails at the first `.to("cuda")`; a forced `cpu` beside a GPU trains slowly and
    meets the CPU's missing half kernels."""
    intent = env.intent
    setting = intent.effective("device") if intent else None
    if setting is None or setting.default or setting.value in (None, "auto"):
        return []
    seen = [str(d.get("id")) for d in facts.get("devices") or ()]
    gpus = [d for d in seen if d.startswith("cuda")]
    wanted = str(setting.value)
    subject = dict(config_subject([setting]), device=wanted)
    if wanted.startswith("cuda") and wanted not in seen and not (wanted == "cuda" and gpus):
        # the device alone: the half precisions stay where the CPU's kernels run them (fix
        # checks the config as it would leave it, and cpu-half-kernels condemns what they do not)
        remedies = [config_remedy("Train on the CPU: set the config's device to cpu", "device-cpu", {"device": "cpu"}, when={"device": wanted}),
                    Remedy("Or run where a GPU is visible (%s)" % gpu_runtime_step(env.where), kind="manual", id="use-gpu")]
        return [Finding(ID, "config-device-missing", Severity.ERROR,
                        "%s asks for %s; this torch sees %s" % (setting.where(), wanted, ", ".join(gpus) if gpus else "no GPU"),
                        ("devices seen: %s" % ", ".join(seen),), tuple(remedies), subject)]
    if wanted == "cpu" and gpus:
        return [Finding(ID, "config-device-cpu", Severity.WARNING,
                        "%s trains on the CPU although torch sees %s" % (setting.where(), ", ".join(gpus)),
                        ("devices seen: %s" % ", ".join(seen),),
                        (config_remedy("Train on the GPU: set the config's device to cuda", "device-cuda", {"device": "cuda"}, when={"device": "cpu"}),),
                        subject)]
    return []


def summarize(facts: Dict[str, Any]) -> str:
    imp = facts.get("torch_import") or {}
    if not imp.get("ok"):
        return "torch does not import"
    build = facts.get("build") or {}
    devices = ", ".join(
        "%s (%s)" % (d["id"], d.get("name")) if d.get("type") == "cuda" else d["id"] for d in facts.get("devices") or ()
    )
    numpy = (facts.get("packages") or {}).get("numpy")
    parts = ["torch %s" % build.get("version"), build.get("kind", ""), "devices: %s" % devices]
    parts.append("numpy %s" % numpy if numpy else "no numpy")
    return " · ".join(p for p in parts if p)


# What `explain` can say from a traceback alone; the live findings give the exact pip command for the target.
INSTALL_TORCH = Remedy("Install torch into the interpreter that runs the script (`<that python> -m pip install torch`; a venv "
                       "that is not activated, or a second Python, is the usual cause)", id="torch-install")
TORCH_CUDA_WHEEL = Remedy("Install a CUDA build of torch (Linux: the PyPI default; Windows: the download.pytorch.org cuXXX index "
                          "for your driver) into the interpreter that runs the script (an app's own venv, for a web UI)",
                          id="torch-cuda-wheel")
# A machine whose GPU CUDA cannot use (AMD, Intel, Apple) or none: the build for what it has, or the CPU
NOT_NVIDIA_DEVICE = Remedy("Use the build for this GPU (AMD: a ROCm torch on Linux, ZLUDA or DirectML forks on Windows; Apple: "
                           "mps) or run on the CPU (a web UI: `--use-cpu all --skip-torch-cuda-test`)", id="build-for-this-gpu")
REINSTALL_TORCH = Remedy("Reinstall torch (`pip install --force-reinstall torch==<the installed version>`): files of it are "
                         "missing or come from another build", id="torch-reinstall")

# torch 1.8 to 1.13's CUDA builds split libtorch_cuda into libtorch_cuda_cu and libtorch_cuda_cpp (BUILD_SPLIT_CUDA:
# github.com/pytorch/pytorch/pull/49050, removed by /pull/87502 for 2.0): a library linked against them names them
SPLIT_CUDA_LIBRARY = r"libtorch_cuda_(cu|cpp)\.so[.\d]*: cannot open shared object file"
# cuDNN 8's own words when a sub-library of it cannot be opened (libcudnn_ops_infer.so.8, cudnn_cnn_infer64_8.dll)
CUDNN_OWN_LOADER = r"Could not (load library|locate) (lib)?cudnn_\w+"
# cuDNN 8's sub-libraries, which only cuDNN's own loader opens (libcudnn.so.8 dlopens libcudnn_ops_infer.so.8 when a
# kernel first needs it): one of them not found, even said without the loader's words, is cuDNN's install
CUDNN_SUB_LIBRARY = r"\blibcudnn_(ops|cnn|adv)_(infer|train)\.so[.\d]*: cannot open shared object file"
# onnxruntime's own execution providers loading the CUDA libraries they were built for
ONNXRUNTIME_PROVIDER = r"onnxruntime_providers_(cuda|tensorrt)|TryGetProviderInfo_(CUDA|TensorRT)|onnxruntime-gpu"
# a package logging its own compiled module's import failure and going on without it (vLLM's "Failed to import from
# vllm._C with ImportError('libcudart.so.11.0: cannot open shared object file ...')"): the library it names is that
# module's need, not torch's
PACKAGE_C_LOGGED = r"Failed to import from (?!torch\b)[\w.]+\._C with ImportError"
# TensorFlow's loader saying which CUDA library it could not open, a warning it goes on after ("dso_loader.cc:64] Could not
# load dynamic library 'libcudart.so.11.0'; dlerror: ..."): TensorFlow's, in an environment that also has torch; and
# another framework's own runtime failing to load ("Failed to load the native TensorFlow runtime" after pywrap_tensorflow's
# "libcudart.so.10.0: cannot open shared object file", jaxlib's): no torch and no torch extension, not this tool's to probe
TENSORFLOW_LOADER = (r"dso_loader\.cc:\d+\]|Ignore above cudart dlerror|native TensorFlow runtime|"
                     r"[/\\]tensorflow[/\\]python[/\\]pywrap_tensorflow|[/\\]jaxlib[/\\]")
SUPPORTED_PYTHON = Remedy("Use a 64-bit Python of a version torch publishes wheels for (native arm64 on Apple silicon), and "
                          "let pip pick the wheel (`python -m pip install torch`) instead of a downloaded file or a pinned "
                          "+cuXXX build on a Mac", id="supported-python")
# macOS's loader on a library built for the other CPU of a Mac: "... (mach-o file, but is an incompatible architecture
# (have 'x86_64', need 'arm64e'))" (dyld's words, the line often wrapped before "(have")
MACHO_WRONG_CPU = r"\(have '?(x86_64|arm64e?)'?, need '?(x86_64|arm64e?)'?\)"
# The DLLs only torch\lib ships, named alone where a path was cut
_TORCH_DLLS = r"(fbgemm|c10|c10_cuda|torch_cpu|torch_cuda\w*|torch_python|shm|asmjit|caffe2_\w{1,40})"  # (torch 1.x: caffe2_nvrtc, caffe2_detectron_ops_gpu)
# WinError 1455 ("the paging file is too small"): the DLL is fine, Windows has no virtual memory left to map it. The code is
# ERROR_COMMITMENT_LIMIT (learn.microsoft.com, System Error Codes 1300-1699); Rust's io::Error prints it "(os error 1455)"
# (safetensors mapping a checkpoint), and Windows words it in the user's language ("ページング ファイルが小さすぎるため",
# "页面文件太小", "페이징 파일이 너무 작습니다", "Файл подкачки слишком мал", "Die Auslagerungsdatei ist zu klein")
PAGING_FILE = (r"WinError 1455|\bos error 1455\b|paging file is too small|页面文件太小|ページング ?ファイルが小さすぎ|페이징 ?파일이 너무 작|"
               r"(?i:файл подкачки слишком мал|Auslagerungsdatei ist zu klein)")
VC_RUNTIME = Remedy("Install the latest Microsoft Visual C++ Redistributable (x64) and restart the shell; if it persists, "
                    "reinstall torch into this interpreter", id="vc-redist")

# A Mac said in a log: its paths, its OS, its chips and their device
_MAC = r"/Users/|[Dd]arwin|[Mm]ac ?OS|Mac(Book| mini| Studio)|Apple|\bM[1-4]( Pro| Max| Ultra)?\b|\bmps\b|MPS|arm64"
# An Apple chip as people write it in a sentence (in any case), and conda's CUDA package, each found flush against CJK
# text too, which Python counts as word characters ("我m1芯片用conda安装gxx和pytorch-cuda=11.8")
_APPLE_CHIP = r"(?i:(?<![a-z\d])m[1-4](?![a-z\d]))"
_PYTORCH_CUDA = r"(?<![A-Za-z\d_-])pytorch-cuda(?![A-Za-z\d_-])"
# A machine whose GPU CUDA cannot use, as a log names it (case kept: the AMD fork's version says "v1.10.1-amd-53")
_NOT_NVIDIA = r"\b(AMD|Radeon|RX ?\d{3,4}|Intel Arc|ROCm|ZLUDA)\b|" + _MAC

# pip building a package from source in its isolated build environment (PEP 517): its overlay path or its step's words
_BUILD_ISOLATED = r"pip-build-env-\w+|Getting requirements to build (wheel|editable)\b[^\n]*error"

CPU_BUILD_INSTALLED = ("torch cannot use the GPU: a CPU-only torch build is installed (pip's default on Windows, a package that "
                       "pulled one in)")

NUMPY_BELOW_2 = Remedy("Install numpy<2 beside this torch, or upgrade torch (and the packages that need numpy 1) to releases "
                       "built against numpy 2", id="numpy-downgrade")

# torch's CPU build asked for CUDA, as torch says it and as people retype it (any case, "enabled" dropped, "built without
# cuda support"; a machine translation in an issue's title: "Torch 未在启用 CUDA 的情况下编译")
# (and the CPU build's missing CUDA half seen from a CUDA call: "Cannot get CUDA generator without ATen_cuda library", a
# torch._C without its CUDA bindings: "module 'torch._C' has no attribute '_cuda_setDevice'", "... '_CudaDeviceProperties'")
_NOT_BUILT_WITH_CUDA = (r"(?i:Torch (is |was )?not compiled with CUDA|Torch (was )?(built|compiled) without CUDA)|Torch ?未在启用 ?CUDA ?的情况下编译|"
                        # (as Portuguese and Spanish users retype it: "Torch não foi compilado com CUDA habilitado", "Torch
                        # no fue compilado con CUDA")
                        r"(?i:Torch (não foi|no fue|no está|no esta) compilad[oa] co[nm] CUDA)|"
                        r"without ATen_cuda library|module '?torch\._C'? has no attribute '?(_cuda_\w+|_CudaDeviceProperties\b)|"
                        # (torch.cuda.nvtx's own words in a build without CUDA: "NVTX functions not installed. Are you sure you
                        # have a CUDA build?", torch/cuda/nvtx.py)
                        r"NVTX functions not installed\. Are you sure you have a CUDA build")

NUMPY_MATCH = Remedy("Make numpy and the compiled packages agree: install the numpy they were built for (or reinstall them "
                     "for this numpy); in a notebook, restart the runtime after pip changes numpy", id="numpy-match")
TORCH_LIBRARY_BROKEN = "torch is installed but one of its shared libraries is missing or mismatched"
# torch's CUDA or ROCm library loaded by ctypes (an OSError): an extension's loader, not torch's own import (extension-abi)
TORCH_VARIANT_BY_CTYPES = r"\bOSError: libtorch_(cuda|hip)(_cpp|_cu)?\.so[.\d]*: cannot open shared object file"
# torch's core libraries, in every build, not found by the dynamic loader: torch's own _C finds them through its rpath,
# so a module that links them by name and was imported before `import torch` loaded them fails so (an extension's)
_CORE_NOT_FOUND = r"(c10|torch(_cpu|_python)?)\.so[.\d]*: cannot open shared object file"
TORCH_CORE_NOT_FOUND = r"\blib" + _CORE_NOT_FOUND

SIGNATURES = (
    # (not pip's own build of a package that imports torch in its setup.py, inside the isolated environment pip builds in,
    # which has no torch whatever the user's has: flash-attn, xformers, apex from source)
    # (or importlib.metadata's version look-up that a package makes before importing it)
    Signature("torch-missing", r"No module named '?torch\b'?(?!\.)|PackageNotFoundError: (No package metadata was found for )?torch\b'?(?![.-])",
              cause="torch is not installed in the interpreter that ran the script",
              unless=(_BUILD_ISOLATED,), remedies=(INSTALL_TORCH,)),
    # CMake's find_package(Torch) finding no TorchConfig.cmake: a C++ build (an extension, a libtorch program) made where
    # no torch is installed, or without torch's CMake folder on CMAKE_PREFIX_PATH
    Signature("torch-missing-in-build", r'By not providing "FindTorch\.cmake"|package configuration file provided by\s+"Torch"',
              cause="the C++ build found no torch: none is installed in the environment it builds in, or torch's CMake "
                    "folder is not on CMAKE_PREFIX_PATH",
              remedies=(Remedy("Install torch in the environment the build uses, then point CMake at it: "
                               "`-DCMAKE_PREFIX_PATH=$(python -c 'import torch; print(torch.utils.cmake_prefix_path)')`",
                               id="torch-cmake-prefix"),)),
    Signature("torch-missing-in-build", r"No module named '?torch\b'?(?!\.)", context=(_BUILD_ISOLATED,), context_required=True,
              cause="pip built the package in an isolated environment without torch (its setup.py imports torch to build its "
                    "extension); the interpreter's own torch is not seen there",
              remedies=(Remedy("Install torch first, then the package without build isolation: `pip install --no-build-isolation "
                               "<package>` (flash-attn's own instructions say so)", id="no-build-isolation"),)),
    Signature("torch-import-failed",
              # (not torch 1.8-1.13's split CUDA libraries, which only an extension built against them looks for under a
              # newer torch: extension-abi's, below and there)
              # (torch's own: libtorch.so, libtorch_cpu.so ...; not a library merely named after it, libtorch2trt_dynamic.so)
              # (nor torch's core libraries not found at all, which torch's own modules find through their rpath: a
              # module that links them by name, imported before torch; read below where torch's own import is in view)
              r"lib(?!" + _CORE_NOT_FOUND + r")(torch(?!_cuda_(cu|cpp)\.)(_\w+)?|c10(_\w+)?|shm|caffe2\w*|"
              r"cudnn\w*|cublas\w*|cudart|cupti|nvrtc\w*|cusparse\w*|"
              # (and the MPI NVIDIA's Jetson wheels link: "libmpi_cxx.so.20: cannot open shared object file" until
              # libopenmpi-dev is installed, their install guide's first step)
              r"cufft\w*|curand|cusolver\w*|nccl|nvJitLink|mpi_cxx)"
              r"\.so[.\d]*[^\n]*(cannot open shared object file|undefined symbol)|"
              r"torch[\\/]+_C[\w.-]*\.so[^\n]*(cannot open shared object file|undefined symbol)|"  # its own _C
              # any library of its own lib folder (old releases' libATen.so.1, libTH.so)
              r"torch[\\/]+lib[\\/]+lib\w+\.so[.\d]*: (cannot open shared object file|undefined symbol)|"
              # NCCL's own symbols are looked up by torch's libtorch_cuda: an NCCL of another CUDA or release loaded first
              # (cu11 and cu12 wheels mixed; github.com/pytorch/pytorch/issues/119932 "undefined symbol: ncclCommRegister")
              r"undefined symbol:? ?nccl[A-Z]\w+",
              # not where cuDNN's own loader names one of its sub-libraries ("Could not load library libcudnn_ops_infer.so.8.
              # Error: ...: cannot open shared object file"): cuDNN cannot start, whoever loaded it (torch or CTranslate2),
              # which is cublas's (that check probes cuDNN)
              # (nor onnxruntime's CUDA provider failing on the cuDNN it needs: "Failed to load library
              # libonnxruntime_providers_cuda.so with error: libcudnn.so.9: cannot open shared object file"; onnxruntime's
              # install, as its threads settle it)
              # (nor bitsandbytes' loader looking for the CUDA runtime its library was built for, under a torch of another
              # CUDA or a ROCm torch: "libcudart.so.12: cannot open shared object file" raised in bitsandbytes/cextension.py)
              unless=(CUDNN_OWN_LOADER, CUDNN_SUB_LIBRARY, ONNXRUNTIME_PROVIDER, PACKAGE_C_LOGGED, TENSORFLOW_LOADER, r"bitsandbytes[\\/]+cextension\.py",
                      TORCH_VARIANT_BY_CTYPES),
              cause=TORCH_LIBRARY_BROKEN,
              remedies=(REINSTALL_TORCH,)),
    # torch's core libraries missing under torch's own import: its lib folder lost them (a broken install)
    Signature("torch-import-failed", TORCH_CORE_NOT_FOUND, frames=(r"(^|/)torch/__init__\.py$",), frames_required=True,
              cause=TORCH_LIBRARY_BROKEN,
              remedies=(REINSTALL_TORCH,)),
    # macOS's loader refusing torch's own modules a library they link ("dlopen(.../torch/_C.cpython-39-darwin.so, 2): Library
    # not loaded: @rpath/libc10.dylib", or Homebrew's libomp under torch/lib/libtorch_cpu.dylib): a broken or mixed install
    Signature("torch-import-failed", r"dlopen\([^\n]*[\\/]torch[\\/][^\n]*\bLibrary not loaded\b|"
                                     r"Library not loaded: \S+\.dylib(?=[^\n]*\n\s*Referenced from: (<[\w-]+> )?\S*[\\/]torch[\\/])|"
                                     # (or told in words, the library named: "I can't import PyTorch, libomp.dylib can't be
                                     # loaded", torch 1.1.0's macOS wheel linking Homebrew's libomp,
                                     # github.com/pytorch/pytorch/issues/20030)
                                     r"(?i:\b(can'?t|cannot|unable to|fail(s|ed)? to) import (py)?torch\b[^\n]{0,60}"
                                     r"\blib[\w+-]+\.(dylib|dll|so)\b[^\n]{0,20}\b(can'?t|cannot|could not|not|fails? to)( be)? (load|found)\w*)",
              cause=TORCH_LIBRARY_BROKEN,
              remedies=(REINSTALL_TORCH,)),
    # torch 1.8-1.13's own split CUDA libraries missing under its own import (a broken install of such a torch)
    Signature("torch-import-failed", SPLIT_CUDA_LIBRARY, frames=(r"(^|/)torch/__init__\.py$",), frames_required=True,
              cause=TORCH_LIBRARY_BROKEN,
              remedies=(REINSTALL_TORCH,)),
    # The process killed by SIGILL with nothing but torch in view: torch's compiled code uses an instruction the CPU lacks
    # (a wheel built for AVX on a CPU without it, github.com/pytorch/pytorch/issues/43551; torch 2.0's aarch64 wheel on a
    # Graviton 1 or a Raspberry Pi's older ARM cores). numpy's OpenBLAS dies the same way on some ARM boards (numpy 1.19.5,
    # github.com/numpy/numpy/issues/18131), and any other package's import can: those in view rule it out
    # (zsh reports the signal in its own words, and the command it killed: "[1]  28461 illegal hardware instruction  python
    # -c 'import torch'"; read where that command names torch, since a bare `python` there was another package's wheel;
    # Python's faulthandler: "Fatal Python error: Illegal instruction")
    # (and glibc's German: "Ungültiger Maschinenbefehl (Speicherabzug geschrieben)")
    Signature("torch-import-failed", r"^\W*[Ii]llegal [Ii]nstruction\b|\n\W*[Ii]llegal [Ii]nstruction\b|^\W*非法指令|\n\W*非法指令|"
                                                  r"^\W*Ungültiger Maschinenbefehl\b|\n\W*Ungültiger Maschinenbefehl\b|"
                                                  r"<Signals\.SIGILL: 4>|\bSIGILL\b|\billegal hardware instruction\b[^\n]*\btorch\b|"
                                                  r"Fatal Python error: Illegal instruction\b|"
                                                  # (Windows' STATUS_ILLEGAL_INSTRUCTION as an IDE reports the exit code)
                                                  r"exit code -1073741795\b|\b0xC000001D\b",
              unless=(r"(?i)numpy|openblas|onnxruntime|tensorflow|^\s*(>>>\s*)?from (?!torch\b)\w+|"
                      r"^\s*(>>>\s*)?import (?!torch\b)\w+|-c ['\"]\s*(import|from) (?!torch\b)\w+",),
              cause="torch's compiled code uses an instruction this CPU does not have (AVX/AVX2 on an older x86 CPU, newer "
                    "ARM features on a Raspberry Pi or an early Graviton): a wheel built for a newer CPU",
              remedies=(Remedy("Install a torch release (or a community build) made for this CPU: an older release for x86 CPUs "
                               "without AVX, an aarch64 build for the board's ARM cores", id="torch-for-this-cpu"),)),
    # torch's own libraries need a newer C or C++ runtime than this system (or conda env) has: "version `GLIBC_2.14' not
    # found (required by .../torch/lib/libshm.so)" on CentOS 6 (github.com/pytorch/pytorch/issues/14274), GLIBCXX_3.4.x
    # for an old libstdc++ found first
    Signature("torch-import-failed", r"version .(GLIBC(XX)?|CXXABI|GOMP)_[\d.]+' not found \(required by \S*torch[\\/]+(lib[\\/]+)?\S+\)",
              cause="torch's binaries need a newer glibc (or libstdc++) than this system provides",
              remedies=(Remedy("Run on a newer OS (glibc 2.28+ for current wheels), in a container, or with a torch release built "
                               "for this glibc; for GLIBCXX, put a newer libstdc++ first (conda: `conda install -c conda-forge "
                               "libstdcxx-ng`)", id="newer-glibc"),)),
    # pip refusing a torch wheel for another platform or Python: a 64-bit wheel on a 32-bit Python, a cp37 wheel on 3.8
    # (github.com/pytorch/pytorch/issues/16633)
    Signature("torch-missing", r"\btorch(vision|audio)?-[\w.+-]+\.whl is not a supported wheel on this platform",
              cause="the torch wheel was built for another Python version, OS or bitness (torch publishes 64-bit builds only)",
              remedies=(SUPPORTED_PYTHON,)),
    # No torch release on the index fits this interpreter: pip's "No matching distribution found for torch==1.12.1+cu113"
    # (a CUDA build asked of a Mac, a Python newer than the release), uv's "torch ... has no wheels with a matching
    # platform tag (e.g., `macosx_26_0_x86_64`)" (an x86_64 Python under Rosetta: github.com/vllm-project/vllm-metal
    # issues/379) or "Distribution `torch==2.5.1 @ registry+https://pypi.org/simple` can't be installed because it doesn't
    # have a source distribution or wheel for the current platform" (a lock file's pin without a macOS arm64 wheel); not
    # where pip could not reach the index at all
    Signature("torch-missing", r"No matching distribution found for (?i:torch)(vision|audio|[-_]directml)?(?![\w-]|\.\w)|"
                               r"Could not find a version that satisfies the requirement (?i:torch)(vision|audio|[-_]directml)?(?![\w-]|\.\w)|"
                               # (uv naming torch itself, markers and version aside: "Because torch{platform_machine == ...}==2.11.0+cpu
                               # has no wheels ..."; not torch-xla, nor another package after "only torch<=2.5.1 is available and")
                               r"\btorch(vision|audio)?(?![\w.-])(\{[^}\n]{0,200}\})?(==[\w.+]+)? has no wheels with a matching "
                               r"(platform|Python ABI|Python implementation) tag|"
                               # (and uv's or pixi's resolver finding only older releases for this platform: "Because only
                               # torch<=2.2.2 is available and you require torch>=2.7", Intel Macs' last torch being 2.2.2)
                               r"Because only (?i:torch)(vision|audio)?(<=|==)[\w.+]+ is available and you require (?i:torch)(vision|audio)?\b|"
                               # (the same solvers where no release at all fits: "Because there is no version of
                               # torch==2.5.1+cu121 and you require torch==2.5.1+cu121, we can conclude that your requirements
                               # are unsatisfiable"; and Poetry's words: "Unable to find installation candidates for torch
                               # (2.3.1)", "Because app depends on torch (2.1.0+cu121) which doesn't match any versions")
                               r"there is no version of (?i:torch)(vision|audio)?(?![\w-])(==[\w.+*]+)? and you require|"
                               r"Unable to find installation candidates for (?i:torch)(vision|audio)?(?![\w-])|"
                               r"depends on (?i:torch)(vision|audio)? \([^)\n]*\) which doesn't match any versions|"
                               # (conda's and pixi's solvers: libmamba's "pytorch ==1.13.1 * is not installable because it
                               # requires python >=3.10,<3.11.0a0", resolvo's "No candidates were found for pytorch-cuda 12.1.*"
                               # on osx-arm64)
                               r"\bpytorch(-cuda)? ?==?[\w.*]+ ?\*? is not installable because it requires|"
                               r"No candidates were found for (py)?torch(-cuda|vision|audio)?\b|"
                               r"Distribution `torch(vision|audio)?(?![\w.-])[^`\n]{0,200}` can't be installed because it doesn't have a "
                               r"(source distribution or )?wheel for the current platform|"
                               # (and as people retell it: "Torch 2.5.1 not available (MacOS)", an Intel Mac's last wheel being
                               # 2.2.2)
                               r"\b(?i:torch)(vision|audio)? ?(==)?v?\d+\.\d+(\.\d+)?(\+\w+)? (is )?not available\b|"
                               # (pip fell back to PyPI's torch 0.1.2 source package, whose setup.py imports torch's old build
                               # tools: "ModuleNotFoundError: No module named 'tools.nnwrap'")
                               r"No module named '?tools\.nnwrap\b",
              unless=(r"Could not fetch URL|ProxyError|SSLError|ConnectionError|Temporary failure in name resolution|"
                      r"Name or service not known|No connection could be made",),
              cause="no torch release on the index has a wheel for this interpreter: its Python version, CPU (an x86_64 Python "
                    "under Rosetta on Apple silicon, 32-bit Windows) or OS (a +cuXXX build asked of a Mac) has none",
              remedies=(SUPPORTED_PYTHON,)),
    # An x86_64 Python under Rosetta on Apple silicon, shown by what it runs (`platform.machine()` printing x86_64, pip
    # fetching macosx_*_x86_64 wheels) beside the Mac's arm64: pip installs Intel builds (torch stops at 2.2.2 there, without
    # MPS) (github.com/instructlab/instructlab's macOS notes: the universal2 python3 run from a Rosetta shell)
    Signature("torch-missing", r"\bmacosx_\d+_\d+_x86_64\b|platform\.machine\(\)\)?'?\s*\n\s*x86_64\b",
              context=(r"\barm64e?\b|Apple (silicon|M\d)|\bM[1-4] (Pro|Max|Ultra|chip|Mac)|\bRosetta\b",), context_required=True,
              cause="the Python is an x86_64 build running under Rosetta on Apple silicon: pip installs Intel builds of torch "
                    "(the last is 2.2.2, without MPS) and the packages beside it",
              remedies=(Remedy("Use a native arm64 Python (`arch -arm64` shell, a python.org universal2 or conda-forge osx-arm64 "
                               "build; `python -c 'import platform; print(platform.machine())'` must print arm64), then "
                               "reinstall torch in it", id="arm64-python"),)),
    # conda's solver with no build of torch for this platform as asked: torch's packages among those it lists missing
    # ("PackagesNotFoundError: The following packages are not available from current channels: - pytorch" on win-32, an
    # environment.yaml's linux-64 build strings solved on win-64), or pytorch-cuda asked of a Mac, where it is not published
    # (anaconda.org/pytorch/pytorch-cuda: linux-64 and win-64 only): "m1芯片用conda安装pytorch-cuda=11.8 ... Could not solve
    # for environment specs"
    Signature("torch-missing", r"PackagesNotFoundError: The following packages are not available from current channels|"
                               r"Could not solve for environment specs|The environment can't be solved",
              context=(r"^\s*-\s*(pytorch|pytorch-cuda|torchvision|torchaudio)(={1,2}[\w.*]+)*\s*$",
                       r"%s.*(%s|%s)|(%s|%s).*%s" % (_PYTORCH_CUDA, _MAC, _APPLE_CHIP, _MAC, _APPLE_CHIP, _PYTORCH_CUDA)),
              context_required=True,
              cause="conda has no build of torch for this platform as asked (pytorch-cuda exists for 64-bit Linux and "
                    "Windows only; 32-bit Windows has no torch; an environment file's build strings name another OS's builds)",
              remedies=(Remedy("Ask conda for what this platform has: on a Mac the plain pytorch package (it runs on mps), "
                               "elsewhere a 64-bit Python and no other OS's build strings (`conda env export --no-builds`); or "
                               "install torch with pip", id="conda-platform-build"),)),
    # torch's own libraries built for the other CPU of a Mac (an x86_64 torch under an arm64 Python, or the reverse)
    Signature("torch-import-failed", MACHO_WRONG_CPU, context=(r"[\\/]torch[\\/]",), context_required=True,
              cause="this torch was installed for the other CPU architecture of the Mac (x86_64 under Rosetta vs arm64): the "
                    "Python and torch must both be native arm64 (or both x86_64)",
              remedies=(REINSTALL_TORCH,)),
    # Any shared library torch's own import cannot find (a ROCm wheel's libMIOpen.so.1, libamdhip64, a CUDA library
    # torch's wheel expects beside it), with torch/__init__.py's frame in view
    Signature("torch-import-failed", r"lib[\w.+-]+\.so[.\d]*: cannot open shared object file", frames=(r"(^|/)torch/__init__\.py$",),
              frames_required=True,
              cause="torch is installed but a shared library its own import needs is not found (a package of its runtime "
                    "libraries missing, or LD_LIBRARY_PATH not pointing at them)",
              remedies=(REINSTALL_TORCH,)),
    # conda's MKL 2024.1 dropped the ITT symbol conda's libtorch_cpu links (github.com/pytorch/pytorch/issues/123097)
    Signature("torch-import-failed", r"undefined symbol:? ?iJIT_NotifyEvent",
              cause="conda installed MKL 2024.1 or newer beside a torch linked against an older MKL (its ITT symbol is gone)",
              remedies=(Remedy("Pin MKL to 2024.0 in that conda environment (`conda install mkl==2024.0`), or install torch with pip "
                               "(its wheel brings its own MKL)", id="mkl-2024-0"), REINSTALL_TORCH)),
    # libcublas loaded from one install and libcublasLt from another: "libcublas.so.11: symbol free_gemm_select version
    # libcublasLt.so.11 not defined in file libcublasLt.so.11 with link time reference" (pip's nvidia-cublas beside the
    # copies in torch/lib, or another toolkit's lib64 on LD_LIBRARY_PATH; github.com/hpcaitech/ColossalAI/issues/2901)
    Signature("torch-import-failed", r"symbol \w+,? version libcublasLt\.so[.\d]* not defined\b",
              cause="two copies of cuBLAS are mixed: libcublas is loaded from one install and libcublasLt from another",
              remedies=(Remedy("Leave one cuBLAS: remove the second copy (a pip nvidia-cublas package beside torch's own "
                               "lib/libcublas*, or another CUDA toolkit's lib64 on LD_LIBRARY_PATH), then reinstall torch's CUDA "
                               "wheel if its files went with it", id="one-cublas"), REINSTALL_TORCH)),
    Signature("numpy-missing", r"Failed to initialize NumPy: No module named 'numpy'|Numpy is not available",
              cause="numpy is not installed beside torch",
              remedies=(Remedy("Install numpy into the same interpreter as torch", id="numpy-install"),)),
    # numpy prints its warning over several lines ("... cannot be run in" / "NumPy 2.0.0 as it may crash"): its first line
    # is enough, and the errors that follow it (_ARRAY_API, multiarray) say the same (github.com/TorchIO-project/torchio/pull/1183)
    Signature("numpy-abi", r"A module that was compiled using NumPy 1\.x cannot be run in|_ARRAY_API not found|"
                           r"numpy\.core\.multiarray failed to import",
              cause="torch (or a module beside it) was built against numpy 1.x and numpy 2 is installed",
              remedies=(NUMPY_BELOW_2,)),
    # A compiled module and the numpy beside it disagree on numpy's struct sizes (a module built for numpy 2 on numpy 1, as a
    # notebook's pip leaves Colab: "Expected 96 from C header, got 88 from PyObject"). Raised, not warned: as a
    # RuntimeWarning it is Cython's size check on an older numpy, harmless, which numpy's own __init__ filters out
    # (`warnings.filterwarnings("ignore", message="numpy.dtype size changed")`)
    # (also shortened as people quote it: "numpy.dtype size changed... binary incompatibility")
    Signature("numpy-abi", r"(?<!Warning: )numpy\.dtype size changed(, may indicate|\s*(\.{3}|…))\s*binary incompatibility",
              cause="a compiled module was built against another numpy than the one installed (numpy 1 and 2 mixed)",
              remedies=(NUMPY_MATCH,)),
    # numpy's C API versions disagreeing (a module built against a newer numpy than the one installed: "module compiled
    # against API version 0xf but this version of numpy is 0xe", raised, or warned by torch as "Failed to initialize
    # NumPy: ..."; github.com/MouseLand/cellpose)
    # (and torch's own warning said alone, as an app's title or log keeps it: "ComfyUI Failed to initialize NumPy"; not
    # numpy missing altogether, "Failed to initialize NumPy: No module named 'numpy'", numpy-missing's)
    Signature("numpy-abi", r"module compiled against A[PB]I version 0x[0-9a-f]+ but this version of numpy is 0x[0-9a-f]+|"
                           r"Failed to initialize NumPy\b(?!: No module named)",
              cause="torch (or a module beside it) was built against a newer numpy C API than the numpy installed",
              remedies=(NUMPY_MATCH,)),
    # Code written for numpy 1 meeting numpy 2, which removed names from its namespace (NumPy 2.0 migration guide: np.float_,
    # np.NaN, np.Inf, np.product, np.BUFSIZE ...): numpy itself says "`np.X` was removed in the NumPy 2.0 release"
    Signature("numpy-abi", r"was removed in the NumPy 2\.0 release|cannot import name '\w+' from 'numpy' \(",
              cause="code written for numpy 1 runs on numpy 2, which removed names from its namespace",
              remedies=(NUMPY_BELOW_2,)),
    # Windows: torch's own DLLs (torch\lib\c10.dll, fbgemm.dll, shm.dll, cudnn_*.dll) fail to load (WinError 126 and 127 a
    # DLL or a name in it not found, 193 "%1 is not a valid Win32 application": a DLL of the other bitness or cut short). Python writes
    # `Error loading "<path>" or one of its dependencies` in English whatever the language of the OS text before it
    # ("[WinError 126] 找不到指定的模块。", "Le module spécifié est introuvable."); a notebook's error JSON doubles the
    # backslashes. The usual cause is a missing Visual C++ runtime (libomp140/vcruntime) or a broken install
    # (github.com/huggingface/diffusers/issues/5247, github.com/chn-lee-yumi/MaterialSearch/issues/105).
    Signature("torch-dll-failed", r'Error loading \\?"?[^"\n]*torch[\\/]+lib[\\/]+[\w.-]+\.dll',
              cause="a DLL of torch itself (torch\\lib) cannot load: the Microsoft Visual C++ runtime it needs is missing, or "
                    "the install is broken or mixed (CPU and CUDA builds, two Pythons)",
              remedies=(VC_RUNTIME, REINSTALL_TORCH), unless=(PAGING_FILE,)),
    # the same with the path cut ('Error loading "...fbgemm.dll"'): a DLL only torch\lib ships, named alone
    # (and Python 3.8+'s own words for it: "Could not find module '...\\c10.dll' (or one of its dependencies)", or a title
    # that kept only "[WinError 126] fbgemm.dll")
    Signature("torch-dll-failed", r'(?i:error loading|could not find module|\[WinError (12[67]|193)\]) \\?["\']?[^"\'\n]*\b%s\.dll|'
                                  # (or the DLL named first, Windows' words after it: "fbgemm.dll - The specified module could
                                  # not be found")
                                  r'\b%s\.dll\W{1,5}(?i:the specified (module|procedure) could not be found)|' % (_TORCH_DLLS, _TORCH_DLLS) +
                                  # (or a title that names the DLL before the error: "caffe2_detectron_ops_gpu.dll makes import
                                  # torch occur OSerror，[WinError 193] %1 is not a valid Win32 application")
                                  r'\b%s\.dll\b[^\n]{0,80}?\[WinError (12[67]|193)\]|' % _TORCH_DLLS +
                                  # (or Python's own words after it, where a paste wrapped the path mid-word: "...\\to
                                  # <newline> rch\\lib\\c10_cuda.dll" or one of its dependencies")
                                  r'(^|[\\/])%s\.dll"? or one of its dependencies' % _TORCH_DLLS,
              cause="a DLL of torch itself (torch\\lib) cannot load: the Microsoft Visual C++ runtime it needs is missing, or "
                    "the install is broken or mixed (CPU and CUDA builds, two Pythons)",
              remedies=(VC_RUNTIME, REINSTALL_TORCH), unless=(PAGING_FILE,)),
    Signature("torch-dll-failed", r"\[WinError (12[67]|193)\]|DLL load failed",
              frames=(r"(^|/)torch/(__init__|_C)\.py",), frames_required=True,
              cause="torch's compiled core cannot load on Windows: a missing Visual C++ runtime, or a broken install",
              remedies=(VC_RUNTIME, REINSTALL_TORCH)),
    # the import torch's own __init__ makes, shown as the traceback's code line where its frame path got mangled (markdown
    # ate `__init__`'s underscores: "torch_init_.py"), or quoted inside a sentence ("I also met this same problem.(from
    # torch._C import * (ImportError: DLL load failed: ...)", a comment on gist.github.com/peterjc123)
    Signature("torch-dll-failed", r"DLL load failed(:| while importing _C\b)", context=(r"(?<![\w.])from torch\._C import \*",),
              context_required=True,
              cause="torch's compiled core cannot load on Windows: a missing Visual C++ runtime, or a broken install",
              remedies=(VC_RUNTIME, REINSTALL_TORCH)),
    Signature("torch-dll-failed", r"\[WinError (12[67]|193)\]", context=(r"torch[\\/]+lib[\\/]+[\w.-]+\.dll",), context_required=True,
              cause="a DLL of torch itself (torch\\lib) cannot load: the Microsoft Visual C++ runtime it needs is missing, or "
                    "the install is broken", remedies=(VC_RUNTIME, REINSTALL_TORCH)),
    # "Torch not compiled with CUDA enabled" has two readings, both this check's (DESIGN: a CPU-only wheel on a GPU
    # machine is a torch-install failure): a CPU wheel beside an NVIDIA GPU, which leads unless the log shows a machine
    # without CUDA, and no CUDA on this machine at all (a Mac; a laptop without an NVIDIA GPU) with code that asks for
    # cuda. cuda-compat's probe, which sees the GPUs and the driver, decides between them (confirmed_by).
    # (and retyped: _NOT_BUILT_WITH_CUDA; github.com/devilismyfriend/ozen-toolkit/issues/3)
    Signature("cpu-only-torch", _NOT_BUILT_WITH_CUDA, frames=(r"torch/cuda/__init__\.py",),
              cause="a CPU-only torch wheel was asked to use CUDA",
              confirmed_by=("cuda-compat:cpu-only-torch",),
              remedies=(TORCH_CUDA_WHEEL,)),
    Signature("no-cuda-here", r"not compiled with CUDA|" + _NOT_BUILT_WITH_CUDA, frames=(r"torch/cuda/__init__\.py",),
              context=(_MAC + r"|\bon (the )?CPU\b|\bno (NVIDIA |CUDA )?GPU\b|without (a |an )?(NVIDIA )?GPU|do(n't| not) have (a |an )?(NVIDIA )?GPU",),
              cause="this machine has no CUDA (a Mac, or no NVIDIA GPU) and the code or config asks for cuda",
              confirmed_by=("cuda-compat:no-cuda-device",),
              remedies=(Remedy("Run on the device this machine has: `mps` on Apple silicon, else `cpu` (the script's or config's "
                               "device setting; `.cuda()` calls become `.to(device)`)", id="device-here"),)),
    # stable-diffusion-webui's own start-up test (modules/launch_utils.py prepare_environment: "Torch is not able to use
    # GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS"): torch.cuda.is_available() was False. The same two readings:
    # a CPU-only torch (a package or fork that installs one), or no NVIDIA GPU (AMD, Intel, a Mac)
    Signature("cpu-only-torch", WEBUI_CUDA_TEST,
              unless=(_NOT_NVIDIA, BUILD_DOES_NOT_FIT),
              cause="torch cannot use the GPU: a CPU-only torch build is installed (some packages and forks install one)",
              confirmed_by=("cuda-compat:cpu-only-torch",),
              remedies=(TORCH_CUDA_WHEEL,)),
    Signature("no-cuda-here", WEBUI_CUDA_TEST,
              context=(_NOT_NVIDIA,), context_required=True,
              cause="this machine has no NVIDIA GPU that CUDA can use (AMD, Intel or Apple): the CUDA start-up test cannot pass",
              confirmed_by=("cuda-compat:no-cuda-device",),
              remedies=(NOT_NVIDIA_DEVICE,)),
    # The same test told in words (`torch.cuda.is_available()` returns False): both readings, and cuda-compat's third
    Signature("cpu-only-torch", CUDA_UNAVAILABLE, unless=(_NOT_NVIDIA, BUILD_DOES_NOT_FIT) + CHECKPOINT_SAVED_ON_CUDA,
              cause=CPU_BUILD_INSTALLED,
              confirmed_by=("cuda-compat:cpu-only-torch",),
              remedies=(TORCH_CUDA_WHEEL,)),
    # (and the answer printed on one line beside a CPU build's version: `print(torch.__version__, torch.version.cuda,
    # torch.cuda.is_available())` -> "2.4.1+cpu None False")
    # (only where the paste stops there: a CPU-only CI box prints it on the way to an unrelated failure)
    Signature("cpu-only-torch", r"\b\d+\.\d+(\.\d+)?\+cpu\b[^\n]{0,40}\bFalse\b", unless=(_NOT_NVIDIA,), last_only=True,
              cause=CPU_BUILD_INSTALLED,
              confirmed_by=("cuda-compat:cpu-only-torch",),
              remedies=(TORCH_CUDA_WHEEL,)),
    # (and said in words, by a program's own check or by the user: "You may be using the CPU version of PyTorch, please
    # reinstall PyTorch with CUDA" (RWKV-Runner), "I have the CPU-only build of torch")
    Signature("cpu-only-torch", r"(?i:\bCPU[- ](only )?(version|build|wheel) of (py)?torch\b)", unless=(_NOT_NVIDIA,),
              cause=CPU_BUILD_INSTALLED,
              confirmed_by=("cuda-compat:cpu-only-torch",),
              remedies=(TORCH_CUDA_WHEEL,)),
    # (and torch's own warnings that it turned CUDA off, where the run stopped on them)
    Signature("cpu-only-torch", TORCH_DISABLES_CUDA, unless=(_NOT_NVIDIA, BUILD_DOES_NOT_FIT), last_only=True,
              cause="torch cannot use the GPU, so it turned CUDA off and ran on the CPU: a CPU-only torch build is installed "
                    "(pip's default on Windows, a package that pulled one in)",
              confirmed_by=("cuda-compat:cpu-only-torch",),
              remedies=(TORCH_CUDA_WHEEL,)),
    # (no context needed: where the probe finds no CUDA GPU, as on the machine that failed, this reading leads)
    Signature("no-cuda-here", CUDA_UNAVAILABLE, context=(_NOT_NVIDIA,), unless=(BUILD_DOES_NOT_FIT,) + CHECKPOINT_SAVED_ON_CUDA,
              cause="this machine has no NVIDIA GPU that CUDA can use (none at all, or an AMD, Intel or Apple one)",
              confirmed_by=("cuda-compat:no-cuda-device",),
              remedies=(NOT_NVIDIA_DEVICE,)),
    # Intel GPUs: torch's XPU build asked of a CPU-only one (torch/xpu/__init__.py _lazy_init: "Torch not compiled with XPU
    # enabled"); PyPI's default wheel has no XPU, download.pytorch.org/whl/xpu has
    # (and the device parser's words for the same build: "PyTorch is not linked with support for xpu devices")
    Signature("cpu-only-torch", r"(?i)Torch not compiled with XPU enabled|PyTorch is not linked with support for xpu devices|%s"
              % unavailable("xpu"),
              cause="a torch without Intel GPU (XPU) support was asked to use the XPU (or says it has none)",
              remedies=(Remedy("Install torch's XPU build (`pip install torch --index-url https://download.pytorch.org/whl/xpu`) "
                               "into the interpreter that runs the script, or run on the CPU", id="torch-xpu-wheel"),)),
    # torch that cannot use the Mac's GPU, in its own words ("The MPS backend is supported on MacOS 12.3+", raised at the
    # first MPS tensor; "MPS not available because the current MacOS version is not 12.3+ and/or you do not have an
    # MPS-enabled device", "... the current PyTorch install was not built with MPS enabled"): a macOS older than this
    # torch's MPS needs (torch 2.5's wheels ask macOS 13, which the message does not say: github.com/pytorch/pytorch/issues/
    # 139425), an x86_64 Python under Rosetta, or a build without MPS
    Signature("device-missing", r"The MPS backend is supported on MacOS \d+(\.\d+)?\+|MPS not available because the current "
                                r"(MacOS version is not|PyTorch install was not built with MPS)",
              cause="this torch cannot use the Mac's GPU (MPS): a macOS older than this torch's MPS needs (torch 2.5+ wants "
                    "macOS 13), an x86_64 Python under Rosetta, or a torch built without MPS",
              remedies=(Remedy("Update macOS (torch 2.5+ needs macOS 13 for MPS), or keep a torch whose MPS runs on this "
                               "macOS; under Rosetta, use an arm64 Python and its torch", id="mps-for-this-macos"),
                        Remedy("Or run on the CPU: the script's or config's device set to cpu", id="device-cpu-here"))),
    # torch's device-string parser not knowing the device type asked for (`torch.device("mps")` before torch 1.12: "Expected
    # one of cpu, cuda, xpu, ... device type at start of device string: mps"): the installed torch predates that device.
    # Not "npu", which no torch release parses: Ascend's torch_npu registers it when imported (privateuseone renamed), so a
    # torch that lists privateuseone and not npu ran without torch_npu, whatever its age (FlagEmbedding's PR #473: a
    # check for torch_npu that was always true)
    Signature("torch-too-old-for-device", r"Expected one of [\w, ]+ device type at start of device string: (mps|xpu|hpu|mtia|privateuseone)\b",
              cause="the installed torch predates the device type the code asks for (MPS arrived in torch 1.12, XPU in 2.4)",
              remedies=(Remedy("Upgrade torch to a release that has the device (`pip install -U torch`; for XPU, the "
                               "download.pytorch.org/whl/xpu index), in the interpreter that runs the script", id="torch-upgrade"),)),
    # torch's own preload of the CUDA libraries its wheel depends on (torch/__init__.py _preload_cuda_deps: "ValueError:
    # libcublas.so.*[0-9] not found in the system path [...]"): the nvidia-* packages of the wheel are missing or partial
    Signature("torch-import-failed", r"lib(cublas|cudnn|nvrtc|cusparse|cufft|curand|cusolver|nccl|nvJitLink|cudart|cupti)\w*\.so"
                                     r"\.\*\[0-9\] not found in the system path",
              cause="torch's CUDA wheel is installed without the nvidia-* packages it loads at import (a partial install, or "
                    "those packages removed by another install)", remedies=(REINSTALL_TORCH,)),
    # glibc's static TLS exhausted while torch's libraries load ("ImportError: dlopen: cannot load any more object with
    # static TLS", raised at torch/__init__.py's `from torch._C import *`): an old glibc, with libraries that use
    # initial-exec TLS (OpenMP's, dlib's, OpenCV's) loaded before torch (github.com/pytorch/pytorch/issues/2575)
    Signature("torch-import-failed", r"cannot load any more object with static TLS",
              cause="glibc ran out of static TLS while loading torch's libraries: an old glibc, with other native libraries "
                    "(OpenMP, dlib, OpenCV) loaded before torch",
              remedies=(Remedy("Import torch before the other native libraries (`import torch` first in the script), or run "
                               "on a newer glibc (a newer OS or container image)", id="torch-first-static-tls"),)),
    # (not torch._six: torch 2.0 removed it, so code importing it is older than the torch, apex's or another library's)
    Signature("torch-import-failed", r"No module named '?torch\.(_C|_utils|version)'?",
              # torch imported from a checkout of its source (a folder pytorch/ holding torch/, outside site-packages): the
              # import found the sources, not the installed build; the program's working directory, not the install
              unless=(r"(?m)^(?![^\n]*(site|dist)-packages)[^\n]*pytorch[\\/]torch[\\/]__init__\.py",),
              cause="torch is installed only in part (an interrupted install, two installs mixed), or the script runs from "
                    "inside a torch source checkout", remedies=(REINSTALL_TORCH,)),
)

CHECK = Check(
    id=ID,
    title="torch installation",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    requires_torch=False,
    order=0,
    signatures=SIGNATURES,
)
