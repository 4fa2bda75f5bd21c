"""How cublas failures read in a traceback (for `explain`), and what can be said from the text alone."""

from __future__ import annotations

from envdoctor.target.model import Remedy, Signature

from ..cuda_compat.signatures import BUILD_DOES_NOT_FIT
from ..torch_install import CUDNN_OWN_LOADER, CUDNN_SUB_LIBRARY

# cuBLAS/cuDNN status names and torch's wording, e.g.
#   `CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)``
#   (github.com/QwenLM/Qwen/issues/120, github.com/OpenBMB/VisCPM/issues/3 — both traced to a full GPU),
#   `CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, ...)``,
#   `cuDNN error: CUDNN_STATUS_NOT_INITIALIZED`, and the allocator's
#   `CUDA out of memory. Tried to allocate ...` (torch.OutOfMemoryError / torch.cuda.OutOfMemoryError).
# What `explain` can say from a traceback alone; the live findings add this machine's GPUs and libraries.
EXPLAIN_REMEDIES = (
    Remedy("Look at the GPU's memory first (`nvidia-smi`): another process, another rank on the same GPU or this run's own "
           "model can leave cuBLAS no room for its handle; free it or lower the batch size", id="free-gpu"),
    Remedy("Check the driver (`nvidia-smi` must list the GPU without errors) and that no other CUDA toolkit's libcublas "
           "shadows torch's own (LD_LIBRARY_PATH, LD_PRELOAD)", id="ld-library-path"),
    Remedy("Reinstall the torch CUDA wheel and its nvidia-* packages so that torch and cuBLAS match", id="reinstall-torch-cuda"),
)

LIBRARY_FOR_THIS_GPU = Remedy("Install the release of the library that failed (CTranslate2, onnxruntime, ...) built for this GPU "
                              "and the CUDA/cuDNN beside it, or the cuDNN and CUDA libraries that release was built for",
                              id="library-cuda-match")
LIBRARY_REMEDIES = (LIBRARY_FOR_THIS_GPU, EXPLAIN_REMEDIES[1])  # its release first, then what shadows its libraries

# A cuBLAS/cuDNN error after a device-side assert is that assert's echo: CUDA reports a kernel's failure at the next
# API call, often cublasCreate (an embedding index out of range: github.com/huggingface/transformers/issues/6263).
AFTER_ASSERT = (r"device-side assert|Assertion `[^`]*` failed|index out of range|indexSelect\w*Kernel|srcIndex < srcSelectDimSize|"
                # (an illegal memory access before it poisons the context the same way: a kernel's own indexing)
                r"an illegal memory access was encountered")
# A GEMM whose operands' shapes do not fit: on the CPU the same call says so ("mat1 and mat2 shapes cannot be multiplied
# (8x4 and 5x11)"; before 1.7 "size mismatch, m1: [...], m2: [...]"), on CUDA it reaches cuBLAS as INVALID_VALUE
# (github.com/pytorch/pytorch/issues/64920): the calling code's shapes, not cuBLAS
SHAPES_DO_NOT_FIT = r"shapes cannot be multiplied|size mismatch, m1:|(?i:mismatched (tensor )?shapes|shape mismatch)"

# cuBLAS's libraries named out of step: another CUDA's libcublas or a cuBLAS symbol missing
CUBLAS_LIBRARIES = r"libcublas\w*\.so[.\d]*\S*:? (cannot open|undefined symbol|version)|cublas\w*\.dll|undefined symbol:? ?cublas|LD_LIBRARY_PATH"

# cuDNN at run time another than torch's build expects (a system or conda cuDNN found first on the library path)
CUDNN_NOT_TORCHS = "the libcudnn found at run time is not the one torch was built against"

