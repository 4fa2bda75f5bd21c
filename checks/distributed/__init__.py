"""distributed: a job's ranks together. On one machine (`check`): what NCCL will meet here before the
ranks start (interfaces, InfiniBand, /dev/shm, the NCCL variables), judged by the job's own rules. Under a
launcher (`check --distributed`) this result gives way to the job's: every rank's summary, compared
(envdoctor.pipeline.distributed.cluster). Its signatures are explain's distributed family.

One module per job: `probe` (the worker side), `rules`, `signatures`.
"""

from __future__ import annotations

from envdoctor.target.model import Check

from .probe import ID, probe
from .rules import diagnose, summarize
from .signatures import SIGNATURES

CHECK = Check(
    id=ID,
    title="the ranks together (NCCL)",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    requires_torch=False,  # the machine's facts need no torch; NCCL's version does, where it imports
    order=95,
    signatures=SIGNATURES,
)
