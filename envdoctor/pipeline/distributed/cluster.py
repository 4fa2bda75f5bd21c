"""One report for the job: every rank's summary in, the findings of stable id `distributed` out.
What is the same on every rank is said once; what differs is a finding naming the ranks and hosts
of each value. Pure."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.checks.distributed.machines import ONE_GPU_PER_RANK, hosts_text, machine_findings, ranks_text, where
from envdoctor.checks.distributed.probe import ID
from envdoctor.checks.distributed.topology import bandwidth_findings
from envdoctor.pipeline.distributed.gather import Gathered
from envdoctor.target.model import CheckResult, Finding, Remedy, Report, Severity, status_from_findings
from envdoctor.target.remedies.actions import env_remedy, torch_wheel
from envdoctor.target.remedies.commandline import pip_command
from envdoctor.target.versions import requirement_name

TITLE = "the ranks together"

# (key, what it is, severity when ranks differ): a torch, CUDA or NCCL that differs hangs the first
# collective or fails it; other packages change what each rank computes.
COMPARED: Tuple[Tuple[str, str, Severity], ...] = (
    ("envdoctor", "envdoctor", Severity.WARNING),
    ("python", "Python", Severity.ERROR),
    ("torch", "torch", Severity.ERROR),
    ("cuda_build", "torch's CUDA", Severity.ERROR),
    ("nccl", "NCCL", Severity.ERROR),
    ("driver", "the NVIDIA driver", Severity.WARNING),
    ("packages_digest", "the installed distributions", Severity.WARNING),
)


def _groups(summaries: Sequence[Dict[str, Any]], value: Any) -> Dict[str, List[Dict[str, Any]]]:
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for s in summaries:
        groups.setdefault(str(value(s)), []).append(s)
    return groups


def _by_rank(groups: Dict[str, List[Dict[str, Any]]]) -> List[Tuple[str, List[Dict[str, Any]]]]:
    """The groups in the order of their first rank."""
    return sorted(groups.items(), key=lambda kv: min(s["rank"] for s in kv[1]))


def _differs(summaries: Sequence[Dict[str, Any]], key: str, label: str, severity: Severity) -> Optional[Finding]:
    groups = _groups(summaries, lambda s: s.get(key))
    if len(groups) < 2:
        return None
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    evidence = ["%s: %s %s" % (where(members), label, value) for value, members in ordered]
    odd = ordered[-1]
    if key == "packages_digest":
        evidence += _package_differences(summaries)
    remedies = _same_as_most(key, ordered[0][1], [s for _, members in ordered[1:] for s in members])
    remedies += (Remedy("Install the same %s on every node (the odd ones: %s), with each node's own interpreter" % (label, where(odd[1])),
                        kind="manual", id="same-everywhere"),)
    return Finding(ID, "ranks-differ", severity,
                   "%s differs between the ranks: %s has %s, %s has %s" % (label, where(odd[1]), odd[0], where(ordered[0][1]), ordered[0][0]),
                   tuple(evidence), remedies, {"key": key, "values": {v: [s["rank"] for s in m] for v, m in groups.items()}})


def _same_as_most(key: str, most: Sequence[Dict[str, Any]], odd: Sequence[Dict[str, Any]], limit: int = 12) -> Tuple[Remedy, ...]:
    """The exact command for each odd node's own interpreter that gives it what most ranks have: their torch
    build (from its wheel index), or their versions of the distributions it has otherwise or lacks. A
    command for another machine: `fix` on this rank cannot run it, so it is said, not planned."""
    first = most[0]
    wanted: List[str] = []
    index: Optional[str] = None
    if key in ("torch", "cuda_build") and first.get("torch"):
        wheel = torch_wheel(str(first["torch"]), first.get("cuda_build"))
        if wheel is None:
            return ()
        wanted, index = [wheel[0]], wheel[1]
    elif key == "packages_digest":
        theirs = set(first.get("packages") or ())
    else:
        return ()
    remedies = []
    for (_, executable), members in _by_interpreter(odd).items():
        if not executable:
            continue
        names = wanted or [n for n in sorted(theirs - set(members[0].get("packages") or ())) if not _comes_with_torch(n)][:limit]
        if not names:
            continue
        args = ["install", *names] + (["--index-url", index] if index else [])
        remedies.append(Remedy("On %s, with its own interpreter: the same %s as %s" % (where(members), "torch" if index else "distributions",
                                                                                        where(most)),
                               kind="manual", commands=(pip_command(executable, *args, installer=members[0].get("installer") or "pip"),),
                               id="same-as-most"))
    return tuple(remedies)


def _comes_with_torch(requirement: str) -> bool:
    """torch and what its wheel pins (triton, the nvidia-* CUDA libraries): the torch finding's command brings
    those from the right index; pip from PyPI would bring another build."""
    name = requirement_name(requirement) or ""
    return name in ("torch", "triton") or name.startswith("nvidia-")


def _by_interpreter(summaries: Sequence[Dict[str, Any]]) -> Dict[Tuple[str, str], List[Dict[str, Any]]]:
    found: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for s in summaries:
        found.setdefault((str(s.get("host")), s.get("executable", "") or ""), []).append(s)
    return found


def _package_differences(summaries: Sequence[Dict[str, Any]], limit: int = 12) -> List[str]:
    sets = [set(s.get("packages") or ()) for s in summaries]
    common = set.intersection(*sets) if sets else set()
    lines = []
    for s, have in zip(summaries, sets):
        extra = sorted(have - common)
        if extra:
            lines.append("%s only: %s" % (where([s]), ", ".join(extra[:limit]) + (" ..." if len(extra) > limit else "")))
    return lines


def _same_gpu(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    by_gpu: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for s in summaries:
        gpu = s.get("gpu") or {}
        ident = gpu.get("uuid") or gpu.get("pci_bus_id")
        if ident:
            by_gpu.setdefault((str(s.get("host")), str(ident)), []).append(s)
    return [Finding(ID, "same-gpu", Severity.ERROR, "%s share one GPU (%s, %s)" % (where(members), members[0]["gpu"].get("name"), ident),
                    tuple("%s: cuda:%s %s" % (where([m]), m["gpu"].get("index"), ident) for m in members),
                    (ONE_GPU_PER_RANK,),
                    {"host": host, "gpu": ident, "ranks": [m["rank"] for m in members]})
            for (host, ident), members in by_gpu.items() if len(members) > 1]


def _without_gpu(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    """Ranks with no GPU of their own beside ranks that have one: LOCAL_RANK past the GPUs visible (more ranks
    than GPUs on a node). NCCL's collectives are then not run on any rank."""
    with_gpu = [s for s in summaries if s.get("gpu")]
    without = [s for s in summaries if not s.get("gpu") and s.get("gpus_visible")]
    if not with_gpu or not without:
        return []
    return [Finding(ID, "ranks-without-gpu", Severity.ERROR, "%s %s no GPU of its own: more ranks than GPUs on the node"
                    % (where(without), "has" if len(without) == 1 else "have"),
                    tuple("%s: LOCAL_RANK %s, %s GPU%s visible" % (where([s]), s.get("local_rank"), s["gpus_visible"],
                                                                  "" if s["gpus_visible"] == 1 else "s") for s in without[:12]),
                    (ONE_GPU_PER_RANK,), {"ranks": [s["rank"] for s in without]})]


