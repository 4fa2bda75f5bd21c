"""cublas: cuBLAS/cuDNN handles, fp32/fp16/bf16 GEMMs and a cuDNN conv on each GPU.

Rules are tested on hand-written GPU snapshots (tests/fixtures/handwritten/cublas-*.json,
each says what it mimics), on the snapshot recorded on this CPU machine, and end to end.
The probe itself is exercised here with a fake CUDA namespace (per-device isolation)
and, on a machine with a GPU, for real (`-m gpu`).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Dict, List

import pytest
from conftest import FakeCudaTorch, FakeGpu, check_of, codes, facts_of, handwritten, judge, load_fixture, run_json, torch_has_cuda

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.model import ProbeContext, Severity

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
CHECK = CHECKS["cublas"]
NOT_INIT = "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`"
MiB = 2**20


def by_code(findings: List[Any]) -> Dict[str, Any]:
    return {f.code: f for f in findings}


# ---- this machine (CPU-only torch 2.13)


def test_recorded_cpu_snapshot_is_a_quick_no_cuda_info() -> None:
    report = load_fixture("cpu-cublas.json")
    check = check_of(report, "cublas")
    facts = facts_of(report, "cublas")
    assert facts["cuda_build"] is None and facts["devices"] == [] and facts["ops"] == []
    findings = judge(CHECK, facts)
    assert codes(findings) == ["no-cuda-device"]
    assert findings[0].severity is Severity.INFO
    assert findings[0].evidence[0] == "torch 2.13.0+cpu is a CPU-only build (torch.version.cuda is None)"
    assert CHECK.summarize(facts) == "no CUDA device"
    assert check["status"] == "ok" and check["duration_s"] < 1.0


@pytest.mark.skipif(torch_has_cuda(), reason="asserts the no-GPU outcome of this CPU machine")
def test_end_to_end_no_cuda_is_info_and_quick() -> None:
    started = time.monotonic()
    report = run_json("--only", "cublas,bf16-support")
    elapsed = time.monotonic() - started
    assert [c["id"] for c in report["checks"]] == ["bf16-support", "cublas"]  # declared order 45, 50
    assert report["summary"]["exit_code"] == 0
    for check_id in ("cublas", "bf16-support"):
        check = check_of(report, check_id)
        assert check["status"] == "ok"
        assert [(f["code"], f["severity"]) for f in check["findings"]] == [("no-cuda-device", "info")]
        assert check["summary"].startswith("no CUDA device")
        assert check["duration_s"] < 1.0  # no CUDA: the probes return at once
    cublas = check_of(report, "cublas")
    assert cublas["findings"][0]["check"] == "cublas"
    assert cublas["facts"]["devices"] == [] and cublas["facts"]["cuda_build"] is None
    assert elapsed < 60


# ---- healthy GPUs


@pytest.mark.parametrize("name", ["cublas-a100-healthy.json", "cublas-h100-healthy.json"])
def test_healthy_gpu_has_no_findings(name: str) -> None:
    facts = handwritten(name)
    assert judge(CHECK, facts) == []
    summary = CHECK.summarize(facts)
    assert summary.startswith("cuda:0 ok (3 GEMMs, max rel err ")
    assert "cuDNN %d" % facts["cudnn"]["version"] in summary


# ---- cuda:1 broken, cuda:0 fine (seed 002's symptom, with memory to spare)


def test_second_gpu_not_initialized_with_free_memory_is_a_broken_cublas_on_that_gpu_only() -> None:
    facts = handwritten("cublas-two-a100-cuda1-not-initialized.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["cublas-init-failed"]
    finding = findings[0]
    assert finding.check == "cublas" and finding.severity is Severity.ERROR
    assert finding.title == ("cuda:1 NVIDIA A100-SXM4-80GB (compute capability 8.0): cuBLAS could not start although 78.6 GiB of GPU "
                             "memory are free: %s" % NOT_INIT)
    assert finding.subject["device"] == "cuda:1" and finding.subject["step"] == "handle"
    assert "cuda:1 handle: %s" % NOT_INIT in finding.evidence
    assert not any(e.startswith("cuda:0") for e in finding.evidence)
    assert "at start: 78.6 GiB free of 79.3 GiB (torch.cuda.mem_get_info)" in finding.evidence
    remedies = {r.id: r for r in finding.remedies}
    reinstall = remedies["reinstall-cublas"]
    assert reinstall.commands == ("/usr/bin/python3 -m pip install --force-reinstall --no-deps nvidia-cublas-cu12==12.1.3.1",)
    assert reinstall.action == {"install": ["nvidia-cublas-cu12==12.1.3.1"], "force_reinstall": True, "no_deps": True}
    assert remedies["check-driver"].commands == ("nvidia-smi",)
    assert "LD_LIBRARY_PATH" in remedies["ld-library-path"].summary
    assert remedies["ld-library-path"].action == {}  # nothing foreign was loaded: no blind `unset`
    assert remedies["visible-devices"].action == {"set_env": {"CUDA_VISIBLE_DEVICES": "0"}}
    summary = CHECK.summarize(facts)
    assert summary == "cuda:0 ok (3 GEMMs, max rel err 2.4e-03) · cuda:1 CUBLAS_STATUS_NOT_INITIALIZED · cuDNN 90100"


def test_visible_devices_remedy_names_physical_ids_when_already_remapped() -> None:
    facts = handwritten("cublas-two-a100-cuda1-not-initialized.json")
    facts["env"]["CUDA_VISIBLE_DEVICES"] = "2,3"
    finding = judge(CHECK, facts)[0]
    assert {r.id: r for r in finding.remedies}["visible-devices"].commands == ("export CUDA_VISIBLE_DEVICES=2",)


def test_both_gpus_broken_are_both_reported() -> None:
    facts = handwritten("cublas-two-a100-cuda1-not-initialized.json")
    facts["devices"][0]["handle"] = dict(facts["devices"][1]["handle"])
    for op in facts["ops"]:
        if op["device"] == "cuda:0" and op["op"] == "gemm":
            op.update(ok=False, error=NOT_INIT, max_rel_err=None, error_type="RuntimeError")
    findings = judge(CHECK, facts)
    assert [(f.code, f.subject["device"]) for f in findings] == [("cublas-init-failed", "cuda:0"), ("cublas-init-failed", "cuda:1")]
    assert all("visible-devices" not in {r.id for r in f.remedies} for f in findings)  # no GPU passes


# ---- out of memory surfacing as cuBLAS/cuDNN errors → device-memory


def test_init_failure_with_almost_no_free_memory_is_device_memory() -> None:
    facts = handwritten("cublas-t4-init-oom.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["cublas-init-oom"]
    finding = findings[0]
    assert finding.check == "cublas" and finding.severity is Severity.ERROR
    assert finding.title.startswith("cuda:0 Tesla T4 (compute capability 7.5) is out of memory (3 MiB free of 14.7 GiB)")
    assert "CUBLAS_STATUS_NOT_INITIALIZED" in finding.title
    assert "at start: 100 MiB free of 14.7 GiB (torch.cuda.mem_get_info)" in finding.evidence
    assert "right after the first failure: 3 MiB free of 14.7 GiB (torch.cuda.mem_get_info)" in finding.evidence
    assert "cuda:0 conv2d float32: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED" in finding.evidence
    remedies = {r.id: r for r in finding.remedies}
    assert set(remedies) == {"free-gpu", "smaller-batch"}  # one GPU: CUDA_VISIBLE_DEVICES cannot help
    assert "nvidia-smi" in remedies["free-gpu"].commands
    assert remedies["smaller-batch"].kind == "config"
    assert CHECK.summarize(facts) == "cuda:0 CUBLAS_STATUS_NOT_INITIALIZED · cuDNN 90100"


def test_the_same_not_initialized_with_free_memory_is_not_memory() -> None:
    """The memory reading, not the message, decides between the two diagnoses."""
    facts = handwritten("cublas-t4-init-oom.json")
    plenty = {"free": 14 * 2**30, "total": facts["devices"][0]["mem_start"]["total"]}
    facts["devices"][0]["mem_start"] = dict(plenty)
    facts["devices"][0]["handle"]["mem_after_failure"] = dict(plenty)
    facts["ops"] = [o for o in facts["ops"] if o["op"] == "gemm"]
    findings = judge(CHECK, facts)
    assert codes(findings) == ["cublas-init-failed"]
    assert findings[0].check == "cublas"


def test_low_memory_on_one_gpu_points_at_the_other() -> None:
    facts = handwritten("cublas-two-a100-cuda1-not-initialized.json")
    low = {"free": 120 * MiB, "total": facts["devices"][1]["mem_start"]["total"]}
    facts["devices"][1]["mem_start"] = dict(low)
    facts["devices"][1]["handle"]["mem_after_failure"] = dict(low)
    findings = judge(CHECK, facts)
    assert [(f.check, f.code, f.subject["device"]) for f in findings] == [("cublas", "cublas-init-oom", "cuda:1")]
    remedies = {r.id: r for r in findings[0].remedies}
    assert remedies["visible-devices"].commands == ("export CUDA_VISIBLE_DEVICES=0",)


def test_five_percent_rule_on_a_large_gpu() -> None:
    facts = handwritten("cublas-two-a100-cuda1-not-initialized.json")
    total = facts["devices"][1]["mem_start"]["total"]
    facts["devices"][1]["handle"]["mem_after_failure"] = {"free": int(total * 0.03), "total": total}  # 2.4 GiB: > 256 MiB, < 5 %
    assert codes(judge(CHECK, facts)) == ["cublas-init-oom"]


def test_torch_out_of_memory_text_is_device_memory_whatever_the_reading() -> None:
    facts = handwritten("cublas-a100-healthy.json")
    oom = "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.25 GiB of which 11.75 MiB is free."
    gemm = facts["ops"][0]
    gemm.update(ok=False, error=oom, max_rel_err=None, error_type="OutOfMemoryError", mem_after_failure={"error": "CUDA error: out of memory"})
    findings = judge(CHECK, facts)
    assert [(f.check, f.code) for f in findings] == [("cublas", "cublas-init-oom")]
    assert "right after the first failure: torch.cuda.mem_get_info failed: CUDA error: out of memory" in findings[0].evidence


def test_context_creation_out_of_memory_is_device_memory() -> None:
    facts = handwritten("cublas-h100-healthy.json")
    dev = facts["devices"][0]
    dev["mem_start"] = {"error": "CUDA error: out of memory", "error_type": "RuntimeError"}
    dev["handle"] = {"ok": False, "error": "CUDA error: out of memory", "error_type": "RuntimeError", "mem_after_failure": dev["mem_start"]}
    findings = judge(CHECK, facts)
    assert [(f.check, f.code, f.subject["step"]) for f in findings] == [("cublas", "cublas-init-oom", "context")]


def test_low_free_memory_with_everything_passing_is_left_to_device_memory() -> None:
    facts = handwritten("cublas-a100-healthy.json")
    facts["devices"][0]["mem_start"]["free"] = 180 * MiB
    assert judge(CHECK, facts) == []  # one finding, not two: device-memory names the processes holding it


# ---- GEMM / cuDNN failures and wrong numbers


def test_fp16_gemm_returning_nan_is_wrong_results_with_the_foreign_cublas_named() -> None:
    facts = handwritten("cublas-a10g-fp16-gemm-nan.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["gemm-wrong-results"]
    finding = findings[0]
    assert finding.severity is Severity.ERROR
    assert finding.title == "cuda:0 NVIDIA A10G (compute capability 8.6): fp16 GEMM runs but returns wrong numbers"
    assert finding.subject["dtypes"] == ["float16"]
    assert "cuda:0 gemm float16: max relative error nan vs an fp32 CPU reference (tolerance 0.02)" in finding.evidence
    assert "loaded /usr/local/cuda-12.0/targets/x86_64-linux/lib/libcublasLt.so.12" in finding.evidence
    ld = {r.id: r for r in finding.remedies}["ld-library-path"]
    assert ld.kind == "env"
    assert ld.commands == ("unset LD_LIBRARY_PATH",)  # its only entry is the other toolkit's lib64
    assert ld.action == {"unset_env": ["LD_LIBRARY_PATH"]}
    assert CHECK.summarize(facts) == "cuda:0 wrong fp16 results · cuDNN 8902"


def test_foreign_cublas_remedy_keeps_the_other_library_path_entries() -> None:
    facts = handwritten("cublas-a10g-fp16-gemm-nan.json")
    facts["env"]["LD_LIBRARY_PATH"] = "/usr/local/nvidia/lib64:/usr/local/cuda-12.0/lib64"
    ld = {r.id: r for r in judge(CHECK, facts)[0].remedies}["ld-library-path"]
    assert ld.commands == ("export LD_LIBRARY_PATH=/usr/local/nvidia/lib64",)
    assert ld.action == {"set_env": {"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"}}


def test_a_conda_environments_own_cublas_is_not_foreign() -> None:
    facts = handwritten("cublas-a10g-fp16-gemm-nan.json")
    facts["prefix"] = "/opt/conda/envs/train"
    facts["libraries"] = ["/opt/conda/envs/train/lib/libcublas.so.12", "/opt/conda/envs/train/lib/libcublasLt.so.12"]
    ld = {r.id: r for r in judge(CHECK, facts)[0].remedies}["ld-library-path"]
    assert ld.kind == "manual" and ld.action == {} and ld.commands == ()


def test_gemm_far_off_is_wrong_results_but_rounding_is_not() -> None:
    facts = handwritten("cublas-h100-healthy.json")
    facts["ops"][2]["max_rel_err"] = 0.05  # bf16: within its tolerance (8e-2)
    assert judge(CHECK, facts) == []
    facts["ops"][0]["max_rel_err"] = 0.9  # fp32 garbage
    finding = judge(CHECK, facts)[0]
    assert finding.code == "gemm-wrong-results" and finding.subject["dtypes"] == ["float32"]


def test_execution_failure_with_a_working_handle_is_gemm_failed() -> None:
    facts = handwritten("cublas-a100-healthy.json")
    text = ("CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, "
            "CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, c, CUDA_R_16F, ldc, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`")
    facts["ops"][1].update(ok=False, error=text, max_rel_err=None, error_type="RuntimeError",
                           mem_after_failure={"free": 84 * 2**30, "total": 85094907904})
    findings = judge(CHECK, facts)
    assert codes(findings) == ["gemm-failed"]
    assert findings[0].title == "cuda:0 NVIDIA A100-SXM4-80GB (compute capability 8.0): fp16 GEMM fails"
    assert "cuda:0 gemm float16: %s" % text in findings[0].evidence
    assert CHECK.summarize(facts).startswith("cuda:0 CUBLAS_STATUS_EXECUTION_FAILED")


def test_bf16_gemm_failing_on_a_pre_ampere_gpu_is_left_to_bf16_support() -> None:
    facts = handwritten("cublas-a100-healthy.json")
    facts["devices"][0].update(name="Tesla P100-PCIE-16GB", capability="6.0")
    facts["ops"][2].update(ok=False, error="CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmEx(...CUDA_R_16BF...)`",
                           max_rel_err=None, error_type="RuntimeError")
    assert judge(CHECK, facts) == []
    facts["devices"][0].update(name="NVIDIA A100-SXM4-80GB", capability="8.0")
    assert codes(judge(CHECK, facts)) == ["gemm-failed"]


def test_cudnn_conv_failure_is_cudnn_failed() -> None:
    facts = handwritten("cublas-h100-healthy.json")
    facts["ops"][3].update(ok=False, error="cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", max_rel_err=None, error_type="RuntimeError",
                           mem_after_failure={"free": 80 * 2**30, "total": 85029158912})
    findings = judge(CHECK, facts)
    assert codes(findings) == ["cudnn-failed"]
    remedies = {r.id: r for r in findings[0].remedies}
    assert remedies["reinstall-cudnn"].commands == (
        "/usr/bin/python3 -m pip install --force-reinstall --no-deps nvidia-cudnn-cu12==9.10.2.21",)
    assert "cudnn-off" in remedies


def test_cudnn_that_does_not_load_is_cudnn_failed() -> None:
    facts = handwritten("cublas-a100-healthy.json")
    facts["cudnn"] = {"enabled": True, "available": True, "version": None,
                      "error": "cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime version (8, 9, 2)."}
    findings = judge(CHECK, facts)
    assert codes(findings) == ["cudnn-failed"]
    assert findings[0].subject == {"library": "cudnn"}


def test_conda_or_source_build_gets_a_torch_reinstall_for_its_cuda() -> None:
    facts = handwritten("cublas-two-a100-cuda1-not-initialized.json")
    facts["requirements"] = []
    reinstall = {r.id: r for r in judge(CHECK, facts)[0].remedies}["reinstall-torch-cuda"]
    assert reinstall.commands == (
        "/usr/bin/python3 -m pip install --force-reinstall torch==2.4.0 --index-url https://download.pytorch.org/whl/cu121",)


def test_a_device_whose_probe_raised_is_reported_not_dropped() -> None:
    facts = handwritten("cublas-two-a100-cuda1-not-initialized.json")
    facts["devices"][1] = {"id": "cuda:1", "index": 1, "mem_start": {"free": 84 * 2**30, "total": 85094907904},
                           "name": None, "capability": None, "error": "CUDA error: an illegal memory access was encountered",
                           "error_type": "RuntimeError", "mem_after_failure": {"free": 84 * 2**30, "total": 85094907904}}
    facts["ops"] = [o for o in facts["ops"] if o["device"] == "cuda:0"]
    findings = judge(CHECK, facts)
    assert [(f.code, f.subject["device"], f.subject["step"]) for f in findings] == [("cublas-init-failed", "cuda:1", "probe")]
    assert findings[0].title == ("cuda:1 unknown GPU: CUDA could not start on this GPU although 84.0 GiB of GPU memory are free: "
                                 "CUDA error: an illegal memory access was encountered")


# ---- the probe, with a fake CUDA namespace around the real CPU torch


def test_probe_records_each_fake_gpu_separately() -> None:
    import torch

    # cuda:1 cannot say its capability and its cuBLAS handle fails
    fake = FakeCudaTorch(torch, [FakeGpu(), FakeGpu(capability_error=RuntimeError("CUDA error: unspecified launch failure"),
                                                 blas_error=RuntimeError(NOT_INIT + "\nCompile with `TORCH_USE_CUDA_DSA` to enable "
                                                                                    "device-side assertions."))],
                         cuda_version="12.1")
    facts = CHECK.probe(fake, ProbeContext())
    json.dumps(facts)  # JSON-able
    devices = {d["id"]: d for d in facts["devices"]}
    assert list(devices) == ["cuda:0", "cuda:1"]
    assert devices["cuda:0"]["handle"] == {"ok": True, "error": None}
    assert devices["cuda:0"]["capability"] == "8.0" and devices["cuda:0"]["mem_start"] == {"free": 70 * 2**30, "total": 80 * 2**30}
    failed = devices["cuda:1"]["handle"]
    assert failed["ok"] is False and failed["error"] == NOT_INIT  # help suffix stripped by error_text
    assert failed["mem_after_failure"] == {"free": 70 * 2**30, "total": 80 * 2**30}
    assert devices["cuda:1"]["capability"] is None
    assert devices["cuda:1"]["identity_error"] == "CUDA error: unspecified launch failure"
    ops = facts["ops"]
    assert [(o["device"], o["op"], o["dtype"]) for o in ops] == [
        (d, op, dt) for d in ("cuda:0", "cuda:1") for op, dt in
        [("gemm", "float32"), ("gemm", "float16"), ("gemm", "bfloat16"), ("conv2d", "float32"), ("conv2d", "float16")]]
    # the CPU torch cannot move tensors to "cuda": every op fails, is recorded, and gets a memory reading
    assert all(not o["ok"] and o["error"] and "mem_after_failure" in o for o in ops)
    assert all(o["shape"] == [64, 64, 64] for o in ops if o["op"] == "gemm")
    assert facts["cudnn"]["version"] is None and facts["cudnn"]["available"] is False
    findings = judge(CHECK, json.loads(json.dumps(facts)))
    assert {f.subject["device"] for f in findings} == {"cuda:0", "cuda:1"}
    assert ("cublas-init-failed", "cuda:1") in [(f.code, f.subject["device"]) for f in findings]


# ---- signatures and the module's own hygiene


@pytest.mark.parametrize(("text", "code"), [
    ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`", "cublas-init-failed"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "cublas-init-failed"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, "
     "b, ldb, &beta, c, ldc)`", "gemm-failed"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED", "cudnn-failed"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", "cudnn-failed"),
])
def test_signatures_match_real_messages(text: str, code: str) -> None:
    matched = [s.code for s in CHECK.signatures if re.search(s.message, text)]
    assert code in matched


def test_plain_out_of_memory_text_belongs_to_device_memory_alone() -> None:
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 14.74 GiB of "
            "which 2.81 MiB is free.")
    assert not [s for s in CHECK.signatures if re.search(s.message, text)]
    # (a signature that needs frames or context of its own to diagnose anything is not this text's owner)
    owners = {c.check.id for c in load_checks(plugins=False)[0] for s in c.check.signatures
              if re.search(s.message, text) and not (s.frames_required or s.context_required)}
    assert owners == {"device-memory"}


# ---- a real GPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch_has_cuda(), reason="needs an NVIDIA GPU")
def test_real_gpu_gemms_are_ok_with_small_errors() -> None:
    import torch

    facts = json.loads(json.dumps(CHECK.probe(torch, ProbeContext())))
    assert facts["devices"], "torch sees a GPU, the probe must too"
    for dev in facts["devices"]:
        assert dev["handle"] == {"ok": True, "error": None}, dev
        assert dev["mem_start"]["total"] >= dev["mem_start"]["free"] > 0
        gemms = {o["dtype"]: o for o in facts["ops"] if o["device"] == dev["id"] and o["op"] == "gemm"}
        assert set(gemms) == {"float32", "float16", "bfloat16"}
        for dtype in ("float32", "float16") + (("bfloat16",) if tuple(map(int, dev["capability"].split("."))) >= (8, 0) else ()):
            assert gemms[dtype]["ok"], gemms[dtype]
            assert 0 <= gemms[dtype]["max_rel_err"] < {"float32": 1e-2, "float16": 2e-2, "bfloat16": 8e-2}[dtype]
        convs = [o for o in facts["ops"] if o["device"] == dev["id"] and o["op"] == "conv2d"]
        assert convs and all(o["ok"] and o["max_rel_err"] < 2e-2 for o in convs)
    assert not [f for f in judge(CHECK, facts) if f.severity is Severity.ERROR]


@pytest.mark.gpu
@pytest.mark.skipif(not torch_has_cuda(), reason="needs an NVIDIA GPU")
def test_real_gpu_end_to_end() -> None:
    report = run_json("--only", "cublas")
    check = check_of(report, "cublas")
    assert check["status"] in ("ok", "warning")
    assert check["summary"].startswith("cuda:0 ")
