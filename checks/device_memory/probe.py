"""The device-memory probe: what runs in the worker, inside the target interpreter (torch arrives as
the argument), and the tables it measures against."""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.target import cuda_tables as ct
from envdoctor.target.model import ProbeContext, available_devices
from envdoctor.target.probekit.commands import nvidia_smi_program, run_command
from envdoctor.target.probekit.files import read_file
from envdoctor.target.probekit.gpus import cuda_devices, device_index, identity, memory
from envdoctor.target.probekit.ops import attempt
from envdoctor.target.probekit.steps import StepLost, step
from envdoctor.target.probekit.text import error_text

ID = "device-memory"

MiB = 1024 * 1024
GiB = 1024 * MiB


ALLOC_BYTES = 64 * MiB
MEMINFO = "/proc/meminfo"
MEMINFO_FIELDS = (("mem_total", "MemTotal"), ("mem_available", "MemAvailable"), ("swap_total", "SwapTotal"), ("swap_free", "SwapFree"))
ENV_VARIABLES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
APPS_QUERY = "--query-compute-apps=pid,process_name,used_memory,gpu_uuid"
GPUS_QUERY = "--query-gpu=index,uuid,memory.used,memory.total"
GPUS_FIELDS = ("index", "uuid", "memory.used", "memory.total")


def parse_meminfo(text: str) -> Dict[str, int]:
    """{"MemTotal": bytes, ...} from /proc/meminfo ("MemTotal:  32594216 kB")."""
    values: Dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+):\s+(\d+)(?:\s+kB)?\s*$", line)
        if m:
            values[m.group(1)] = int(m.group(2)) * (1024 if line.rstrip().endswith("kB") else 1)
    return values


