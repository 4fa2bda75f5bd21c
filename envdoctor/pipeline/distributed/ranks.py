"""Which rank this process is, as its launcher says: torchrun (and any launcher that sets the standard
variables), or Slurm's srun mapped the way torch's own launchers map it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional

from envdoctor.pipeline.check.request import UsageError

HOW = "run it under torchrun (torchrun --nproc-per-node N -m envdoctor %s --distributed) or a launcher that sets them"


@dataclass(frozen=True)
class RankEnv:
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    launcher: str  # "torchrun" (the standard variables) or "slurm"
    node: Optional[int] = None  # the node's number in the job: torchrun's GROUP_RANK, Slurm's SLURM_NODEID

    def child_environ(self) -> Dict[str, str]:
        """The standard variables for the exchange in the rank's worker: torch's env:// reads these."""
        return {"RANK": str(self.rank), "WORLD_SIZE": str(self.world_size), "LOCAL_RANK": str(self.local_rank),
                "MASTER_ADDR": self.master_addr, "MASTER_PORT": str(self.master_port)}


def _int(environ: Mapping[str, str], name: str, default: Optional[int] = None, command: str = "check") -> int:
    value = environ.get(name)
    if value is None or not value.strip():
        if default is None:
            raise UsageError("%s --distributed needs %s: %s" % (command, name, HOW % command))
        return default
    try:
        return int(value)
    except ValueError:
        raise UsageError("%s=%r is not a whole number" % (name, value)) from None


def read_rank_env(environ: Mapping[str, str], command: str = "check") -> RankEnv:
    """The rank from RANK/WORLD_SIZE/LOCAL_RANK, else from SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID;
    MASTER_ADDR and MASTER_PORT from the launcher. Missing or inconsistent: UsageError, one line that
    names the `command` (check, fix) run with --distributed."""
    def given(name: str) -> bool:  # an empty variable is an unset one
        return bool((environ.get(name) or "").strip())

    if given("RANK") or given("WORLD_SIZE"):
        rank, world, local, launcher = (_int(environ, "RANK", command=command), _int(environ, "WORLD_SIZE", command=command),
                                        _int(environ, "LOCAL_RANK", 0), "torchrun")
    elif given("SLURM_PROCID"):
        rank, world, local, launcher = (_int(environ, "SLURM_PROCID", command=command), _int(environ, "SLURM_NTASKS", command=command),
                                        _int(environ, "SLURM_LOCALID", 0), "slurm")
    else:
        raise UsageError("%s --distributed found no rank (RANK and WORLD_SIZE, or Slurm's SLURM_PROCID): %s" % (command, HOW % command))
    if world < 1 or not 0 <= rank < world or local < 0:
        raise UsageError("RANK %d does not fit WORLD_SIZE %d (LOCAL_RANK %d)" % (rank, world, local))
    addr = (environ.get("MASTER_ADDR") or "").strip()
    if not addr:
        raise UsageError("%s --distributed needs MASTER_ADDR (the host of rank 0): %s" % (command, HOW % command))
    port = _int(environ, "MASTER_PORT", command=command)
    if not 0 < port < 65536:
        raise UsageError("MASTER_PORT=%d is not a port" % port)
    node_var = "GROUP_RANK" if launcher == "torchrun" else "SLURM_NODEID"
    node = _int(environ, node_var) if given(node_var) else None
    return RankEnv(rank, world, local, addr, port, launcher, node)
