"""quantized-base: the 4-bit and 8-bit bitsandbytes base weights a training config asks for
(axolotl `load_in_4bit` / `load_in_8bit`, autotrain `quantization: int4|int8`, OneTrainer
`NFLOAT_4` / `INT_8`), loaded and run for real where the run computes.

bitsandbytes quantizes in its own kernels: QLoRA's `Linear4bit` (nf4) and LLM.int8's
`Linear8bitLt` (bitsandbytes docs, "Quantization"). Older releases ran them on CUDA only;
newer ones also on the CPU. Which holds here is measured, not looked up: the probe builds
one tiny layer of each asked kind on the run's device, quantizes it, and runs a forward
and a backward pass through it, as a QLoRA step does.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Dict, List, Optional, Sequence

from envdoctor.target.intent import config_evidence, config_subject
from envdoctor.target.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, Target
from envdoctor.target.platform.menus import gpu_runtime_step
from envdoctor.target.probekit.ops import run_op
from envdoctor.target.probekit.steps import step
from envdoctor.target.probekit.text import error_text
from envdoctor.target.remedies.actions import config_remedy, env_remedy, pip_remedy

ID = "quantized-base"
# envdoctor's weight words for bitsandbytes bases -> the layer that stores them
LAYERS = {"nf4": "Linear4bit", "int4": "Linear4bit", "int8": "Linear8bitLt"}


def asked_dtypes(intent: Optional[Dict[str, Any]]) -> List[str]:
    """The bitsandbytes weight dtypes the intent's summary asks for, in LAYERS' order."""
    weights = set(((intent or {}).get("weights") or {}).values())
    return [d for d in LAYERS if d in weights]


def _run_device(torch: Any, intent: Dict[str, Any]) -> str:
    """Where the run computes: the config's device, else the first GPU, else the CPU."""
    device = str(intent.get("device") or "auto")
    if device.startswith("cuda") or device == "cpu":
        return device
    return "cuda:0" if torch.cuda.is_available() else "cpu"


def _layer(torch: Any, bnb: Any, dtype: str, device: str) -> Any:
    """One 64x64 layer quantized on `device` from a plain Linear's weights, then a forward and
    a backward pass with fp32 activations that need a gradient (what LoRA's input gets)."""
    torch.manual_seed(0)
    plain = torch.nn.Linear(64, 64)
    if dtype == "int8":
        layer = bnb.nn.Linear8bitLt(64, 64, has_fp16_weights=False)
    else:
        layer = bnb.nn.Linear4bit(64, 64, quant_type="nf4" if dtype == "nf4" else "fp4", compute_dtype=torch.float32)
    layer.load_state_dict(plain.state_dict())
    layer = layer.to(device)
    x = torch.randn(4, 64, device=device, requires_grad=True)
    out = layer(x)
    out.float().sum().backward()
    return out


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    intent = ctx.options.get("intent") or {}
    asked = asked_dtypes(intent)
    facts: Dict[str, Any] = {"asked": asked, "bitsandbytes": None, "runs": []}
    if not asked:
        return facts  # nothing asked: bitsandbytes is not even imported
    try:
        with step("importing bitsandbytes", package="bitsandbytes"):
            bnb = importlib.import_module("bitsandbytes")  # only when a config asks for it
    except ImportError as exc:
        facts["import_error"] = error_text(exc)
        return facts
    except Exception as exc:  # noqa: BLE001 - a broken install is the fact
        facts["import_error"] = error_text(exc)
        facts["bitsandbytes"] = "?"
        return facts
    facts["bitsandbytes"] = str(getattr(bnb, "__version__", "?"))
    device = _run_device(torch, intent)
    for dtype in asked:
        facts["runs"].append(run_op(torch, LAYERS[dtype], device, dtype, functools.partial(_layer, torch, bnb, dtype, device)))
    return facts


# ---------------------------------------------------------------- rules


