"""What one rank says of itself: the facts of its own report that must agree across a job."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from envdoctor.pipeline.distributed.ranks import RankEnv
from envdoctor.target.model import Report, Severity
from envdoctor.target.redact import Redactor

# Variables that must agree across ranks, or whose difference explains a hang (values redacted as everywhere).
SHARED_VARIABLES = ("NCCL_", "TORCH_", "CUDA_VISIBLE_DEVICES")


def _driver(report: Report) -> Optional[str]:
    compat = next((c for c in report.checks if c.id == "cuda-compat"), None)
    gpus = ((compat.facts.get("nvidia_smi") or {}).get("gpus") or []) if compat is not None else []
    return gpus[0].get("driver_version") if gpus else None


def rank_summary(report: Report, rank: RankEnv, host: str) -> Dict[str, Any]:
    env = report.environment
    variables = {k: v for k, v in (env.get("variables") or {}).items() if k.startswith(SHARED_VARIABLES)}
    return {
        "rank": rank.rank, "local_rank": rank.local_rank, "world_size": rank.world_size, "host": host, "node": rank.node,
        "envdoctor": env.get("envdoctor"), "python": env.get("python"), "torch": env.get("torch"),
        "executable": env.get("executable"), "installer": env.get("installer"),
        "cuda_build": env.get("cuda_build"), "driver": _driver(report), "variables": variables,
        "checks": {c.id: sorted(f.code for f in c.findings if f.severity.rank >= Severity.WARNING.rank) for c in report.checks},
        "exit_code": report.exit_code,
    }


def with_variables(mine: Dict[str, Any], variables: Mapping[str, Optional[str]]) -> Dict[str, Any]:
    """This rank's summary as a fix's variables leave it (a value set, None unset): those the ranks compare."""
    shown = dict(mine.get("variables") or {})
    for name, value in variables.items():
        if not name.startswith(SHARED_VARIABLES):
            continue
        if value is None:
            shown.pop(name, None)
        else:
            shown[name] = value
    return dict(mine, variables=Redactor.from_environ().data(shown))
