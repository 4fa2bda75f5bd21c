"""cublas: can every visible GPU start cuBLAS and cuDNN, and do its fp32 / fp16 /
bf16 GEMMs and a small convolution return the right numbers?

Each CUDA device is probed on its own (one failing GPU must not hide the
others): the cuBLAS handle (`torch.cuda.current_blas_handle()`), a 64×64 GEMM
per dtype compared with an fp32 CPU reference on the same rounded inputs, and a
small cuDNN conv2d. Free/total device memory is recorded at the start and right
after any failure, because `CUBLAS_STATUS_NOT_INITIALIZED` is most often an
out-of-memory GPU, not a broken install (seed 002: some processes of a multi-GPU
A100 xDiT run failed with it): then the finding says so (`cublas-init-oom`); the
device-memory check records each device's memory on its own.


One module per job: `probe` (the worker side), `rules` (the findings and remedies),
`signatures` (how its failures read in a traceback).
"""

from __future__ import annotations

from envdoctor.target.model import Check

from .probe import ID, probe
from .rules import diagnose, summarize
from .signatures import SIGNATURES

CHECK = Check(
    id=ID,
    title="cuBLAS / cuDNN on each GPU",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    timeout_s=120.0,  # creating contexts, cuBLAS handles and loading cuDNN on several GPUs
    order=50,
    signatures=SIGNATURES,
)
