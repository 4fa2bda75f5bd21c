"""The exchange between a job's ranks, run in the target interpreter (the check's own worker, torch already
imported): this rank's summary plus what only this interpreter and machine can say (the installed
distributions, its GPU, NCCL, the network interfaces up, InfiniBand, /dev/shm), a gloo process group from
the launcher's variables, the collective probe, a timed compute, and every rank's summary gathered (each
node's, then the nodes') and given back to every rank.
On the CPU first: a broken NCCL cannot stop the report. Each rank records the step it is at in the job's
c10d store, so that a rank that joined and then hung is named with it. Bounded by the timeout.

Target side: the standard library and torch only (Python 3.8+, torch 2.0+).
"""

# Every failure here is a fact of the report (a collective that fails, a store that cannot be read): caught, never raised.
# ruff: noqa: BLE001

from __future__ import annotations

import datetime
import glob
import hashlib
import importlib
import os
import time
from typing import Any, Dict, List, Optional

from envdoctor.target.probekit.files import read_file
from envdoctor.target.probekit.links import gpu_links, network_ports


def machine() -> Dict[str, Any]:
    """The network interfaces that are up, InfiniBand devices, the size of /dev/shm, the ports' rates."""
    up: List[str] = []
    for path in sorted(glob.glob("/sys/class/net/*/operstate")):
        if (read_file(path, 64) or "").strip() in ("up", "unknown"):
            up.append(path.split("/")[-2])
    ib = sorted(os.path.basename(p) for p in glob.glob("/sys/class/infiniband/*"))
    shm = None
    try:
        st = os.statvfs("/dev/shm")
        shm = st.f_frsize * st.f_blocks
    except OSError:
        pass
    return {"interfaces_up": up, "infiniband": ib, "shm_bytes": shm, "network_ports": network_ports(up)}

def collectives(torch: Any, dist: Any, group: Any, device: str, world: int, me: int) -> List[Dict[str, Any]]:
    """all_reduce, all_gather and broadcast of known small integers (exact in fp16 and bf16 too), then
    all_reduce timed for bus bandwidth (nccl-tests: busbw = algbw * 2(n-1)/n): 64 MiB on a GPU, where
    smaller buffers measure NCCL's latency rather than its links, 4 MiB on the CPU."""
    backend = dist.get_backend(group)
    out: List[Dict[str, Any]] = []
    for name in ("float32", "float16", "bfloat16"):
        dt = getattr(torch, name)
        for op in ("all_reduce", "all_gather", "broadcast"):
            fact: Dict[str, Any] = {"backend": backend, "op": op, "dtype": name, "device": device}
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
    if world < 2:  # nothing crosses a link: all_reduce of one rank is a copy at most
        return out
    try:
        size = 1 << (20 if device == "cpu" else 24)  # float32 elements
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

def compute(torch: Any, device: str) -> float:
    """A fixed piece of work (20 matmuls of 256x256), timed at its best pace: five rounds of four, the
    fastest round counted five times, so that a moment of scheduling on a loaded machine is not taken for a
    slow GPU; a rank slower at its best than the others is a straggler."""
    a = torch.ones(256, 256, device=device)
    a @ a
    rounds = []
    for _ in range(5):
        if device != "cpu":
            torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(4):
            a @ a
        if device != "cpu":
            torch.cuda.synchronize()
        rounds.append(time.perf_counter() - started)
    return round(min(rounds) * 5, 6)


def packages() -> List[str]:
    try:
        import importlib.metadata as md

        return sorted(set("%s==%s" % (d.metadata["Name"].lower().replace("_", "-"), d.version)
                          for d in md.distributions() if d.metadata["Name"]))
    except Exception:
        return []


class _Steps:
    """Where each rank is, in the job's store: set as this rank goes, read by whoever fails."""

    def __init__(self, mine: Dict[str, Any]) -> None:
        self.mine = mine
        self.store: Any = None
        self.world = 0
        self.me = 0

    def joined(self, dist: Any) -> None:
        self.world, self.me = dist.get_world_size(), dist.get_rank()
        try:
            from torch.distributed import distributed_c10d

            self.store = distributed_c10d._get_default_store()
        except Exception:
            self.store = None

    def at(self, name: str) -> None:
        self.mine["step"] = name
        if self.store is not None:
            try:
                self.store.set("envdoctor/step/%d" % self.me, name)
            except Exception:
                pass

    def of_all(self) -> Dict[str, Optional[str]]:
        """Each rank's last step (None: it never joined); read without waiting."""
        found: Dict[str, Optional[str]] = {}
        for r in range(self.world if self.store is not None else 0):
            key = "envdoctor/step/%d" % r
            try:
                found[str(r)] = self.store.get(key).decode() if self.store.check([key]) else None
            except Exception:
                found[str(r)] = None
        return found


