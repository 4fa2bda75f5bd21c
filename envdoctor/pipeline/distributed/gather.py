"""The exchange: each rank hands its summary to a small process in the target interpreter, which
adds what only that interpreter and machine can say (the installed distributions, this rank's GPU,
NCCL, the network interfaces up, InfiniBand, /dev/shm), joins a gloo process group with the
launcher's variables and all-gathers every rank's summary. On the CPU, before any GPU collective:
a broken NCCL cannot stop the report. Bounded by the timeout: a rank that never arrives is an
error message here, not a hang."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from envdoctor.pipeline.children import kill_group, own_group
from envdoctor.pipeline.distributed.ranks import RankEnv

# Run as `python -c GATHER TIMEOUT` in the target interpreter: stdlib and torch only (Python 3.8+),
# the rank's summary on stdin, one JSON line on stdout.
GATHER = r'''
import datetime, glob, hashlib, json, os, sys
mine = json.loads(sys.stdin.read())
timeout = float(sys.argv[1])

def machine():
    up = []
    for path in sorted(glob.glob("/sys/class/net/*/operstate")):
        try:
            with open(path) as f:
                if f.read().strip() in ("up", "unknown"):
                    up.append(path.split("/")[-2])
        except OSError:
            pass
    ib = sorted(os.path.basename(p) for p in glob.glob("/sys/class/infiniband/*"))
    shm = None
    try:
        st = os.statvfs("/dev/shm")
        shm = st.f_frsize * st.f_blocks
    except OSError:
        pass
    return {"interfaces_up": up, "infiniband": ib, "shm_bytes": shm}

def collectives(torch, dist, group, device, world, me):
    """all_reduce, all_gather and broadcast of known small integers (exact in fp16 and bf16 too), then
    all_reduce of 4 MiB timed for bus bandwidth (nccl-tests: busbw = algbw * 2(n-1)/n)."""
    import time
    backend = dist.get_backend(group)
    out = []
    for name in ("float32", "float16", "bfloat16"):
        dt = getattr(torch, name)
        for op in ("all_reduce", "all_gather", "broadcast"):
            fact = {"backend": backend, "op": op, "dtype": name, "device": device}
            try:
                if op == "all_reduce":
                    t = torch.full((64,), float(me + 1), dtype=dt, device=device)
                    dist.all_reduce(t, group=group)
                    want = torch.full((64,), float(world * (world + 1) // 2), dtype=dt, device=device)
                elif op == "all_gather":
                    t = [torch.zeros(8, dtype=dt, device=device) for _ in range(world)]
                    dist.all_gather(t, torch.full((8,), float(me), dtype=dt, device=device), group=group)
                    t, want = torch.stack(t), torch.arange(world, dtype=dt, device=device).repeat_interleave(8).reshape(world, 8)
                else:
                    t = torch.arange(16, dtype=dt, device=device) if me == 0 else torch.zeros(16, dtype=dt, device=device)
                    dist.broadcast(t, src=0, group=group)
                    want = torch.arange(16, dtype=dt, device=device)
                fact["ok"] = bool(torch.equal(t, want))
                if not fact["ok"]:
                    fact["error"] = "wrong data: got %s" % t.flatten()[:8].tolist()
            except Exception as exc:
                fact.update(ok=False, error="%s: %s" % (type(exc).__name__, exc))
            out.append(fact)
    try:
        size = 1 << 20  # float32 elements: 4 MiB
        t = torch.ones(size, device=device)
        dist.all_reduce(t, group=group)
        if device != "cpu":
            torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(3):
            dist.all_reduce(t, group=group)
        if device != "cpu":
            torch.cuda.synchronize()
        seconds = (time.perf_counter() - started) / 3
        algbw = size * 4 / seconds / 1e9
        out.append({"backend": backend, "op": "bandwidth", "device": device, "ok": True, "bytes": size * 4, "seconds": round(seconds, 6),
                    "algbw_gbs": round(algbw, 3), "busbw_gbs": round(algbw * 2 * (world - 1) / world, 3)})
    except Exception as exc:
        out.append({"backend": backend, "op": "bandwidth", "device": device, "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)})
    return out

def compute(torch, device):
    """A fixed piece of work, timed: a rank far slower than the others is a straggler."""
    import time
    a = torch.ones(256, 256, device=device)
    a @ a
    if device != "cpu":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(20):
        a @ a
    if device != "cpu":
        torch.cuda.synchronize()
    return round(time.perf_counter() - started, 6)

store = None
world = me = None

def step(name):
    """Where this rank is, in the job's store: a rank that joined and then hung is named with it."""
    mine["step"] = name
    if store is not None:
        try:
            store.set("envdoctor/step/%d" % me, name)
        except Exception:
            pass

