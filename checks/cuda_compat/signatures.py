"""How cuda-compat failures read in a traceback (for `explain`), and what can be said from the text alone."""

from __future__ import annotations

from envdoctor.target.cuda_tables import GPU_NAME_CAPABILITY
from envdoctor.target.model import Remedy, Signature

# What `explain` can say from a traceback alone; the live findings name the exact wheel for this GPU and driver.
WHEEL_FOR_GPU = Remedy("Install the torch wheel built for this GPU's architecture and this driver: `envdoctor check --only "
                       "cuda-compat` names it and `envdoctor fix` installs it (a GPU newer than the torch, e.g. sm_120 on a "
                       "cu12.4 wheel, needs a newer torch)", id="torch-wheel-for-gpu")
# A Blackwell GPU named as people name it: by its name in the one name -> capability table (RTX 50xx, B200/GB200, GB10),
# or by its architecture: sm_100/sm_120, compute capability 10.x/12.x, "RTX 50-series"
BLACKWELL = "|".join([pattern for pattern, cap in GPU_NAME_CAPABILITY if cap >= (10, 0)]
                     + [r"\bsm_?1[02]\d\b", r"[Bb]lackwell", r"compute capability 1[02]\.\d", r"\bRTX ?50-series\b"])
# A library's own CUDA check naming its source file and line ("CUDA error (.../flash_fwd_launch_template.h:175): no kernel
# image is available ..."; a Windows path may hold "(x86)"): torch's own check prints "CUDA error: ..." with none, so a
# kernel without code for the GPU told so is the library's build (extension-abi's reading), whatever GPU the log names
LOCATED_NO_KERNEL = r"CUDA error \([^\n]*?\.(cuh?|h|hpp|cpp|cc):\d+\):? ?(no kernel image|invalid device function)"
DRIVER_UPGRADE = Remedy("Or update the NVIDIA driver to one that supports torch's CUDA version (`nvidia-smi` shows the driver's "
                        "CUDA)", id="driver-upgrade")
VISIBLE_GPU = Remedy("Make a GPU visible: check CUDA_VISIBLE_DEVICES, give the container the GPUs (--gpus all), pick a GPU "
                     "runtime in Colab; `nvidia-smi` must list one", id="visible-devices")
REBOOT = Remedy("Reboot (or reload the nvidia kernel modules) so that the driver's kernel module and libraries are the same "
                "release", id="reboot-after-driver-update")
# A container runtime that gives the container no GPU: Docker without the NVIDIA Container Toolkit's runtime, a Kubernetes pod
# without the nvidia runtime class (docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html)
CONTAINER_TOOLKIT = Remedy("Install the NVIDIA Container Toolkit on the host and register its runtime (`sudo nvidia-ctk runtime "
                           "configure --runtime=docker`, then restart Docker); run the container with `--gpus all`; in "
                           "Kubernetes give the pod `runtimeClassName: nvidia` and an `nvidia.com/gpu` limit",
                           id="container-toolkit")
# A container image whose CUDA is newer than the host's driver, however that shows (the toolkit's refusal, error 804)
CONTAINER_NEWER_THAN_DRIVER = (DRIVER_UPGRADE, Remedy("Or use an image built for an older CUDA (one the driver supports)",
                                                      id="older-image"))

# `torch.cuda.is_available()` False, told in words: the commonest way people report that CUDA does not start. Three readings
# the probes decide between: a CPU-only torch (torch-install's; Windows' PyPI default), no NVIDIA GPU here (torch-install's),
# and a driver older than torch's CUDA (this check's: torch then reports no device instead of failing)
def unavailable(device: str) -> str:
    """`torch.<device>.is_available()` False, told in words ("returns False", "-> False", "is False"), in any case; also
    printed (`print(torch.cuda.is_available())` answered "False" on the next line, or "# False" after it)."""
    return (r"(?i:\b%s\.is_available\(\)[)\"'`]*\s*(is |are |returns? |returning |returned |gives? |giving |shows? |"
            r"prints? |still |always |keeps? |evaluates to |outputs? |:\s*|->\s*|=\s*|#\s*|"
            # (and a library's guard saying it: diffusers' "torch.cuda.is_available() should be True but is False.
            # xformers' memory efficient attention is only available for GPU")
            r"should be True,? but |"
            # (and the verbs of Chinese, Japanese and Korean posts: "返回 False", "が False", "가 False")
            r"(一直|总是|还是|仍然)?(返回|输出|显示|打印|为|是)\s*|(が|は|を返す|가|이|는)\s*)*`?False\b)" % device)


