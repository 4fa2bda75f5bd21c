"""The identity of a CUDA device as every check records it.

Stdlib only, Python 3.8+; torch is passed in.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from envdoctor.target.cuda_tables import parse_capability as capability_tuple  # (8, 0) from '8.0' or [8, 0]
from envdoctor.target.model import ProbeContext
from envdoctor.target.probekit.text import error_text


def device_index(device: str) -> int:
    """0 for 'cuda:0' (and for a bare 'cuda')."""
    _, _, index = device.partition(":")
    return int(index) if index.isdigit() else 0


def identity(torch: Any, device: str) -> Dict[str, Any]:
    """{"id", "index", "name", "capability": "8.0"} of one CUDA device; a query that
    fails leaves its field None and records "error" (a broken GPU is a fact, not a crash)."""
    index = device_index(device)
    info: Dict[str, Any] = {"id": "cuda:%d" % index, "index": index, "name": None, "capability": None}
    try:
        info["name"] = str(torch.cuda.get_device_name(index))
        major, minor = torch.cuda.get_device_capability(index)
        info["capability"] = "%d.%d" % (int(major), int(minor))
    except Exception as exc:  # noqa: BLE001
        info["error"] = error_text(exc)
        info["error_type"] = type(exc).__name__
    return info


def memory(torch: Any, index: int) -> Dict[str, Any]:
    """torch.cuda.mem_get_info(i) -> {"free", "total"} bytes, or the error it raised: a context that
    cannot even answer this is a fact (an out-of-memory GPU, a broken driver)."""
    try:
        free, total = torch.cuda.mem_get_info(index)
        return {"free": int(free), "total": int(total)}
    except Exception as exc:  # noqa: BLE001
        return {"error": error_text(exc), "error_type": type(exc).__name__}


def cuda_devices(torch: Any, ctx: ProbeContext) -> List[str]:
    """The selected CUDA devices ('cuda:0', ...), in order."""
    return [d for d in ctx.select_devices(torch) if d.startswith("cuda")]


def visible_devices_value(current: Optional[str], indices: Sequence[int]) -> str:
    """The CUDA_VISIBLE_DEVICES value that keeps exactly these torch device indices: the
    physical ids when the variable already remaps them ("2,3" with index 1 -> "3")."""
    mapping = [s.strip() for s in current.split(",")] if current else None
    return ",".join(mapping[i] if mapping and i < len(mapping) else str(i) for i in indices)


__all__ = ["capability_tuple", "cuda_devices", "device_index", "identity", "visible_devices_value"]
