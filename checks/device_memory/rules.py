"""The device-memory rules: pure functions over the probe's facts and the Target, run in envdoctor's
own process and tested on snapshots recorded from real machines."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.target.model import Finding, Remedy, Severity, Target
from envdoctor.target.probekit.gpus import visible_devices_value
from envdoctor.target.probekit.text import dedupe
from envdoctor.target.remedies.actions import config_remedy, env_remedy

from .probe import ALLOC_BYTES, APPS_QUERY, ID, MEMINFO_FIELDS, GiB, MiB

# "Almost nothing free" on a GPU: cuBLAS/cuDNN workspaces and a training step need more
# than this (the same thresholds as the cublas check, kept here for this check's rules).
LOW_FREE_BYTES = 256 * MiB
LOW_FREE_FRACTION = 0.05
# "Almost exhausted" host RAM: the kernel's OOM killer is near (MemAvailable is the
# kernel's own estimate of what can be had without swapping).
HOST_LOW_BYTES = 1 * GiB
HOST_LOW_FRACTION = 0.05


# What a person types to see the holders (printed by the free-gpu remedy).
APPS_COMMAND = "nvidia-smi %s --format=csv" % APPS_QUERY

# Out of memory, however the layer that hit it spells it: torch's caching allocator
# (torch.OutOfMemoryError), the CUDA runtime ("CUDA error: out of memory"), cuBLAS/cuDNN.
_OOM = re.compile(r"out of memory|OutOfMemoryError|(CUBLAS|CUDNN)_STATUS_ALLOC_FAILED", re.IGNORECASE)


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