# The same fact as programs that ask torch for the GPU say it: the launchers (Lightning 0.x-1.5 ("You requested GPUs: [0]
# But your machine only has: []", trainer/distrib_parts.py sanitize_gpu_ids), 1.6+ ("GPUAccelerator can not run on your
# system since the accelerator is not available", "No supported gpu backend found!")), unsloth's import when torch sees
# no CUDA or XPU device ("Unsloth currently only works on NVIDIA GPUs and Intel GPUs", unsloth/__init__.py)
_NO_GPU_AS_PROGRAMS_SAY = (r"But your machine only has: \[\]|No supported gpu backend found|"
                        r"`?(GPU|CUDA)Accelerator`? can not run on your system since the accelerator is not available|"
                        # (Lightning 1.x's MisconfigurationException: "GPUs requested but none are available.")
                        r"GPUs requested but none are available|"
                        r"Unsloth (currently )?only works on NVIDIA GPUs|"
                        # torch.utils.cpp_extension with a CUDA_HOME but torch.cuda.is_available() False ("No CUDA runtime is
                        # found, using CUDA_HOME=..."); a program's own start-up answer ("Have CUDA:  False", "CUDA
                        # available: False"; not collect_env's report line "Is CUDA available: False", printed whatever
                        # failed) or fallback ("No GPU found. Conversion on CPU is very slow.", nougat; not a quantizer's
                        # refusal, "No GPU found. A GPU is needed for quantization", which is bitsandbytes')
                        r"No CUDA runtime is found, using CUDA_HOME|"
                        r"(?i:^\W*(have |has |use |using )?cuda( is)?( available)?\W{0,3}\s*[:=]\s*False\b|"
                        r"\bno (supported |compatible |usable )?(nvidia |cuda )?gpus? (was |were )?(found|detected|available)\b"
                        r"(?!\.? ?A GPU is needed for quantization))|"
                        # (GFPGAN's inference script, under `if not torch.cuda.is_available()`: "The unoptimized RealESRGAN
                        # is slow on CPU. We do not use it.", github.com/TencentARC/GFPGAN inference_gfpgan.py)
                        r"The unoptimized RealESRGAN is slow on CPU|"
                        # (a program's own check told in plain words: DiscoArt's "RuntimeError: CUDA is not available.",
                        # docling's "cuda is not available in the system. fall back to 'cpu'", SD.Next's "Torch reports CUDA
                        # not available"; not as a condition or a contrast, torch's own "GradScaler is enabled, but CUDA is
                        # not available. Disabling." (TORCH_DISABLES_CUDA, read where the run stopped on it) or a help text's
                        # "when CUDA is not available", nor one op's "CUDA is
                        # not available for deform_conv")
                        r"(?i:(?<!\bbut )(?<!\bwhen )(?<!\bif )(?<!\bsince )(?<!\bbecause )(?<!\bunless )(?<!\bwhether )"
                        r"\bcuda (is )?not available\b(?!\s+for\b))")
CUDA_UNAVAILABLE = unavailable("cuda") + "|" + _NO_GPU_AS_PROGRAMS_SAY
# stable-diffusion-webui's start-up test saying it (modules/launch_utils.py prepare_environment: "Torch is not able to use
# GPU; add --skip-torch-cuda-test to COMMANDLINE_ARGS"): torch.cuda.is_available() was False
WEBUI_CUDA_TEST = r"Torch is not able to use GPU"
# A CUDA build's own warning that the GPU is not among its architectures (torch/cuda/__init__.py): no CPU-only torch
# printed it, and a GEMM or a start-up test failing after it is this check's (the wheel predates the GPU, or dropped it)
GPU_NOT_IN_BUILD = r"with CUDA capability sm_\d+ is not compatible with the current PyTorch|PyTorch no longer supports this GPU"
# torch's own warnings that it turned CUDA off because is_available() is False (torch/amp/autocast_mode.py: "User provided
# device_type of 'cuda', but CUDA is not available. Disabling"; torch/amp/grad_scaler.py: "torch.cuda.amp.GradScaler is
# enabled, but CUDA is not available.  Disabling."): the run goes on, on the CPU, so they explain it only where it stopped
# on them
TORCH_DISABLES_CUDA = r"(User provided device_type of \\?'cuda\\?'|GradScaler is enabled), but CUDA is not available"
# torch's own warning at CUDA start-up that the driver predates its CUDA (torch/cuda/__init__.py, c10's CUDAFunctions.cpp):
# where a log shows it, "no GPU" after it is this check's, not a CPU-only torch's or a machine's without a GPU
DRIVER_TOO_OLD_WARNING = r"(The )?(?i:NVIDIA driver) on your system is too old \(found version (\d+)\)"
# ... and the CUDA runtime's own words for it, as any program's CUDA start-up prints them (llama.cpp's "ggml_cuda_init:
# failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version"): a "no GPU" after either is the
# driver's, not a CPU-only build's
DRIVER_TOO_OLD_SAID = DRIVER_TOO_OLD_WARNING + r"|CUDA driver version is insufficient for CUDA runtime version"
# Either said before a failure that only follows from it ("no GPU", cuBLAS or cuDNN not starting): the build against the
# machine is the cause, this check's
BUILD_DOES_NOT_FIT = DRIVER_TOO_OLD_SAID + "|" + GPU_NOT_IN_BUILD
# ... but not torch.load's own words, where the fix is map_location, not the machine ("Attempting to deserialize object on a
# CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load
# with map_location=torch.device('cpu')")
CHECKPOINT_SAVED_ON_CUDA = (r"deserialize object on a CUDA device|map_location",)


def _runtime_error(code: int, name: str) -> str:
    """A CUDA runtime error told by its number or its enum name, as extensions and other runtimes print it ("Cuda error:
    209[cudaLaunchKernel(...)]", "CUDA error 35", "cudaErrorNoKernelImageForDevice"). The numbers are cudaError_t's
    (docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html)."""
    # (one case-blind branch per spelling, so that each holds "cuda error" whole: a needle as short as "error" would
    # have the pattern compiled and tried on nearly every error a log has; envdoctor.pipeline.explain.needles)
    return "|".join(r"(?i:\bcuda%serror(?: code)?:? ?=? ?%d\b)" % (gap, code) for gap in (" ", "_", "")) + r"|\b%s\b" % name