# Beside an out-of-memory hint these are device-memory's (its signatures need that context and outrank these).
SIGNATURES = (
    # cuBLAS failing to create its handle is, as threads settle it, most often a GPU with no memory left for it
    # (device-memory reads it so); it is cuBLAS's own only where the log shows its libraries out of step
    Signature("cublas-init-failed", r"CUBLAS_STATUS_NOT_INITIALIZED", context=(CUBLAS_LIBRARIES,), context_required=True,
              cause="cuBLAS could not start: broken or mismatched cuBLAS libraries (another CUDA's libcublas found first), or "
                    "a GPU out of memory", remedies=EXPLAIN_REMEDIES[1:] + EXPLAIN_REMEDIES[:1], unless=(AFTER_ASSERT,)),
    # (and without such a line, the second reading after device-memory's, whose pattern reads the call too: both are
    # offered, and each check's probe tries its own on the live stack)
    Signature("cublas-init-failed", r"(CU|HIP)BLAS_STATUS_NOT_INITIALIZED", unless=(AFTER_ASSERT, BUILD_DOES_NOT_FIT),
              cause="cuBLAS could not start: broken or mismatched cuBLAS libraries (another CUDA's libcublas found first)",
              remedies=EXPLAIN_REMEDIES[1:]),
    Signature("cublas-init-failed", r"(CU|HIP)BLAS_STATUS_ALLOC_FAILED",
              cause="cuBLAS could not allocate its workspace: the GPU is (nearly) out of memory, or the allocation is "
                    "refused by a mismatched runtime", remedies=EXPLAIN_REMEDIES, unless=(AFTER_ASSERT,)),
    # (torch's ROCm builds say the same through hipBLAS: "CUDA error: HIPBLAS_STATUS_NOT_SUPPORTED when calling ...", hipBLASLt
    # on an RDNA GPU ROCm 6.1 does not support: github.com/Comfy-Org/ComfyUI/issues/3698)
    Signature("gemm-failed", r"(CU|HIP)BLAS_STATUS_(EXECUTION_FAILED|INVALID_VALUE|INTERNAL_ERROR|ARCH_MISMATCH|MAPPING_ERROR|NOT_SUPPORTED)",
              cause="a cuBLAS GEMM failed: a cuBLAS that does not match torch or the driver (another CUDA toolkit on "
                    "LD_LIBRARY_PATH), or an earlier asynchronous CUDA error", remedies=EXPLAIN_REMEDIES[1:],
              unless=(AFTER_ASSERT, SHAPES_DO_NOT_FIT, BUILD_DOES_NOT_FIT)),
    # BAD_PARAM is cuDNN refusing its caller's arguments (a non-contiguous or oversized input), not a broken cuDNN
    Signature("cudnn-failed", r"(?<!cudnn_status: )CUDNN_STATUS_(?!BAD_PARAM)[A-Z_]+",
              cause="cuDNN failed (not initialised, internal error, execution failed): out of memory, or a cuDNN that does "
                    "not match the torch build", remedies=EXPLAIN_REMEDIES, unless=(AFTER_ASSERT, BUILD_DOES_NOT_FIT)),
    # cuDNN's frontend refusing one execution plan ("UserWarning: Plan failed with a cudnnException:
    # CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED",
    # torch 2.3.0's convolutions; the frontend's other descriptors say "cudnn_status:" alike): torch tries the next plan, so
    # it explains a run only where the run stopped on it
    Signature("cudnn-failed", r"cudnn_status: CUDNN_STATUS_(?!BAD_PARAM)[A-Z_]+", last_only=True,
              cause="cuDNN refused an execution plan: a cuDNN that does not match the torch build (torch 2.3.0 warns so on "
                    "every convolution; 2.3.1 does not)", remedies=EXPLAIN_REMEDIES, unless=(AFTER_ASSERT,)),
    # torch's own check of the cuDNN it loads against the one it was built with (torch/backends/cudnn/__init__.py: "cuDNN
    # version incompatibility: PyTorch was compiled against X but found runtime version Y"; before 1.8 "cuDNN version
    # mismatch: PyTorch was compiled against 7102 but linked against 7605")
    Signature("cudnn-failed", r"cuDNN version (mismatch|incompatibility): PyTorch was compiled\s+against \(?[\d, ]+\)? but "
                              r"(linked against|found runtime version)",
              cause="torch loaded another cuDNN than the one it was built with (a conda or system cuDNN first on the library "
                    "path, or a pip nvidia-cudnn wheel of another release)", remedies=EXPLAIN_REMEDIES[1:] + EXPLAIN_REMEDIES[:1]),
    # cuDNN's v8 API finding no engine for a convolution: torch's "GET was unable to find an engine to execute this
    # computation" (a cuDNN other than torch's own loaded first: LD_LIBRARY_PATH, a system cuDNN; or no memory left)
    Signature("cudnn-failed", r"(GET|FIND) was unable to find an engine to execute this computation",
              cause="cuDNN found no engine for this convolution: a cuDNN other than torch's own was loaded (LD_LIBRARY_PATH, a "
                    "system cuDNN), or too little GPU memory for any engine's workspace", remedies=EXPLAIN_REMEDIES[1:] + EXPLAIN_REMEDIES[:1]),
    # MIOpen, cuDNN's counterpart in torch's ROCm builds, failing to compile or find a kernel for a convolution
    # ("RuntimeError: miopenStatusUnknownError" after "MIOpen(HIP): Error [Compile] ... HIPRTC_ERROR_COMPILATION"; "MIOpen
    # Error: .../convolutionocl.cpp:275: No suitable algorithm was found to execute the required convolution")
    Signature("cudnn-failed", r"\bmiopenStatus(?!Success\b)\w+|MIOpen Error: [^\n]*No suitable algorithm was found",
              unless=(AFTER_ASSERT,),
              cause="MIOpen (ROCm's cuDNN) could not compile or find a kernel for this operation on this GPU: a ROCm or MIOpen "
                    "release that does not cover the GPU's architecture, or its kernel cache out of step",
              remedies=(Remedy("Install the torch ROCm build for this GPU and ROCm release, clear MIOpen's kernel cache "
                               "(~/.config/miopen, ~/.cache/miopen), or turn cuDNN/MIOpen off for the run "
                               "(`torch.backends.cudnn.enabled = False`)", id="miopen-for-gpu"),)),
    # cuDNN's frontend (torch 2.5+'s cuDNN attention and convolutions) refusing the graph: "RuntimeError: cuDNN Frontend error:
    # [cudnn_frontend] Error: No execution plans support the graph." (the cuDNN SDPA backend on a GPU or cuDNN it has no plan
    # for; turning that backend off, `torch.backends.cuda.enable_cudnn_sdp(False)`, or another torch release avoids it)
    # (and torch's own check on the graph it built for cuDNN attention, aten/src/ATen/native/cudnn/MHA.cpp: "Expected
    # mha_graph->execute(handle, variant_pack, workspace_ptr.get()).is_good() to be true, but got false", which
    # ParaAttention's HunyuanVideo guide meets on a rank and answers with enable_cudnn_sdp(False))
    Signature("cudnn-failed", r"cuDNN Frontend error|\bmha_graph->(execute|build_plans|validate)\(", unless=(AFTER_ASSERT,),
              cause="cuDNN's frontend found no execution plan for this attention or convolution: a cuDNN release or GPU its "
                    "plans do not cover",
              remedies=(Remedy("Turn torch's cuDNN attention off (`torch.backends.cuda.enable_cudnn_sdp(False)`) or install a "
                               "torch release whose cuDNN has plans for this GPU", id="cudnn-sdp-off"),) + EXPLAIN_REMEDIES[1:]),
    # Another GPU library's own cuBLAS and cuDNN (CTranslate2, which faster-whisper runs on): "cuBLAS failed with status
    # CUBLAS_STATUS_NOT_SUPPORTED" on a GPU newer than its CUDA, "Could not load library cudnn_ops_infer64_8.dll" where the
    # cuDNN it was built for is absent (github.com/SYSTRAN/faster-whisper: cuDNN 8 for CTranslate2 3.x, cuDNN 9 for 4.x)
    Signature("gemm-failed", r"cuBLAS failed with status CUBLAS_STATUS_\w+",
              cause="the library's own cuBLAS refused the call: a release built for an older CUDA than this GPU needs, or a compute "
                    "type this GPU's cuBLAS has no kernel for", remedies=LIBRARY_REMEDIES,
              unless=(AFTER_ASSERT,)),
    # (and as CTranslate2 says it on Linux: "Could not load library libcudnn_ops_infer.so.8", "Unable to load any of
    # {libcudnn_ops.so.9.1.0, ...}": github.com/m-bain/whisperX/issues/901)
    # (CTranslate2's own loader, for cuBLAS as for cuDNN: "Library cublas64_12.dll is not found or cannot be loaded", a
    # faster-whisper built for CUDA 12 beside torch's CUDA 11 libraries)
    Signature("cudnn-failed", CUDNN_OWN_LOADER + r"\.(dll|so[.\d]*)|" + CUDNN_SUB_LIBRARY + r"|Unable to load any of \{libcudnn\w*|"
                              r"Library (lib)?(cublas|cudnn)\w*\.(dll|so[.\d]*) is not found or cannot be loaded",
              cause="the cuDNN a library was built for is not where it looks (not installed, another major version, or a DLL it "
                    "needs, such as zlibwapi, missing)", remedies=LIBRARY_REMEDIES),
    Signature("cudnn-failed", r"cuDNN version incompatibility",
              cause=CUDNN_NOT_TORCHS, remedies=EXPLAIN_REMEDIES[1:]),
    # (and a cuDNN function the loaded libcudnn lacks: "undefined symbol: cudnnSetConvolutionGroupCount while running with
    # cuDNN 7.0.3", an older cuDNN from a conda `cuda` package or LD_LIBRARY_PATH found before the one torch needs)
    Signature("cudnn-failed", r"undefined symbol:? ?cudnn[A-Z]\w+", cause=CUDNN_NOT_TORCHS, remedies=EXPLAIN_REMEDIES[1:]),
)
