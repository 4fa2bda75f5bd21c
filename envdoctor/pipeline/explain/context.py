"""What a log says about the run besides its errors: which torch, which device, which
precision was asked, whether memory ran out. Pure functions over the reader's lines."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from envdoctor.pipeline.explain.reader import LOOSE_CHARS, LogLine

# (not a start-up timing: stable-diffusion-webui's "Startup time: ... (import torch: 3.3s, ...)")
_TORCH_VERSION = re.compile(
    r"(?:(?<!import )\btorch(?:==|[ :=_-]+(?:version)?[ :=]*)|PyTorch version:? *|torch-)v?"
    r"(?P<v>\d+\.\d+(?:\.\d+)?(?:(?!m?s\b)[a-z]+\d*)?(?:[.+]\w+)*)(?![\w.])", re.I)
_DEVICE_CPU = re.compile(r"(?:Using|using|[Dd]evice|train_device|--device)[ :=\"']+cpu\b|device\(type='cpu'\)|running on cpu|on CPU\b")
_DEVICE_CUDA = re.compile(r"(?:Using|using|[Dd]evice|train_device|--device)[ :=\"']+cuda|device\(type='cuda'|cuda:\d")
_GPU_NAME = re.compile(r"\b(?:NVIDIA |Tesla |Quadro |GeForce )?(?:A100|H100|H200|A10G|A10|A6000|L40S?|L4|T4|V100|P100|K80|P40|M40|"
                       r"RTX ?\d{4}(?: Ti)?|GTX ?\d{3,4}(?: Ti)?)\b")
_PRECISION = re.compile(r"--mixed_precision[ =](?P<a>\w+)|mixed_precision[\"']?: *[\"']?(?P<b>fp16|bf16|fp8|no)\b|"
                        r"--(?P<c>fp16|bf16)\b|\b(?P<d>fp16|bf16)[\"']?[ :=]+[\"']?(?:True|true)\b")
_OOM = re.compile(r"out of memory|OutOfMemory|Tried to allocate|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|"
                  r"reserved in total by PyTorch|memory (?:is )?(?:full|exhausted)")


@dataclass
class LogContext:
    torch: Optional[str] = None  # the first torch version the log names
    device: Optional[str] = None  # "cpu" or "cuda": what the run said it used
    gpus: List[str] = field(default_factory=list)
    precision: List[str] = field(default_factory=list)  # "fp16", "bf16" asked by flags or configs
    out_of_memory: bool = False

    def to_dict(self) -> Dict[str, Any]:
        return {"torch": self.torch, "device": self.device, "gpus": list(self.gpus), "precision": list(self.precision),
                "out_of_memory": self.out_of_memory}


def read_context(lines: Sequence[LogLine]) -> LogContext:
    ctx = LogContext()
    for line in lines:
        text = line.text[:LOOSE_CHARS]
        if ctx.torch is None:
            m = _TORCH_VERSION.search(text)
            if m and not text.lstrip().startswith("File "):
                ctx.torch = m.group("v")
        if ctx.device is None:
            if _DEVICE_CPU.search(text):
                ctx.device = "cpu"
            elif _DEVICE_CUDA.search(text):
                ctx.device = "cuda"
        for m in _GPU_NAME.finditer(text):
            if m.group(0) not in ctx.gpus:
                ctx.gpus.append(m.group(0))
        for m in _PRECISION.finditer(text):
            value = next(v for v in m.groups() if v)
            if value not in ctx.precision:
                ctx.precision.append(value)
        ctx.out_of_memory = ctx.out_of_memory or bool(_OOM.search(text))
    return ctx