# An extension's kernels without code for this GPU fail to launch with torch's own message: apex built for sm_80 alone and
# run on an H200 (tests/fixtures/h200-apex-sm80-only.json). apex's probe runs its kernels here, and extension-abi's reads
# the companions' fat binaries, so their findings say live that an extension, not torch, lacks the code.
EXTENSION_WITHOUT_GPU_CODE = ("apex:apex-wrong-arch", "extension-abi:no-kernel-for-gpu")
EXTENSION_FOR_GPU = Remedy("Or, where the failing kernel is an extension's (xformers, flash-attn, apex, a custom op), install "
                           "its build for this GPU or rebuild it with TORCH_CUDA_ARCH_LIST set to the GPU's capability: "
                           "`envdoctor check --only extension-abi,apex` names the one without code for it", id="extension-for-gpu")


SIGNATURES = (
    # The older wording of the same (cudaErrorInvalidDeviceFunction), and ROCm's: a torch wheel without code for the AMD
    # GPU's gfx target ("HIP error: invalid device function", "hipErrorNoBinaryForGpu: Unable to find code object for all
    # current devices", the HSA runtime's "HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid");
    # consumer RDNA cards close to a supported target run with HSA_OVERRIDE_GFX_VERSION
    # (rocm.docs.amd.com, the system requirements' GPU list); rocBLAS finding no kernels (Tensile library) for the card's
    # target ("Cannot read ...\rocblas\library\TensileLibrary.dat: No such file or directory for GPU arch : gfx1103"; older
    # rocBLAS names no arch: "Cannot read .../torch/lib/rocblas/library/TensileLibrary.dat: No such file or directory", "Error:
    # TensileLibrary.dat not found", where the wheel's rocBLAS has no kernels for the card, or its library path is wrong)
    # (torch 0.x's THC numbered it 8: "cuda runtime error (8) : invalid device function", "error=8 : invalid device function";
    # CUDA 10.1 renumbered it 98: "THCudaCheck FAIL file=.../random_horiz_flip.cu line=158 error=98 : invalid device function";
    # an extension's own check macro prints the same string: "cudaCheckError() failed : invalid device function";
    # a program's own check naming the code and where it failed, as ggml does on a HIP build without the card's target:
    # "CUDA error 98 at /source/llama.cpp/ggml-cuda.cu:7788: invalid device function"; a program's bare "Error: invalid
    # device function" at a line's start, as k2's FAQ quotes it)
    # (the enum as ROCm's docs spell it too, "hipErrorNoBinaryForGPU", and its message alone)
    Signature("no-kernel-image", r"((CUDA|HIP) error|^\W*[Ee]rror)( \d+ at [^\n:]{1,200}:\d+)?: invalid device function|"
                                 r"cudaErrorInvalidDeviceFunction|(?i:hipErrorNoBinaryForGpu)|"
                                 r"Unable to find code object for all current devices|"
                                 r"(cuda runtime error \((8|98)\)|error=(8|98)|\w+\(\) failed) ?: ?invalid device function|"
                                 r"HSA_STATUS_ERROR_INVALID_ISA|TensileLibrary\w*\.dat(: [^\n]{0,40}for GPU arch|: No such file or directory| not found)",
              cause="torch (or an extension) has no code for this GPU's architecture (on ROCm: the card's gfx target)",
              confirmed_by=EXTENSION_WITHOUT_GPU_CODE,
              remedies=(WHEEL_FOR_GPU, Remedy("On ROCm, a card outside the wheel's targets: HSA_OVERRIDE_GFX_VERSION set to the "
                                              "nearest supported target (RDNA2: 10.3.0, RDNA3: 11.0.0), or a torch built for "
                                              "the card's gfx target", id="rocm-gfx-override"), EXTENSION_FOR_GPU)),
    Signature("no-kernel-image", r"(?i:no kernel image is available\b)|%s" % _runtime_error(209, "cudaErrorNoKernelImageForDevice"),
              cause="the GPU's compute capability has no cubin (and no usable PTX) in torch or an extension",
              confirmed_by=EXTENSION_WITHOUT_GPU_CODE,
              remedies=(WHEEL_FOR_GPU, DRIVER_UPGRADE, EXTENSION_FOR_GPU)),
    # the driver's PTX JIT, the fallback when a binary has no cubin for the GPU (cudaErrorInvalidPtx, 218: "a PTX JIT
    # compilation failed"; cudaErrorJitCompilerNotFound, 221: "PTX JIT compiler library not found", a container or driver
    # install without libnvidia-ptxjitcompiler; docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html)
    Signature("no-kernel-image", r"a PTX JIT compilation failed|PTX JIT compiler library not found|"
                                 r"%s|%s" % (_runtime_error(218, "cudaErrorInvalidPtx"), _runtime_error(221, "cudaErrorJitCompilerNotFound")),
              cause="the binary has no code compiled for this GPU, and the driver cannot compile its PTX instead: PTX newer than "
                    "the driver, or a driver install without its PTX JIT library (a container's driver capabilities)",
              confirmed_by=EXTENSION_WITHOUT_GPU_CODE,
              remedies=(WHEEL_FOR_GPU, DRIVER_UPGRADE,
                        Remedy("In a container, give it the driver's compute libraries (NVIDIA_DRIVER_CAPABILITIES=compute,utility)",
                               id="container-compute-capability"))),
    # (or the line ends there, where a terminal or a paste wrapped the warning: "... sm_100 is not compatible" / "with the
    # current PyTorch installation.")
    Signature("no-kernel-image", r"with CUDA capability sm_(\d+) is not compatible( with the current PyTorch installation|\s*$)",
              frames=(r"torch/cuda/__init__\.py",),
              cause="torch was not built for this GPU's architecture",
              remedies=(WHEEL_FOR_GPU, DRIVER_UPGRADE)),
    # torch's own capability check at CUDA start-up (torch/cuda/__init__.py _check_capability): "Found GPU0 <name> which is of
    # compute capability (CC) 6.1. The following list shows the CCs this version of PyTorch was built for ..." (2.6+), and
    # before it "... which is of cuda capability 3.5. PyTorch no longer supports this GPU because it is too old."
    # Not where the GPU is a later minor of the newest capability built ("capability 12.1. Minimum and Maximum cuda
    # capability supported by this version of PyTorch is (8.0) - (12.0)"): a cubin for X.Y runs on X.Z, Z >= Y (CUDA's
    # binary compatibility), so that warning was a false alarm (GB10, sm_121: github.com/pytorch/pytorch/pull/166185)
    Signature("no-kernel-image", r"which is of (compute|cuda) capability (\(CC\) )?\d+\.\d+\.?$|"
                                 r"PyTorch no longer supports this GPU because it is too old",
              unless=(r"capability (\d+)\.\d+\.?\s*\n?\s*Minimum and Maximum cuda capability supported by this version of "
                      r"PyTorch is\s*\(\d+\.\d+\)\s*-\s*\(\1\.\d+\)",),
              cause="this torch was not built for the GPU's compute capability (an older GPU than the wheel supports)",
              remedies=(WHEEL_FOR_GPU,)),
    # torch 0.4-1.1's CUDA 9.0 builds setting up cuBLAS on a Turing or newer GPU (RTX 20xx): "THCudaCheck FAIL
    # file=.../THC/THCGeneral.cpp line=383 error=11 : invalid argument", "cuda runtime error (11) : invalid argument at
    # THCGeneral.cpp:405"; the CUDA 10 build of the same torch runs (github.com/fastai/fastai/issues/1566,
    # github.com/pytorch/pytorch/issues/15797)
    Signature("no-kernel-image", r"(?i:THCGeneral\.cpp)(:| line=)\d+ error=11 ?: ?invalid argument|"
                                 r"cuda runtime error \(11\) ?: ?invalid argument at [^\n]*(?i:THCGeneral\.cpp)",
              cause="a torch of the 0.4-1.1 era built for CUDA 9 cannot set up cuBLAS on this GPU (Turing or newer): its "
                    "CUDA predates the GPU",
              remedies=(WHEEL_FOR_GPU,)),
    # A kernel package's own build refusing the GPU's architecture ("ValueError: Unsupported CUDA architecture: sm75",
    # SageAttention 2's setup on an RTX 2080 Ti: github.com/thu-ml/SageAttention): no kernels of it for this GPU
    Signature("no-kernel-image", r"Unsupported (CUDA|GPU|compute) (architecture|capability):? '?(sm_?|compute_)?\d+",
              cause="a package's CUDA kernels do not cover this GPU's architecture (older or newer than those it builds for)",
              confirmed_by=EXTENSION_WITHOUT_GPU_CODE,
              remedies=(EXTENSION_FOR_GPU, WHEEL_FOR_GPU)),
    # nvcc refusing an architecture while an extension builds ("nvcc fatal : Unsupported gpu architecture 'compute_86'"
    # under CUDA 11.0, which predates the RTX 30xx's sm_86; CUDA 11.1 added it): the toolkit is older than the GPU, or
    # TORCH_CUDA_ARCH_LIST names an architecture the toolkit does not know
    # (nvcc's own words, lowercase "gpu", also quoted without its "nvcc fatal" prefix: 'Unsupported gpu architecture
    # 'compute_75'' under CUDA 9.2 on an RTX 2060; or the words alone, as detectron2's INSTALL.md quotes them)
    Signature("no-kernel-image", r"(?:nvcc fatal\s*: )?Unsupported gpu architecture( '?compute_\d+|[ \t]*$)",
              cause="the CUDA toolkit (nvcc) building the extension predates the GPU architecture it was asked for: this GPU's "
                    "(a newer GPU than the toolkit) or one TORCH_CUDA_ARCH_LIST names",
              remedies=(Remedy("Build with a CUDA toolkit that knows this GPU (sm_86: 11.1+, sm_89/sm_90: 11.8+, sm_120: 12.8+), "
                               "the same major release as torch's CUDA; or set TORCH_CUDA_ARCH_LIST to architectures this "
                               "toolkit has", id="toolkit-for-gpu"),)),
    # torch's own extension builder not knowing the architecture it is asked to build for (torch/utils/cpp_extension.py,
    # _get_cuda_arch_flags: "ValueError: Unknown CUDA arch (8.6) or GPU not supported"): the GPU's capability or an entry of
    # TORCH_CUDA_ARCH_LIST is not in this torch's list of architectures (torch 2.0's ends at 9.0; RTX 30xx under a torch
    # before sm_86, a Blackwell under one before sm_120)
    Signature("no-kernel-image", r"Unknown CUDA arch \([^)\n]*\) or GPU not supported",
              cause="the installed torch is older than the GPU architecture the extension is built for: its extension builder "
                    "(torch.utils.cpp_extension) does not list it (or TORCH_CUDA_ARCH_LIST names one spelled another way)",
              remedies=(WHEEL_FOR_GPU,
                        Remedy("Or set TORCH_CUDA_ARCH_LIST to architectures this torch lists, written as it writes them "
                               "(\"8.0;8.6+PTX\")", id="arch-list-this-torch-knows"))),
    # A compiler or engine builder older than the GPU: ptxas given PTX of a version that predates the GPU's architecture
    # (an old Triton on an RTX 4090: "PTX .version 7.4 does not support .target sm_89"), TensorRT without kernels for its SM
    # ("[TRT] ... caskUtils.cpp ... trtSmToCask: 0 (Unsupported SM.)", "Error Code 1: Internal Error (Unsupported SM:
    # 0x809)": TensorRT 8.2 on an sm_89 GPU, which 8.5 added; docs.nvidia.com/deeplearning/tensorrt support matrix)
    # (TensorRT 10 says it in words: "Target GPU SM 120 is not supported by this TensorRT release"; Triton's LLVM not
    # knowing the architecture: "'sm_120' is not a recognized processor for this target (ignoring processor)"; the ptxas
    # Triton bundles: "ptxas fatal : Value 'sm_121a' is not defined for option 'gpu-name'" on a GB10)
    Signature("no-kernel-image", r"PTX \.version [\d.]+ does not support \.target sm_\d+|"
                                 r"trtSmToCask\b.{0,80}Unsupported SM|Internal Error \(Unsupported SM: 0x[0-9a-f]+\)|"
                                 r"Target GPU SM \d+ is not supported by this TensorRT release|"
                                 r"'sm_\d+a?' is not a recognized processor for this target|"
                                 r"Value '(sm|compute)_\d+[af]?' is not defined for option '(gpu-name|gpu-architecture)'",
              cause="the compiler or engine builder (Triton's PTX, TensorRT) is older than this GPU's architecture",
              remedies=(Remedy("Use a release of the compiler/engine that knows this GPU (TensorRT 8.5+ for sm_89, 10.8+ for "
                               "sm_120; a Triton and torch built with a CUDA that has the architecture)", id="compiler-for-gpu"),
                        WHEEL_FOR_GPU)),
    # NVRTC (the runtime compiler torch's CUDA brings, used by TorchScript's fuser and JIT kernels) not knowing the GPU's
    # architecture: "nvrtc: error: invalid value for --gpu-architecture (-arch)" on an RTX 4090 under torch 1.10+cu113
    # (github.com/Improbable-AI/walk-these-ways/issues/72): torch's CUDA predates the GPU
    Signature("no-kernel-image", r"nvrtc: error: invalid value for --gpu-architecture",
              cause="the CUDA torch was built with predates this GPU: its runtime compiler (NVRTC) cannot target the GPU's "
                    "architecture",
              remedies=(WHEEL_FOR_GPU,)),
    # cuFFT of CUDA 11.7 and earlier on Ada and Hopper GPUs (github.com/pytorch/pytorch/issues/88038: torch cu117 on an
    # RTX 4090; envdoctor.target.cuda_tables.CUFFT_FIRST_CUDA): the probe sees the GPU and torch's CUDA and decides
    Signature("cufft-too-old-for-gpu", r"CUFFT_INTERNAL_ERROR",
              cause="cuFFT of the CUDA torch was built with (11.7 or earlier) has no kernels for this GPU (RTX 40xx, L4, L40, "
                    "H100): a torch built with CUDA 11.8 or later runs its FFTs",
              remedies=(WHEEL_FOR_GPU,)),
    # Intel's XPU builds: SYCL refusing a kernel that needs double precision on a GPU without it ("Required aspect fp64 is
    # not supported on the device"): torch 2.4's XPU kernels were built for Data Center GPU Max only, and Arc or integrated
    # GPUs (no native fp64) are targets from 2.5 (pytorch.org's XPU notes; intel/intel-extension-for-pytorch's answers)
    Signature("no-kernel-image", r"Required aspect fp64 is not supported on the device",
              cause="the torch XPU build's kernels were not built for this Intel GPU (they need fp64, which Arc and integrated "
                    "GPUs lack): a build that targets client GPUs (torch 2.5+ XPU wheels) runs there",
              remedies=(Remedy("Install a torch XPU build that targets this GPU (torch 2.5 or later from "
                               "https://download.pytorch.org/whl/xpu for Arc and integrated GPUs)", id="xpu-build-for-gpu"),)),
    # Triton, torch.compile's GPU compiler, refuses GPUs below capability 7.0 (torch/_dynamo/device_interface.py and
    # torch/_inductor: "GPUTooOldForTriton: Found Tesla P100-PCIE-16GB which is too old to be supported by the triton GPU
    # compiler ... Triton only supports devices of CUDA Capability >= 7.0")
    Signature("no-kernel-image", r"GPUTooOldForTriton|too old to be supported by the triton GPU compiler",
              cause="Triton (torch.compile's and many libraries' GPU compiler) has no code generator for GPUs below compute "
                    "capability 7.0",
              remedies=(Remedy("Run without torch.compile and the library's Triton kernels (eager mode), or on a GPU of compute "
                               "capability 7.0 or newer (a T4 rather than a P100 on Kaggle)", id="no-triton"),)),
    # vLLM's quantization kernels gated on the GPU ("The quantization method awq is not supported for the current GPU.
    # Minimum capability: 75. Current capability: 70.": AWQ's kernels start at Turing); fp8's own gate is fp8's
    Signature("no-kernel-image", r"quantization method (?!fp8\b)\w+ is not supported for the current GPU",
              cause="the library's kernels for this quantization need a newer GPU (compute capability) than this one",
              remedies=(Remedy("Use a quantization this GPU's compute capability has kernels for (GPTQ or bitsandbytes "
                               "instead of AWQ/Marlin below sm_75), an unquantized model, or a newer GPU", id="other-quantization"),)),
    # Triton's ptxas failing on a Blackwell GPU (RTX 50xx, B200: sm_100/sm_120), which the ptxas that a torch before 2.7's
    # Triton brings cannot target ("`ptxas` failed with error code 4294967295"; fixed by a cu128 torch and its Triton)
    Signature("no-kernel-image", r"`?ptxas`? (failed with error code|fatal)",
              context=(BLACKWELL,), context_required=True,
              cause="Triton's ptxas cannot compile for this Blackwell GPU: the torch (and its Triton) predate its architecture",
              remedies=(WHEEL_FOR_GPU,)),
    # The kernel image told in a user's words beside a Blackwell GPU ("plugin fails to load model on Windows (RTX 50-series)
    # – CUDA kernel image error"): the wheel predates sm_120, as every such thread of the corpus settled it
    Signature("no-kernel-image", r"(?i:\bkernel images?\b)", context=(BLACKWELL,), context_required=True, unless=(LOCATED_NO_KERNEL,),
              cause="the torch wheel has no kernels for this Blackwell GPU (sm_100/sm_120): it predates the architecture "
                    "(torch 2.7+ with CUDA 12.8 has them)",
              remedies=(WHEEL_FOR_GPU,)),
    # FasterTransformer's CUTLASS kernels (EETQ, TensorRT-LLM's and lmdeploy's copies) checking the GPU's architecture: "[FT]
    # [ERROR] Unsupported Arch Assertion fail: .../cutlass_preprocessors.cc" (EETQ's copy predating sm_90)
    Signature("no-kernel-image", r"\[FT\]\[ERROR\] Unsupported Arch\b",
              cause="the library's CUTLASS kernels (FasterTransformer's) have no code path for this GPU's architecture",
              remedies=(EXTENSION_FOR_GPU,)),
    # flash-attn 2 has kernels for sm_80+ only: "FlashAttention only supports Ampere GPUs or newer."; some of its kernels
    # (the backward pass of large head dims) for A100/H100 alone: "FlashAttention backward for head dim 256 with dropout
    # requires A100/A800 or H100/H800", its own check "Expected is_sm80 || is_sm90 to be true, but got false"
    # (csrc/flash_attn/flash_api.cpp, github.com/Dao-AILab/flash-attention)
    # (its ROCm build the same for AMD: "FlashAttention only supports AMD MI200 GPUs or newer", and its setup's check of the
    # card's gfx target: "gfx1100 is invalid or not supported by Flash-Attention", github.com/ROCm/flash-attention)
    Signature("no-kernel-image", r"FlashAttention only supports (Ampere|AMD MI200) GPUs or newer|"
                                 r"\bgfx\w+[^\n]{0,6}? +is invalid or not supported by Flash-?Attention|"
                                 r"FlashAttention backward for head dim \d+[^\n]{0,40} requires A100|"
                                 r"Expected is_sm8x \|\| is_sm90 to be true|Expected is_sm80 \|\| is_sm90 to be true",
              cause="flash-attn 2 has no kernels for this GPU's architecture (compute capability below 8.0, or an AMD GPU "
                    "before MI200)",
              remedies=(Remedy("Use the model's SDPA or eager attention on this GPU (transformers `attn_implementation=\"sdpa\"`), "
                               "or an Ampere or newer GPU", id="attention-sdpa"),)),
    Signature("driver-too-old", r"CUDA driver version is insufficient for CUDA runtime version|%s" % _runtime_error(35, "cudaErrorInsufficientDriver"),
              cause="the NVIDIA driver is older than the CUDA runtime bundled with torch or an extension",
              remedies=(DRIVER_UPGRADE, WHEEL_FOR_GPU)),
    Signature("driver-too-old", DRIVER_TOO_OLD_WARNING,
              frames=(r"torch/cuda/__init__\.py",),
              cause="the driver's CUDA version (1000*major+10*minor) is below torch's CUDA build",
              remedies=(DRIVER_UPGRADE, WHEEL_FOR_GPU)),
    # (the same retold without its version, as an issue's title: "RuntimeError: NVIDIA driver too old";
    # github.com/MIC-DKFZ/nnUNet/issues/2160)
    Signature("driver-too-old", r"\b(?i:NVIDIA driver) (on your system )?(is )?too old\b(?! \(found version)|"
                                # the runtime asking the driver for an API it does not have (cudaErrorCallRequiresNewerDriver:
                                # lmdeploy's stream-ordered allocator under a CUDA 11.4 driver)
                                r"API call is not supported in the installed CUDA driver|%s" % _runtime_error(36, "cudaErrorCallRequiresNewerDriver"),
              cause="the NVIDIA driver is older than the CUDA torch was built with",
              remedies=(DRIVER_UPGRADE, WHEEL_FOR_GPU)),
    # the NVIDIA container toolkit refusing an image whose CUDA is newer than the host's driver ("nvidia-container-cli:
    # requirement error: unsatisfied condition: cuda>=11.8, please update your driver to a newer version"; nvidia-docker
    # 1.0's words for it: "Error: unsupported CUDA version: driver 8.0 < image 9.0.176"; and where the image's
    # NVIDIA_REQUIRE_CUDA offers Tesla driver branches as alternatives, the last one it tried: "unsatisfied condition: brand =
    # tesla", Determined's troubleshooting docs: a driver too old for the CUDA 10 image)
    Signature("driver-too-old", r"requirement error: unsatisfied condition: (cuda>=?[\d.]+|brand ?= ?\w+)|"
                                r"unsupported CUDA version: driver [\d.]+ < image [\d.]+",
              cause="the host's NVIDIA driver is older than the CUDA the container image needs",
              remedies=CONTAINER_NEWER_THAN_DRIVER),
    # (the driver API's name for it: CUDA_ERROR_UNSUPPORTED_PTX_VERSION, numba's "cuLinkAddData results in ...")
    Signature("driver-too-old", r"the provided PTX was compiled with an unsupported toolchain|\bCUDA_ERROR_UNSUPPORTED_PTX_VERSION\b",
              cause="PTX from a newer CUDA toolkit than the driver supports (JIT needs the toolkit's full driver row)",
              remedies=(DRIVER_UPGRADE, WHEEL_FOR_GPU)),
    # The driver refusing code a compiler just produced (CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"): Triton's
    # bundled ptxas (CUDA 12.x) writes cubins a 470 driver cannot load (github.com/pytorch/pytorch: TRITON_PTXAS_PATH
    # pointed at the machine's own CUDA works around it)
    Signature("driver-too-old", r"device kernel image is invalid|CUDA_ERROR_INVALID_IMAGE",
              cause="the driver cannot load the kernels a newer CUDA toolkit compiled (Triton's own ptxas is newer than the "
                    "driver): update the driver, or point TRITON_PTXAS_PATH at a ptxas of the driver's CUDA",
              remedies=(DRIVER_UPGRADE,)),
    # (and stable-diffusion-webui's start-up test saying the same: Forge's README sent users of its CUDA 12.4 package whose
    # driver does not run 12.4 to its 12.1 package)
    Signature("driver-too-old", CUDA_UNAVAILABLE + "|" + WEBUI_CUDA_TEST, unless=CHECKPOINT_SAVED_ON_CUDA,
              confirmed_by=("cuda-compat:driver-too-old",),
              cause="a driver older than torch's CUDA build: torch then finds no usable device instead of failing",
              remedies=(DRIVER_UPGRADE, WHEEL_FOR_GPU)),
    Signature("no-cuda-device", r"Found no NVIDIA driver on your system|"
                                r"\blibcuda\.so(\.1)?: cannot open shared object file",  # the driver's own library, not the toolkit's
              cause="no NVIDIA driver (libcuda) is installed or loaded",
              remedies=(VISIBLE_GPU,)),
    # torch's ROCm build finding no AMD GPU ("RuntimeError: No HIP GPUs are available"): the ROCm driver and libraries not
    # reachable from this process (a container without /dev/kfd and /dev/dri, a user outside the render and video groups,
    # compute nodes without ROCm: Determined's known issue), HIP_VISIBLE_DEVICES hiding them, or no AMD GPU at all
    Signature("no-cuda-device", r"No HIP GPUs are available",
              cause="this ROCm torch sees no AMD GPU: the ROCm driver is not reachable from this process (a container "
                    "without /dev/kfd and /dev/dri, a user outside the render and video groups), HIP_VISIBLE_DEVICES hides "
                    "them, or the machine has none",
              remedies=(Remedy("Give the process the AMD GPU: `rocminfo` must list it; in a container pass `--device /dev/kfd "
                               "--device /dev/dri` (and `--group-add video`), add the user to the render and video groups, "
                               "unset HIP_VISIBLE_DEVICES; on a machine without one, run on the CPU", id="rocm-gpu-visible"),)),
    # nvidia-smi unable to reach the kernel driver: its module is not loaded (a kernel updated without its DKMS build, a
    # driver installed but not yet loaded)
    Signature("no-cuda-device", r"NVIDIA-SMI has failed because it couldn'?t communicate with the NVIDIA driver",
              cause="the NVIDIA kernel driver is not loaded: a kernel updated without its module, or a driver not installed",
              remedies=(Remedy("Reinstall the NVIDIA driver for the running kernel (its DKMS module) and reboot; `nvidia-smi` "
                               "must list the GPU", id="driver-module"),)),
    # CUDA failing to start although a driver is there, in torch's words: cuInit failing ("CUDA driver initialization
    # failed, you might not have a CUDA gpu"), cudaErrorUnknown at start-up ("CUDA unknown error - this may be due to an
    # incorrectly set up environment", the nvidia_uvm module lost after a suspend, or a container's device files), or the
    # GPU held in exclusive-process mode by another process ("CUDA-capable device(s) is/are busy or unavailable")
    # (and torch's own probe of the device count failing with no number said: "Unexpected error from cudaGetDeviceCount().
    # Did you run some cuda functions before calling NumCudaDevices()", where the readings of its numbered errors, 804's
    # and 803's, find none: a GPU the runtime cannot start, an NVSwitch system's fabric manager not running, a container's
    # stub libcuda, an enclave or VM without the GPU)
    Signature("cuda-init-failed", r"Unexpected error from cudaGetDeviceCount\(\)(?![^\n]*\bError \d+:)",
              unless=(r"Error (804|803|500|999|802|100|35):",),
              cause="CUDA could not count the GPUs: the runtime cannot start on this machine (an NVSwitch system's fabric manager "
                    "not running, a container without the GPU or with a stub libcuda, a VM or enclave without it)",
              remedies=(Remedy("Run `nvidia-smi` and `python -c \"import torch; torch.cuda.init()\"` for the numbered error; on an "
                               "NVSwitch machine (HGX, H100/H200 SXM) start nvidia-fabricmanager; in a container, run it with the "
                               "GPUs (--gpus all) and without a CUDA stub library on the path", id="cuda-device-count"),)),
    Signature("cuda-init-failed", r"CUDA driver initialization failed, you might not have a CUDA gpu|"
                                  r"CUDA unknown error - this may be due to an incorrectly set up environment|"
                                  r"CUDA-capable device\(s\) is/are busy or unavailable",
              cause="CUDA cannot start on this machine although its driver is there: the driver's kernel modules (nvidia_uvm) "
                    "lost after a suspend or update, a container without the GPU's device files, or a GPU another process "
                    "holds in exclusive mode",
              remedies=(Remedy("Run `nvidia-smi`; reload the driver's modules (`sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`) "
                               "or reboot; in a container, start it with the GPUs (--gpus all); set the GPU's compute mode to "
                               "default (`nvidia-smi -c 0`)", id="restart-cuda"),)),
    # The container layer's own words for a container given no GPU: Docker without the NVIDIA runtime ("could not select
    # device driver "" with capabilities: [[gpu]]"), the toolkit under WSL finding no GPU adapter (WSL1, or no Windows
    # driver: "nvidia-container-cli: initialization error: WSL environment detected but no adapters were found"), vLLM in
    # such a container ("No platform detected, vLLM is running on UnspecifiedPlatform"); the toolkit's hook finding no driver
    # library on the host at all ("nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot
    # open shared object file": `--gpus all` on a Mac or a host without the NVIDIA driver; cog's PR #1038)
    # (older Docker prints the capabilities once bracketed: "with capabilities: [gpu]")
    Signature("no-cuda-device", r"could not select device driver \"[^\"\n]*\" with capabilities: \[\[?gpu\]\]?|"
                                r"WSL environment detected but no adapters were found|"
                                r"nvidia-container-cli: initialization error: load library failed: libnvidia-ml\.so[.\d]*: cannot open|"
                                r"No platform detected, vLLM is running on UnspecifiedPlatform",
              cause="the container was given no GPU: the host's Docker or Kubernetes has no NVIDIA runtime for it (or no NVIDIA "
                    "GPU at all; under WSL, WSL 1 or no Windows driver)",
              remedies=(CONTAINER_TOOLKIT, VISIBLE_GPU)),
    # The toolkit in its CSV mode (Jetson, no NVML) refusing Docker's --gpus flag, which drives its hook directly
    # (github.com/NVIDIA/nvidia-container-runtime README, "Notes on using the docker CLI": use --runtime=nvidia)
    Signature("no-cuda-device", r"invoking the NVIDIA Container Runtime Hook directly \(e\.g\. specifying the docker --gpus flag\) is "
                                r"not supported",
              cause="on this host (a Jetson: the toolkit's CSV mode) Docker's --gpus flag cannot give the container the GPU; only "
                    "the NVIDIA container runtime can",
              remedies=(Remedy("Start the container with `--runtime=nvidia` instead of `--gpus`, or make nvidia Docker's "
                               "default runtime (`\"default-runtime\": \"nvidia\"` in /etc/docker/daemon.json)",
                               id="nvidia-runtime-flag"), CONTAINER_TOOLKIT)),
    # NVML that cannot reach the GPU from inside a container (systemd reloading the cgroups the runtime set up, a kubelet
    # CPU manager rewriting them, `no-cgroups` in the toolkit's config): "Failed to initialize NVML: Unknown Error"
    # (github.com/NVIDIA/nvidia-container-toolkit issue 48)
    Signature("cuda-init-failed", r"Failed to initialize NVML: Unknown Error",
              cause="the container lost access to the GPU's device files (its cgroup rules rewritten by a systemd reload or the "
                    "kubelet's CPU manager after it started)",
              remedies=(Remedy("Restart the container; to keep it from recurring, give it the device nodes explicitly (`--device "
                               "/dev/nvidia0 --device /dev/nvidiactl --device /dev/nvidia-uvm`) or use the toolkit's CDI mode, and "
                               "keep `no-cgroups = false` in /etc/nvidia-container-runtime/config.toml", id="container-cgroups"),
                        CONTAINER_TOOLKIT)),
    Signature("cuda-visible-devices-hides-all", r"no CUDA-capable device is detected|No CUDA GPUs are available",
              cause="CUDA sees no GPU: CUDA_VISIBLE_DEVICES hides them, the container lacks --gpus, or there is none",
              remedies=(VISIBLE_GPU,)),
    # CUDA's forward compatibility (the cuda-compat libraries an image ships, NGC's among them) runs on data-center GPUs
    # only; elsewhere it fails as cudaErrorCompatNotSupportedOnDevice (804): the image's CUDA is newer than the host's
    # driver (docs.nvidia.com/deploy/cuda-compatibility: forward compatibility, supported GPUs)
    Signature("driver-too-old", r"forward compatibility was attempted on non supported HW|%s" % _runtime_error(804, "cudaErrorCompatNotSupportedOnDevice"),
              cause="a CUDA newer than the host's driver was reached through forward compatibility, which this GPU does not "
                    "support (data-center GPUs only): the container image's CUDA is newer than the driver",
              remedies=CONTAINER_NEWER_THAN_DRIVER),
    # cudaGetDeviceCount failing with cudaErrorSymbolNotFound (500): the driver API a container or WSL sees lacks a symbol the
    # runtime needs (a GPU passthrough layer older than the host's driver, Docker Desktop's among them)
    Signature("driver-library-mismatch", r"cudaGetDeviceCount\(\)[^\n]*Error 500: named symbol not found|%s" % _runtime_error(500, "cudaErrorSymbolNotFound"),
              cause="the CUDA driver the process sees lacks a symbol its runtime needs: a container or WSL GPU layer out of step "
                    "with the host's driver",
              remedies=(Remedy("Update the host's NVIDIA driver and the GPU layer the process runs under together (Docker Desktop "
                               "or the NVIDIA container toolkit, WSL), then restart them", id="update-gpu-passthrough"),)),
    # (as NVML says it, and as the container toolkit retells it in lowercase: "nvidia-container-cli: initialization error: nvml
    # error: driver/library version mismatch: unknown")
    Signature("driver-library-mismatch", r"(?i:Driver/library version mismatch)|system has unsupported display driver / cuda driver combination|"
                                         r"%s" % _runtime_error(803, "cudaErrorSystemDriverMismatch"),
              cause="the NVIDIA kernel module and user-space library differ, usually until a reboot after a driver update",
              remedies=(REBOOT,)),
)
