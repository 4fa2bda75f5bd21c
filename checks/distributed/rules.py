"""One machine's share of the job's rules: the same rules `check --distributed` runs on every rank's
summary (envdoctor.pipeline.distributed.cluster), from .machines, here on this machine's alone, before any rank starts.
Pure."""

from __future__ import annotations

from typing import Any, Dict, List

from envdoctor.target.model import Finding, Severity, Target

from .machines import FREE_MASTER_PORT, machine_findings
from .probe import ID


def as_summary(facts: Dict[str, Any]) -> Dict[str, Any]:
    """This machine as one rank's summary reads (no rank: the findings name the host). NCCL's shared
    memory transport carries traffic between processes of one node: it matters with two GPUs or more."""
    return {"host": facts.get("host"), "interfaces_up": facts.get("interfaces_up"), "infiniband": facts.get("infiniband"),
            "shm_bytes": facts.get("shm_bytes"), "variables": dict(facts.get("variables") or {}),
            "gpu": {"index": 0} if (facts.get("gpus") or 0) >= 2 else None}


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    return machine_findings([as_summary(facts)]) + port_findings(facts.get("master_port") or {})


def port_findings(port: Dict[str, Any]) -> List[Finding]:
    """The job's master port taken on this machine: a job whose master runs here fails to start its store ("Address
    already in use"). A warning where MASTER_PORT names it; torchrun's default port taken is only a note, since no job
    may be meant to run here."""
    if not port.get("taken"):
        return []
    named = "MASTER_PORT=%d" % port["port"] if port.get("from_env") else "torchrun's default master port %d" % port["port"]
    return [Finding(ID, "port-in-use", Severity.WARNING if port.get("from_env") else Severity.INFO,
                    "%s is already in use on this machine: a job whose master runs here cannot start its store" % named,
                    (port.get("error") or "",), (FREE_MASTER_PORT,), {"port": port["port"]})]


def summarize(facts: Dict[str, Any]) -> str:
    gpus = facts.get("gpus") or 0
    shm = facts.get("shm_bytes")
    parts = ["%d GPU%s, NCCL %s" % (gpus, "" if gpus == 1 else "s", facts["nccl"]) if facts.get("nccl") else "no GPU: NCCL unused here"]
    parts.append("interfaces up: %s" % (", ".join(i for i in facts.get("interfaces_up") or () if i != "lo") or "none but lo"))
    parts.append("InfiniBand: %s" % (", ".join(facts.get("infiniband") or ()) or "none"))
    if isinstance(shm, int):
        parts.append("/dev/shm %d MiB" % (shm // 2**20))
    return "; ".join(parts) + "; the job's ranks together: `check --distributed` under the launcher"