def _variables(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    names = sorted({n for s in summaries for n in (s.get("variables") or {})})
    found = []
    for name in names:
        groups = _groups(summaries, lambda s, n=name: (s.get("variables") or {}).get(n, "(unset)"))
        if len(groups) > 1:
            found.append(Finding(ID, "variables-differ", Severity.WARNING, "%s differs between the ranks" % name,
                                 tuple("%s: %s=%s" % (where(m), name, v) for v, m in _by_rank(groups)),
                                 (Remedy("Set %s the same on every node (the launcher's environment)" % name, kind="manual",
                                         id="same-variables"),), {"variable": name}))
    return found


# A rank slower than the fastest by this factor, and by this much, on the same fixed piece of work.
STRAGGLER_FACTOR = 3.0
STRAGGLER_MIN_S = 0.2


def _collectives(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    """Known values through all_reduce, all_gather and broadcast: wrong data is the P2P failure mode of
    consumer GPUs (NCCL_P2P_DISABLE=1), an error is a transport that does not work."""
    found = []
    bad: Dict[Tuple[str, str], List[Tuple[Dict[str, Any], Dict[str, Any]]]] = {}
    for s in summaries:
        for c in s.get("collectives") or ():
            if c.get("op") != "bandwidth" and not c.get("ok"):
                kind = "wrong" if str(c.get("error", "")).startswith("wrong data") else "fails"
                bad.setdefault((str(c.get("backend")), kind), []).append((s, c))
    for (backend, kind), cases in sorted(bad.items()):
        ranks = sorted({s["rank"] for s, _ in cases})
        ops = _ops_text([c for _, c in cases])
        by_error: Dict[str, List[Tuple[Dict[str, Any], Dict[str, Any]]]] = {}
        for s, c in cases:
            by_error.setdefault(one_line(str(c.get("error"))), []).append((s, c))
        evidence = tuple("%s: %s on %s: %s" % (where(_unique([s for s, _ in same])), _ops_text([c for _, c in same]),
                                               ", ".join(sorted({str(c.get("device")) for _, c in same})), error)
                         for error, same in list(by_error.items())[:12])
        title = "%s collectives %s on %s (%s)" % (backend, "return wrong data" if kind == "wrong" else "fail", ranks_text(ranks), ops)
        if kind == "wrong":
            remedies: Tuple[Remedy, ...] = (env_remedy("Disable NCCL's peer-to-peer copies (consumer GPUs without working P2P return "
                                                       "wrong data through them)", "nccl-p2p-disable", {"NCCL_P2P_DISABLE": "1"}),)
        elif any("Duplicate GPU detected" in error for error in by_error):  # NCCL's own words for ranks sharing a GPU
            remedies = (ONE_GPU_PER_RANK,)
        else:
            remedies = (Remedy("Run with NCCL_DEBUG=INFO and read the transport NCCL picked on these ranks", kind="manual",
                               id="nccl-debug"),)
        found.append(Finding(ID, "collective-%s" % kind, Severity.ERROR, title, evidence, remedies, {"backend": backend, "ranks": ranks}))
    return found


def one_line(error: str) -> str:
    """A collective's error as one line: its first line, and what NCCL says after "Last error:" (the cause;
    the first line names only NCCL's source file and an error class)."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    if not lines:
        return ""
    cause = next((lines[i + 1] for i, line in enumerate(lines[:-1]) if line.startswith("Last error")), None)
    return lines[0] + (" / " + cause if cause else "")


def _unique(summaries: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    seen: Dict[Any, Dict[str, Any]] = {}
    for s in summaries:
        seen.setdefault(s.get("rank"), s)
    return list(seen.values())


_OPS = ("all_reduce", "all_gather", "broadcast", "bandwidth", "group")


def _ops_text(collectives: Sequence[Dict[str, Any]]) -> str:
    """'all_reduce, broadcast in float16, bfloat16', in the probe's order."""
    ops = sorted({str(c.get("op")) for c in collectives}, key=lambda o: _OPS.index(o) if o in _OPS else len(_OPS))
    dtypes = [d for d in ("float32", "float16", "bfloat16") if any(c.get("dtype") == d for c in collectives)]
    return ", ".join(ops) + (" in " + ", ".join(dtypes) if dtypes else "")


def _slower(paces: Dict[Any, float]) -> List[Any]:
    """The keys whose pace is far behind the fastest: by STRAGGLER_FACTOR, and by STRAGGLER_MIN_S."""
    if len(paces) < 2:
        return []
    fastest = min(paces.values())
    return [k for k, pace in paces.items() if pace > fastest * STRAGGLER_FACTOR and pace - fastest > STRAGGLER_MIN_S]


def _stragglers(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    """Ranks far slower than the others on the same fixed work. A rank with its own GPU is compared with the other GPU
    ranks; ranks computing on the CPU share their host's cores, so comparing them with each other measures the
    scheduler: a host's CPU ranks go by their best pace, against the other hosts'."""
    timed = [s for s in summaries if isinstance(s.get("compute_s"), (int, float))]
    on_gpu = {s["rank"]: s["compute_s"] for s in timed if s.get("gpu")}
    hosts: Dict[Any, float] = {}
    for s in timed:
        if not s.get("gpu"):
            hosts[s.get("host")] = min(hosts.get(s.get("host"), s["compute_s"]), s["compute_s"])
    slow_ranks = set(_slower(on_gpu))
    slow_hosts = set(_slower(hosts))
    slow = [s for s in timed if s["rank"] in slow_ranks or (not s.get("gpu") and s.get("host") in slow_hosts)]
    if not slow:
        return []
    fastest = {True: min(on_gpu.values(), default=0.0), False: min(hosts.values(), default=0.0)}
    remedies = []
    if any(s.get("gpu") for s in slow):
        remedies.append(Remedy("Look at those GPUs' clocks, temperature and other processes (nvidia-smi -q -d PERFORMANCE,CLOCK)",
                               kind="manual", id="straggler"))
    if not all(s.get("gpu") for s in slow):
        remedies.append(Remedy("Look at that host's other processes and CPU frequency (top; its cpufreq governor), and how "
                               "many ranks share its cores", kind="manual", id="straggler-host"))
    return [Finding(ID, "straggler", Severity.WARNING, "%s %s much slower than the others on the same work"
                    % (where(slow), "is" if len(slow) == 1 else "are"),
                    tuple("%s: %.3f s (fastest %.3f s%s)" % (where([s]), s["compute_s"], fastest[bool(s.get("gpu"))],
                                                            "" if s.get("gpu") else ", by host: ranks on the CPU")
                          for s in slow),
                    tuple(remedies), {"ranks": [s["rank"] for s in slow]})]


def _checks(summaries: Sequence[Dict[str, Any]]) -> List[Finding]:
    ids = sorted({i for s in summaries for i in (s.get("checks") or {})})
    found = []
    for check_id in ids:
        groups = _groups(summaries, lambda s, c=check_id: ", ".join((s.get("checks") or {}).get(c, [])) or "nothing")
        if len(groups) > 1:
            found.append(Finding(ID, "check-differs", Severity.WARNING, "%s finds different things on different ranks" % check_id,
                                 tuple("%s: %s" % (where(m), v) for v, m in _by_rank(groups)), (), {"check": check_id}))
    return found


def _bandwidth(summaries: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """all_reduce bus bandwidth per backend, as rank 0 measured it (every rank waits for the slowest)."""
    first = summaries[0] if summaries else {}
    return {c["backend"]: {k: c.get(k) for k in ("device", "bytes", "seconds", "algbw_gbs", "busbw_gbs")}
            for c in first.get("collectives") or () if c.get("op") == "bandwidth" and c.get("ok")}


def cluster_result(gathered: Gathered, world_size: int, started: Optional[float] = None) -> CheckResult:
    summaries = sorted(gathered.ranks, key=lambda s: s.get("rank", 0))
    findings: List[Finding] = []
    if gathered.error or len(summaries) < world_size:
        seen = [s.get("rank") for s in summaries] or [gathered.mine.get("rank")]
        missing = [r for r in range(world_size) if r not in seen]
        mine = gathered.mine.get("rank", 0)
        # where the others stood when it failed (the job's store): a rank behind the rest hung there
        behind = {r: st for r, st in gathered.steps.items() if r != mine and st != gathered.steps.get(mine)}
        stood = tuple("%s %s" % (ranks_text([r]), "stopped at %s" % st if st else "never joined the process group")
                      for r, st in sorted(behind.items()))
        findings.append(Finding(ID, "ranks-missing", Severity.ERROR,
                                "the ranks could not exchange their reports: %s" % (gathered.error or "%s did not arrive" % ranks_text(missing)),
                                ("this report: %s on %s" % (ranks_text([mine]), gathered.mine.get("host")),) + stood +
                                ("world size %d; a rank that crashes, hangs or never starts, or a torch that cannot talk to the "
                                 "others' (another release on one node), ends the exchange" % world_size,),
                                (Remedy("Look at the missing ranks' own output (every rank prints its findings with -v), and run "
                                        "envdoctor check on their nodes", kind="manual", id="look-at-ranks"),),
                                {"missing": missing, "stopped": {str(r): st for r, st in sorted(behind.items())}}))
        summaries = summaries or [gathered.mine]
    for key, label, severity in COMPARED:
        finding = _differs(summaries, key, label, severity)
        if finding:
            findings.append(finding)
    findings += _same_gpu(summaries) + _without_gpu(summaries) + _variables(summaries) + machine_findings(summaries) + _checks(summaries)
    bandwidth = _bandwidth(summaries)
    findings += _collectives(summaries) + bandwidth_findings(summaries, bandwidth) + _stragglers(summaries)
    failing = [s for s in summaries if s.get("exit_code") == 1]
    if failing:  # so that every rank's report, and exit code, says it
        findings.append(Finding(ID, "errors-on-ranks", Severity.ERROR, "%s found errors in their own checks" % where(failing),
                                tuple("%s: %s" % (where([s]), "; ".join("%s: %s" % (c, ", ".join(codes))
                                                                        for c, codes in sorted((s.get("checks") or {}).items()) if codes))
                                      for s in failing), (), {"ranks": [s["rank"] for s in failing]}))
    same = {label: summaries[0].get(key) for key, label, _ in COMPARED
            if key != "packages_digest" and summaries[0].get(key) and len(_groups(summaries, lambda s, k=key: s.get(k))) == 1}
    summary = "%d of %d ranks on %s; same on all: %s" % (
        len(summaries), world_size, hosts_text(summaries),
        ", ".join("%s %s" % (k, v) for k, v in same.items()) or "nothing compared")
    if bandwidth:
        summary += "; all_reduce bus bandwidth " + ", ".join("%s %.2f GB/s" % (b, v["busbw_gbs"]) for b, v in bandwidth.items())
    facts = {"world_size": world_size, "same": same, "bandwidth": bandwidth, "exchange": gathered.exchange,
             "ranks": [{k: v for k, v in s.items() if k != "packages"} for s in summaries]}
    return CheckResult(ID, TITLE, status_from_findings(findings), facts, findings, summary,
                       round(time.monotonic() - started, 3) if started is not None else None)


def lone_rank_line(report: Report, rank: int) -> Optional[str]:
    """What a rank other than 0 says on stderr when the exchange failed (it prints no report): which rank,
    where, on which torch, and why; a rank that cannot join the others is then named by its own output."""
    job = next((c for c in report.checks if c.id == ID), None)
    missing = next((f for f in job.findings if f.code == "ranks-missing"), None) if job is not None else None
    if missing is None:
        return None
    env = report.environment
    host = next((r.get("host") for r in job.facts.get("ranks") or () if r.get("rank") == rank), None) if job is not None else None
    return "envdoctor: rank %d on %s (torch %s, envdoctor %s): %s" % (
        rank, host or "this host", env.get("torch") or "that does not import", env.get("envdoctor"), missing.title)