def steps_of_all():
    """Each rank's last step as the store holds it (None: it never joined); read without waiting."""
    found = {}
    for r in range(world or 0):
        key = "envdoctor/step/%d" % r
        try:
            found[str(r)] = store.get(key).decode() if store.check([key]) else None
        except Exception:
            found[str(r)] = None
    return found

mine.update(machine())
try:
    try:
        import importlib.metadata as md
        names = sorted(set("%s==%s" % (d.metadata["Name"].lower().replace("_", "-"), d.version)
                           for d in md.distributions() if d.metadata["Name"]))
    except Exception:
        names = []
    mine["packages"] = names
    mine["packages_digest"] = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    import torch
    import torch.distributed as dist
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available() and local < torch.cuda.device_count():
        props = torch.cuda.get_device_properties(local)
        mine["gpu"] = {"index": local, "name": props.name, "uuid": str(getattr(props, "uuid", "") or "") or None,
                       "pci_bus_id": getattr(props, "pci_bus_id", None)}
        try:
            mine["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception:
            pass
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
    world, me = dist.get_world_size(), dist.get_rank()
    try:
        from torch.distributed import distributed_c10d
        store = distributed_c10d._get_default_store()
    except Exception:
        store = None
    step("collectives on gloo")
    mine["collectives"] = collectives(torch, dist, None, "cpu", world, me)
    if mine.get("gpu") and dist.is_nccl_available():  # the job's own backend, after the report is safe on gloo
        try:
            step("collectives on nccl")
            torch.cuda.set_device(local)
            nccl = dist.new_group(backend="nccl", timeout=datetime.timedelta(seconds=timeout))
            mine["collectives"] += collectives(torch, dist, nccl, "cuda:%d" % local, world, me)
        except Exception as exc:
            mine["collectives"].append({"backend": "nccl", "op": "group", "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)})
    step("the timed compute")
    mine["compute_s"] = compute(torch, "cuda:%d" % local if mine.get("gpu") else "cpu")
    step("the exchange of reports")
    ranks = [None] * world
    dist.all_gather_object(ranks, mine)
    dist.destroy_process_group()
    print(json.dumps({"ranks": ranks}))
except BaseException as exc:
    print(json.dumps({"error": "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else ""),
                      "mine": mine, "steps": steps_of_all() if store is not None else {}}))
'''


@dataclass
class Gathered:
    ranks: List[Dict[str, Any]] = field(default_factory=list)  # every rank's summary, in rank order
    error: Optional[str] = None  # why the exchange failed (this rank's own summary is then the only one)
    mine: Dict[str, Any] = field(default_factory=dict)
    steps: Dict[int, Optional[str]] = field(default_factory=dict)  # when it failed: each rank's last step (None: never joined)


def gather(python: str, mine: Dict[str, Any], rank: RankEnv, timeout_s: float) -> Gathered:
    env = dict(os.environ, **rank.child_environ())
    child = subprocess.Popen([python, "-c", GATHER, repr(float(timeout_s))], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env, **own_group())
    try:
        out, err = child.communicate(json.dumps(mine).encode("utf-8"), timeout=timeout_s + 30)
    except subprocess.TimeoutExpired:
        kill_group(child)
        return Gathered(error="the exchange between the ranks did not end within %.0f s" % (timeout_s + 30), mine=mine)
    finally:
        if child.poll() is None:
            kill_group(child)
    lines = [ln for ln in out.decode("utf-8", "replace").splitlines() if ln.startswith("{")]
    if not lines:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["exit code %s" % child.returncode]
        return Gathered(error="the exchange process failed: %s" % tail[0][:300], mine=mine)
    data = json.loads(lines[-1])
    if data.get("error"):
        steps = {int(r): (str(v) if v else None) for r, v in (data.get("steps") or {}).items() if str(r).isdigit()}
        return Gathered(error=data["error"][:300], mine=data.get("mine") or mine, steps=steps)
    ranks = [r for r in data.get("ranks") or () if isinstance(r, dict)]
    return Gathered(ranks=ranks, mine=next((r for r in ranks if r.get("rank") == rank.rank), mine))
