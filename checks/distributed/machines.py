"""What each machine of a job says of itself, judged: its network interfaces against NCCL_SOCKET_IFNAME, its
InfiniBand, its /dev/shm; and how the job's findings name ranks and hosts. The `distributed` check runs these
on one machine before the ranks start; `check --distributed` on every rank's summary
(envdoctor.pipeline.distributed.cluster), beside the rules that compare ranks. Pure."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.target.model import Finding, Remedy, Severity
from envdoctor.target.remedies.actions import env_remedy

from .probe import ID


def ranks_text(ranks: Sequence[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> 'ranks 0-2, 5, 7-8'."""
    runs: List[List[int]] = []
    for r in sorted(ranks):
        if runs and r == runs[-1][-1] + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    parts = ["%d-%d" % (run[0], run[-1]) if len(run) > 1 else "%d" % run[0] for run in runs]
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(parts)


def hosts_text(summaries: Sequence[Dict[str, Any]]) -> str:
    """'vm' or 'node-a, node-b'; with the launcher's node numbers where they say more than the hosts do
    (two nodes of one job on one machine): 'vm (nodes 0, 1)'."""
    hosts: Dict[str, set] = {}
    for s in summaries:
        hosts.setdefault(str(s.get("host")), set()).update({s["node"]} if s.get("node") is not None else set())
    nodes = {n for found in hosts.values() for n in found}
    if len(nodes) <= len(hosts):
        return ", ".join(sorted(hosts))
    return ", ".join("%s (node%s %s)" % (h, "s" if len(n) > 1 else "", ", ".join(str(x) for x in sorted(n))) if n else h
                     for h, n in sorted(hosts.items()))


def where(summaries: Sequence[Dict[str, Any]]) -> str:
    """'ranks 8-15 on node-b'; a machine's own check (no ranks yet) names the host alone."""
    ranks = [s["rank"] for s in summaries if s.get("rank") is not None]
    return "%s on %s" % (ranks_text(ranks), hosts_text(summaries)) if ranks else hosts_text(summaries)


ONE_GPU_PER_RANK = Remedy("Give each rank its own GPU: --nproc-per-node no more than the GPUs visible, and "
                          "torch.cuda.set_device(local_rank) before init_process_group", kind="manual", id="one-gpu-per-rank")

FREE_MASTER_PORT = Remedy("Give each job its own free port (`torchrun --master_port <free port>`, MASTER_PORT), and end the "
                          "stale processes of earlier runs that hold it (`lsof -i :<port>`, `ss -ltnp`)", kind="manual",
                          id="free-master-port")

# NCCL's shared-memory transport needs room in /dev/shm; containers default to 64 MiB.
MIN_SHM_BYTES = 512 * 2**20

# Interfaces NCCL leaves alone unless told (NCCL's documentation, NCCL_SOCKET_IFNAME: "by default NCCL excludes
# lo and docker* interfaces"; https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
NCCL_SKIPPED_INTERFACES = ("lo", "docker")


def ifname_matches(value: str, interface: str) -> bool:
    """NCCL_SOCKET_IFNAME's syntax: a comma-separated list of prefixes; a leading "^" excludes them, and a
    "=" after it makes every name of the list exact ("^=docker0,lo"), as NCCL's documentation gives it."""
    exclude = value.startswith("^")
    names = value[1:] if exclude else value
    exact = names.startswith("=")
    wanted = [w for w in (names[1:] if exact else names).split(",") if w]
    hit = any(interface == w if exact else interface.startswith(w) for w in wanted)
    return hit != exclude


def _interface_everywhere(summaries: Sequence[Dict[str, Any]]) -> Optional[str]:
    """An interface up on every rank's machine that NCCL would use, as NCCL_SOCKET_IFNAME says it: the bare
    name where it is no other interface's prefix, else "=name"."""
    seen = [s["interfaces_up"] for s in summaries if s.get("interfaces_up") is not None]
    if not seen or len(seen) < len(summaries):
        return None
    common = [i for i in seen[0] if all(i in up for up in seen[1:]) and not i.startswith(NCCL_SKIPPED_INTERFACES)]
    if not common:
        return None
    name = common[0]
    shadowed = any(i != name and i.startswith(name) for up in seen for i in up)
    return "=" + name if shadowed else name


