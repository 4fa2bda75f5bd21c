"""NCCL's measured bus bandwidth against what the job's links carry (checks/distributed/topology.py): the
rules on summaries shaped as GPU nodes send them, the PCIe table against copies measured on a real H100,
and the link facts the probe reads on this machine."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest
from conftest import load_fixture
from envdoctor.checks.distributed.topology import LOW_SHARE, link_bound, pcie_gb_s
from test_distributed import judged, summary

from envdoctor.target.model import Severity
from envdoctor.target.probekit import links

H100_SXM_NVLINK = {"active": 18, "gb_s": [26.562] * 18}  # what `nvidia-smi nvlink --status` says of each link of an H100 SXM


def gpu(index: int, nvlink: Optional[Dict[str, Any]] = None, gt_s: float = 16.0, width: int = 16, max_width: int = 16) -> Dict[str, Any]:
    return {"index": index, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-%d" % index,
            "links": {"pcie": {"address": "0000:%02x:00.0" % (0x18 + index), "max_gt_s": gt_s, "max_width": max_width,
                               "current_gt_s": 2.5, "current_width": width},  # at rest the link drops its rate, not its width
                      "nvlink": nvlink or {"active": 0, "gb_s": []}}}


def nccl(busbw: float) -> List[Dict[str, Any]]:
    return [{"backend": "nccl", "op": "bandwidth", "device": "cuda:0", "ok": True, "bytes": 64 * 2**20, "seconds": 0.01,
             "algbw_gbs": busbw, "busbw_gbs": busbw}]


def node(host: str, ranks: range, busbw: float, **extra: Any) -> List[Dict[str, Any]]:
    gpus = extra.pop("gpus", None)
    return [summary(r, host, gpu=gpus[r % len(gpus)] if gpus else gpu(r % 8), collectives=nccl(busbw) if r == 0 else [], **extra)
            for r in ranks]


def test_pcie_each_way_follows_the_pci_sig_rates_and_encodings() -> None:
    assert pcie_gb_s(32.0, 16) == pytest.approx(63.0, abs=0.05)  # PCIe 5.0 x16, 128b/130b
    assert pcie_gb_s(16.0, 16) == pytest.approx(31.5, abs=0.05)  # 4.0 x16
    assert pcie_gb_s(8.0, 4) == pytest.approx(3.94, abs=0.01)  # 3.0 x4
    assert pcie_gb_s(5.0, 16) == pytest.approx(8.0)  # 2.0 x16, 8b/10b
    assert pcie_gb_s(64.0, 16) == pytest.approx(128.0)  # 6.0 x16: PCI-SIG's 256 GB/s both ways


def test_the_pcie_bound_holds_against_copies_measured_on_a_real_h100() -> None:
    """The H100's own link, as envdoctor read it there, gives a bound the copy engines came close to and did not pass."""
    recorded = load_fixture("measurements/h100-pcie-copies.json")
    pcie = recorded["links"]["pcie"]
    assert (pcie["max_gt_s"], pcie["max_width"], pcie["current_width"]) == (32.0, 16, 16)
    assert recorded["links"]["nvlink"] == {"active": 0, "gb_s": []}  # one GPU in a VM: no NVLink up
    bound = pcie_gb_s(pcie["max_gt_s"], pcie["current_width"])
    for measured in (recorded["host_to_device_gb_s"], recorded["device_to_host_gb_s"]):
        assert 0.75 * bound < measured < bound  # 55.1 GB/s of 63.0 each way


def test_nvlinked_gpus_with_peer_copies_off_are_far_below_their_links_and_the_step_unsets_the_variable() -> None:
    ranks = node("dgx-a", range(8), busbw=18.0, gpus=[gpu(i, H100_SXM_NVLINK) for i in range(8)],
                 variables={"NCCL_P2P_DISABLE": "1"})
    job = judged(ranks)
    low = job["findings"]["bandwidth-low"]
    assert low.severity is Severity.WARNING
    assert low.title == ("NCCL's all_reduce runs at 18.0 GB/s, under 25% of what the job's links carry "
                         "(478 GB/s, NVLink (18 links, 478 GB/s each way) on dgx-a)")
    assert "nccl all_reduce of 64 MiB: bus bandwidth 18.0 GB/s" in low.evidence
    assert "NCCL_P2P_DISABLE=1 on ranks 0-7 on dgx-a" in low.evidence
    step = low.remedies[0]
    assert (step.kind, step.action) == ("env", {"unset_env": ["NCCL_P2P_DISABLE"]})
    assert low.remedies[-1].id == "nccl-transport"