def _nodes(torch: Any, dist: Any, mine: Dict[str, Any], world: int) -> List[List[int]]:
    """The job's nodes, each as its ranks in order, the node of rank 0 first: one int64 a rank all-gathered
    (a digest of the host and the launcher's node number: two torchrun "nodes" may share a host)."""
    key = "%s|%s" % (mine.get("host"), mine.get("node"))
    parts = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(parts, torch.tensor([int(hashlib.sha256(key.encode()).hexdigest()[:15], 16)], dtype=torch.int64))
    nodes: Dict[int, List[int]] = {}
    for r, part in enumerate(parts):
        nodes.setdefault(int(part.item()), []).append(r)
    return list(nodes.values())


def _gather(dist: Any, obj: Any, members: List[int], me: int, group: Any) -> Optional[List[Any]]:
    """`obj` of every rank in `members`, as a list at members[0] (None on the others)."""
    if len(members) == 1:
        return [obj]
    out: Optional[List[Any]] = [None] * len(members) if me == members[0] else None
    dist.gather_object(obj, out, dst=members[0], group=group)
    return out


def _compact(summaries: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One node's summaries with what they share said once: most of a summary (versions, variables, the
    checks' outcomes) is the same on every rank of a node."""
    first = summaries[0]
    common = {k: v for k, v in first.items() if all(k in s and s[k] == v for s in summaries[1:])}
    return {"common": common, "own": [{k: v for k, v in s.items() if k not in common} for s in summaries]}


def _all_summaries(torch: Any, dist: Any, mine: Dict[str, Any], world: int, me: int) -> Dict[str, Any]:
    """Every rank's summary on every rank, in two levels so that rank 0 does not receive one message a rank:
    each node's lowest rank gathers its node's summaries (what they share said once), the node leaders send
    their node to rank 0, and rank 0 broadcasts the job's whole. A list of installed distributions crosses
    only where it differs from rank 0's (a job whose ranks share one environment moves none), once a node.
    All collectives on gloo; every rank creates the same groups in the same order, as torch requires."""
    nodes = _nodes(torch, dist, mine, world)
    leaders = [members[0] for members in nodes]
    groups = [dist.new_group(members) if 1 < len(members) < world else None for members in nodes]
    leaders_group = dist.new_group(leaders) if 1 < len(leaders) < world else None
    reference = [mine.get("packages_digest")]
    dist.broadcast_object_list(reference, src=0)
    up = {k: v for k, v in mine.items() if k != "packages" or mine.get("packages_digest") != reference[0]}
    node = next(i for i, members in enumerate(nodes) if me in members)
    from_node = _gather(dist, up, nodes[node], me, groups[node])
    bundle = None
    if from_node is not None:  # a node leader
        lists = {s["packages_digest"]: s.pop("packages") for s in from_node if "packages" in s}
        bundle = dict(_compact(from_node), lists=lists)
    job: List[Any] = [None]
    if bundle is not None:
        from_leaders = _gather(dist, bundle, leaders, me, leaders_group)
        if from_leaders is not None:  # rank 0
            lists = {mine.get("packages_digest"): mine.get("packages") or []}
            for b in from_leaders:
                lists.update(b.pop("lists"))
            job[0] = {"nodes": from_leaders, "lists": lists, "leaders": leaders}
    dist.broadcast_object_list(job, src=0)
    whole = job[0]
    ranks = [dict(b["common"], **own) for b in whole["nodes"] for own in b["own"]]
    ranks = [dict(s, packages=whole["lists"].get(s.get("packages_digest")) or []) for s in sorted(ranks, key=lambda s: s.get("rank", 0))]
    return {"ranks": ranks, "exchange": {"nodes": len(nodes), "leaders": whole["leaders"]}}


def _collectives_on_every_backend(torch: Any, dist: Any, mine: Dict[str, Any], steps: _Steps, timeout: float) -> None:
    """The collective probe on gloo (a group of its own: the default one carries the exchange), then on NCCL
    where this rank has a GPU, in a group of its own too, so that a broken NCCL cannot take the report with
    it. A new group reads the NCCL_* variables as they are now: fix's verification relies on it."""
    world, me = steps.world, steps.me
    span = datetime.timedelta(seconds=timeout)
    steps.at("collectives on gloo")
    mine["collectives"] = collectives(torch, dist, dist.new_group(backend="gloo", timeout=span), "cpu", world, me)
    gpu = mine.get("gpu")
    ready = bool(gpu) and dist.is_nccl_available()
    # every rank makes a new group or none does: a rank without a GPU of its own (more ranks than GPUs) would
    # leave the others waiting in new_group; the job's report names it instead
    flags = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(flags, torch.tensor([int(ready)], dtype=torch.int64))
    if gpu and ready and all(int(f.item()) for f in flags):  # the job's own backend, after the report is safe on gloo
        try:
            steps.at("collectives on nccl")
            torch.cuda.set_device(gpu["index"])
            nccl = dist.new_group(backend="nccl", timeout=span)
            mine["collectives"] += collectives(torch, dist, nccl, "cuda:%d" % gpu["index"], world, me)
        except Exception as exc:
            mine["collectives"].append({"backend": "nccl", "op": "group", "ok": False, "error": "%s: %s" % (type(exc).__name__, exc)})


def _gathered(torch: Any, dist: Any, mine: Dict[str, Any], steps: _Steps) -> Dict[str, Any]:
    steps.at("the exchange of reports")
    started = time.perf_counter()
    answer = _all_summaries(torch, dist, mine, steps.world, steps.me)
    answer["exchange"]["seconds"] = round(time.perf_counter() - started, 3)
    return answer


def _failed(exc: BaseException, mine: Dict[str, Any], steps: _Steps) -> Dict[str, Any]:
    text = str(exc).strip()
    return {"error": "%s: %s" % (type(exc).__name__, text.splitlines()[0] if text else ""), "mine": mine, "steps": steps.of_all()}


def _end(dist: Any) -> None:
    if dist is not None:
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception:
            pass


# What exchange(keep=True) leaves for `again`: the group's module, this rank's summary, its steps.
_KEPT: Dict[str, Any] = {}


def exchange(torch: Any, mine: Dict[str, Any], timeout: float, keep: bool = False) -> Dict[str, Any]:
    """{"ranks": [every rank's summary]} or {"error", "mine", "steps"}; never raises. `keep`: the process
    group stays, for fix's verification (`again`), when the exchange succeeded."""
    mine = dict(mine, **machine())
    steps = _Steps(mine)
    dist: Any = None
    answer: Dict[str, Any] = {}
    try:
        names = packages()
        mine["packages"] = names
        mine["packages_digest"] = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
        if torch is None:
            raise RuntimeError("torch does not import in this interpreter")
        dist = importlib.import_module("torch.distributed")
        local = int(os.environ.get("LOCAL_RANK", "0"))
        mine["gpus_visible"] = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if local < mine["gpus_visible"]:
            props = torch.cuda.get_device_properties(local)
            mine["gpu"] = {"index": local, "name": props.name, "uuid": str(getattr(props, "uuid", "") or "") or None,
                           "pci_bus_id": getattr(props, "pci_bus_id", None), "links": gpu_links(torch, local)}
            try:
                mine["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
            except Exception:
                pass
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout))
        steps.joined(dist)
        _collectives_on_every_backend(torch, dist, mine, steps, timeout)
        steps.at("the timed compute")
        mine["compute_s"] = compute(torch, "cuda:%d" % local if mine.get("gpu") else "cpu")
        answer = _gathered(torch, dist, mine, steps)
        return answer
    except BaseException as exc:  # a failed exchange is the report's finding
        return _failed(exc, mine, steps)
    finally:
        if keep and "ranks" in answer:
            _KEPT.update(dist=dist, mine=mine, steps=steps, timeout=timeout)
        else:
            _end(dist)