def _socket_ifname(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    """NCCL_SOCKET_IFNAME that matches no interface up on a rank's machine: one finding a value, naming the
    ranks; the step sets one that is up on every node, where there is one."""
    stranded: Dict[str, List[Dict[str, Any]]] = {}
    for s in summaries:
        value = (s.get("variables") or {}).get("NCCL_SOCKET_IFNAME")
        up = s.get("interfaces_up")
        if value and up is not None and not any(ifname_matches(value, i) for i in up):
            stranded.setdefault(value, []).append(s)
    if not stranded:
        return []
    everywhere = _interface_everywhere(summaries)
    remedies: Tuple[Remedy, ...] = ()
    if everywhere:
        remedies += (env_remedy("Set NCCL_SOCKET_IFNAME to %s, up on every node" % everywhere.lstrip("="), "socket-ifname-common",
                                {"NCCL_SOCKET_IFNAME": everywhere}),)
    remedies += (env_remedy("Unset NCCL_SOCKET_IFNAME: NCCL then picks an interface itself", "socket-ifname-unset",
                            unset_env=["NCCL_SOCKET_IFNAME"]),)
    return [Finding(ID, "socket-ifname", Severity.ERROR, "NCCL_SOCKET_IFNAME=%s names no interface that is up on %s" % (value, where(ranks)),
                    tuple("%s: interfaces up: %s" % (where([s]), ", ".join(s["interfaces_up"]) or "none") for s in ranks[:12]),
                    remedies, {"hosts": sorted({str(s.get("host")) for s in ranks}), "value": value})
            for value, ranks in sorted(stranded.items())]


def machine_findings(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    """What each machine's own facts say (interfaces, InfiniBand, /dev/shm): the job's rules that need no
    other rank, which the `distributed` check also runs on one machine before a job starts."""
    return _socket_ifname(summaries) + _machines(summaries)


def _machines(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    found = []
    with_ib = [s for s in summaries if s.get("infiniband")]
    if with_ib and len(with_ib) < len(summaries):
        without = [s for s in summaries if not s.get("infiniband")]
        found.append(Finding(ID, "infiniband-some", Severity.WARNING, "InfiniBand on %s only, not on %s" % (where(with_ib), where(without)),
                             tuple("%s: %s" % (where([s]), ", ".join(s.get("infiniband") or ()) or "no InfiniBand") for s in summaries),
                             (env_remedy("NCCL picks one transport for the job: set NCCL_IB_DISABLE=1 on every node (TCP sockets "
                                         "everywhere)", "ib-disable", {"NCCL_IB_DISABLE": "1"}),
                              Remedy("Or give every node InfiniBand", kind="manual", id="ib-everywhere")), {}))
    disabled = [s for s in summaries if s.get("infiniband") and (s.get("variables") or {}).get("NCCL_IB_DISABLE") == "1"]
    if disabled:
        found.append(Finding(ID, "ib-disabled", Severity.WARNING,
                             "NCCL_IB_DISABLE=1 on %s, which has InfiniBand (%s): NCCL goes over TCP sockets there"
                             % (where(disabled), ", ".join(disabled[0].get("infiniband") or ())),
                             tuple("%s: %s" % (where([s]), ", ".join(s.get("infiniband") or ())) for s in disabled),
                             (env_remedy("Let NCCL use InfiniBand (unset NCCL_IB_DISABLE) unless it was set to work around a fault",
                                         "ib-enable", unset_env=["NCCL_IB_DISABLE"]),), {"ranks": [s["rank"] for s in disabled if s.get("rank") is not None]}))
    small = [s for s in summaries if s.get("gpu") and isinstance(s.get("shm_bytes"), int) and s["shm_bytes"] < MIN_SHM_BYTES]
    if small:
        found.append(Finding(ID, "shm-small", Severity.WARNING, "/dev/shm is %d MiB on %s: too small for NCCL's shared memory"
                             % (small[0]["shm_bytes"] // 2**20, where(small)), (),
                             (Remedy("Give the container more shared memory (docker --shm-size=16g / --ipc=host)", kind="manual",
                                     id="shm-size"),), {}))
    return found
