"""What an error involves, read from its text: the operation, the dtypes, the device,
the library whose code raised it. Pure functions; the probes' op names are the ones
used here, so a diagnosis can be set beside the live facts that confirm it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.pipeline.explain.context import LogContext
from envdoctor.pipeline.explain.spelling import canonical, dtypes_in
from envdoctor.pipeline.explain.tracebacks import Frame, RaisedError

# torch's kernel names in "not implemented for 'Half'" -> the probes' op names.
KERNEL_OPS = {
    "LayerNormKernelImpl": "layer_norm", "layer_norm": "layer_norm", "addmm_impl_cpu_": "linear", "addmm": "linear",
    "addmv_impl_cpu": "linear", "mm": "matmul", "bmm": "bmm", "baddbmm_cpu": "bmm", "slow_conv2d_cpu": "conv2d",
    "slow_conv2d": "conv2d", "GroupNormKernelImpl": "group_norm", "softmax_lastdim_kernel_impl": "softmax",
    "softmax": "softmax", "log_softmax_lastdim_kernel_impl": "softmax",
}
# torch functions and module files seen as the innermost torch frame -> op.
FUNCTION_OPS = {
    "layer_norm": "layer_norm", "group_norm": "group_norm", "linear": "linear", "conv2d": "conv2d", "conv1d": "conv2d",
    "_conv_forward": "conv2d", "softmax": "softmax", "scaled_dot_product_attention": "scaled_dot_product_attention",
    "rms_norm": "rms_norm", "matmul": "matmul", "bmm": "bmm", "baddbmm": "bmm",
}
_MODULE_FILE_OPS = {"torch/nn/modules/linear.py": "linear", "torch/nn/modules/conv.py": "conv2d"}
_MESSAGE_OPS = (
    (re.compile(r"mat1 and mat2|m1 and m2|addmm|\bmm\b"), "linear"),
    (re.compile(r"bias type"), "conv2d_bias"),
    (re.compile(r"Input type \(\w+\) and weight type"), "conv2d"),
    (re.compile(r"mixed dtype \(CPU\)"), "layer_norm"),
    (re.compile(r"Promotion for Float8"), "add"),
    (re.compile(r"cublas\w*Gemm\w*|cublasSgemm|cublasLt"), "matmul"),
    (re.compile(r"\bCUFFT_[A-Z_]+|\bcuFFT error"), "fft"),
)
_KERNEL = re.compile(r"(?<!\w)\"?(\w{1,80})\"? not implemented for '")  # bounded: linear on a long word
_TORCH_FRAME = re.compile(r"(?:^|/)torch/")
_SITE = re.compile(r"(?:site|dist)-packages/(?P<pkg>[\w.-]+)/(?P<rest>.*)$")
_MODEL = re.compile(r"^models/(\w+)/")
# (ROCm's torch names its AMD GPUs `cuda` too; HIP is its CUDA)
_CUDA_WORDS = re.compile(r"cuda|CUDA|CUBLAS|cuBLAS|cublas|CUDNN|cuDNN|cudnn|CUFFT|cuFFT|NCCL|GPU|\bHIP\b|\bhip[A-Z]\w+|ROCm")
_XPU_WORDS = re.compile(r"\bXPU\b|\bxpu\b")  # Intel's GPUs
_MPS_WORDS = re.compile(r"\bMPS\b|\bmps\b")  # Apple's GPUs
_CPU_WORDS = re.compile(r"_cpu\b|_cpu_|\(CPU\)|\bCPU\b|\bcpu\b")
# Kernels that only ever failed this way on the CPU (CUDA has had their half versions for years).
_CPU_KERNELS = ("LayerNormKernelImpl", "addmm_impl_cpu_", "slow_conv2d_cpu", "GroupNormKernelImpl", "softmax_lastdim_kernel_impl")


@dataclass(frozen=True)
class Involved:
    op: Optional[str] = None
    dtypes: Tuple[str, ...] = ()
    device: Optional[str] = None
    library: Optional[str] = None  # "apex", "transformers (clip)", "peft"
    torch: Optional[str] = None  # as the log names it

    def to_dict(self) -> Dict[str, Any]:
        return {"op": self.op, "dtypes": list(self.dtypes), "device": self.device, "library": self.library, "torch": self.torch}

    def words(self) -> str:
        """'layer_norm · float16 · cpu · transformers (clip) · torch 2.0.1'"""
        parts = [self.op or "", "/".join(self.dtypes), self.device or "", self.library or "",
                 "torch %s" % self.torch if self.torch else ""]
        return " · ".join(p for p in parts if p)


def library_of(path: str) -> Optional[str]:
    """The installed package a frame belongs to ("transformers (clip)"), None for torch, the
    standard library and the user's own files."""
    m = _SITE.search(path)
    if not m:
        return None
    pkg = m.group("pkg").split(".")[0]
    if pkg in ("torch", "typing_extensions", "accelerate") or pkg.startswith("_"):
        return None  # the code everything runs through: not the library that raised
    model = _MODEL.match(m.group("rest"))
    return "%s (%s)" % (pkg, model.group(1)) if model and pkg in ("transformers", "diffusers") else pkg


def _op(text: str, frames: List[Frame]) -> Optional[str]:
    m = _KERNEL.search(text)
    if m:
        return KERNEL_OPS.get(m.group(1), m.group(1))
    for frame in reversed(frames):
        if _TORCH_FRAME.search(frame.path):
            name = frame.function.split("(")[0].split(".")[-1]
            if name in FUNCTION_OPS:
                return FUNCTION_OPS[name]
            for tail, op in _MODULE_FILE_OPS.items():
                if frame.path.endswith(tail):
                    return op
    for pattern, op in _MESSAGE_OPS:
        if pattern.search(text):
            return op
    return None


def _device(text: str, context: LogContext) -> Optional[str]:
    m = _KERNEL.search(text)
    if m and m.group(1) in _CPU_KERNELS:
        return "cpu"
    if _XPU_WORDS.search(text):
        return "xpu"
    if _MPS_WORDS.search(text):
        return "mps"
    if _CUDA_WORDS.search(text):
        return "cuda"
    if _CPU_WORDS.search(text):
        return "cpu"
    return context.device


def involved(error: RaisedError, context: LogContext) -> Involved:
    text = canonical(error.text)
    library = next((lib for lib in (library_of(f.path) for f in reversed(error.frames)) if lib), None)
    return Involved(_op(text, error.frames), tuple(dtypes_in(text)), _device(text, context), library, context.torch)
