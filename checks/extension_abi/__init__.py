"""extension-abi: do the compiled extensions of this stack (torchvision, torchaudio,
triton, xformers, flash-attn, bitsandbytes, NVIDIA apex) load against the
installed torch, and are their versions the ones paired with it?

The probe imports each installed extension for real (that is the only test that
counts: `undefined symbol: ...`, `operator torchvision::nms does not exist`,
xformers' "can't load C++/CUDA extensions" warning), recording the exception,
the warnings, log records and anything written to stdout/stderr during the
import. The rules compare the installed versions with the pins each companion
declares (its Requires-Dist) and with the release tables below, and give the
exact pip command that installs the companion paired with the installed torch,
with torch pinned on the same command line so that pip cannot swap it.

One module per job: `probe` (worker side: the imports, as guarded steps), `pairing`
(the release tables and which companion is paired with which torch), `rules` (the
findings and remedies).

It runs late (order 70): importing extensions registers operators and can print,
warn or even crash, and should not disturb the checks before it.
"""

from __future__ import annotations

from envdoctor.model import Check, Signature

from .probe import probe
from .rules import ID, diagnose, summarize

_EXT_FRAMES = (r"(site|dist)-packages[/\\](torchvision|torchaudio|xformers|flash_attn|bitsandbytes|triton|apex)[/\\]",
               r"flash_attn_2_cuda|amp_C|apex_C|fused_layer_norm_cuda")

SIGNATURES = (
    Signature("import-fails", r"undefined symbol: \S+", frames=_EXT_FRAMES,
              cause="a compiled extension was built against another torch release or another C++ ABI (cxx11abi TRUE/FALSE) "
                    "than the installed torch"),
    Signature("import-fails", r"operator torchvision::\w+ does not exist", frames=(r"torchvision",),
              cause="torchvision's C++ ops (_C) did not load: the installed torchvision does not match torch "
                    "(another release, or a CUDA build beside a CPU-only torch)"),
    Signature("import-fails", r"Couldn't load custom C\+\+ ops", frames=(r"torchvision",),
              cause="torchvision's C++ ops did not load: torchvision and torch do not match"),
    Signature("import-fails", r"DLL load failed( while importing \w+)?",
              cause="a compiled extension cannot load on Windows: built for another torch or CUDA, or a DLL it needs is missing"),
    Signature("import-fails", r"flash_attn_2_cuda\S*:? (undefined symbol|cannot open shared object file)|No module named '?flash_attn_2_cuda'?",
              frames=(r"flash_attn",),
              cause="flash-attn's compiled module is missing or was built for another torch, CUDA or C++ ABI (cxx11abi)"),
    Signature("import-fails", r"Could not load this library: \S*(torchvision|torchaudio|xformers)\S*",
              cause="a companion's C++ library does not load against the installed torch (wrong release or CUDA build)"),
    Signature("extension-not-loaded", r"xFormers can't load C\+\+/CUDA extensions\. xFormers was built for",
              cause="xformers was built for another torch, CUDA or Python: its memory-efficient attention kernels are unavailable"),
    Signature("cuda-variant-mismatch", r"Detected that PyTorch and torchvision were compiled with different CUDA (major )?versions",
              cause="torchvision was built for another CUDA major version than torch"),
)

CHECK = Check(
    id=ID,
    title="compiled extensions vs torch",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    requires_torch=True,
    timeout_s=180.0,
    order=70,
    signatures=SIGNATURES,
)
