"""device-memory: is there memory to run in? Free and total memory of every selected
GPU, who holds it, whether a small allocation still succeeds there, and how much host
RAM is left.

Out of memory rarely says so: on a full GPU `cublasCreate` fails with
CUBLAS_STATUS_NOT_INITIALIZED or CUBLAS_STATUS_ALLOC_FAILED, cuDNN with
CUDNN_STATUS_ALLOC_FAILED, and creating the CUDA context itself with `CUDA error: out of
memory` (seed 002: some processes of a multi-GPU A100 run failed with
CUBLAS_STATUS_NOT_INITIALIZED). The cublas check reads memory when a handle fails; this
check measures each device on its own, whatever else passes:

- `torch.cuda.mem_get_info(i)` (free/total as the driver sees them, this worker's own
  CUDA context included) after releasing what this worker's caching allocator keeps
  (`torch.cuda.memory_reserved`, left by earlier checks in the same worker);
- a 64 MiB allocation, freed at once: the smallest real test that memory can be had;
- the processes holding GPU memory (`nvidia-smi --query-compute-apps`), mapped onto
  torch's device numbers through the GPU UUIDs (`nvidia-smi --query-gpu`).

Only when a CUDA device is selected: on a machine without one the probe reads
/proc/meminfo and starts no process.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.target import cuda_tables as ct
from envdoctor.target.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, Target, available_devices
from envdoctor.target.probekit.gpus import cuda_devices, device_index, identity, visible_devices_value
from envdoctor.target.probekit.ops import attempt
from envdoctor.target.probekit.steps import StepLost, step
from envdoctor.target.probekit.text import dedupe, error_text, exception_text
from envdoctor.target.remedies.actions import config_remedy, env_remedy

ID = "device-memory"

MiB = 1024 * 1024
GiB = 1024 * MiB
# "Almost nothing free" on a GPU: cuBLAS/cuDNN workspaces and a training step need more
# than this (the same thresholds as the cublas check, kept here for this check's rules).
LOW_FREE_BYTES = 256 * MiB
LOW_FREE_FRACTION = 0.05
# "Almost exhausted" host RAM: the kernel's OOM killer is near (MemAvailable is the
# kernel's own estimate of what can be had without swapping).
HOST_LOW_BYTES = 1 * GiB
HOST_LOW_FRACTION = 0.05
ALLOC_BYTES = 64 * MiB
SMI_TIMEOUT_S = 10.0
MEMINFO = "/proc/meminfo"
MEMINFO_FIELDS = (("mem_total", "MemTotal"), ("mem_available", "MemAvailable"), ("swap_total", "SwapTotal"), ("swap_free", "SwapFree"))
ENV_VARIABLES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
APPS_QUERY = "--query-compute-apps=pid,process_name,used_memory,gpu_uuid"
GPUS_QUERY = "--query-gpu=index,uuid,memory.used,memory.total"
GPUS_FIELDS = ("index", "uuid", "memory.used", "memory.total")
# What a person types to see the holders (printed by the free-gpu remedy).
APPS_COMMAND = "nvidia-smi %s --format=csv" % APPS_QUERY

# Out of memory, however the layer that hit it spells it: torch's caching allocator
# (torch.OutOfMemoryError), the CUDA runtime ("CUDA error: out of memory"), cuBLAS/cuDNN.
_OOM = re.compile(r"out of memory|OutOfMemoryError|(CUBLAS|CUDNN)_STATUS_ALLOC_FAILED", re.IGNORECASE)


# ---------------------------------------------------------------- probe: host


def parse_meminfo(text: str) -> Dict[str, int]:
    """{"MemTotal": bytes, ...} from /proc/meminfo ("MemTotal:  32594216 kB")."""
    values: Dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+):\s+(\d+)(?:\s+kB)?\s*$", line)
        if m:
            values[m.group(1)] = int(m.group(2)) * (1024 if line.rstrip().endswith("kB") else 1)
    return values


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _cgroup() -> Optional[Dict[str, Any]]:
    """This process's cgroup memory limit (a container's, a Slurm or systemd unit's), or None.

    /proc/meminfo shows the whole machine; inside a limited cgroup the OOM killer acts at
    the cgroup's limit. The working set (what cannot be reclaimed) is the usage less the
    inactive page cache, as the kubelet counts it. cgroup v1 (a `memory` controller line in
    /proc/self/cgroup) or v2 (the `0::` line)."""
    own = _read("/proc/self/cgroup") or ""
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
        limit = _read(base + "/" + limit_file)
        if limit is None:
            continue
        usage = _read(base + "/" + usage_file)
        stat = _read(base + "/memory.stat") or ""
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
    text = _read(MEMINFO)
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


# ---------------------------------------------------------------- probe: GPUs


def _mem(torch: Any, index: int) -> Dict[str, Any]:
    """torch.cuda.mem_get_info(i) -> (free, total) bytes, or the error it raised."""
    try:
        free, total = torch.cuda.mem_get_info(index)
        return {"free": int(free), "total": int(total)}
    except Exception as exc:  # noqa: BLE001 - a context that cannot even answer this is a fact
        return {"error": error_text(exc), "error_type": type(exc).__name__}


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
            fact["mem_after_failure"] = _mem(torch, index)
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
            info["mem"] = _mem(torch, index)
    except Exception as exc:  # noqa: BLE001 - a context that failed (or crashed/hung a worker before)
        _failure(info, exc)
        return
    info["name"], info["capability"] = ident["name"], ident["capability"]
    if ident.get("error"):
        info["identity_error"] = ident["error"]
    info["alloc"] = _allocate(torch, device, index)


def _smi_program() -> str:
    """nvidia-smi from PATH; WSL keeps it in /usr/lib/wsl/lib, often off PATH."""
    if shutil.which("nvidia-smi") is None and os.path.exists("/usr/lib/wsl/lib/nvidia-smi"):
        return "/usr/lib/wsl/lib/nvidia-smi"
    return "nvidia-smi"


def _run(argv: List[str], timeout: float = SMI_TIMEOUT_S) -> Dict[str, Any]:
    """Run a command (argv list, never a shell) and record exactly what happened."""
    out: Dict[str, Any] = {"returncode": None, "stdout": "", "stderr": "", "error": None}
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, encoding="utf-8", errors="replace")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:  # FileNotFoundError: no nvidia-smi
        out["error"] = exception_text(exc)
        return out
    out["returncode"] = proc.returncode
    out["stdout"] = proc.stdout or ""
    out["stderr"] = (proc.stderr or "").strip()[:500]
    if proc.returncode != 0:
        first = (out["stderr"] or out["stdout"]).strip().splitlines()
        out["error"] = "exit status %d%s" % (proc.returncode, ": " + first[0][:300] if first else "")
    return out


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
    program = _smi_program()
    gpus = _run([program, GPUS_QUERY, "--format=csv,noheader"])
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
    apps = _run([program, APPS_QUERY, "--format=csv,noheader"])
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


# ---------------------------------------------------------------- rules


def _size(n: Any) -> str:
    return "%.0f MiB" % (float(n) / MiB) if float(n) < GiB else "%.1f GiB" % (float(n) / GiB)


def _short(text: str) -> str:
    text = text.strip().splitlines()[0] if text.strip() else text
    return text if len(text) <= 120 else text[:117] + "..."


def _is_oom(record: Optional[Dict[str, Any]]) -> bool:
    if not record or not record.get("error"):
        return False
    return record.get("error_type") == "OutOfMemoryError" or bool(_OOM.search(str(record["error"])))


def _reading(mem: Optional[Dict[str, Any]]) -> Optional[Tuple[int, int]]:
    if not mem or mem.get("free") is None:
        return None
    return int(mem["free"]), int(mem.get("total") or 0)


def _low(reading: Optional[Tuple[int, int]]) -> bool:
    if reading is None:
        return False
    free, total = reading
    return free < LOW_FREE_BYTES or (total > 0 and free < LOW_FREE_FRACTION * total)


def _label(dev: Dict[str, Any]) -> str:
    return "%s (%s)" % (dev["id"], dev["name"]) if dev.get("name") else str(dev["id"])


def _smi_gpu(facts: Dict[str, Any], dev: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    rows = ((facts.get("nvidia_smi") or {}).get("gpus") or {}).get("rows") or []
    return next((g for g in rows if g.get("device") == dev["id"]), None)


def _holders(facts: Dict[str, Any], dev: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Processes nvidia-smi lists on this device, biggest first."""
    rows = ((facts.get("nvidia_smi") or {}).get("apps") or {}).get("rows") or []
    mine = [a for a in rows if a.get("device") == dev["id"]]
    return sorted(mine, key=lambda a: -(a.get("used_bytes") or 0))


