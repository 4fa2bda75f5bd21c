"""What carries a job's traffic, as this machine reports it: a GPU's PCIe link (sysfs) and its NVLinks
(nvidia-smi), and the machine's network ports that are up (InfiniBand and Ethernet rates, sysfs). Raw
rates only; what they should give a collective is the distributed rules' business.

Stdlib only, Python 3.8+; torch is passed in. Every read that fails leaves its field out or records why.
"""

from __future__ import annotations

import glob
import os
import re
from typing import Any, Dict, List, Optional

from envdoctor.target.probekit.commands import nvidia_smi_program, run_command
from envdoctor.target.probekit.files import read_file

PCI_DEVICES = "/sys/bus/pci/devices"
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(GT/s|Gb/sec|Gb/s)")
# `nvidia-smi nvlink --status`: "\t Link 0: 26.562 GB/s" or "\t Link 3: <inactive>"
_NVLINK = re.compile(r"^\s*Link\s+(\d+):\s*(?:(\d+(?:\.\d+)?)\s*GB/s|(<inactive>|.*))\s*$", re.M)


def _read(path: str) -> Optional[str]:
    text = read_file(path, 200)
    return text.strip() if text is not None else None


def rate(text: Optional[str]) -> Optional[float]:
    """32.0 from sysfs' "32.0 GT/s PCIe" (older kernels: "8 GT/s"), 400.0 from "400 Gb/sec (4X NDR)";
    None for "Unknown", "-1" and the like."""
    m = _RATE.match(text or "")
    return float(m.group(1)) if m else None


def pci_address(props: Any) -> Optional[str]:
    """'0000:18:00.0' from torch's device properties (pci_domain_id, pci_bus_id, pci_device_id: torch 1.13+)."""
    try:
        return "%04x:%02x:%02x.0" % (int(props.pci_domain_id), int(props.pci_bus_id), int(props.pci_device_id))
    except (AttributeError, TypeError, ValueError):
        return None


def pcie(address: Optional[str]) -> Optional[Dict[str, Any]]:
    """The link as the device's sysfs node says it: the fastest rate and widest width the link can train to,
    and what it runs at now (a GPU at rest lowers its rate; a narrow slot or riser shows in the width)."""
    if not address or not os.path.isdir(os.path.join(PCI_DEVICES, address)):
        return None
    node = os.path.join(PCI_DEVICES, address)

    def width(name: str) -> Optional[int]:
        text = _read(os.path.join(node, name))
        return int(text) if text and text.isdigit() else None

    return {"address": address, "max_gt_s": rate(_read(os.path.join(node, "max_link_speed"))), "max_width": width("max_link_width"),
            "current_gt_s": rate(_read(os.path.join(node, "current_link_speed"))), "current_width": width("current_link_width")}


def nvlinks(gpu: str) -> Dict[str, Any]:
    """{"active": n, "gb_s": [each active link's rate, one direction]} from `nvidia-smi nvlink --status -i
    <gpu>` (a UUID or bus id), or {"error": ...}. No NVLink on the GPU reads as no active link."""
    run = run_command([nvidia_smi_program(), "nvlink", "--status", "-i", gpu], limit=8000)
    if run["error"]:
        return {"error": run["error"]}
    rates = [float(m.group(2)) for m in _NVLINK.finditer(run["stdout"]) if m.group(2)]
    return {"active": len(rates), "gb_s": rates}


def gpu_links(torch: Any, index: int) -> Dict[str, Any]:
    """This GPU's PCIe link and NVLinks."""
    try:
        props = torch.cuda.get_device_properties(index)
    except Exception as exc:  # noqa: BLE001 - a GPU that cannot answer is cuda-compat's finding
        return {"error": "%s: %s" % (type(exc).__name__, exc)}
    address = pci_address(props)
    uuid = str(getattr(props, "uuid", "") or "")
    ident = ("GPU-" + uuid if uuid and not uuid.startswith(("GPU-", "MIG-")) else uuid) or address
    out: Dict[str, Any] = {"pcie": pcie(address)}
    if ident:
        out["nvlink"] = nvlinks(ident)
    return out


def network_ports(interfaces_up: List[str]) -> List[Dict[str, Any]]:
    """The machine's ports that can carry NCCL between nodes: each active InfiniBand port with its rate, and
    each Ethernet interface up whose speed the kernel knows (virtual ones say -1 or nothing), in Gb/s."""
    ports: List[Dict[str, Any]] = []
    for port in sorted(glob.glob("/sys/class/infiniband/*/ports/*")):
        if "ACTIVE" in (_read(os.path.join(port, "state")) or ""):
            ports.append({"name": "%s/%s" % (port.split("/")[-3], port.split("/")[-1]), "kind": "infiniband",
                          "gbit_s": rate(_read(os.path.join(port, "rate")))})
    for name in interfaces_up:
        speed = _read("/sys/class/net/%s/speed" % name)
        if speed and speed.lstrip("-").isdigit() and int(speed) > 0:
            ports.append({"name": name, "kind": "ethernet", "gbit_s": int(speed) / 1000.0})
    return ports
