"""apex: is the `apex` in this environment NVIDIA apex at all, are its compiled
extensions there and built for this torch, and do its fused norms run on each GPU
in every fp32/fp16/bf16 input × weight pair?

Seed 002 (xDiT, PixArt-alpha, A100, torch 2.4.0): `expected scalar type Float but
found Half` inside apex's FusedRMSNormAffineFunction, reached through transformers'
T5, which swaps its T5LayerNorm for apex FusedRMSNorm whenever
`from apex.normalization import FusedRMSNorm` imports (docs/facts.md §5). The
"fix" that was reported, `pip install --upgrade apex`, replaced NVIDIA apex with
the unrelated PyPI package named apex (a Pyramid web toolkit, 0.9.x) whose import
fails, so transformers fell back to its own T5LayerNorm (docs/facts.md §7 "apex").

The probe tells the two apart without trusting either: distribution metadata
(version, summary, files), the package directory's contents, the compiled
modules found by `importlib.util.find_spec` before anything is imported, and
only then the imports themselves. Fused ops run only on CUDA devices: on CPU
inputs FusedRMSNorm/FusedLayerNorm fall back to plain PyTorch (§5 "Runtime
behaviour"), so a CPU run would prove nothing.


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
    title="NVIDIA apex",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    requires_torch=False,
    timeout_s=120,  # first CUDA context + apex import + 18 fused ops per GPU
    order=60,
    signatures=SIGNATURES,
)