def _holder_text(app: Dict[str, Any]) -> str:
    used = "%d MiB" % ((app["used_bytes"] or 0) // MiB) if app.get("used_bytes") is not None else "memory not reported"
    return "pid %s %s, %s%s" % (app.get("pid"), app.get("name") or "?", used, " (this envdoctor worker)" if app.get("self") else "")


def _device_evidence(facts: Dict[str, Any], dev: Dict[str, Any], pressed: bool) -> List[str]:
    evidence: List[str] = []
    if dev.get("error"):
        evidence.append("starting CUDA on %s: %s" % (dev["id"], dev["error"]))
    mem = dev.get("mem") or {}
    if "free" in mem:
        evidence.append("torch.cuda.mem_get_info(%s): %s free of %s" % (dev.get("index"), _size(mem["free"]), _size(mem.get("total") or 0)))
    elif mem.get("error"):
        evidence.append("torch.cuda.mem_get_info(%s) failed: %s" % (dev.get("index"), mem["error"]))
    gpu = _smi_gpu(facts, dev)
    if gpu and gpu.get("used_bytes") is not None and gpu.get("total_bytes"):
        evidence.append("nvidia-smi GPU %s: %d MiB used of %d MiB" % (gpu["index"], gpu["used_bytes"] // MiB, gpu["total_bytes"] // MiB))
    alloc = dev.get("alloc") or {}
    if alloc:
        what = "allocating %s on %s" % (_size(alloc.get("bytes") or ALLOC_BYTES), dev["id"])
        evidence.append("%s: %s" % (what, "ok" if alloc.get("ok") else alloc.get("error")))
        after = _reading(alloc.get("mem_after_failure"))
        if after:
            evidence.append("right after the failure: %s free of %s" % (_size(after[0]), _size(after[1])))
    if dev.get("reserved"):
        evidence.append("this envdoctor worker's caching allocator held %s on %s (released before measuring)"
                        % (_size(dev["reserved"]), dev["id"]))
    holders = _holders(facts, dev)
    evidence += ["holds GPU memory: %s" % _holder_text(a) for a in holders]
    apps = (facts.get("nvidia_smi") or {}).get("apps") or {}
    if apps.get("error"):
        evidence.append("nvidia-smi %s failed: %s" % (APPS_QUERY, apps["error"]))
    elif pressed and (facts.get("nvidia_smi") or {}).get("ran") and not [a for a in holders if not a.get("self")] and dev.get("mapped_by"):
        evidence.append("nvidia-smi lists no other process on %s: the holders run in another container or PID namespace, "
                        "where this one cannot see them" % dev["id"])
    return dedupe(evidence)


def _verdict(dev: Dict[str, Any]) -> str:
    """'oom', 'low', 'unmeasured', 'alloc-failed' (for another reason than memory) or 'ok'."""
    mem, alloc = dev.get("mem") or {}, dev.get("alloc") or {}
    if _is_oom(dev) or _is_oom(mem) or _is_oom(alloc):
        return "oom"
    if _low(_reading(mem)) or _low(_reading(alloc.get("mem_after_failure"))):
        return "low"
    if dev.get("error") or _reading(mem) is None:
        return "unmeasured"
    if alloc and not alloc.get("ok"):
        return "alloc-failed"
    return "ok"


def _visible_value(facts: Dict[str, Any], roomy: List[Dict[str, Any]]) -> Optional[str]:
    """CUDA_VISIBLE_DEVICES naming these devices (physical ids when already remapped)."""
    if not roomy:
        return None
    current = (facts.get("env") or {}).get("CUDA_VISIBLE_DEVICES")
    return visible_devices_value(current, [int(dev.get("index", 0)) for dev in roomy])


def _alloc_conf_remedy(facts: Dict[str, Any], env: Target) -> Optional[Remedy]:
    """expandable_segments:True, added to what the variable already says.

    torch docs, "CUDA semantics" → "Memory management" / "Optimizing memory usage with
    PYTORCH_CUDA_ALLOC_CONF" (https://pytorch.org/docs/stable/notes/cuda.html#cuda-memory-management):
    expandable segments let the caching allocator grow one mapping instead of carving
    fixed blocks, so memory that is reserved but unallocated (fragmentation) can be used.
    torch's own OOM message points there. Newer torch also reads the device-generic
    PYTORCH_ALLOC_CONF, but its CUDA allocator takes PYTORCH_CUDA_ALLOC_CONF first
    (c10/cuda/CUDAAllocatorConfig.h): the remedy edits whichever is set, that one first,
    else sets PYTORCH_CUDA_ALLOC_CONF, which every torch reads. Not supported on Windows."""
    if env.os == "win32":
        return None
    variables = facts.get("env") or {}
    only_generic = variables.get("PYTORCH_ALLOC_CONF") and not variables.get("PYTORCH_CUDA_ALLOC_CONF")
    name = "PYTORCH_ALLOC_CONF" if only_generic else "PYTORCH_CUDA_ALLOC_CONF"
    current = variables.get(name) or ""
    options = [o.strip() for o in current.split(",") if o.strip()]
    if any(o.replace(" ", "").lower() == "expandable_segments:true" for o in options):
        return None
    value = ",".join([o for o in options if not o.lower().startswith("expandable_segments")] + ["expandable_segments:True"])
    return env_remedy("If the run fails with much memory \"reserved by PyTorch but unallocated\" (fragmentation), let the caching "
                      "allocator use expandable segments: %s=%s" % (name, value), "expandable-segments", set_env={name: value})


def _memory_remedies(facts: Dict[str, Any], env: Target, dev: Dict[str, Any], roomy: List[Dict[str, Any]]) -> Tuple[Remedy, ...]:
    others = [a for a in _holders(facts, dev) if not a.get("self")]
    who = " (%s)" % "; ".join(_holder_text(a) for a in others) if others else ""
    smi_index = dev.get("smi_index")
    gpu = " (GPU %s in nvidia-smi)" % smi_index if smi_index is not None and smi_index != dev.get("index") else ""
    remedies: List[Remedy] = [
        Remedy("Free %s%s: stop the processes that hold its memory%s; a crashed earlier run, a notebook kernel or another rank of "
               "the same job on this GPU are the usual holders. List them with the query below" % (dev["id"], gpu, who),
               kind="manual", commands=(APPS_COMMAND,), id="free-gpu"),
        config_remedy("Use a smaller batch size (or gradient accumulation, gradient checkpointing) so the run fits next to what else "
                      "is resident", "smaller-batch", {}, reduce=["batch_size"]),
    ]
    visible = _visible_value(facts, roomy)
    if visible:
        remedies.append(env_remedy("Run on the GPUs that have free memory: CUDA_VISIBLE_DEVICES=%s" % visible,
                                   "visible-devices", set_env={"CUDA_VISIBLE_DEVICES": visible}))
    elif len(facts.get("devices") or ()) > 1:
        remedies.append(Remedy("Set CUDA_VISIBLE_DEVICES to a GPU with free memory (none of the probed ones has any now)",
                               id="visible-devices"))
    conf = _alloc_conf_remedy(facts, env)
    if conf is not None:
        remedies.append(conf)
    return tuple(remedies)


def _device_finding(facts: Dict[str, Any], env: Target, dev: Dict[str, Any], verdict: str, roomy: List[Dict[str, Any]]) -> Finding:
    label = _label(dev)
    subject = {"device": dev["id"], "name": dev.get("name")}
    evidence = tuple(_device_evidence(facts, dev, pressed=verdict in ("oom", "low")))
    mem, alloc = dev.get("mem") or {}, dev.get("alloc") or {}
    reading = _reading(alloc.get("mem_after_failure")) or _reading(mem)
    if verdict == "oom":
        failed = next(r for r in (dev, mem, alloc) if _is_oom(r))
        step = "allocation" if failed is alloc else "mem_get_info" if failed is mem else "context"
        how = " (%s free of %s)" % (_size(reading[0]), _size(reading[1])) if reading else ""
        what = {"allocation": "a %s allocation fails" % _size(alloc.get("bytes") or ALLOC_BYTES),
                "mem_get_info": "even torch.cuda.mem_get_info fails", "context": "even its CUDA context cannot be created"}[step]
        return Finding(ID, "out-of-memory", Severity.ERROR,
                       "%s is out of memory%s: %s (%s), and cuBLAS/cuDNN cannot start there" % (label, how, what, _short(str(failed["error"]))),
                       evidence, _memory_remedies(facts, env, dev, roomy), dict(subject, step=step))
    if verdict == "low":
        free, total = reading or (0, 0)
        if free < LOW_FREE_BYTES:
            title = ("%s has %s free of %s: cuBLAS/cuDNN will fail to start (CUBLAS_STATUS_NOT_INITIALIZED / ALLOC_FAILED) and "
                     "allocations fail" % (label, _size(free), _size(total)))
        else:
            title = ("%s has only %s free of %s (%.0f%%): a training run will not fit next to what holds the rest, and cuBLAS/cuDNN "
                     "workspaces may fail to allocate (CUBLAS_STATUS_ALLOC_FAILED)" % (label, _size(free), _size(total), 100.0 * free / total))
        return Finding(ID, "low-free-memory", Severity.WARNING, title, evidence, _memory_remedies(facts, env, dev, roomy),
                       dict(subject, free=free, total=total))
    if verdict == "unmeasured":
        why = dev.get("error") or mem.get("error") or "no reading"
        return Finding(ID, "not-measured", Severity.INFO,
                       "%s: GPU memory not measured: %s (the cublas and cuda-compat checks judge such failures)" % (label, _short(str(why))),
                       evidence, (), subject)
    free, total = reading or (0, 0)
    if verdict == "alloc-failed":
        return Finding(ID, "allocation-failed", Severity.INFO,
                       "%s has %s free of %s, yet a %s allocation fails for another reason than memory: %s (the cublas and "
                       "cuda-compat checks judge such failures)" % (label, _size(free), _size(total), _size(alloc.get("bytes") or ALLOC_BYTES),
                                                                    _short(str(alloc.get("error")))),
                       evidence, (), dict(subject, free=free, total=total))
    return Finding(ID, "gpu-memory", Severity.INFO, "%s has %s free of %s" % (label, _size(free), _size(total)), evidence, (),
                   dict(subject, free=free, total=total))


def _host_numbers(host: Dict[str, Any]) -> Optional[Tuple[int, int]]:
    """(available, total) of host RAM, narrowed by a cgroup limit when there is one."""
    if host.get("mem_available") is None or not host.get("mem_total"):
        return None
    available, total = int(host["mem_available"]), int(host["mem_total"])
    cgroup = host.get("cgroup") or {}
    if cgroup.get("limit") and cgroup["limit"] < total:
        working = max(0, int(cgroup.get("usage") or 0) - int(cgroup.get("inactive_file") or 0))
        available, total = min(available, max(0, cgroup["limit"] - working)), int(cgroup["limit"])
    return available, total


def _host_finding(facts: Dict[str, Any]) -> Optional[Finding]:
    host = facts.get("host") or {}
    numbers = _host_numbers(host)
    if numbers is None:
        return None
    available, total = numbers
    evidence = ["%s: MemTotal %s, MemAvailable %s, SwapTotal %s, SwapFree %s" % (
        host.get("source"), *(_size(host[k]) if host.get(k) is not None else "?" for k, _ in MEMINFO_FIELDS))]
    cgroup = host.get("cgroup") or {}
    if cgroup.get("limit"):
        evidence.append("cgroup %s: memory.max %s, memory.current %s, inactive_file %s" % (
            cgroup.get("path"), _size(cgroup["limit"]), _size(cgroup.get("usage") or 0), _size(cgroup.get("inactive_file") or 0)))
    subject = {"available": available, "total": total}
    if available < HOST_LOW_BYTES or available < HOST_LOW_FRACTION * total:
        remedies = (
            Remedy("Stop what uses the host memory (other training runs, notebook kernels, a leftover DataLoader); see the biggest "
                   "processes below", kind="manual", commands=("ps aux --sort=-rss | head",), id="free-host-memory"),
            Remedy("Use fewer DataLoader workers (num_workers) and load the model with low_cpu_mem_usage / mmap, so that the host "
                   "copies fit", id="fewer-workers"),
        )
        return Finding(ID, "host-memory-low", Severity.WARNING,
                       "host memory is almost exhausted: %s available of %s; DataLoader workers get killed (SIGKILL by the OOM "
                       "killer) and host copies of the weights fail" % (_size(available), _size(total)),
                       tuple(evidence), remedies, subject)
    return Finding(ID, "host-memory", Severity.INFO, "host memory: %s available of %s" % (_size(available), _size(total)),
                   tuple(evidence), (), subject)


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    devices = facts.get("devices") or []
    verdicts = {dev["id"]: _verdict(dev) for dev in devices}
    findings: List[Finding] = []
    for dev in devices:
        roomy = [d for d in devices if d is not dev and verdicts[d["id"]] == "ok"]
        findings.append(_device_finding(facts, env, dev, verdicts[dev["id"]], roomy))
    host = _host_finding(facts)
    if host is not None:
        findings.append(host)
    return findings


def summarize(facts: Dict[str, Any]) -> str:
    parts = []
    for dev in facts.get("devices") or []:
        verdict = _verdict(dev)
        reading = _reading((dev.get("alloc") or {}).get("mem_after_failure")) or _reading(dev.get("mem"))
        if verdict == "oom":
            parts.append("%s out of memory" % dev["id"])
        elif reading:
            parts.append("%s %s free of %s" % (dev["id"], _size(reading[0]), _size(reading[1])))
        else:
            parts.append("%s not measured" % dev["id"])
    numbers = _host_numbers(facts.get("host") or {})
    if numbers:
        parts.append("host %s available of %s" % (_size(numbers[0]), _size(numbers[1])))
    if not facts.get("devices"):
        parts.append("no CUDA device selected" if facts.get("cuda_seen") else "no CUDA device")
    return " · ".join(parts)


# How out of memory reads in a traceback, and what causes it:
#   torch's caching allocator: `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total
#   capacity of ... of which ... is free. Process 2211 has ... memory in use ...` (torch.cuda.OutOfMemoryError in older
#   releases, the same class; see https://pytorch.org/docs/stable/notes/cuda.html#cuda-memory-management, and
#   github.com/pytorch/pytorch/issues/40863: "another program ... is already using all the GPU memory", check nvidia-smi);
#   the CUDA runtime at context creation: `RuntimeError: CUDA error: out of memory` (github.com/yangjianxin1/GPT2-chitchat/issues/19:
#   GPU 0 was held by another framework's job, the other GPUs free);
#   cuBLAS: `CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`` (github.com/QwenLM/Qwen3/issues/873:
#   solved by running on a GPU with enough free memory);
#   cuDNN: `CUDNN_STATUS_ALLOC_FAILED` (github.com/amdegroot/ssd.pytorch/issues/33: solved with a smaller batch size).
# What `explain` can say from a traceback alone; the live findings add this machine's free memory and processes.
EXPLAIN_REMEDIES = (
    Remedy("Make the step fit: a smaller batch (with gradient accumulation for the same effective batch), gradient "
           "checkpointing, bf16/fp16 weights, or 8-bit optimizers", id="smaller-batch"),
    Remedy("Free the GPU: stop the other processes that hold its memory (`nvidia-smi`), a crashed earlier run, a notebook "
           "kernel, another rank placed on the same GPU", id="free-gpu"),
    Remedy("If much memory is reserved but unallocated (fragmentation), set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
           id="alloc-conf"),
)
# Out of memory said in other words near a cuBLAS/cuDNN failure: the allocator's report, a large
# allocation, the runtime's own code.
# People's own words count: "VRAM climbs to 24G", "显存" (GPU memory, in the Chinese threads the seeds come from).
OOM_HINTS = (r"out of memory|OutOfMemory|Tried to allocate|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|"
             r"reserved in total by PyTorch|memory (is )?(full|exhausted)|\bOOM\b|VRAM|GPU memory|显存",)

SIGNATURES = (
    Signature("out-of-memory", r"CUDA out of memory\. Tried to allocate",
              cause="torch's caching allocator could not get the memory it asked for: the batch does not fit next to what is "
                    "resident (other processes, this process's own tensors and cache), or the memory is fragmented",
              remedies=EXPLAIN_REMEDIES),
    Signature("out-of-memory", r"\btorch\.(?:cuda\.)?OutOfMemoryError\b",
              cause="torch's caching allocator ran out of GPU memory (torch.OutOfMemoryError, torch.cuda.OutOfMemoryError in "
                    "older releases)", remedies=EXPLAIN_REMEDIES),
    Signature("out-of-memory", r"CUDA error: out of memory|CUDA_ERROR_OUT_OF_MEMORY",
              cause="the CUDA runtime could not allocate, often already when creating the context: another process holds the GPU",
              remedies=EXPLAIN_REMEDIES),
    Signature("out-of-memory", r"CUBLAS_STATUS_(ALLOC_FAILED|NOT_INITIALIZED)", context=OOM_HINTS, context_required=True,
              cause="cuBLAS could not create its handle or workspace because the GPU is (nearly) full",
              remedies=EXPLAIN_REMEDIES),
    Signature("out-of-memory", r"CUDNN_STATUS_(ALLOC_FAILED|NOT_INITIALIZED|INTERNAL_ERROR)", context=OOM_HINTS, context_required=True,
              cause="cuDNN could not allocate its handle or a convolution workspace: the GPU is (nearly) full or the batch too large",
              remedies=EXPLAIN_REMEDIES),
)

CHECK = Check(
    id=ID,
    title="GPU and host memory",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    timeout_s=120.0,  # the first CUDA initialisation and one context per GPU
    order=55,  # after cublas (50), before apex (60)
    signatures=SIGNATURES,
)