def _config_way_out(env: Target, dtype: str) -> Remedy:
    fallback = env.half
    onetrainer = {"bf16": "BFLOAT_16", "fp16": "FLOAT_16"}[fallback]
    return config_remedy("Load the base weights in %s instead of %s (more memory, no bitsandbytes): axolotl `load_in_4bit: false`, "
                         "autotrain `quantization: null`, OneTrainer `weight_dtype: %s`" % (fallback, dtype, onetrainer),
                         "weights-" + fallback, {"weight_dtype": fallback}, when={"weight_dtype": dtype})


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    asked: Sequence[str] = facts.get("asked") or ()
    if not asked or env.intent is None:
        return []
    findings: List[Finding] = []
    for dtype in asked:
        settings = env.intent.asks("weight_dtype", dtype)
        if not settings:
            continue
        where = settings[0].where()
        evidence = config_evidence(env.intent, settings)
        subject = dict(config_subject(settings), dtype=dtype)
        if facts.get("bitsandbytes") is None or facts.get("import_error"):
            why = facts.get("import_error") or "not installed"
            findings.append(Finding(
                ID, "bitsandbytes-missing", Severity.ERROR,
                "%s asks for %s base weights; bitsandbytes does not import here (%s)" % (where, dtype, why),
                evidence + ("%s weights are bitsandbytes %s layers" % (dtype, LAYERS[dtype]),),
                (_config_way_out(env, dtype),
                 pip_remedy("Or install bitsandbytes (its wheels carry the CUDA and CPU kernels)", "bitsandbytes-install", env,
                            install=["bitsandbytes"])),
                subject))
            continue
        run = next((r for r in facts.get("runs") or () if r.get("dtype") == dtype), None)
        if run is None:
            continue
        if run.get("ok"):
            findings.append(Finding(ID, "quantized-runs", Severity.INFO,
                                    "bitsandbytes %s runs %s (%s) forward and backward on %s"
                                    % (facts["bitsandbytes"], dtype, LAYERS[dtype], run.get("device")), evidence, (), subject))
            continue
        remedies = [_config_way_out(env, dtype)]
        if not str(run.get("device")).startswith("cuda"):
            remedies.append(Remedy("Or train on a CUDA GPU (%s), where bitsandbytes quantizes" % gpu_runtime_step(env.where),
                                   kind="manual", id="use-gpu"))
        remedies.append(pip_remedy("Or upgrade bitsandbytes: newer releases run more of it on the CPU", "bitsandbytes-upgrade", env,
                                   upgrade=["bitsandbytes"]))
        findings.append(Finding(
            ID, "quantized-fails", Severity.ERROR,
            "%s asks for %s base weights; bitsandbytes %s fails to run them on %s" % (where, dtype, facts["bitsandbytes"], run.get("device")),
            evidence + ("%s %s on %s: %s" % (LAYERS[dtype], dtype, run.get("device"), run.get("error")),),
            tuple(remedies), subject))
    return findings


def summarize(facts: Dict[str, Any]) -> str:
    if not facts.get("asked"):
        return "no bitsandbytes base asked"
    if facts.get("bitsandbytes") is None or facts.get("import_error"):
        return "bitsandbytes does not import"
    runs = facts.get("runs") or []
    return "bitsandbytes %s · %s" % (facts["bitsandbytes"], ", ".join(
        "%s %s on %s" % (r.get("dtype"), "ok" if r.get("ok") else "fails", r.get("device")) for r in runs))


# How a bitsandbytes that cannot quantize here reads in a log. bitsandbytes' own loader warns "The installed version of
# bitsandbytes was compiled without GPU support" (bitsandbytes/cextension.py, 0.37-0.42) or fails its CUDA setup ("CUDA
# Setup failed despite GPU being available"); its CPU library then lacks the GPU functions ("libbitsandbytes_cpu.so:
# undefined symbol: cadam32bit_grad_fp32"; github.com/deepseek-ai/DeepSeek-Coder/issues/97,
# github.com/bitsandbytes-foundation/bitsandbytes/issues/176). transformers says bitsandbytes is unusable as "Using
# `bitsandbytes` 8-bit quantization requires Accelerate ... and the latest version of bitsandbytes", which it also says
# when no CUDA GPU is there.
BITSANDBYTES_UPGRADE = Remedy("Install a bitsandbytes built for this machine (`pip install -U bitsandbytes`: 0.43+ ships CUDA, "
                              "CPU and Windows builds in one wheel, and int8 matmul for every GPU since Pascal), into the "
                              "interpreter that runs the script", id="bitsandbytes-upgrade")
UNSET_BNB_CUDA_VERSION = env_remedy("Unset BNB_CUDA_VERSION: bitsandbytes then loads its library for torch's own CUDA",
                                    "unset-bnb-cuda-version", unset_env=["BNB_CUDA_VERSION"])
