"""What a job's all_reduce should reach on the links that carry it, and a bus bandwidth measured far below
that: NCCL on a slower transport than the machines have (peer-to-peer copies off between NVLinked GPUs,
TCP sockets where InfiniBand is up, a GPU in a narrow slot). Pure: each rank's link facts
(envdoctor.target.probekit.links) in, one finding out.

The bound is the slowest link a ring all_reduce crosses, one direction: inside a machine the GPUs' NVLinks
(as nvidia-smi reports each link's rate) or else their PCIe links; between machines the network ports NCCL
would use. nccl-tests' bus bandwidth (busbw = algbw * 2(n-1)/n for all_reduce) is defined to be compared
with exactly that: https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.target.model import Finding, Remedy, Severity
from envdoctor.target.remedies.actions import env_remedy

from .machines import NCCL_SKIPPED_INTERFACES, ifname_matches, where
from .probe import ID

# A measured bus bandwidth below this share of the links' bound is "far below". A judgement, not a
# vendor figure: a working transport at 64 MiB reaches a good part of its links, while the faults this is
# for (NVLink or InfiniBand left unused, a x1 riser) are an order of magnitude below them.
LOW_SHARE = 0.25

# One PCIe lane, one direction, in GB/s per GT/s: 8b/10b encoding up to 5 GT/s (PCIe 1.x, 2.x), 128b/130b
# from 8 GT/s (3.0, 4.0, 5.0), FLIT mode at 64 GT/s (6.0: "256 GB/s via a x16 configuration", both ways).
# PCI-SIG, https://pcisig.com/specifications and https://pcisig.com/pci-express-6.0-specification
_ENCODING: Tuple[Tuple[float, float], ...] = ((64.0, 1.0), (8.0, 128 / 130), (0.0, 8 / 10))


def pcie_gb_s(gt_s: float, width: int) -> float:
    """One direction of a PCIe link: 32 GT/s x16 (PCIe 5.0) -> 63.0 GB/s."""
    encoding = next(e for floor, e in _ENCODING if gt_s >= floor)
    return gt_s * width * encoding / 8


# PCIe generations by rate, for the evidence (PCI-SIG, as above).
_GENERATION = {2.5: "1.0", 5.0: "2.0", 8.0: "3.0", 16.0: "4.0", 32.0: "5.0", 64.0: "6.0"}
# The variables that keep NCCL off a faster transport (NCCL's documentation, Environment Variables:
# https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
SLOWING_VARIABLES = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_NET": "Socket"}


@dataclass(frozen=True)
class Bound:
    gb_s: float  # one direction, GB/s
    path: str  # what sets it, for the evidence: "PCIe 5.0 x16 on vm (63.0 GB/s each way)"
    narrow: Tuple[str, ...] = ()  # GPUs whose PCIe link trained narrower than it can


def _gpu_link(summary: Dict[str, Any]) -> Optional[Tuple[float, str, Optional[str]]]:
    """(GB/s, what, a narrow-link note) of one rank's GPU: its NVLinks together where any is active, else its
    PCIe link at the width it trained to and the fastest rate it can (a GPU at rest lowers its rate)."""
    links = (summary.get("gpu") or {}).get("links") or {}
    nvlink = links.get("nvlink") or {}
    if nvlink.get("active"):
        rates = nvlink.get("gb_s") or []
        return sum(rates), "NVLink (%d links, %.0f GB/s each way)" % (len(rates), sum(rates)), None
    pcie = links.get("pcie") or {}
    gt_s, widest = pcie.get("max_gt_s"), pcie.get("max_width")
    width = pcie.get("current_width") or widest
    if not gt_s or not width:
        return None
    note = None
    if widest and width < widest:
        note = "%s: its GPU's PCIe link runs at x%d of x%d (a narrow slot or riser)" % (where([summary]), width, widest)
    generation = _GENERATION.get(float(gt_s), "at %g GT/s" % gt_s)
    gb_s = pcie_gb_s(float(gt_s), int(width))
    return gb_s, "PCIe %s x%d (%.1f GB/s each way)" % (generation, width, gb_s), note


def _network(summary: Dict[str, Any]) -> Optional[Tuple[float, str]]:
    """A machine's ports that NCCL would use between machines: its active InfiniBand ports together (NCCL
    spreads over them) unless NCCL_IB_DISABLE=1, else its fastest Ethernet port NCCL_SOCKET_IFNAME allows."""
    ports = summary.get("network_ports")
    if ports is None:
        return None
    variables = summary.get("variables") or {}
    ib = [p for p in ports if p.get("kind") == "infiniband" and p.get("gbit_s")]
    if ib and variables.get("NCCL_IB_DISABLE") != "1":
        total = sum(p["gbit_s"] for p in ib)
        return total / 8, "InfiniBand %s (%g Gb/s)" % (", ".join(p["name"] for p in ib), total)
    allowed = variables.get("NCCL_SOCKET_IFNAME")
    eth = [p for p in ports if p.get("kind") == "ethernet" and p.get("gbit_s")
           and (ifname_matches(allowed, p["name"]) if allowed else not p["name"].startswith(NCCL_SKIPPED_INTERFACES))]
    if not eth:
        return None
    best = max(eth, key=lambda p: p["gbit_s"])
    return best["gbit_s"] / 8, "Ethernet %s (%g Gb/s)" % (best["name"], best["gbit_s"])


def link_bound(summaries: Sequence[Dict[str, Any]]) -> Optional[Bound]:
    """The slowest link of the job's ring, or None where a link that matters is not known. Ranks are grouped
    by host, not by the launcher's node: two "nodes" on one machine talk through its memory, not its network."""
    hosts: Dict[str, List[Dict[str, Any]]] = {}
    for s in summaries:
        hosts.setdefault(str(s.get("host")), []).append(s)
    parts: List[Tuple[float, str]] = []
    narrow: List[str] = []
    for host, members in sorted(hosts.items()):
        if len(members) > 1:
            links = [_gpu_link(s) for s in members]
            if any(link is None for link in links):
                return None
            slowest = min((link for link in links if link is not None), key=lambda link: link[0])
            parts.append((slowest[0], "%s on %s" % (slowest[1], host)))
            narrow += [link[2] for link in links if link is not None and link[2]]
    if len(hosts) > 1:
        nets = [(_network(members[0]), host) for host, members in sorted(hosts.items())]
        if any(net is None for net, _ in nets):
            return None
        rate, what = min(((net[0], "%s on %s" % (net[1], host)) for net, host in nets if net is not None), key=lambda n: n[0])
        parts.append((rate, what))
    if not parts:
        return None
    gb_s, path = min(parts, key=lambda p: p[0])
    return Bound(gb_s, path, tuple(narrow))


