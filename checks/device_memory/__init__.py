"""device-memory: is there memory to run in? Free and total memory of every selected
GPU, who holds it, whether a small allocation still succeeds there, and how much host
RAM is left.

Out of memory rarely says so: on a full GPU `cublasCreate` fails with
CUBLAS_STATUS_NOT_INITIALIZED or CUBLAS_STATUS_ALLOC_FAILED, cuDNN with
CUDNN_STATUS_ALLOC_FAILED, and creating the CUDA context itself with `CUDA error: out of
memory` (seed 002: some processes of a multi-GPU A100 run failed with
CUBLAS_STATUS_NOT_INITIALIZED). The cublas check reads memory when a handle fails; this
check measures each device on its own, whatever else passes:

- `torch.cuda.mem_get_info(i)` (free/total as the driver sees them, this worker's own
  CUDA context included) after releasing what this worker's caching allocator keeps
  (`torch.cuda.memory_reserved`, left by earlier checks in the same worker);
- a 64 MiB allocation, freed at once: the smallest real test that memory can be had;
- the processes holding GPU memory (`nvidia-smi --query-compute-apps`), mapped onto
  torch's device numbers through the GPU UUIDs (`nvidia-smi --query-gpu`).

Only when a CUDA device is selected: on a machine without one the probe reads
/proc/meminfo and starts no process.


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
    title="GPU and host memory",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    timeout_s=120.0,  # the first CUDA initialisation and one context per GPU
    order=55,  # after cublas (50), before apex (60)
    signatures=SIGNATURES,
)
