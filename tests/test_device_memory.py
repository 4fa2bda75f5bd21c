"""device-memory: free/total memory and its holders on each GPU, a small allocation, host RAM.

Rules are tested on hand-written GPU snapshots (tests/fixtures/handwritten/device-memory-*.json,
each says what it mimics) and end to end on this CPU machine. The probe's GPU path is
exercised with a fake CUDA namespace around the real CPU torch and a fake nvidia-smi.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
from conftest import FIXTURES, FakeCudaTorch, FakeGpu, check_of, codes, handwritten, run_json, torch_has_cuda

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.model import Finding, ProbeContext, Severity, Target
from envdoctor.target.probekit import steps
from envdoctor.target.remedies.kinds import commands_for

LOADED = load_checks(plugins=False)[0]
CHECK = {c.check.id: c.check for c in LOADED}["device-memory"]
PROBE: Any = sys.modules["envdoctor.checks.device_memory.probe"]  # the worker side: nvidia-smi, /proc/meminfo
ENV = Target(python="/home/me/venv/bin/python", python_version="3.11.7", torch="2.13.0+cu128")
MiB = 2**20
GiB = 2**30
SNAPSHOTS = sorted(p.name for p in (FIXTURES / "handwritten").glob("device-memory-*.json"))
OOM_T4 = handwritten("device-memory-t4-allocation-oom.json")["devices"][0]["alloc"]["error"]


def judge(facts: Dict[str, Any], env: Target = ENV) -> List[Finding]:
    """diagnose(), with the house rules every finding of this check must keep."""
    findings = CHECK.judge(json.loads(json.dumps(facts)), env)
    for finding in findings:
        assert finding.check == "device-memory"
        for remedy in finding.remedies:
            if remedy.kind in ("pip", "env", "config"):
                assert remedy.commands == commands_for(remedy.kind, remedy.action, env.python), remedy
    return findings


def by_code(findings: List[Finding]) -> Dict[str, Finding]:
    return {f.code: f for f in findings}


def remedies(finding: Finding) -> Dict[str, Any]:
    return {r.id: r for r in finding.remedies}


# ---- this machine (CPU-only torch 2.13, no GPU, no nvidia-smi)


def _meminfo() -> Dict[str, int]:
    values = {}
    for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
        name, _, rest = line.partition(":")
        values[name] = int(rest.split()[0]) * 1024
    return values


@pytest.mark.skipif(torch_has_cuda(), reason="asserts the no-GPU outcome of this CPU machine")
@pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="reads /proc/meminfo")
def test_end_to_end_on_this_cpu_machine_reads_real_host_memory_and_starts_no_process() -> None:
    started = time.monotonic()
    report = run_json("--only", "device-memory")
    assert time.monotonic() - started < 60
    assert [c["id"] for c in report["checks"]] == ["device-memory"]  # --only device-memory is accepted
    assert report["summary"]["exit_code"] == 0
    check = check_of(report, "device-memory")
    assert check["status"] == "ok"
    assert check["duration_s"] < 1.0  # no CUDA: no context, no subprocess
    facts = check["facts"]
    assert facts["devices"] == [] and facts["cuda_build"] is None
    assert facts["nvidia_smi"] == {"ran": False, "why": "no CUDA device selected"}  # no GPU subprocess was spawned
    host, real = facts["host"], _meminfo()
    assert host["source"] == "/proc/meminfo"
    assert host["mem_total"] == real["MemTotal"] and host["swap_total"] == real["SwapTotal"]
    assert abs(host["mem_available"] - real["MemAvailable"]) < max(2 * GiB, real["MemAvailable"] // 4)
    assert abs(host["swap_free"] - real["SwapFree"]) < max(2 * GiB, real["SwapFree"] // 4 + 1)
    assert 0 < host["mem_available"] <= host["mem_total"]
    [finding] = check["findings"]
    assert (finding["code"], finding["severity"]) == ("host-memory", "info")
    assert finding["evidence"][0].startswith("/proc/meminfo: MemTotal ")
    assert re.match(r"^host \d+(\.\d)? [MG]iB available of \d+(\.\d)? GiB · no CUDA device$", check["summary"]), check["summary"]


def test_the_check_runs_between_cublas_and_apex() -> None:
    ids = [c.check.id for c in LOADED]
    assert ids.index("cublas") < ids.index("device-memory") < ids.index("apex")
    assert CHECK.timeout_s and CHECK.timeout_s >= 60


def test_the_cpu_probe_spawns_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    def boom(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a subprocess on a machine without a selected GPU: %r" % (args,))

    monkeypatch.setattr(subprocess, "run", boom)
    monkeypatch.setattr(subprocess, "Popen", boom)
    facts = CHECK.probe(torch, ProbeContext(devices=["cpu"]))
    assert facts["nvidia_smi"]["ran"] is False and facts["devices"] == []
    json.dumps(facts)


def test_no_cuda_summary_and_findings_without_host_facts() -> None:
    facts = {"torch": "2.13.0+cpu", "cuda_build": None, "hip": None, "devices": [], "cuda_seen": ["cuda:0"],
             "host": {"source": None, "mem_total": None, "mem_available": None, "swap_total": None, "swap_free": None},
             "nvidia_smi": {"ran": False, "why": "no CUDA device selected"}}
    assert judge(facts) == []  # macOS / Windows: nothing measured, nothing claimed
    assert CHECK.summarize(facts) == "no CUDA device selected"


# ---- an A100 80GB with 120 MiB free, held by two python processes


def test_a100_with_120_mib_free_is_a_warning_naming_both_holders() -> None:
    facts = handwritten("device-memory-a100-120mib-free-two-python.json")
    findings = judge(facts)
    assert codes(findings) == ["low-free-memory", "host-memory"]
    warning = findings[0]
    assert warning.severity is Severity.WARNING
    assert warning.title == ("cuda:0 (NVIDIA A100-SXM4-80GB) has 120 MiB free of 79.3 GiB: cuBLAS/cuDNN will fail to start "
                             "(CUBLAS_STATUS_NOT_INITIALIZED / ALLOC_FAILED) and allocations fail")
    assert warning.subject == {"device": "cuda:0", "name": "NVIDIA A100-SXM4-80GB", "free": 120 * MiB, "total": 85094907904}
    assert "torch.cuda.mem_get_info(0): 120 MiB free of 79.3 GiB" in warning.evidence
    assert "nvidia-smi GPU 0: 80905 MiB used of 81920 MiB" in warning.evidence
    assert "holds GPU memory: pid 184467 /opt/conda/bin/python, 40238 MiB" in warning.evidence
    assert "holds GPU memory: pid 184502 /opt/conda/bin/python, 40212 MiB" in warning.evidence
    fix = remedies(warning)
    assert list(fix) == ["free-gpu", "smaller-batch", "expandable-segments"]  # one GPU: CUDA_VISIBLE_DEVICES cannot help
    assert "pid 184467" in fix["free-gpu"].summary and "pid 184502" in fix["free-gpu"].summary
    assert fix["free-gpu"].kind == "manual"
    assert fix["free-gpu"].commands == ("nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv",)
    assert fix["smaller-batch"].kind == "config" and fix["smaller-batch"].action == {"reduce": ["batch_size"]}
    assert fix["expandable-segments"].kind == "env"
    assert fix["expandable-segments"].commands == ("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",)
    assert findings[1].severity is Severity.INFO
    assert CHECK.summarize(facts) == "cuda:0 120 MiB free of 79.3 GiB · host 1843.0 GiB available of 2015.6 GiB"


def test_five_percent_rule_on_a_large_gpu() -> None:
    facts = handwritten("device-memory-a100-120mib-free-two-python.json")
    facts["devices"][0]["mem"]["free"] = 3 * GiB  # > 256 MiB, < 5 % of 79.3 GiB
    warning = judge(facts)[0]
    assert warning.code == "low-free-memory"
    assert warning.title.startswith("cuda:0 (NVIDIA A100-SXM4-80GB) has only 3.0 GiB free of 79.3 GiB (4%): a training run will not fit")
    facts["devices"][0]["mem"]["free"] = 5 * GiB  # 6 %: enough
    assert codes(judge(facts)) == ["gpu-memory", "host-memory"]


def test_holders_hidden_in_another_container_are_said_to_be_so() -> None:
    facts = handwritten("device-memory-a100-120mib-free-two-python.json")
    facts["nvidia_smi"]["apps"]["rows"] = []
    warning = judge(facts)[0]
    assert any("nvidia-smi lists no other process on cuda:0" in e for e in warning.evidence)
    assert "stop the processes that hold its memory;" in remedies(warning)["free-gpu"].summary


def test_nvidia_smi_failure_is_evidence_not_a_crash() -> None:
    facts = handwritten("device-memory-a100-120mib-free-two-python.json")
    facts["nvidia_smi"] = {"ran": True, "program": "nvidia-smi",
                           "gpus": {"ok": False, "error": "FileNotFoundError: [Errno 2] No such file or directory: 'nvidia-smi'", "rows": []},
                           "apps": {"ok": False, "error": "not run: FileNotFoundError: [Errno 2] No such file or directory: 'nvidia-smi'",
                                    "rows": []}}
    warning = judge(facts)[0]
    assert warning.code == "low-free-memory"
    assert any(e.startswith("nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid failed: not run: FileNotFoundError")
               for e in warning.evidence)


# ---- two GPUs, one full


def test_one_full_gpu_of_two_points_at_the_other() -> None:
    facts = handwritten("device-memory-two-a100-40gb-cuda0-full.json")
    findings = judge(facts)
    assert [(f.code, f.subject.get("device")) for f in findings] == [
        ("low-free-memory", "cuda:0"), ("gpu-memory", "cuda:1"), ("host-memory", None)]
    fix = remedies(findings[0])
    visible = fix["visible-devices"]
    assert visible.kind == "env"
    assert visible.action == {"set_env": {"CUDA_VISIBLE_DEVICES": "1"}}
    assert visible.commands == ("export CUDA_VISIBLE_DEVICES=1",)
    assert "pid 5120 python, 40306 MiB" in fix["free-gpu"].summary
    assert findings[1].title == "cuda:1 (NVIDIA A100-SXM4-40GB) has 39.0 GiB free of 39.4 GiB"
    assert findings[1].remedies == ()
    assert CHECK.summarize(facts) == ("cuda:0 200 MiB free of 39.4 GiB · cuda:1 39.0 GiB free of 39.4 GiB · "
                                      "host 220.7 GiB available of 251.6 GiB")


def test_visible_devices_names_physical_ids_when_already_remapped() -> None:
    facts = handwritten("device-memory-two-a100-40gb-cuda0-full.json")
    facts["env"]["CUDA_VISIBLE_DEVICES"] = "2,3"
    facts["devices"][0]["smi_index"], facts["devices"][1]["smi_index"] = 2, 3
    fix = remedies(judge(facts)[0])
    assert fix["visible-devices"].commands == ("export CUDA_VISIBLE_DEVICES=3",)
    assert fix["free-gpu"].summary.startswith("Free cuda:0 (GPU 2 in nvidia-smi): ")


def test_both_gpus_full_offers_no_other_gpu() -> None:
    facts = handwritten("device-memory-two-a100-40gb-cuda0-full.json")
    facts["devices"][1]["mem"]["free"] = 90 * MiB
    findings = judge(facts)
    assert codes(findings) == ["low-free-memory", "low-free-memory", "host-memory"]
    for finding in findings[:2]:
        visible = remedies(finding)["visible-devices"]
        assert visible.kind == "manual" and visible.action == {} and "none of the probed ones" in visible.summary


# ---- an allocation that fails with torch's out-of-memory error


def test_allocation_out_of_memory_is_an_error() -> None:
    facts = handwritten("device-memory-t4-allocation-oom.json")
    findings = judge(facts)
    assert codes(findings) == ["out-of-memory", "host-memory"]
    error = findings[0]
    assert error.severity is Severity.ERROR
    assert error.title.startswith("cuda:0 (Tesla T4) is out of memory (40 MiB free of 14.7 GiB): a 64 MiB allocation fails "
                                  "(CUDA out of memory. Tried to allocate 64.00 MiB.")
    assert error.title.endswith("and cuBLAS/cuDNN cannot start there")
    assert error.subject["step"] == "allocation"
    assert "allocating 64 MiB on cuda:0: %s" % OOM_T4 in error.evidence
    assert "holds GPU memory: pid 4100 /usr/bin/python3, 498 MiB (this envdoctor worker)" in error.evidence
    fix = remedies(error)
    assert "pid 2211" in fix["free-gpu"].summary and "pid 4100" not in fix["free-gpu"].summary  # never "stop envdoctor"
    assert {"free-gpu", "smaller-batch", "expandable-segments"} <= set(fix) and "visible-devices" not in fix
    assert CHECK.summarize(facts) == "cuda:0 out of memory · host 10.4 GiB available of 12.7 GiB"


@pytest.mark.parametrize(("where", "text", "error_type", "step"), [
    ("alloc", "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "RuntimeError", "allocation"),
    ("alloc", "cuDNN error: CUDNN_STATUS_ALLOC_FAILED", "RuntimeError", "allocation"),
    ("mem", "CUDA error: out of memory", "RuntimeError", "mem_get_info"),
    ("device", "CUDA error: out of memory", "RuntimeError", "context"),
])
def test_every_spelling_of_out_of_memory_is_an_error(where: str, text: str, error_type: str, step: str) -> None:
    facts = handwritten("device-memory-h100-healthy.json")
    dev = facts["devices"][0]
    if where == "alloc":
        dev["alloc"] = {"bytes": 64 * MiB, "ok": False, "error": text, "error_type": error_type}
    elif where == "mem":
        dev["mem"] = {"error": text, "error_type": error_type}
        del dev["alloc"]
    else:
        for key in ("mem", "alloc", "reserved", "allocated"):
            dev.pop(key)
        dev.update(error=text, error_type=error_type)
    error = judge(facts)[0]
    assert (error.code, error.severity, error.subject["step"]) == ("out-of-memory", Severity.ERROR, step)
    assert text in error.title
    if where != "alloc":  # no mem_get_info reading: nvidia-smi's is the evidence
        assert "nvidia-smi GPU 0: 1079 MiB used of 81559 MiB" in error.evidence
    assert CHECK.summarize(facts).startswith("cuda:0 out of memory · ")


def test_a_failure_that_is_not_memory_is_left_to_the_other_checks() -> None:
    facts = handwritten("device-memory-h100-healthy.json")
    facts["devices"][0]["alloc"] = {"bytes": 64 * MiB, "ok": False, "error": "CUDA error: unspecified launch failure",
                                    "error_type": "RuntimeError"}
    finding = judge(facts)[0]
    assert (finding.code, finding.severity) == ("allocation-failed", Severity.INFO)
    assert "unspecified launch failure" in finding.title and finding.remedies == ()
    facts["devices"][0].update(error="crashed the interpreter (SIGSEGV)", error_type="Crash", lost="crashed")
    for key in ("mem", "alloc"):
        del facts["devices"][0][key]
    finding = judge(facts)[0]
    assert (finding.code, finding.severity) == ("not-measured", Severity.INFO)
    assert finding.title == ("cuda:0 (NVIDIA H100 80GB HBM3): GPU memory not measured: crashed the interpreter (SIGSEGV) "
                             "(the cublas and cuda-compat checks judge such failures)")
    assert CHECK.summarize(facts).startswith("cuda:0 not measured · ")


# ---- a healthy H100


def test_healthy_h100_is_an_info_note_with_the_numbers() -> None:
    facts = handwritten("device-memory-h100-healthy.json")
    findings = judge(facts)
    assert [(f.code, f.severity) for f in findings] == [("gpu-memory", Severity.INFO), ("host-memory", Severity.INFO)]
    gpu = findings[0]
    assert gpu.title == "cuda:0 (NVIDIA H100 80GB HBM3) has 78.1 GiB free of 79.2 GiB"
    assert gpu.remedies == ()
    assert "allocating 64 MiB on cuda:0: ok" in gpu.evidence
    assert "this envdoctor worker's caching allocator held 2 MiB on cuda:0 (released before measuring)" in gpu.evidence
    assert not any("another container" in e for e in gpu.evidence)  # nothing is missing: nothing to explain
    assert CHECK.summarize(facts) == "cuda:0 78.1 GiB free of 79.2 GiB · host 216.3 GiB available of 226.5 GiB"


# ---- host memory


def test_host_memory_almost_exhausted_is_a_warning() -> None:
    facts = handwritten("device-memory-h100-healthy.json")
    facts["host"]["mem_available"] = 700 * MiB
    host = by_code(judge(facts))["host-memory-low"]
    assert host.severity is Severity.WARNING
    assert host.title.startswith("host memory is almost exhausted: 700 MiB available of 226.5 GiB")
    assert {r.kind for r in host.remedies} == {"manual"}
    facts["host"]["mem_available"] = int(facts["host"]["mem_total"] * 0.04)  # 9 GiB, but under 5 %
    assert "host-memory-low" in codes(judge(facts))


def test_a_cgroup_limit_narrows_host_memory() -> None:
    facts = handwritten("device-memory-h100-healthy.json")
    facts["host"]["cgroup"] = {"version": 2, "path": "/sys/fs/cgroup", "limit": 16 * GiB, "usage": 16 * GiB - 300 * MiB,
                               "inactive_file": 100 * MiB}
    host = by_code(judge(facts))["host-memory-low"]
    assert host.title.startswith("host memory is almost exhausted: 400 MiB available of 16.0 GiB")
    assert any(e.startswith("cgroup /sys/fs/cgroup: memory.max 16.0 GiB") for e in host.evidence)
    facts["host"]["cgroup"]["limit"] = None  # "max": no limit
    assert "host-memory-low" not in codes(judge(facts))


def test_parse_meminfo() -> None:
    text = "MemTotal:       24683656 kB\nMemFree:         1000000 kB\nMemAvailable:   23512340 kB\nHugePages_Total:       0\n"
    values = PROBE.parse_meminfo(text)
    assert values["MemTotal"] == 24683656 * 1024 and values["MemAvailable"] == 23512340 * 1024
    assert values["HugePages_Total"] == 0


# ---- the expandable-segments remedy


@pytest.mark.parametrize(("variables", "expected"), [
    ({}, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"}, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128,expandable_segments:True"}),
    ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}, {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ({"PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.6"}, {"PYTORCH_ALLOC_CONF": "garbage_collection_threshold:0.6,expandable_segments:True"}),
    ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, None),
])
def test_expandable_segments_keeps_the_users_other_settings(variables: Dict[str, str], expected: Optional[Dict[str, str]]) -> None:
    facts = handwritten("device-memory-t4-allocation-oom.json")
    facts["env"].update(variables)
    remedy = remedies(judge(facts)[0]).get("expandable-segments")
    if expected is None:
        assert remedy is None
    else:
        assert remedy is not None and remedy.action == {"set_env": expected}


def test_no_expandable_segments_on_windows() -> None:
    facts = handwritten("device-memory-t4-allocation-oom.json")
    windows = Target(python="C:\\venv\\Scripts\\python.exe", python_version="3.11.7", torch="2.5.1+cu124", sys_platform="win32")
    assert "expandable-segments" not in remedies(judge(facts, windows)[0])


# ---- every snapshot, and variants: remedies built by envdoctor.target.remedies.commandline


def _variants() -> Iterator[Tuple[str, Dict[str, Any]]]:
    for name in SNAPSHOTS:
        facts = handwritten(name)
        yield name, facts
        remapped = copy.deepcopy(facts)
        remapped["env"].update(CUDA_VISIBLE_DEVICES="3,1", PYTORCH_CUDA_ALLOC_CONF="max_split_size_mb:64")
        remapped["host"]["mem_available"] = 10 * MiB
        yield name + " remapped, host full", remapped


@pytest.mark.parametrize(("name", "facts"), list(_variants()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_finding_speaks_the_remedy_vocabulary(name: str, facts: Dict[str, Any]) -> None:
    findings = judge(facts)  # asserts commands == commands_for(kind, action, env.python)
    assert findings
    for finding in findings:
        assert finding.evidence, finding
        assert finding.severity is not Severity.OK
        for remedy in finding.remedies:
            assert remedy.kind in ("manual", "env", "config") and remedy.summary and remedy.id
    assert CHECK.summarize(facts)


# ---- the probe's GPU path, with a fake CUDA namespace around the real CPU torch


def _two_gpus(torch: Any) -> FakeCudaTorch:
    """Two 'GPUs': cuda:1 is full (mem_get_info raises, the allocation is out of memory)."""
    full = FakeGpu(uuid="9f8e7d6c-aaaa-bbbb-cccc-ddddeeeeffff",
                   mem_error=RuntimeError("CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported"),
                   alloc_error=torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 MiB. GPU 1 has a total capacity "
                                                      "of 80.00 GiB of which 0 bytes is free."))
    return FakeCudaTorch(torch, [FakeGpu(reserved=6 * MiB), full], cuda_version="12.4")


def _fake_smi(calls: List[List[str]]) -> Any:
    """nvidia-smi as it prints on that machine: physical order is the reverse of CUDA's here."""
    me = os.getpid()
    outputs = {
        PROBE.GPUS_QUERY: "0, GPU-9F8E7D6C-AAAA-BBBB-CCCC-DDDDEEEEFFFF, 81000 MiB, 81920 MiB\n"
                           "1, GPU-5B0A3CDE-1111-2222-3333-444455556666, 1024 MiB, 81920 MiB\n",
        PROBE.APPS_QUERY: "4242, python, 80500 MiB, GPU-9F8E7D6C-AAAA-BBBB-CCCC-DDDDEEEEFFFF\n"
                           "%d, /usr/bin/python3, 512 MiB, GPU-5B0A3CDE-1111-2222-3333-444455556666\n"
                           "777, [Insufficient Permissions], [N/A], GPU-5B0A3CDE-1111-2222-3333-444455556666\n" % me,
    }

    def run(argv: List[str], timeout: float = 10.0) -> Dict[str, Any]:
        calls.append(list(argv))
        assert isinstance(argv, list) and timeout == 10.0
        return {"returncode": 0, "stdout": outputs[argv[1]], "stderr": "", "error": None}

    return run