EXPLAIN_REMEDIES = (
    Remedy("Load the base in bf16/fp16 instead of 4/8-bit where there is no CUDA GPU (axolotl `load_in_4bit: false`, "
           "transformers without `BitsAndBytesConfig`)", id="no-quantization"),
    BITSANDBYTES_UPGRADE,
)
NO_GPU_LIBRARY = "the installed bitsandbytes has no usable GPU library (a CPU-only build, a CUDA it cannot find, or no GPU)"
# Where CUDA itself failed to start, torch's warning says so first: its echo, cuda-compat's reading; where
# BNB_CUDA_VERSION chose the library, its own reading below says more
CUDA_OR_OVERRIDE_FIRST = (r"CUDA initialization: (Unexpected error from cudaGetDeviceCount|The NVIDIA driver on your system is too old)",
                          r"BNB_CUDA_VERSION=\d+ environment variable detected")

# bitsandbytes' functions on `lib`, None where its native library did not load ("'NoneType' object has no attribute
# 'cquantize_blockwise_fp16_nf4'", bitsandbytes/functional.py); dora-fp8's structural readings yield to it
BNB_WITHOUT_LIBRARY = r"'NoneType' object has no attribute 'c[a-z]\w+'"

SIGNATURES = (
    # (bitsandbytes before 0.43: `lib` is None without a GPU library, so its optimizers fail on
    # `'NoneType' object has no attribute 'cadam32bit_grad_fp32'`; its CUDA setup warns that libcudart is nowhere)
    # (and 0.43+'s words: "CUDA Setup failed despite CUDA being available", ROCm's alike, "Attempted to use bitsandbytes
    # native library functionality but it's not available", "Configured CUDA binary not found at .../libbitsandbytes_cuda129.so",
    # transformers' "CUDA is required but not available for bitsandbytes", the macOS CPU library)
    Signature("quantized-fails", r"(CUDA|ROCm) Setup failed despite (GPU|CUDA|ROCm) being "
                                 r"available|CUDA SETUP: (Setup Failed!|Something unexpected happened)|"
                                 r"libbitsandbytes_cpu\.(so|dll|dylib)|(undefined symbol: |'NoneType' object has no attribute ')c\w+32bit_grad_fp32|"
                                 r"Attempted to use bitsandbytes native library functionality|"
                                 r"Configured (CUDA|ROCm) binary not found at \S*libbitsandbytes|"
                                 r"CUDA is required but not available for bitsandbytes|"
                                 # (and its optimizers' tables, which bitsandbytes/functional.py defines only where its GPU
                                 # library loaded: "NameError: name 'str2optimizer8bit_blockwise' is not defined")
                                 r"name '?str2optimizer(32bit|8bit|8bit_blockwise)'? is not defined",
              unless=CUDA_OR_OVERRIDE_FIRST,
              cause=NO_GPU_LIBRARY,
              remedies=EXPLAIN_REMEDIES),
    # ... and where it went on without its native library: its functions on `lib`, None (any of them: "'NoneType' object
    # has no attribute 'cquantize_blockwise_fp16_nf4'", raised in bitsandbytes/functional.py); or where its loader cannot
    # open a library its own needs (the CUDA runtime it was built for under a torch of another CUDA or a ROCm torch:
    # "OSError: libcudart.so.12: cannot open shared object file", raised in cextension.py)
    Signature("quantized-fails", BNB_WITHOUT_LIBRARY + r"|lib\w+\.so[.\d]*: cannot open shared object file",
              frames=(r"bitsandbytes/",), frames_required=True, unless=CUDA_OR_OVERRIDE_FIRST, cause=NO_GPU_LIBRARY,
              remedies=EXPLAIN_REMEDIES),
    # (where no frame is pasted, its library's own function names say whose it is: bitsandbytes/functional.py calls
    # lib.cquantize_blockwise_bf16_fp4, lib.cdequantize_blockwise_fp32, lib.cint8_vector_quant, lib.cget_col_row_stats,
    # lib.cigemm, lib.cgemm_4bit_inference_naive_fp16)
    Signature("quantized-fails", r"'NoneType' object has no attribute 'c(de)?quantize_blockwise_\w+'|"
                                 r"'NoneType' object has no attribute 'c(int8_\w+|get_col_row_stats|igemm\w*|gemm_4bit_\w+)'",
              unless=CUDA_OR_OVERRIDE_FIRST, cause=NO_GPU_LIBRARY, remedies=EXPLAIN_REMEDIES),
    # (and on Windows: "FileNotFoundError: Could not find module '...\\bitsandbytes\\libbitsandbytes_cuda118.dll' (or one of
    # its dependencies)", a wheel whose DLL or the CUDA DLLs it needs are missing)
    Signature("quantized-fails", r"Could not find module '[^'\n]*bitsandbytes[\\/]+libbitsandbytes\w*\.dll'",
              unless=CUDA_OR_OVERRIDE_FIRST, cause=NO_GPU_LIBRARY, remedies=EXPLAIN_REMEDIES),
    # ... and its warnings at import, which a run that never quantizes goes on past (an unrelated error after them is
    # that error's): read only where the run stopped on them
    Signature("quantized-fails", r"bitsandbytes was compiled without GPU support|CUDA_SETUP: WARNING! libcudart\.so not found|"
                                 r"Could not find the bitsandbytes (CUDA|ROCm) binary at",
              unless=CUDA_OR_OVERRIDE_FIRST, last_only=True,
              cause=NO_GPU_LIBRARY,
              remedies=EXPLAIN_REMEDIES),
    # ... and that setup warning on Windows at all: bitsandbytes before 0.43 had no Windows build, and its CUDA setup looks
    # for Linux's libcudart.so along the PATH ("C:\\...\\bitsandbytes\\cuda_setup\\main.py:136: UserWarning: ... did not
    # contain libcudart.so as expected!"; the fix the threads settle on is a Windows build or bitsandbytes 0.43+,
    # github.com/bitsandbytes-foundation/bitsandbytes/issues/175), read where the run stopped on it
    Signature("quantized-fails", r"(?<!\w)[A-Za-z]:\\[^\n]*?\\bitsandbytes\\cuda_setup\\\w+\.py:\d+: \w*Warning\b",
              unless=CUDA_OR_OVERRIDE_FIRST, last_only=True,
              cause="bitsandbytes before 0.43 has no Windows build: its CUDA setup looks for Linux's CUDA libraries and finds "
                    "none, so its GPU library cannot load",
              remedies=EXPLAIN_REMEDIES[::-1]),
    # Any error raised inside bitsandbytes' own CUDA setup (bitsandbytes/cuda_setup/, before 0.43) is that setup failing on
    # this machine, its bugs included (0.37's NameError on GPUs below compute capability 7.5, fixed in
    # github.com/bitsandbytes-foundation/bitsandbytes/pull/115)
    # (an empty match, keyed on the setup's path alone: not a near miss of every other error a log has)
    Signature("quantized-fails", r"(?=\b\w+Error\b)", frames=(r"bitsandbytes/cuda_setup/",),
              # (not its warnings, which a setup that went on to load its library prints too: "Welcome to bitsandbytes",
              # "The following directories listed in your path were found to be non-existent", "... did not contain
              # ['libcudart.so', ...] as expected! Searching further paths...", "Found duplicate ... We'll flip a coin",
              # "Compute capability < 7.5 detected! Only slow 8-bit matmul is supported"; its frames and its own lines
              # still count)
              context=(r"bitsandbytes[\\/]+cuda_setup[\\/]+(?!\w+\.py:\d+: \w*Warning)",),
              context_required=True,
              cause="bitsandbytes' CUDA setup failed on this machine (its GPU library, CUDA or GPU not found or not supported "
                    "by that release)",
              remedies=EXPLAIN_REMEDIES[::-1]),
    # bitsandbytes' own words when its native library does not load, whatever the loader said after them (a glibc older
    # than its CUDA 12.6+ builds need: "version `GLIBC_2.34' not found", github.com/bitsandbytes-foundation/bitsandbytes/issues/1610)
    # BNB_CUDA_VERSION naming a library of another CUDA major release than torch's: bitsandbytes announces the override,
    # then its library cannot find that CUDA's runtime ("libcudart.so.12: cannot open shared object file" under a CUDA 13
    # torch, as an H200 said it: tests/fixtures/measurements/h200-failures/), or names one it does not ship ("No compatible
    # CUDA binary found at .../libbitsandbytes_cuda139.so"); extension-abi's probe reads which library the variable makes
    # it load
    Signature("bnb-cuda-version-unloadable", r"Could not load bitsandbytes native library|bitsandbytes library load error|CUDA SETUP ERROR\b|"
                                  r"(?i:cannot open shared object|WinError \d+|No such file|not found).{0,120}\bcudart",
              context=(r"BNB_CUDA_VERSION=\d+ environment variable detected",), context_required=True,
              confirmed_by=("extension-abi:bnb-cuda-version-unloadable",),
              cause="BNB_CUDA_VERSION makes bitsandbytes load a library that cannot load here: one for another CUDA release "
                    "than torch's, whose runtime is not there, or one it does not ship",
              remedies=(UNSET_BNB_CUDA_VERSION,)),
    Signature("quantized-fails", r"Could not load bitsandbytes native library|bitsandbytes library load error|CUDA SETUP ERROR\b",
              cause="bitsandbytes' native library cannot load here (a build for another OS, CUDA or glibc, or a missing file)",
              remedies=EXPLAIN_REMEDIES[::-1]),
    # bitsandbytes' CUDA_CHECK_RETURN (csrc/ops.cu, ops.hip): "Error named symbol not found at line 233 in file
    # /src/csrc/ops.cu" when its kernels have no code for this GPU (a wheel built without sm_87 on a Jetson Orin)
    Signature("quantized-fails", r"\bError .{3,80} at line \d+ in file \S*csrc/ops\.(cu|hip)\b",
              cause="a bitsandbytes CUDA kernel failed to launch: its build has no kernels for this GPU's architecture, or "
                    "another CUDA than the driver's",
              remedies=(BITSANDBYTES_UPGRADE,
                        Remedy("Or build bitsandbytes from source for this GPU (CUDA_ARCHS / -DCOMPUTE_CAPABILITY naming its sm)",
                               id="bitsandbytes-from-source"))),
    # bitsandbytes' native library itself not loading (a Linux .so on Windows before 0.43: "[WinError 193] %1 is not a
    # valid Win32 application ... libbitsandbytes.so"; a CUDA library the loader cannot open; a preview build missing its
    # own kernels' symbols: "libbitsandbytes_rocm62.so: undefined symbol: _Z36__device_stub__kOptimizer32bit1State..."),
    # however the OS words it
    Signature("quantized-fails", r"(?i)(WinError \d+|cannot open shared object|not a valid Win32|LoadLibrary|No such file)"
                                 r".{0,200}libbitsandbytes|libbitsandbytes\w*\.(so|dll).{0,200}(cannot open|not a valid|WinError|undefined symbol)",
              cause="bitsandbytes' native library cannot load here (a build for another OS or CUDA, or a missing file)",
              remedies=EXPLAIN_REMEDIES[::-1]),
    # bitsandbytes' int8 matmul (cublasLt) on a GPU its release has no int8 layout for: before 0.37 Turing and newer only
    # ("Your GPU does not support Int8 Matmul!" on Pascal/Volta; github.com/bitsandbytes-foundation/bitsandbytes/issues/131),
    # Hopper before 0.40 (csrc/ops.cu prints "cuBLAS API failed with status 15", functional.py raises "cublasLt ran into an
    # error!"; github.com/bitsandbytes-foundation/bitsandbytes/issues/599)
    # (and its warning on GPUs below sm_75 from 0.38 on: "Compute capability < 7.5 detected! Only slow 8-bit matmul is
    # supported for your GPU!"; github.com/bitsandbytes-foundation/bitsandbytes/issues/529)
    Signature("quantized-fails", r"Your GPU does not support Int8 Matmul|cublasLt ran into an error|cuBLAS API failed with status \d+|"
                                 r"Only slow 8-bit matmul is supported for your GPU",
              # cuBLAS's own words for an argument its caller got wrong: the calling code's bug, not the GPU's int8 layout
              unless=(r"On entry to \w+ parameter number \d+ had an illegal value",),
              cause="this bitsandbytes has no int8 matmul for this GPU's architecture (pre-Turing before 0.37, Hopper before 0.40)",
              remedies=(BITSANDBYTES_UPGRADE,
                        Remedy("Or load the model in bf16/fp16 or 4-bit instead of `load_in_8bit`", id="no-int8"))),
    # A 4-bit base's packed weight used as a plain one: bitsandbytes stores a Linear4bit's weight as uint8 of shape (N, 1), so
    # a matmul that bypasses its kernel sees "mat1 and mat2 shapes cannot be multiplied (8160x64 and 1x98304)" (Forge Neo
    # without --bnb for an NF4 checkpoint; an adapter layer that reads the raw weight)
    Signature("quantized-fails", r"(mat1 and mat2|m1 and m2) shapes cannot be multiplied \(\d+x\d+ and 1x\d+\)",
              cause="a 4-bit quantized weight was used as a plain one: its packed (N, 1) storage reached a matmul that does not "
                    "dequantize it (the loader's bitsandbytes support off, or a layer or code path that reads the raw weight)",
              remedies=(Remedy("Load the 4-bit checkpoint with its quantization support on (Forge: `--bnb`; transformers: a "
                               "`BitsAndBytesConfig`), or use an unquantized checkpoint where the code reads weights directly "
                               "(tensor-parallel slicing, an adapter without 4-bit support)", id="quantized-loader"),)),
    # autograd refusing to train integer weights ("Only Tensors of floating point and complex dtype can require gradients")
    # beside a quantized model: its int8/packed base was made trainable (FSDP or a trainer setting requires_grad on every
    # parameter) instead of only adapters on it (github.com/meta-llama/llama-cookbook: int8 quantization with FSDP); not
    # bitsandbytes' banner alone ("... and GPU quantization are unavailable") beside a code bug
    Signature("quantized-fails", r"Only Tensors of floating point( and complex)? dtype can require gradients",
              context=(r"(?i)(?<!GPU )quanti?[sz]|quatiz|\bint[48]\b|load_in_[48]bit|BitsAndBytesConfig|Linear(4bit|8bitLt)|\bnf4\b|qweight|"
                       r"\bgptq\b|\bawq\b",),
              context_required=True,
              cause="a quantized model's integer weights were asked to require gradients: a quantized base is trained only "
                    "through adapters (LoRA) on it, and FSDP does not shard 8-bit weights",
              remedies=(Remedy("Train adapters on the quantized base (peft's prepare_model_for_kbit_training + LoRA) instead of "
                               "its weights, or load the base in bf16/fp16 to train it (or shard it with FSDP)", id="quantized-adapters-only"),)),
    # bitsandbytes' own check that its kernels' tensors are on the GPU (functional.py `is_on_gpu`: "All input tensors need
    # to be on the same GPU, but found some tensors to not be on a GPU: [(torch.Size([4718592, 1]), device(type='cpu')),
    # ...]"): the quantized weights were left on the CPU, offloaded by a loader or a UI, while the input is on the GPU
    Signature("quantized-fails", r"(All )?[Ii]nput tensors need to be on the same GPU, but found",
              cause="the 4-bit/8-bit weights are on the CPU (offloaded, or never moved) while bitsandbytes computes on the GPU: "
                    "its kernels run on CUDA tensors only",
              remedies=(Remedy("Keep the quantized model wholly on the GPU (no CPU offload of 4-bit/8-bit layers; `device_map` "
                               "onto one GPU), or load it in bf16/fp16 or as GGUF where it must be offloaded", id="quantized-on-gpu"),)),
    # a bitsandbytes older than the transformers that builds its 4-bit parameters ("Params4bit.__new__() got an unexpected
    # keyword argument '_is_hf_initialized'")
    Signature("quantized-fails", r"Params4bit\.__new__\(\) got an unexpected keyword argument",
              cause="the installed bitsandbytes is older than the transformers that creates its 4-bit parameters",
              remedies=(BITSANDBYTES_UPGRADE,)),
    # Params4bit.quant_storage arrived in bitsandbytes 0.43.0 (FSDP-QLoRA; its release notes): code written for it fails on
    # an older bitsandbytes ("'ForgeParams4bit' object has no attribute 'quant_storage'", ComfyUI's NF4 loader)
    # (the closing quote is often lost where a UI prints the message: "ERROR: ForgeParams4bit' object has no attribute
    # 'quant_storage")
    Signature("quantized-fails", r"has no attribute '?quant_storage\b",
              cause="the installed bitsandbytes is older than 0.43, which added the 4-bit quant_storage this code uses",
              remedies=(BITSANDBYTES_UPGRADE,)),
    # A bitsandbytes older than the code that uses it: a class or function later releases added ("module 'bitsandbytes.nn'
    # has no attribute 'Linear4bit'": 4-bit arrived in 0.39.0, github.com/bitsandbytes-foundation/bitsandbytes releases)
    # (and said alone: "No module named 'triton.ops'", the same bitsandbytes older than the Triton beside it, as the
    # reading below cites; triton-windows' README says so too, github.com/woct0rdho/triton-windows/issues/65)
    Signature("quantized-fails", r"No module named '?triton\.ops'?",
              cause="the installed bitsandbytes is older than the Triton beside it: it imports triton.ops, which newer Triton "
                    "releases removed",
              remedies=(BITSANDBYTES_UPGRADE,)),
    # (and a module of an older bitsandbytes' layout that a trainer's patch still imports: "No module named
    # 'bitsandbytes.cuda_setup.paths'", cuda_setup gone from bitsandbytes 0.42)
    Signature("quantized-fails", r"No module named '?bitsandbytes\.cuda_setup\b",
              cause="the code expects another bitsandbytes release than the installed one (its cuda_setup modules are gone "
                    "from bitsandbytes 0.42 on)",
              remedies=(Remedy("Install the bitsandbytes release the trainer pins (or update the trainer to one written for the "
                               "installed bitsandbytes)", id="bnb-pinned-release"),)),
    Signature("quantized-fails", r"module '?bitsandbytes(\.\w+)*'? has no attribute '?\w+",
              cause="the installed bitsandbytes is older than the code using it: the class or function it asks for came in a "
                    "later release (4-bit Linear4bit in 0.39)",
              remedies=(BITSANDBYTES_UPGRADE,)),
    # bitsandbytes absent from the interpreter, as Python says it (the import, or importlib.metadata's version look-up that
    # transformers and Qwen's code make first: "PackageNotFoundError: No package metadata was found for bitsandbytes")
    Signature("quantized-fails", r"No module named '?bitsandbytes'?(?!\.)|"
                                 r"PackageNotFoundError: (No package metadata was found for )?bitsandbytes\b",
              cause="bitsandbytes is not installed in the interpreter that ran the script, and the run asked for 4/8-bit "
                    "quantization",
              remedies=EXPLAIN_REMEDIES[::-1]),
    # transformers' lazy import of its bitsandbytes integration failing, whatever bitsandbytes raised inside it ("Failed
    # to import transformers.integrations.bitsandbytes because of the following error ... No module named 'triton.ops'":
    # bitsandbytes before 0.45 under triton 3.2, which removed triton.ops; github.com/ai-dock/comfyui/issues/132)
    Signature("quantized-fails", r"Failed to import transformers\.integrations\.bitsandbytes\b",
              cause="bitsandbytes does not import here (a release too old for the installed triton or torch, or a build for "
                    "another platform), so transformers cannot quantize with it",
              remedies=(BITSANDBYTES_UPGRADE,)),
    # transformers' bitsandbytes quantizers refuse a machine without CUDA: "No GPU found. A GPU is needed for quantization."
    # (older releases: "Using `load_in_8bit=True` requires Accelerate: ... and the latest version of bitsandbytes", raised
    # where bitsandbytes finds no CUDA, on a Mac too: github.com/bitsandbytes-foundation/bitsandbytes/issues/837)
    Signature("quantized-fails", r"Using `(bitsandbytes` (4|8)-bit quantization|load_in_(4|8)bit=True`) requires "
                                 r"(Accelerate|the latest version of bitsandbytes)|"
                                 r"No GPU found\. A GPU is needed for quantization|"
                                 # (a program's own guard saying the same of bitsandbytes: chatterbox's "ValueError: BNB
                                 # quantization only supported on CUDA", its BNB_QUANTIZATION.md)
                                 r"(?i:\b(bnb|bitsandbytes)\b[^\n]{0,40}\bonly (supported|available|works?|runs?) on (cuda|nvidia|gpu)s?\b)|"
                                 # (transformers 4.2x's version gate: "You have a version of `bitsandbytes` that is not
                                 # compatible with 8bit inference and training make sure you have the latest version")
                                 r"version of `?bitsandbytes`? that is not compatible with (4|8) ?bit",
              cause="transformers finds no usable bitsandbytes: not installed, too old, or no CUDA GPU for it",
              remedies=EXPLAIN_REMEDIES[::-1]),
)

CHECK = Check(
    id=ID,
    title="4-bit / 8-bit bitsandbytes base weights",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    order=75,
    probe_reads_intent=True,  # its setups come from the training config
    signatures=SIGNATURES,
)
