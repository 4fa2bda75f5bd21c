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
    ranks = [None] * dist.get_world_size()
    dist.all_gather_object(ranks, mine)
    dist.destroy_process_group()
    print(json.dumps({"ranks": ranks}))
except BaseException as exc:
    print(json.dumps({"error": "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else ""),
                      "mine": mine}))
'''


@dataclass
class Gathered:
    ranks: List[Dict[str, Any]] = field(default_factory=list)  # every rank's summary, in rank order
    error: Optional[str] = None  # why the exchange failed (this rank's own summary is then the only one)
    mine: Dict[str, Any] = field(default_factory=dict)


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
        return Gathered(error=data["error"][:300], mine=data.get("mine") or mine)
    ranks = [r for r in data.get("ranks") or () if isinstance(r, dict)]
    return Gathered(ranks=ranks, mine=next((r for r in ranks if r.get("rank") == rank.rank), mine))
