"""The four CPU checks' rules, on fact snapshots recorded from real runs."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import codes, facts_of, judge, load_fixture

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.model import Severity, Target

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
NEW = load_fixture("cpu-torch-2.13.0.json")
OLD = load_fixture("cpu-torch-2.0.1.json")


def diagnose(check_id: str, report: dict) -> list:
    return judge(CHECKS[check_id], facts_of(report, check_id))


# ---- cpu-half-kernels


def test_torch_2_13_has_every_cpu_half_kernel() -> None:
    assert diagnose("cpu-half-kernels", NEW) == []
    ops = facts_of(NEW, "cpu-half-kernels")["ops"]
    assert {o["op"] for o in ops} >= {"layer_norm", "linear", "matmul", "bmm", "conv2d", "group_norm", "softmax",
                                      "scaled_dot_product_attention", "rms_norm", "autocast"}
    assert all(o["ok"] for o in ops)
    # a sound kernel, measured: far below the garbage tolerance
    assert all(o["max_rel_err"] < 1e-2 for o in ops if o["max_rel_err"] is not None)


def test_torch_2_0_1_misses_the_seed_004_kernel_on_a_cpu_only_machine() -> None:
    findings = diagnose("cpu-half-kernels", OLD)
    assert codes(findings) == ["fp16-missing"]
    fp16 = findings[0]
    assert fp16.severity is Severity.ERROR  # no accelerator: the run will be on the CPU
    assert "layer_norm fp16 cpu: \"LayerNormKernelImpl\" not implemented for 'Half'" in fp16.evidence
    for expected in ('"addmm_impl_cpu_" not implemented', '"slow_conv2d_cpu" not implemented', '"bmm" not implemented',
                     '"GroupNormKernelImpl" not implemented', '"softmax_lastdim_kernel_impl" not implemented'):
        assert any(expected in e for e in fp16.evidence), expected
    kinds = {r.id: r for r in fp16.remedies}
    assert kinds["precision-fp32"].action == {"set": {"precision": "fp32"}, "when": {"device": "cpu", "precision": "fp16"}}
    assert "T4 GPU" in kinds["use-gpu"].summary
    assert kinds["torch-upgrade"].commands[0].endswith("install --upgrade torch --index-url https://download.pytorch.org/whl/cpu")


def test_torch_2_0_1_cpu_autocast_fp16_falls_back_and_bf16_works() -> None:
    ops = {(o["op"], o["dtype"]): o for o in facts_of(OLD, "cpu-half-kernels")["ops"]}
    assert not ops[("autocast", "float16")]["ok"]
    assert ops[("autocast", "bfloat16")]["ok"]
    assert "rms_norm" not in {op for op, _ in ops}


def test_missing_kernels_are_a_warning_when_a_gpu_is_present() -> None:
    facts = dict(facts_of(OLD, "cpu-half-kernels"), accelerators=["cuda:0"])
    finding = judge(CHECKS["cpu-half-kernels"], facts)[0]
    assert finding.severity is Severity.WARNING
    assert "--index-url" not in finding.remedies[2].commands[0]  # a GPU machine keeps its CUDA build


def test_a_kernel_that_returns_garbage_is_an_error() -> None:
    facts = facts_of(NEW, "cpu-half-kernels")
    ops = [dict(o) for o in facts["ops"]]
    layer_norm_bf16 = next(o for o in ops if o["op"] == "layer_norm" and o["dtype"] == "bfloat16")
    layer_norm_bf16["max_rel_err"] = 0.9
    softmax_fp16 = next(o for o in ops if o["op"] == "softmax" and o["dtype"] == "float16")
    softmax_fp16["max_rel_err"] = "nan"
    findings = judge(CHECKS["cpu-half-kernels"], dict(facts, ops=ops))
    assert sorted(codes(findings)) == ["bf16-wrong-results", "fp16-wrong-results"]
    assert all(f.severity is Severity.ERROR for f in findings)


def test_summary_counts_ops() -> None:
    assert CHECKS["cpu-half-kernels"].summarize(facts_of(OLD, "cpu-half-kernels")).startswith("fp16 0/9 ops; bf16 9/9 ops")


# ---- dtype-mismatch


@pytest.mark.parametrize("report", [NEW, OLD], ids=["torch-2.13", "torch-2.0.1"])
def test_rejected_mixes_are_recorded_with_their_messages(report: dict) -> None:
    findings = diagnose("dtype-mismatch", report)
    assert codes(findings) == ["mixes-rejected"]
    assert findings[0].severity is Severity.INFO
    assert {r.id for r in findings[0].remedies} == {"cast-input", "consistent-weight-dtype", "use-autocast"}


def test_torch_2_13_messages_match_facts_md() -> None:
    ops = facts_of(NEW, "dtype-mismatch")["ops"]

    def message(op: str, dtype: str, weight: str, bias: str = "") -> str:
        for o in ops:
            if o["op"] == op and o["dtype"] == dtype and o["weight_dtype"] == weight and o.get("bias_dtype", "") == bias:
                return o["error"]
        raise KeyError((op, dtype, weight))

    assert message("linear", "float32", "float16") == "expected m1 and m2 to have the same dtype, but got: float != c10::Half"
    assert message("conv2d", "float16", "float32") == "expected scalar type Half but found Float"
    assert message("conv2d", "float32", "float16") == "expected scalar type Float but found Half"
    assert message("conv2d_bias", "float32", "float32", "float16") == "Input type (float) and bias type (c10::Half) should be the same"
    assert message("layer_norm", "float32", "float16") == "mixed dtype (CPU): expect parameter to have scalar type of Float"
    accepted = [o for o in ops if o["ok"]]
    assert {(o["op"], o["dtype"], o["weight_dtype"]) for o in accepted} >= {("layer_norm", "float16", "float32")}


def test_torch_2_0_1_linear_message_differs() -> None:
    linear = next(o for o in facts_of(OLD, "dtype-mismatch")["ops"]
                  if o["op"] == "linear" and o["dtype"] == "float32" and o["weight_dtype"] == "float16")
    assert linear["error"] == "expected scalar type Float but found Half"


def test_an_accepted_mix_that_computes_garbage_is_an_error() -> None:
    facts = facts_of(NEW, "dtype-mismatch")
    ops = [dict(o) for o in facts["ops"]]
    accepted = next(o for o in ops if o["ok"])
    accepted["max_rel_err"] = 0.5
    findings = judge(CHECKS["dtype-mismatch"], dict(facts, ops=ops))
    assert "mix-wrong-results" in codes(findings)


# ---- fp8


def test_fp8_promotion_is_rejected_with_the_seed_003_message() -> None:
    findings = diagnose("fp8", NEW)
    assert codes(findings) == ["float8-promotion"]
    assert ("cpu: Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and Half"
            in findings[0].evidence)
    assert {r.id for r in findings[0].remedies} == {"upcast-fp8"}  # the adapter remedies are dora-fp8's
    facts = facts_of(NEW, "fp8")
    assert facts["scaled_mm"] is True
    scaled = [o for o in facts["ops"] if o["op"] == "_scaled_mm"]
    assert scaled and scaled[0]["ok"] and scaled[0]["max_rel_err"] < 2e-2
    casts = [o for o in facts["ops"] if o["op"] == "cast"]
    assert casts and all(o["ok"] for o in casts)


def test_torch_2_0_1_has_no_float8() -> None:
    findings = diagnose("fp8", OLD)
    assert codes(findings) == ["no-float8"]
    assert findings[0].title == "no float8 dtypes in this torch (2.0.1+cu117)"
    assert CHECKS["fp8"].summarize(facts_of(OLD, "fp8")) == "no float8 dtypes in this torch"


def test_gpu_without_fp8_hardware_is_named() -> None:
    """Hand-made from the CPU snapshot: a T4 (sm_75) added as a device."""
    facts = dict(facts_of(NEW, "fp8"))
    facts["devices"] = facts["devices"] + [{"id": "cuda:0", "capability": "7.5", "name": "Tesla T4", "fp8_matmul_hardware": False}]
    findings = judge(CHECKS["fp8"], facts)
    t4 = next(f for f in findings if f.code == "no-fp8-hardware")
    assert "cuda:0 (Tesla T4, compute capability 7.5) cannot run fp8 matmul" in t4.title


# ---- torch-install


def test_healthy_install_has_no_findings() -> None:
    assert diagnose("torch-install", NEW) == []
    facts = facts_of(NEW, "torch-install")
    assert facts["build"]["kind"] == "CPU-only"
    assert facts["packages"]["numpy"]
    assert [d["id"] for d in facts["devices"]] == ["cpu"]


def test_no_torch_is_an_error_with_install_advice() -> None:
    report = load_fixture("no-torch.json")
    findings = diagnose("torch-install", report)
    assert codes(findings) == ["torch-missing"]
    assert findings[0].evidence == ("ModuleNotFoundError: No module named 'torch'",)
    # recorded on Linux without an NVIDIA driver: the CPU build first, not PyPI's GBs of CUDA libraries
    cpu, default = findings[0].remedies
    assert cpu.id == "torch-install-cpu" and "shows no NVIDIA GPU" in cpu.summary
    assert cpu.commands[0].endswith("install torch --index-url https://download.pytorch.org/whl/cpu")
    assert cpu.action == {"install": ["torch"], "index_url": "https://download.pytorch.org/whl/cpu"}
    assert default.commands[0].endswith("/bin/python -m pip install torch")
    # what needs torch is skipped; the driver and apex checks still run without it
    ran = {c["id"]: c["status"] for c in report["checks"]}
    assert {i for i, status in ran.items() if status == "skipped"} == {
        i for i in ran if CHECKS[i].requires_torch}  # the checks of the day it was recorded
    assert ran["cuda-compat"] == ran["apex"] == "ok"


@pytest.mark.parametrize(("platform", "driver", "first"), [
    ("linux", None, "torch-install-cpu"),  # no NVIDIA driver: the CPU build first
    ("linux", "580.95.05", "torch-install"),  # a GPU machine whose torch is missing: the default CUDA build
    ("win32", None, "torch-install"),  # PyPI's Windows and macOS builds are the CPU builds already
    ("darwin", None, "torch-install"),
])
def test_no_torch_remedy_order_follows_the_machine(platform: str, driver: str, first: str) -> None:
    report = load_fixture("no-torch.json")
    env = dataclasses.replace(Target.from_report(report["environment"]), sys_platform=platform, nvidia_driver=driver)
    [finding] = judge(CHECKS["torch-install"], facts_of(report, "torch-install"), env)
    assert finding.remedies[0].id == first
    assert {r.id for r in finding.remedies} == {"torch-install", "torch-install-cpu"}


def test_deleted_shared_library_is_an_import_failure_with_reinstall() -> None:
    report = load_fixture("cpu-torch-2.13.0-libtorch-deleted.json")
    findings = diagnose("torch-install", report)
    assert codes(findings) == ["torch-import-failed"]
    assert findings[0].evidence[0] == "ImportError: libtorch_cpu.so: cannot open shared object file: No such file or directory"
    # 2.13.0+cpu: the same build again, from the index that serves it (PyPI's 2.13.0 is the CUDA build)
    assert findings[0].remedies[0].commands[0].endswith(
        "install --force-reinstall torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu")


def test_missing_numpy_is_a_warning() -> None:
    findings = diagnose("torch-install", load_fixture("cpu-torch-2.13.0-no-numpy.json"))
    assert codes(findings) == ["numpy-missing"]
    assert findings[0].severity is Severity.WARNING
    assert "Failed to initialize NumPy: No module named 'numpy'" in findings[0].evidence[0]


def test_crash_while_importing_torch_is_an_error() -> None:
    facts = {"python": "/x/bin/python", "torch_dist": "2.13.0",
             "torch_import": {"ok": False, "error": "crashed while importing torch: SIGSEGV", "error_type": "Crash",
                              "stderr": "Fatal Python error: Segmentation fault\n  File \"/x/torch/__init__.py\", line 1 in <module>"}}
    findings = judge(CHECKS["torch-install"], facts)
    assert codes(findings) == ["torch-import-crashed"]
    assert findings[0].evidence == ("crashed while importing torch: SIGSEGV", 'File "/x/torch/__init__.py", line 1 in <module>')


# ---- the GPU/stack checks on the real torch 2.0.1 stack (a CUDA 11.7 build, no driver)


def test_old_cuda_build_without_a_driver_is_only_a_note() -> None:
    assert codes(diagnose("cuda-compat", OLD)) == ["no-cuda-device"]
    torch = facts_of(OLD, "cuda-compat")["torch"]
    assert torch["cuda"] == "11.7"
    assert torch["arch_flags"] == "sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86"  # read although CUDA is unavailable
    assert torch["init_error"].startswith("RuntimeError: Found no NVIDIA driver on your system")


def test_triton_paired_with_torch_2_0_1_imports_and_is_not_flagged() -> None:
    facts = facts_of(OLD, "extension-abi")
    triton = [o for o in facts["ops"] if o.get("package") == "triton"]
    assert triton and all(o["ok"] for o in triton)
    assert diagnose("extension-abi", OLD) == []
