"""cuda-compat: does the torch CUDA build fit this NVIDIA driver, and does it carry
kernels for every GPU? Reads the driver without torch (nvidia-smi, /proc, libcuda
through ctypes), so it also says which wheel to install when torch is missing or a
CPU-only build sits on a GPU machine.

Data (minimum drivers, arch lists, wheels) come from envdoctor/target/cuda_tables.py,
built from docs/facts.md §1–§3; the error texts in SIGNATURES from §6.


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
    title="CUDA build vs driver vs GPU",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    requires_torch=False,
    order=40,
    signatures=SIGNATURES,
)