def again(torch: Any, variables: Optional[Dict[str, Optional[str]]], mine: Dict[str, Any]) -> Dict[str, Any]:
    """fix --distributed's verification, in the group exchange(keep=True) left: rank 0 says which variables
    its fix set (None: it applied nothing, and every rank stops here); every rank sets them, runs the
    collective probe again in new groups, and the summaries are gathered again as the exchange gathers
    them, each with `mine`'s variables (this rank's, as the fix leaves them). Ends the group; never raises."""
    if "dist" not in _KEPT:
        return {"error": "RuntimeError: the ranks' group is gone: nothing to verify with", "mine": mine}
    dist, kept, steps, timeout = _KEPT.pop("dist"), _KEPT.pop("mine"), _KEPT.pop("steps"), _KEPT.pop("timeout")
    steps.mine = summary = dict(kept, variables=mine.get("variables", kept.get("variables")))
    try:
        steps.at("the fix's variables from rank 0")
        agreed: List[Any] = [variables]
        dist.broadcast_object_list(agreed, src=0)
        if agreed[0] is None:
            return {"skipped": True}
        for name, value in agreed[0].items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _collectives_on_every_backend(torch, dist, summary, steps, timeout)
        return _gathered(torch, dist, summary, steps)
    except BaseException as exc:
        return _failed(exc, summary, steps)
    finally:
        _end(dist)
