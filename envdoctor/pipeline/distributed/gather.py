"""The exchange's answer as the parent reads it: every rank's summary, or why the ranks could not exchange
them (and where each stood). The exchange itself runs in the rank's own check worker, where torch is already
imported (envdoctor.target.exchange): it adds what only that interpreter and machine can say, joins a gloo
process group with the launcher's variables and gathers every rank's summary, node by node, within the timeout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from envdoctor.pipeline.distributed.ranks import RankEnv


@dataclass
class Gathered:
    ranks: List[Dict[str, Any]] = field(default_factory=list)  # every rank's summary, in rank order
    error: Optional[str] = None  # why the exchange failed (this rank's own summary is then the only one)
    mine: Dict[str, Any] = field(default_factory=dict)
    steps: Dict[int, Optional[str]] = field(default_factory=dict)  # when it failed: each rank's last step (None: never joined)
    exchange: Dict[str, Any] = field(default_factory=dict)  # how it went: the nodes, their leaders, seconds


def gathered(data: Dict[str, Any], mine: Dict[str, Any], rank: RankEnv) -> Gathered:
    """What the exchange (envdoctor.target.exchange, in the rank's worker) answered."""
    if data.get("error"):
        steps = {int(r): (str(v) if v else None) for r, v in (data.get("steps") or {}).items() if str(r).isdigit()}
        return Gathered(error=str(data["error"])[:300], mine=data.get("mine") or mine, steps=steps)
    ranks = [r for r in data.get("ranks") or () if isinstance(r, dict)]
    return Gathered(ranks=ranks, mine=next((r for r in ranks if r.get("rank") == rank.rank), mine), exchange=dict(data.get("exchange") or {}))