def test_probe_records_each_fake_gpu_its_holders_and_a_failing_mem_get_info(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    calls: List[List[str]] = []
    monkeypatch.setattr(PROBE, "run_command", _fake_smi(calls))
    monkeypatch.setattr(PROBE, "nvidia_smi_program", lambda: "nvidia-smi")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fake = _two_gpus(torch)
    facts = json.loads(json.dumps(CHECK.probe(fake, ProbeContext())))  # JSON-able
    assert calls == [["nvidia-smi", "--query-gpu=index,uuid,memory.used,memory.total", "--format=csv,noheader"],
                     ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv,noheader"]]
    dev0, dev1 = facts["devices"]
    assert dev0 == {"id": "cuda:0", "index": 0, "name": "Fake A100", "capability": "8.0", "reserved": 6 * MiB, "allocated": 0,
                    "mem": {"free": 70 * GiB, "total": 80 * GiB}, "alloc": {"bytes": 64 * MiB, "ok": True, "error": None},
                    "smi_index": 1, "mapped_by": "uuid"}
    assert dev1["mem"] == {"error": "CUDA error: out of memory", "error_type": "RuntimeError"}  # help suffix stripped
    assert dev1["alloc"]["ok"] is False and dev1["alloc"]["error_type"] == "OutOfMemoryError"
    assert dev1["alloc"]["error"].startswith("CUDA out of memory. Tried to allocate 64.00 MiB. GPU 1")
    assert dev1["alloc"]["mem_after_failure"] == dev1["mem"]
    assert (dev1["smi_index"], dev1["mapped_by"]) == (0, "uuid")
    assert fake.allocated == ["cuda:0", "cuda:1"]
    assert "empty_cache" in fake.cuda.calls and "synchronize(0)" in fake.cuda.calls
    smi = facts["nvidia_smi"]
    assert smi["ran"] is True and smi["gpus"]["ok"] and smi["apps"]["ok"]
    assert smi["gpus"]["rows"] == [{"index": 0, "device": "cuda:1", "used_bytes": 81000 * MiB, "total_bytes": 81920 * MiB},
                                   {"index": 1, "device": "cuda:0", "used_bytes": 1024 * MiB, "total_bytes": 81920 * MiB}]
    assert smi["apps"]["rows"] == [
        {"pid": 4242, "name": "python", "used_bytes": 80500 * MiB, "gpu_index": 0, "device": "cuda:1", "self": False},
        {"pid": os.getpid(), "name": "/usr/bin/python3", "used_bytes": 512 * MiB, "gpu_index": 1, "device": "cuda:0", "self": True},
        {"pid": 777, "name": "[Insufficient Permissions]", "used_bytes": None, "gpu_index": 1, "device": "cuda:0", "self": False}]
    assert "GPU-" not in json.dumps(facts) and "9f8e7d6c" not in json.dumps(facts).lower()  # UUIDs stay in the worker
    findings = judge(facts)
    assert [(f.code, f.subject.get("device")) for f in findings[:2]] == [("gpu-memory", "cuda:0"), ("out-of-memory", "cuda:1")]
    error = findings[1]
    assert error.subject["step"] == "mem_get_info"
    assert "torch.cuda.mem_get_info(1) failed: CUDA error: out of memory" in error.evidence
    assert "nvidia-smi GPU 0: 81000 MiB used of 81920 MiB" in error.evidence
    assert "holds GPU memory: pid 4242 python, 80500 MiB" in error.evidence
    fix = remedies(error)
    assert fix["visible-devices"].action == {"set_env": {"CUDA_VISIBLE_DEVICES": "0"}}  # CUDA's numbering, not nvidia-smi's
    assert fix["free-gpu"].summary.startswith("Free cuda:1 (GPU 0 in nvidia-smi): stop the processes that hold its memory (pid 4242")


def test_probe_without_nvidia_smi_records_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(PROBE, "nvidia_smi_program", lambda: "/nonexistent/envdoctor-test/nvidia-smi")
    facts = json.loads(json.dumps(CHECK.probe(_two_gpus(torch), ProbeContext(devices=["cuda:0"]))))
    assert [d["id"] for d in facts["devices"]] == ["cuda:0"]
    smi = facts["nvidia_smi"]
    assert smi["ran"] is True and smi["gpus"]["ok"] is False
    assert smi["gpus"]["error"].startswith("FileNotFoundError")
    assert smi["apps"]["error"].startswith("not run: FileNotFoundError") and smi["apps"]["rows"] == []
    assert (facts["devices"][0]["smi_index"], facts["devices"][0]["mapped_by"]) == (None, None)
    assert codes(judge(facts)) == ["gpu-memory", "host-memory"]


def test_a_lost_step_is_recorded_and_the_other_gpu_still_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """A context creation that crashed an earlier worker is not run again; the allocation that hung is not retried."""
    import torch

    monkeypatch.setattr(PROBE, "run_command", _fake_smi([]))
    lost = {"2:allocating 64 MiB on cuda:0": {"state": "timeout", "error": "did not return within 120 s"},
            "3:starting CUDA on cuda:1": {"state": "crashed", "error": "crashed the interpreter (SIGSEGV)"}}
    fake = _two_gpus(torch)
    steps.begin_check("device-memory", None, lost)
    try:
        facts = json.loads(json.dumps(CHECK.probe(fake, ProbeContext())))
    finally:
        steps.end_check()
    dev0, dev1 = facts["devices"]
    assert dev0["alloc"] == {"bytes": 64 * MiB, "ok": False, "error": "did not return within 120 s", "error_type": "Timeout",
                             "lost": "timeout"}  # no mem_get_info outside a step on a GPU that hung
    assert dev1 == {"id": "cuda:1", "index": 1, "name": None, "capability": None, "error": "crashed the interpreter (SIGSEGV)",
                    "error_type": "Crash", "lost": "crashed", "smi_index": None, "mapped_by": None}  # no UUID read, nvidia-smi's 1 is cuda:0
    assert fake.allocated == []
    assert "mem_get_info(1)" not in fake.cuda.calls
    assert [(f.code, f.subject.get("device")) for f in judge(facts)[:2]] == [("allocation-failed", "cuda:0"), ("not-measured", "cuda:1")]


def test_parse_compute_apps() -> None:
    text = ("No running processes found\n"
            "1234, python, 40238 MiB, GPU-aaaa\n"
            "99, /opt/my, odd, name/python, 12 MiB, GPU-bbbb\n"
            "5, C:\\Windows\\System32\\dwm.exe, [N/A], GPU-cccc\n")
    assert PROBE.parse_compute_apps(text) == [
        {"pid": 1234, "name": "python", "used_bytes": 40238 * MiB, "uuid": "GPU-aaaa"},
        {"pid": 99, "name": "/opt/my, odd, name/python", "used_bytes": 12 * MiB, "uuid": "GPU-bbbb"},
        {"pid": 5, "name": "C:\\Windows\\System32\\dwm.exe", "used_bytes": None, "uuid": "GPU-cccc"}]


def test_map_devices() -> None:
    gpus = [{"index": 0, "uuid": "GPU-aaaa1111"}, {"index": 1, "uuid": "GPU-bbbb2222"}, {"index": 2, "uuid": "GPU-cccc3333"}]
    assert PROBE.map_devices({0: "CCCC3333", 1: None}, gpus, None) == {0: (2, "uuid"), 1: (1, "order")}
    assert PROBE.map_devices({0: None, 1: None}, gpus, "2,0") == {0: (2, "CUDA_VISIBLE_DEVICES"), 1: (0, "CUDA_VISIBLE_DEVICES")}
    assert PROBE.map_devices({0: None}, gpus, "GPU-bbbb") == {0: (1, "CUDA_VISIBLE_DEVICES")}
    assert PROBE.map_devices({0: None}, gpus, "7") == {0: (None, None)}
    assert PROBE.map_devices({3: None}, gpus, None) == {3: (None, None)}
    assert PROBE.map_devices({0: "bbbb2222", 1: None}, gpus, None) == {0: (1, "uuid"), 1: (None, None)}  # 1 is taken: no guess


# ---- signatures


@pytest.mark.parametrize("text", [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.25 GiB of which "
    "11.75 MiB is free. Process 2211 has 79.23 GiB memory in use.",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 48.00 MiB (GPU 0; 6.00 GiB total capacity; 5.25 GiB "
    "already allocated; 0 bytes free; 5.34 GiB reserved in total by PyTorch)",
    "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "RuntimeError: CUDA error: out of memory",
    "RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
])
def test_signatures_match_real_messages(text: str) -> None:
    matched = [s for s in CHECK.signatures if re.search(s.message, text)]
    assert matched and all(s.code == "out-of-memory" and s.cause for s in matched)


def test_signatures_leave_other_cuda_errors_alone() -> None:
    text = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    assert not [s for s in CHECK.signatures if re.search(s.message, text)]
    # a cuBLAS workspace that cannot be allocated is this family's only beside an out-of-memory hint (otherwise cublas's);
    # a handle that cannot be created is this family's with or without one (tests/test_explain.py says why)
    text = "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`"
    matched = [s for s in CHECK.signatures if re.search(s.message, text)]
    assert matched and all(s.context_required and any(re.search(c, "Tried to allocate 2.00 GiB") for c in s.context) for s in matched)
    text = "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"
    assert any(not s.context_required for s in CHECK.signatures if re.search(s.message, text))


# ---- a real GPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch_has_cuda(), reason="needs an NVIDIA GPU")
def test_real_gpu_end_to_end() -> None:
    report = run_json("--only", "device-memory")
    check = check_of(report, "device-memory")
    assert check["status"] in ("ok", "warning")
    facts = check["facts"]
    assert facts["devices"] and facts["nvidia_smi"]["ran"] is True
    for dev in facts["devices"]:
        assert dev["mem"]["total"] >= dev["mem"]["free"] > 0
        assert dev["alloc"]["ok"], dev
    assert check["summary"].startswith("cuda:0 ")