def _cgroup() -> Optional[Dict[str, Any]]:
    """This process's cgroup memory limit (a container's, a Slurm or systemd unit's), or None.

    /proc/meminfo shows the whole machine; inside a limited cgroup the OOM killer acts at
    the cgroup's limit. The working set (what cannot be reclaimed) is the usage less the
    inactive page cache, as the kubelet counts it. cgroup v1 (a `memory` controller line in
    /proc/self/cgroup) or v2 (the `0::` line)."""
    own = read_file("/proc/self/cgroup") or ""
    layouts: List[Tuple[int, str, str, str, str]] = []
    for line in own.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        rel = parts[2].rstrip("/")
        if "memory" in parts[1].split(","):
            layouts += [(1, "/sys/fs/cgroup/memory" + rel, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"),
                        (1, "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")]
        elif parts[0] == "0" and parts[1] == "":
            layouts += [(2, "/sys/fs/cgroup" + rel, "memory.max", "memory.current", "inactive_file"),
                        (2, "/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file")]
    for version, base, limit_file, usage_file, inactive_key in sorted(layouts, key=lambda layout: layout[0]):  # v1 first: hybrid hosts
        limit = read_file(base + "/" + limit_file)
        if limit is None:
            continue
        usage = read_file(base + "/" + usage_file)
        stat = read_file(base + "/memory.stat") or ""
        inactive = re.search(r"^%s (\d+)$" % inactive_key, stat, re.MULTILINE)
        value = int(limit) if limit.strip().isdigit() else None  # v2 "max": no limit
        return {
            "version": version,
            "path": base,
            "limit": value if value is not None and value < 2**60 else None,  # v1 says "no limit" with ~2**63
            "usage": int(usage) if usage and usage.strip().isdigit() else None,
            "inactive_file": int(inactive.group(1)) if inactive else None,
        }
    return None


def _host_memory() -> Dict[str, Any]:
    host: Dict[str, Any] = {"source": None}
    host.update({key: None for key, _ in MEMINFO_FIELDS})
    text = read_file(MEMINFO)
    if text is None:
        if sys.platform.startswith("linux"):
            host["error"] = "%s is not readable" % MEMINFO
        return host
    values = parse_meminfo(text)
    host["source"] = MEMINFO
    for key, field in MEMINFO_FIELDS:
        host[key] = values.get(field)
    host["cgroup"] = _cgroup()
    return host


def _failure(fact: Dict[str, Any], exc: Exception) -> None:
    fact["error"] = error_text(exc)
    fact["error_type"] = exc.error_type if isinstance(exc, StepLost) else type(exc).__name__
    if isinstance(exc, StepLost):
        fact["lost"] = exc.state


def _allocate(torch: Any, device: str, index: int) -> Dict[str, Any]:
    """Allocate ALLOC_BYTES on the device and free them again (returned to the driver)."""
    fact: Dict[str, Any] = {"bytes": ALLOC_BYTES, "ok": False, "error": None}
    try:
        with step("allocating %d MiB on %s" % (ALLOC_BYTES // MiB, device), device=device, op="allocation"):
            block = torch.empty(ALLOC_BYTES, dtype=torch.uint8, device=device)
            torch.cuda.synchronize(index)
            del block
            torch.cuda.empty_cache()
        fact["ok"] = True
    except Exception as exc:  # noqa: BLE001 - OutOfMemoryError & co. are the facts (and a lost step)
        _failure(fact, exc)
        if "lost" not in fact:  # a device that crashed or hung the worker is not touched again outside a step
            fact["mem_after_failure"] = memory(torch, index)
    return fact


def _probe_device(torch: Any, device: str, index: int, info: Dict[str, Any], uuids: Dict[int, Optional[str]]) -> None:
    try:
        with step("starting CUDA on %s" % device, device=device):
            # What this worker's caching allocator already holds (earlier checks' tensors):
            # 0 without touching the GPU when CUDA is not initialised yet.
            info["reserved"], err = attempt(lambda: int(torch.cuda.memory_reserved(index)))
            if err:
                info["reserved_error"] = err
            info["allocated"] = attempt(lambda: int(torch.cuda.memory_allocated(index)))[0]
            ident = identity(torch, device)
            uuids[index] = attempt(lambda: str(torch.cuda.get_device_properties(index).uuid))[0]
            attempt(torch.cuda.empty_cache)  # measure the GPU, not envdoctor's own cache
            info["mem"] = memory(torch, index)
    except Exception as exc:  # noqa: BLE001 - a context that failed (or crashed/hung a worker before)
        _failure(info, exc)
        return
    info["name"], info["capability"] = ident["name"], ident["capability"]
    if ident.get("error"):
        info["identity_error"] = ident["error"]
    info["alloc"] = _allocate(torch, device, index)


def parse_mib(text: Optional[str]) -> Optional[int]:
    """Bytes from nvidia-smi's "40960 MiB" (None for "[N/A]", "[Insufficient Permissions]")."""
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(MiB)?\s*$", text or "")
    return int(float(m.group(1)) * MiB) if m else None


def parse_compute_apps(text: str) -> List[Dict[str, Any]]:
    """Rows of `nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid
    --format=csv,noheader`. A process name may hold commas: pid is the first cell, the
    memory and the UUID the last two. Other lines (a header, "No running processes
    found") are skipped."""
    rows: List[Dict[str, Any]] = []
    for line in (text or "").splitlines():
        raw = line.split(",")
        cells = [c.strip() for c in raw]
        if len(cells) < 4 or not cells[0].isdigit():
            continue
        rows.append({"pid": int(cells[0]), "name": ",".join(raw[1:-2]).strip(), "used_bytes": parse_mib(cells[-2]),
                     "uuid": cells[-1]})
    return rows


def _norm_uuid(uuid: Optional[str]) -> str:
    """'6b4e8fc3-...' from nvidia-smi's 'GPU-6B4E8FC3-...' and from torch's uuid alike."""
    text = (uuid or "").strip().lower()
    return text[4:] if text.startswith("gpu-") else text


Mapping = Dict[int, Tuple[Optional[int], Optional[str]]]


def map_devices(torch_uuids: Dict[int, Optional[str]], smi_gpus: List[Dict[str, Any]], visible: Optional[str]) -> Mapping:
    """torch device index -> (nvidia-smi index, how it was matched).

    By UUID when torch reports one; else through CUDA_VISIBLE_DEVICES (indices, or UUID
    prefixes); else the same number unless a UUID already placed another device there
    ("order": right on the usual machine whose GPUs are alike, where CUDA's fastest-first
    order is the PCI order nvidia-smi uses)."""
    by_uuid = {_norm_uuid(g.get("uuid")): g["index"] for g in smi_gpus if g.get("uuid")}
    indices = {g["index"] for g in smi_gpus}
    tokens = [t.strip() for t in visible.split(",")] if visible is not None else None
    out: Mapping = {}
    for i, uuid in torch_uuids.items():
        key = _norm_uuid(uuid)
        if key and key in by_uuid:
            out[i] = (by_uuid[key], "uuid")
        elif tokens is not None:
            token = tokens[i] if i < len(tokens) else ""
            prefix = _norm_uuid(token)
            found = [idx for u, idx in by_uuid.items() if prefix and u.startswith(prefix)]
            if token.isdigit() and int(token) in indices:
                out[i] = (int(token), "CUDA_VISIBLE_DEVICES")
            elif not token.isdigit() and len(found) == 1:
                out[i] = (found[0], "CUDA_VISIBLE_DEVICES")
            else:
                out[i] = (None, None)
        else:
            out[i] = (None, None)
    taken = {idx for idx, how in out.values() if how == "uuid"}
    for i, (_, how) in list(out.items()):
        if how is None and tokens is None and i in indices and i not in taken:
            out[i] = (i, "order")
    return out


def _nvidia_smi_raw() -> Tuple[Dict[str, Any], List[Dict[str, Any]], List[Dict[str, Any]]]:
    program = nvidia_smi_program()
    gpus = run_command([program, GPUS_QUERY, "--format=csv,noheader"])
    smi: Dict[str, Any] = {"ran": True, "program": program,
                           "gpus": {"ok": gpus["error"] is None, "error": gpus["error"], "rows": []},
                           "apps": {"ok": False, "error": None, "rows": []}}
    gpu_rows: List[Dict[str, Any]] = []
    for row in ct.parse_nvidia_smi_csv(gpus["stdout"], GPUS_FIELDS) if gpus["error"] is None else []:
        if row["index"].isdigit():
            gpu_rows.append({"index": int(row["index"]), "uuid": row["uuid"], "used_bytes": parse_mib(row["memory.used"]),
                             "total_bytes": parse_mib(row["memory.total"])})
    if gpus["returncode"] is None:  # nvidia-smi cannot even start: asking again will not help
        smi["apps"]["error"] = "not run: %s" % gpus["error"]
        return smi, gpu_rows, []
    apps = run_command([program, APPS_QUERY, "--format=csv,noheader"])
    smi["apps"].update(ok=apps["error"] is None, error=apps["error"])
    return smi, gpu_rows, parse_compute_apps(apps["stdout"]) if apps["error"] is None else []


def _attach_processes(smi: Dict[str, Any], gpu_rows: List[Dict[str, Any]], app_rows: List[Dict[str, Any]], devices: List[Dict[str, Any]],
                      uuids: Dict[int, Optional[str]], visible: Optional[str]) -> None:
    """Name every nvidia-smi GPU and process by torch's device ('cuda:1'); UUIDs stay here."""
    mapping = map_devices(uuids, gpu_rows, visible)
    device_of = {smi_index: "cuda:%d" % i for i, (smi_index, _) in mapping.items() if smi_index is not None}
    for info in devices:
        info["smi_index"], info["mapped_by"] = mapping.get(info["index"], (None, None))
    smi_index_of = {_norm_uuid(g["uuid"]): g["index"] for g in gpu_rows}
    me = os.getpid()
    smi["gpus"]["rows"] = [{"index": g["index"], "device": device_of.get(g["index"]), "used_bytes": g["used_bytes"],
                            "total_bytes": g["total_bytes"]} for g in gpu_rows]
    for app in app_rows:
        idx = smi_index_of.get(_norm_uuid(app["uuid"]))
        smi["apps"]["rows"].append({"pid": app["pid"], "name": app["name"], "used_bytes": app["used_bytes"], "gpu_index": idx,
                                    "device": device_of.get(idx) if idx is not None else None, "self": app["pid"] == me})


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    facts: Dict[str, Any] = {
        "torch": torch.__version__,
        "cuda_build": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "host": _host_memory(),
        "env": {k: os.environ.get(k) for k in ENV_VARIABLES},
        "devices": [],
    }
    devices = cuda_devices(torch, ctx)
    if not devices:
        # Cheap on a CPU-only build: is_available() answers without touching a driver; no process started.
        facts["cuda_seen"] = [d for d in available_devices(torch) if d.startswith("cuda")] if ctx.devices is not None else []
        facts["nvidia_smi"] = {"ran": False, "why": "no CUDA device selected"}
        return facts
    if facts["hip"]:
        smi: Dict[str, Any] = {"ran": False, "why": "ROCm build: nvidia-smi does not apply"}
        gpu_rows: List[Dict[str, Any]] = []
        app_rows: List[Dict[str, Any]] = []
    else:
        # Before this check touches the GPUs: the holders are the others (and earlier checks of this worker).
        smi, gpu_rows, app_rows = _nvidia_smi_raw()
    facts["nvidia_smi"] = smi
    uuids: Dict[int, Optional[str]] = {}
    for device in devices:
        index = device_index(device)
        info: Dict[str, Any] = {"id": device, "index": index, "name": None, "capability": None}
        facts["devices"].append(info)
        try:
            _probe_device(torch, device, index, info, uuids)
        except Exception as exc:  # noqa: BLE001 - one broken GPU must not hide the others
            _failure(info, exc)
        uuids.setdefault(index, None)
    if smi["ran"]:
        _attach_processes(smi, gpu_rows, app_rows, facts["devices"], uuids, facts["env"].get("CUDA_VISIBLE_DEVICES"))
    return facts