def test_a_healthy_measurement_or_an_unknown_link_is_no_finding() -> None:
    nvlinked = [gpu(i, H100_SXM_NVLINK) for i in range(8)]
    assert "bandwidth-low" not in judged(node("dgx-a", range(8), busbw=LOW_SHARE * 478 + 1, gpus=nvlinked))["findings"]
    unknown = [dict(gpu(i), links={"pcie": None, "nvlink": {"error": "FileNotFoundError: nvidia-smi"}}) for i in range(2)]
    assert link_bound(node("box", range(2), busbw=0.5, gpus=unknown)) is None
    assert "bandwidth-low" not in judged(node("box", range(2), busbw=0.5, gpus=unknown))["findings"]
    # one rank: nothing crosses a link (the probe measures nothing then)
    assert link_bound([summary(0, "box", gpu=gpu(0))]) is None


def test_pcie_gpus_in_a_narrow_slot_are_bounded_by_the_width_they_trained_to_and_said_so() -> None:
    gpus = [gpu(0), gpu(1, width=4)]  # PCIe 4.0, the second GPU at x4 of x16 (a riser)
    bound = link_bound(node("box", range(2), busbw=1.0, gpus=gpus))
    assert bound is not None and bound.gb_s == pytest.approx(pcie_gb_s(16.0, 4))
    assert bound.path == "PCIe 4.0 x4 (7.9 GB/s each way) on box"
    assert bound.narrow == ("rank 1 on box: its GPU's PCIe link runs at x4 of x16 (a narrow slot or riser)",)
    low = judged(node("box", range(2), busbw=1.0, gpus=gpus))["findings"]["bandwidth-low"]
    assert bound.narrow[0] in low.evidence and [r.id for r in low.remedies] == ["nccl-transport"]  # no variable to unset


def test_between_machines_the_network_bounds_the_ring_and_infiniband_switched_off_leaves_ethernet() -> None:
    ports = [{"name": "mlx5_%d/1" % i, "kind": "infiniband", "gbit_s": 400.0} for i in range(8)] + \
            [{"name": "eth0", "kind": "ethernet", "gbit_s": 25.0}]
    nvlinked = [gpu(i, H100_SXM_NVLINK) for i in range(8)]
    job = node("node-a", range(8), busbw=40.0, gpus=nvlinked, network_ports=ports) + \
        node("node-b", range(8, 16), busbw=40.0, gpus=nvlinked, network_ports=ports)
    bound = link_bound(job)
    assert bound is not None and bound.gb_s == pytest.approx(400.0)  # 8 x 400 Gb/s, below the NVLinks' 478 GB/s
    assert bound.path.startswith("InfiniBand mlx5_0/1, ") and bound.path.endswith("(3200 Gb/s) on node-a")
    assert judged(job)["findings"]["bandwidth-low"].remedies[0].id == "nccl-transport"
    off = [dict(s, variables={"NCCL_IB_DISABLE": "1"}) for s in job]
    bound = link_bound(off)
    assert bound is not None and (bound.gb_s, bound.path) == (25.0 / 8, "Ethernet eth0 (25 Gb/s) on node-a")
    assert "bandwidth-low" not in judged(off)["findings"]  # 40 GB/s is more than sockets over 25 Gb/s could carry
    # a machine whose ports are not known (an older envdoctor on one node) leaves the bound unknown
    assert link_bound(job[:8] + [{k: v for k, v in s.items() if k != "network_ports"} for s in job[8:]]) is None


def test_two_launcher_nodes_on_one_machine_are_one_machine_for_the_links() -> None:
    ranks = [summary(r, "vm", node=r, gpu=gpu(r), collectives=nccl(50.0) if r == 0 else []) for r in range(2)]
    bound = link_bound(ranks)
    assert bound is not None and bound.path == "PCIe 4.0 x16 (31.5 GB/s each way) on vm"  # no network between them


def test_the_link_facts_read_on_this_machine() -> None:
    assert links.rate("32.0 GT/s PCIe") == 32.0 and links.rate("8 GT/s") == 8.0
    assert links.rate("400 Gb/sec (4X NDR)") == 400.0 and links.rate("Unknown") is None and links.rate(None) is None
    assert links.pcie(None) is None and links.pcie("ffff:ff:1f.7") is None  # no such device
    ports = links.network_ports(["lo", "eth0"])
    assert all(p["kind"] in ("infiniband", "ethernet") and p["gbit_s"] > 0 for p in ports)
    assert not any(p["name"] == "lo" for p in ports)  # lo has no speed


class _Props:
    pci_domain_id, pci_bus_id, pci_device_id = 0, 0x18, 0


def test_a_gpus_pci_address_comes_from_torchs_device_properties() -> None:
    assert links.pci_address(_Props()) == "0000:18:00.0"
    assert links.pci_address(object()) is None  # a torch before 1.13 has no such fields
