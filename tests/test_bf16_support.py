"""bf16-support: native / emulated / no bfloat16 on each CUDA GPU.

Rules on hand-written GPU snapshots (tests/fixtures/handwritten/bf16-*.json), on the
snapshot recorded on this CPU machine and end to end; the probe with a fake CUDA
namespace; the real probe on a GPU (`-m gpu`).
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import FakeCudaTorch, FakeGpu, check_of, codes, facts_of, handwritten, judge, load_fixture, run_json, torch_has_cuda

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.model import ProbeContext, Severity

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
CHECK = CHECKS["bf16-support"]


# ---- this machine


def test_recorded_cpu_snapshot_is_a_quick_no_cuda_info_with_the_cpu_matmul() -> None:
    report = load_fixture("cpu-bf16-support.json")
    facts = facts_of(report, "bf16-support")
    assert facts["devices"] == [] and facts["ops"] == []
    cpu = facts["cpu"]
    assert (cpu["op"], cpu["device"], cpu["dtype"], cpu["ok"], cpu["out_dtype"]) == ("matmul", "cpu", "bfloat16", True, "bfloat16")
    assert 0 < cpu["max_rel_err"] < 8e-2  # bf16 rounding, measured
    findings = judge(CHECK, facts)
    assert codes(findings) == ["no-cuda-device"]
    assert findings[0].severity is Severity.INFO
    assert findings[0].title == "no CUDA device: bf16 support is checked on CUDA GPUs only"
    assert findings[0].evidence[1] == "CPU bf16 matmul ok (max rel err %s)" % cpu["max_rel_err"]
    assert CHECK.summarize(facts) == "no CUDA device · GPUs only; CPU bf16 matmul ok (max rel err %s)" % cpu["max_rel_err"]
    assert check_of(report, "bf16-support")["duration_s"] < 1.0


@pytest.mark.skipif(torch_has_cuda(), reason="asserts the no-GPU outcome of this CPU machine")
def test_end_to_end_on_this_cpu_machine() -> None:
    report = run_json("--only", "bf16-support")
    check = check_of(report, "bf16-support")
    assert check["status"] == "ok" and report["summary"]["exit_code"] == 0
    assert [(f["code"], f["severity"]) for f in check["findings"]] == [("no-cuda-device", "info")]
    assert check["facts"]["cpu"]["ok"] is True and check["facts"]["cpu"]["error"] is None
    assert "GPUs only" in check["summary"]
    assert check["duration_s"] < 1.0


# ---- hand-written GPUs


def test_t4_is_emulated_bf16_a_warning_naming_the_gpu() -> None:
    facts = handwritten("bf16-t4-emulated.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["bf16-emulated"]
    finding = findings[0]
    assert finding.severity is Severity.WARNING
    assert finding.title == "cuda:0 Tesla T4 (compute capability 7.5) has no native bf16: bf16 runs emulated and slow"
    assert finding.subject == {"device": "cuda:0", "name": "Tesla T4", "capability": "7.5", "dtype": "bfloat16", "bf16": "emulated"}
    assert "torch.cuda.is_bf16_supported() = True" in finding.evidence
    assert "torch.cuda.is_bf16_supported(including_emulation=False) = False" in finding.evidence
    assert any("emulation" in e and "transformers" in e for e in finding.evidence)
    assert "1024×1024 matmul: float32 0.352 ms, float16 0.061 ms, bfloat16 0.874 ms (bf16 takes 14.3× the fp16 time)" in finding.evidence
    remedies = {r.id: r for r in finding.remedies}
    assert remedies["precision-fp16"].kind == "config"
    assert remedies["precision-fp16"].action == {"set": {"precision": "fp16"}, "when": {"device": "cuda:0", "precision": "bf16"}}
    assert "transformers `fp16=True`" in remedies["precision-fp16"].summary
    assert "mixed_precision: fp16" in remedies["precision-fp16"].summary
    assert remedies["precision-fp32"].action["set"] == {"precision": "fp32"}
    assert "in Colab: Runtime → Change runtime type → L4 GPU or A100 GPU" in remedies["use-ampere-gpu"].summary
    assert CHECK.summarize(facts) == "cuda:0 (7.5) bf16 emulated"


def test_v100_on_torch_without_the_emulation_keyword_is_emulated() -> None:
    facts = handwritten("bf16-v100-emulated.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["bf16-emulated"]
    assert findings[0].title.startswith("cuda:0 Tesla V100-SXM2-32GB (compute capability 7.0) has no native bf16")
    assert "this torch has no is_bf16_supported(including_emulation=...) keyword" in findings[0].evidence
    assert "torch.cuda.is_bf16_supported() = False" in findings[0].evidence


@pytest.mark.parametrize("name", ["bf16-a100-native.json", "bf16-h100-native.json"])
def test_ampere_and_hopper_are_native_and_quiet(name: str) -> None:
    facts = handwritten(name)
    assert judge(CHECK, facts) == []
    cap = facts["devices"][0]["capability"]
    assert CHECK.summarize(facts) == "cuda:0 (%s) bf16 native" % cap


def test_p100_whose_bf16_gemm_fails_is_none_and_an_error() -> None:
    facts = handwritten("bf16-p100-unsupported.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["bf16-unsupported"]
    finding = findings[0]
    assert finding.severity is Severity.ERROR
    assert finding.title.startswith("cuda:0 Tesla P100-PCIE-16GB (compute capability 6.0) has no native bf16, and bf16 fails")
    assert any("CUBLAS_STATUS_NOT_SUPPORTED" in e and "CUDA_R_16BF" in e for e in finding.evidence)
    assert {r.id for r in finding.remedies} == {"precision-fp16", "precision-fp32", "use-ampere-gpu"}
    assert CHECK.summarize(facts) == "cuda:0 (6.0) bf16 none"


def test_bf16_failing_on_an_ampere_gpu_is_bf16_fails_and_points_at_cublas() -> None:
    facts = handwritten("bf16-a100-native.json")
    matmul = facts["ops"][1]
    # a CUDA 10.2 build of torch 1.10 has no bf16 GEMM at all (github.com/pytorch/pytorch/issues/67682)
    matmul.update(ok=False, error="at::cuda::blas::gemm: not implemented for N3c108BFloat16E", max_rel_err=None, error_type="RuntimeError")
    del matmul["out_dtype"]
    findings = judge(CHECK, facts)
    assert codes(findings) == ["bf16-fails"]
    assert findings[0].severity is Severity.ERROR
    assert "check-cublas" in {r.id for r in findings[0].remedies}


def test_bf16_tensor_creation_failing_is_none() -> None:
    facts = handwritten("bf16-t4-emulated.json")
    # torch 1.2's wording when CUDA had no bf16 at all (github.com/pytorch/pytorch/issues/23149)
    facts["ops"][0].update(ok=False, error="\"copy_\" not implemented for 'BFloat16'", error_type="RuntimeError")
    del facts["ops"][0]["out_dtype"]
    assert codes(judge(CHECK, facts)) == ["bf16-unsupported"]


@pytest.mark.parametrize("error", [
    "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`",
    "CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 79.25 GiB of which 1.25 MiB is free.",
    "CUDA error: no kernel image is available for execution on the device",
])
def test_a_gpu_failing_for_another_reason_is_not_judged_on_bf16(error: str) -> None:
    """A full or broken A100 must not read as 'no bf16': cublas / device-memory / cuda-compat report it once."""
    facts = handwritten("bf16-a100-native.json")
    facts["ops"][1].update(ok=False, error=error, max_rel_err=None, error_type="RuntimeError")
    del facts["ops"][1]["out_dtype"]
    findings = judge(CHECK, facts)
    assert [(f.code, f.severity) for f in findings] == [("bf16-not-judged", Severity.INFO)]
    assert findings[0].evidence == ("cuda:0: %s" % error,)
    assert CHECK.summarize(facts) == "cuda:0 (8.0) bf16 not judged (the GPU failed)"


def test_bf16_matmul_returning_nan_is_wrong_results() -> None:
    facts = handwritten("bf16-h100-native.json")
    facts["ops"][1]["max_rel_err"] = "nan"
    findings = judge(CHECK, facts)
    assert codes(findings) == ["bf16-wrong-results"]
    assert findings[0].evidence == ("cuda:0 bf16 256×256 matmul: max relative error nan vs fp32 (tolerance 0.08)",)


def test_two_gpus_are_judged_separately() -> None:
    t4 = handwritten("bf16-t4-emulated.json")
    a100 = handwritten("bf16-a100-native.json")
    dev1 = dict(a100["devices"][0], id="cuda:1", index=1)
    ops1 = [dict(o, device="cuda:1") for o in a100["ops"]]
    facts = dict(t4, devices=t4["devices"] + [dev1], ops=t4["ops"] + ops1)
    findings = judge(CHECK, facts)
    assert [(f.code, f.subject["device"]) for f in findings] == [("bf16-emulated", "cuda:0")]
    assert CHECK.summarize(facts) == "cuda:0 (7.5) bf16 emulated · cuda:1 (8.0) bf16 native"


def test_rocm_devices_are_native_whatever_their_gfx_number() -> None:
    facts = handwritten("bf16-a100-native.json")
    facts["hip"], facts["cuda_build"] = "6.2.41133", None
    facts["devices"][0].update(name="AMD Instinct MI210", capability="9.0")
    assert judge(CHECK, facts) == []


# ---- the probe with a fake CUDA namespace over the CPU torch


@pytest.mark.parametrize("keyword", [True, False])
def test_probe_asks_each_device_under_its_own_context(keyword: bool) -> None:
    import torch

    fake = FakeCudaTorch(torch, [FakeGpu("Tesla T4", (7, 5), bf16_native=False), FakeGpu("NVIDIA A100-SXM4-80GB", (8, 0))],
                         bf16_keyword=keyword)
    facts = json.loads(json.dumps(CHECK.probe(fake, ProbeContext())))
    devs = facts["devices"]
    assert [(d["id"], d["name"], d["capability"]) for d in devs] == [("cuda:0", "Tesla T4", "7.5"), ("cuda:1", "NVIDIA A100-SXM4-80GB", "8.0")]
    assert [d["is_bf16_supported"] for d in devs] == [True, True]
    if keyword:
        assert [d["is_bf16_supported_native"] for d in devs] == [False, True]  # asked with the device current
        assert all(d["including_emulation_keyword"] for d in devs)
    else:
        assert [d["is_bf16_supported_native"] for d in devs] == [None, None]
        assert not any(d["including_emulation_keyword"] for d in devs)
    # the CPU torch cannot place tensors on "cuda": the real ops fail and are recorded, no timing is attempted
    assert [(o["device"], o["op"], o["ok"]) for o in facts["ops"]] == [
        ("cuda:0", "tensor", False), ("cuda:0", "matmul", False), ("cuda:1", "tensor", False), ("cuda:1", "matmul", False)]
    assert all(o["error"] for o in facts["ops"])
    assert not any("timing" in d for d in devs)
    assert facts["cpu"]["ok"] is True
    findings = judge(CHECK, facts)
    assert [(f.code, f.subject["device"]) for f in findings] == [("bf16-unsupported", "cuda:0"), ("bf16-fails", "cuda:1")]


# ---- signatures and hygiene


@pytest.mark.parametrize("text", [
    # vLLM (github.com/vllm-project/vllm/issues/1157)
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5.",
    # transformers training_args.py, current and older wording
    "ValueError: Your setup doesn't support bf16/gpu. You need to assign use_cpu if you want to train the model on CPU. "
    "You need Ampere+ GPU with cuda>=11.0.",
    "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU with cuda>=11.0",
    # accelerate accelerator.py
    "ValueError: bf16 mixed precision requires PyTorch >= 1.10 and a supported device.",
    # pytorch/pytorch#57773 (P100)
    "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasGemmStridedBatchedExFix(handle, opa, opb, (int)m, (int)n, "
    "(int)k, (void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, strideb, (void*)&fbeta, c, CUDA_R_16BF, "
    "(int)ldc, stridec, (int)num_batches, CUDA_R_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`",
    # pytorch/pytorch#99433
    "RuntimeError: \"replication_pad1d_cuda\" not implemented for 'BFloat16'",
])
def test_signatures_match_real_messages(text: str) -> None:
    assert any(re.search(s.message, text) for s in CHECK.signatures)


def test_cpu_kernel_message_needs_cuda_frames() -> None:
    text = "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'BFloat16'"
    matched = [s for s in CHECK.signatures if re.search(s.message, text)]
    assert matched and all(s.frames_required for s in matched)


@pytest.mark.parametrize("name, timed", [("bf16-t4-emulated.json", True), ("bf16-v100-emulated.json", True),
                                         ("bf16-p100-unsupported.json", True), ("bf16-a100-native.json", False),
                                         ("bf16-h100-native.json", False)])
def test_only_a_gpu_whose_bf16_may_be_emulated_is_timed(name: str, timed: bool) -> None:
    """The timing is evidence for bf16-emulated alone; timing a native GPU cost 0.25 s a GPU on the H200."""
    from envdoctor.checks.bf16_support import _timing_is_evidence

    assert _timing_is_evidence(handwritten(name)["devices"][0]) is timed
    # an Ampere that torch's strict call says is not native is timed: the call decides against the capability
    assert _timing_is_evidence({"capability": "8.0", "is_bf16_supported_native": False}) is True
    # and on the recorded H200 (sm_90, torch's strict answer True) it is not
    recorded = {c["id"]: c for c in load_fixture("h200-torch-2.11.0-cu130.json")["checks"]}["bf16-support"]["facts"]
    assert _timing_is_evidence(recorded["devices"][0]) is False


# ---- a real GPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch_has_cuda(), reason="needs an NVIDIA GPU")
def test_real_gpu_bf16_matmul_is_right_and_timed_only_where_bf16_is_emulated() -> None:
    import torch

    facts = json.loads(json.dumps(CHECK.probe(torch, ProbeContext())))
    assert facts["devices"]
    findings = judge(CHECK, facts)
    for dev in facts["devices"]:
        matmul = next(o for o in facts["ops"] if o["device"] == dev["id"] and o["op"] == "matmul")
        mine = [f.code for f in findings if f.subject.get("device") == dev["id"]]
        cc = tuple(int(x) for x in dev["capability"].split("."))
        if cc >= (8, 0):
            assert matmul["ok"] and 0 <= matmul["max_rel_err"] < 8e-2
            assert dev["is_bf16_supported"] is True
            assert "timing" not in dev  # evidence only for emulated bf16
            assert mine == []
        else:
            assert mine and mine[0] in ("bf16-emulated", "bf16-unsupported")