def bandwidth_findings(summaries: Sequence[Dict[str, Any]], bandwidth: Dict[str, Any]) -> List[Finding]:
    """NCCL's all_reduce bus bandwidth (rank 0's measurement) against the links' bound: a warning where it is
    below LOW_SHARE of it, naming the path that sets the bound and the variables that keep NCCL off it."""
    measured = (bandwidth.get("nccl") or {}).get("busbw_gbs")
    bound = link_bound(summaries)
    if not isinstance(measured, (int, float)) or bound is None or measured >= LOW_SHARE * bound.gb_s:
        return []
    slowing = {name: [s for s in summaries if (s.get("variables") or {}).get(name) == value]
               for name, value in SLOWING_VARIABLES.items()}
    slowing = {name: ranks for name, ranks in slowing.items() if ranks}
    evidence = ("nccl all_reduce of %d MiB: bus bandwidth %.1f GB/s" % ((bandwidth["nccl"].get("bytes") or 0) // 2**20, measured),
                "the slowest link of the ring: %s" % bound.path) + bound.narrow + tuple(
                "%s=%s on %s" % (name, SLOWING_VARIABLES[name], where(ranks)) for name, ranks in slowing.items())
    remedies: Tuple[Remedy, ...] = ()
    if slowing:
        remedies += (env_remedy("Let NCCL use its faster transports again (unset %s), unless they were set to work around wrong data: "
                                "the collectives are checked again after" % ", ".join(sorted(slowing)),
                                "nccl-transports-default", unset_env=sorted(slowing)),)
    remedies += (Remedy("Run one job with NCCL_DEBUG=INFO: it prints the transport each channel takes (P2P/IPC, SHM, NET/IB, "
                        "NET/Socket); nvidia-smi topo -m shows how the GPUs are linked", kind="manual", id="nccl-transport"),)
    return [Finding(ID, "bandwidth-low", Severity.WARNING,
                    "NCCL's all_reduce runs at %.1f GB/s, under %d%% of what the job's links carry (%.0f GB/s, %s)"
                    % (measured, LOW_SHARE * 100, bound.gb_s, bound.path), evidence, remedies,
                    {"busbw_gbs": measured, "bound_gbs": round(bound.gb_s, 1), "path": bound.path})]
