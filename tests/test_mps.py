"""MPS is a device: where torch has Apple's MPS, the dtype checks run their micro-ops there too
(cpu-half-kernels' fp16 ops, bf16-support's tensor and matmul, fp8's casts), the rules judge
what ran there, and explain maps MPS's errors to the check that owns the dtype.

No Mac is here: the rules are tested on hand-written facts that carry torch's own MPS messages
(tests/fixtures/handwritten/, each naming its source), and on this Linux machine the probes
must leave MPS alone when asked for it (torch.backends.mps.is_available() is False)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List

import pytest
from conftest import env_for, handwritten, run_envdoctor

from envdoctor.configs.detect import read_config
from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.explain.match import match
from envdoctor.pipeline.explain.reader import read_text
from envdoctor.target.model import Finding, Severity

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
BF16_MPS = handwritten("bf16-mps-m1-macos13-torch-2.4.1.json")
FP8_MPS = handwritten("fp8-mps-m4-torch-2.6.0.json")

# A OneTrainer config that trains on the Mac's GPU in bf16 with an fp8 transformer
ONETRAINER_MPS = ('{\n    "__version": 8,\n    "training_method": "LORA",\n    "model_type": "FLUX_DEV_1",\n    "train_device": "mps",\n'
                  '    "train_dtype": "BFLOAT_16",\n    "transformer": {\n        "train": true,\n        "weight_dtype": "FLOAT_8"\n    }\n}\n')


def codes(findings: List[Finding]) -> List[str]:
    return sorted(f.code for f in findings)


def with_config(facts: Dict[str, Any], tmp_path: Any) -> Any:
    path = tmp_path / "flux-mps.json"
    path.write_text(ONETRAINER_MPS, encoding="utf-8")
    return dataclasses.replace(env_for(facts), intent=read_config(str(path)))


def test_the_probes_leave_mps_alone_where_torch_has_none() -> None:
    proc = run_envdoctor("check", "--json", "--no-config", "--device", "mps", "--only", "cpu-half-kernels,bf16-support,fp8")
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    ops = [op for c in report["checks"] for op in c["facts"].get("ops") or ()]
    assert not any(op.get("device") == "mps" for op in ops)
    checks = {c["id"]: c for c in report["checks"]}
    assert all(checks[i]["status"] == "ok" for i in ("cpu-half-kernels", "bf16-support", "fp8"))
    # asking for a device torch cannot see is torch-install's finding, said once
    assert [f["code"] for f in checks["torch-install"]["findings"]] == ["device-missing"]
    assert "mps" not in report["environment"]["devices"]


def test_bf16_refused_on_mps_before_macos_14_is_a_warning_and_an_error_when_a_config_asks(tmp_path: Any) -> None:
    [mps, _] = CHECKS["bf16-support"].judge(BF16_MPS, env_for(BF16_MPS))
    assert (mps.code, mps.severity) == ("bf16-mps", Severity.WARNING)
    assert "mps bf16 matmul: MPS BFloat16 is only supported on MacOS 14 or newer" in mps.evidence
    asked = next(f for f in CHECKS["bf16-support"].judge(BF16_MPS, with_config(BF16_MPS, tmp_path)) if f.code == "bf16-mps")
    assert asked.severity is Severity.ERROR and asked.title.startswith("flux-mps.json:6 ")
    assert asked.remedies[0].action == {"set": {"precision": "fp16"}, "when": {"precision": "bf16", "device": "mps"}}


def test_float8_refused_on_mps_is_a_fact_and_an_error_for_fp8_weights_there(tmp_path: Any) -> None:
    found = CHECKS["fp8"].judge(FP8_MPS, env_for(FP8_MPS))
    assert codes(found) == ["float8-mps", "float8-promotion"]  # not "cast-fails": the CPU casts run
    mps = next(f for f in found if f.code == "float8-mps")
    assert mps.severity is Severity.INFO and "float8_e4m3fn, float8_e5m2" in mps.title
    asked = next(f for f in CHECKS["fp8"].judge(FP8_MPS, with_config(FP8_MPS, tmp_path)) if f.code == "float8-mps")
    assert asked.severity is Severity.ERROR and "asks for fp8 weights on MPS" in asked.title
    assert asked.remedies[0].action == {"set": {"weight_dtype": "fp16"}, "when": {"weight_dtype": "fp8"}}


def test_fp16_ops_that_fail_on_mps_are_cpu_half_kernels_findings_for_that_device() -> None:
    """The rule on the probe's shape (the same op facts on device "mps"): one fp16 op failing there."""
    facts = {"torch": "2.4.1", "accelerators": ["mps"], "ops": [
        {"op": "layer_norm", "device": "cpu", "dtype": "float16", "ok": True, "error": None, "max_rel_err": 0.001},
        {"op": "layer_norm", "device": "mps", "dtype": "float16", "ok": True, "error": None, "max_rel_err": 0.001},
        {"op": "conv2d", "device": "mps", "dtype": "float16", "ok": False, "error": "some op is not implemented for MPS", "max_rel_err": None}]}
    [finding] = CHECKS["cpu-half-kernels"].judge(facts, env_for(BF16_MPS))
    assert (finding.code, finding.severity, finding.subject["device"]) == ("mps-fp16-missing", Severity.WARNING, "mps")
    assert finding.evidence == ("conv2d fp16 mps: some op is not implemented for MPS",)
    assert CHECKS["cpu-half-kernels"].summarize(facts) == "cpu fp16 1/1 ops, max rel err 1.0e-03; mps fp16 1/2 ops, max rel err 1.0e-03"


@pytest.mark.parametrize(("text", "check"), [
    ("TypeError: MPS BFloat16 is only supported on MacOS 14 or newer", "bf16-support"),
    ("TypeError: BFloat16 is not supported on MPS", "bf16-support"),
    ("TypeError: Trying to convert Float8_e4m3fn to the MPS backend but it does not have support for that dtype.", "fp8"),
    ("RuntimeError: MPS backend out of memory (MPS allocated: 17.19 GB, other allocations: 1.09 GB, max allowed: 18.13 GB).",
     "device-memory"),
])
def test_explain_maps_mps_errors_to_the_check_that_owns_the_dtype(text: str, check: str) -> None:
    found = match(read_text("Traceback (most recent call last):\n  File \"/Users/me/run.py\", line 3, in <module>\n    x = f()\n" + text + "\n"),
                  list(CHECKS.values())).diagnoses
    assert found and found[0].check == check
