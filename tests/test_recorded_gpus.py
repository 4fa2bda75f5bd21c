"""The rules on facts recorded on real NVIDIA Hopper GPUs, an H200 and an H100 (torch 2.11.0+cu130,
driver 580.159.04, tests/fixtures/README.md): what the hand-written GPU snapshots assume, measured on
real machines. The rules are pure, so judging the recorded facts again must give exactly the findings
the recording machine printed; and the facts say what only a real GPU can say: the probes' ops, and
NCCL's collectives under `check --distributed` on a GPU."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest
from conftest import FIXTURES, env_of, load_fixture, rejudged

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.distributed.cluster import cluster_result
from envdoctor.pipeline.distributed.gather import Gathered
from envdoctor.pipeline.explain.confirm import apply_verdicts
from envdoctor.pipeline.explain.match import match
from envdoctor.pipeline.explain.reader import read_text

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
SNAPSHOTS = ["h200-torch-2.11.0-cu130.json", "h200-seed-003-dora-fp8.json", "h200-onetrainer-flux-nf4.json", "h200-apex-python-only.json",
             "h200-apex-sm90-cuda-ext.json", "h100-torch-2.11.0-cu130.json", "h200-torch-2.11.0-cu130-bitsandbytes-0.50.2.json",
             "h200-bnb-cuda-version-132.json", "h200-bnb-cuda-version-126.json", "h200-bnb-cuda-version-139.json",
             "h200-torch-2.11.0-cu130-fft.json", "h200-torch-2.11.0-cu130-companions-deferred.json",
             "h100-torch-2.11.0-cu130-stop48.json", "h200-torch-2.11.0-cu130-stop52.json"]
HOPPERS = ("NVIDIA H200", "NVIDIA H100 80GB HBM3")


def checks_of(name: str) -> Dict[str, Dict[str, Any]]:
    return {c["id"]: c for c in load_fixture(name)["checks"]}


def codes(findings: List[Any]) -> List[str]:
    return sorted(f.code if hasattr(f, "code") else f["code"] for f in findings)


@pytest.mark.parametrize("name", SNAPSHOTS)
def test_the_rules_judge_the_recorded_facts_as_the_gpu_machine_did(name: str) -> None:
    report = load_fixture(name)
    env = env_of(report)
    assert env.gpus and env.gpus[0].name in HOPPERS and env.gpus[0].capability == "9.0"
    for check in report["checks"]:
        assert codes(CHECKS[check["id"]].judge(check["facts"], env)) == codes(check["findings"]), (name, check["id"])


@pytest.mark.parametrize("name", ["h200-torch-2.11.0-cu130.json", "h100-torch-2.11.0-cu130.json", "h200-torch-2.11.0-cu130-stop52.json"])
def test_the_whole_stack_is_healthy_on_a_hopper_gpu(name: str) -> None:
    checks = checks_of(name)
    errors = [(i, f["code"]) for i, c in checks.items() for f in c["findings"] if f["severity"] in ("error", "warning")]
    assert errors == []
    # every check ran; `distributed` came after the first H200 recording, and library-probes runs the libraries'
    # models only where a config or --libraries asks for them
    assert set(checks) == set(CHECKS) - ({"distributed"} if name == "h200-torch-2.11.0-cu130.json" else set())
    on_request = {"library-probes"} if name.endswith("stop52.json") else set()
    assert all(c["status"] == ("skipped" if i in on_request else "ok") for i, c in checks.items())


def test_on_a_real_gpu_stack_the_paired_torchvision_is_loaded_alone_and_bitsandbytes_imports_with_compile_deferred() -> None:
    """The same H200 stack before (every companion imported in full) and after: the findings are the same, and
    the facts say how each companion was looked at. Their cost is in tests/fixtures/measurements/
    h200-check-times-stop47.txt (benchmarks, not asserted here)."""
    before, after = checks_of("h200-torch-2.11.0-cu130-bitsandbytes-0.50.2.json"), checks_of("h200-torch-2.11.0-cu130-companions-deferred.json")
    assert {i: codes(c["findings"]) for i, c in before.items()} == {i: codes(c["findings"]) for i, c in after.items()}
    assert all(c["status"] in ("ok", "skipped") for c in after.values())
    ops = {o["package"]: o for o in after["extension-abi"]["facts"]["ops"]}
    assert [o["op"] for o in before["extension-abi"]["facts"]["ops"]] == ["import torchvision", "import torchaudio", "import bitsandbytes"]
    assert [o["op"] for o in after["extension-abi"]["facts"]["ops"]] == ["load torchvision._C", "import torchaudio", "import bitsandbytes"]
    assert ops["torchvision"]["ok"] and ops["torchvision"]["operator"] == "torchvision::nms"  # an operator its _C registers, looked up
    # bitsandbytes' import wraps ops in torch.compile; on the GPU four such calls were deferred, every one in its own fallback
    assert ops["bitsandbytes"]["ok"] and ops["bitsandbytes"]["compile_deferred"] == {"calls": 4, "unguarded": 0}
    assert after["extension-abi"]["findings"] == []


def test_on_a_real_hopper_bf16_support_times_no_matmuls_where_bf16_is_native() -> None:
    """Stop 47 made bf16-support time its matmuls only where bf16 may be emulated (the timing is that finding's
    evidence). Recorded on an H100 with this code in stop 48: the GPU says bf16 is native, no timing ran, the
    bf16 matmul itself still did, and the findings are those of the H200 recorded before the change (timed)."""
    before, after = checks_of("h200-torch-2.11.0-cu130-companions-deferred.json"), checks_of("h100-torch-2.11.0-cu130-stop48.json")
    (timed,), (untimed,) = before["bf16-support"]["facts"]["devices"], after["bf16-support"]["facts"]["devices"]
    assert timed["is_bf16_supported_native"] and "timing" in timed
    assert untimed["is_bf16_supported_native"] and "timing" not in untimed
    assert [(o["op"], o["ok"]) for o in after["bf16-support"]["facts"]["ops"]] == [("tensor", True), ("matmul", True)]
    assert {i: codes(c["findings"]) for i, c in before.items()} == {i: codes(c["findings"]) for i, c in after.items()}


def test_a_hopper_under_a_torch_built_with_cuda_11_7_has_no_cufft_and_the_traceback_is_confirmed_by_it() -> None:
    """The recorded H100 with torch's build set back to CUDA 11.7 (pytorch#88038's RTX 4090 and cu117): its FFTs fail with
    CUFFT_INTERNAL_ERROR; with CUDA 11.8 and the recorded 13.0 they run."""
    report = load_fixture("h100-torch-2.11.0-cu130.json")
    env = env_of(report)
    facts = checks_of("h100-torch-2.11.0-cu130.json")["cuda-compat"]["facts"]
    old = dict(facts, torch=dict(facts["torch"], version="1.13.1+cu117", cuda="11.7"))
    (finding,) = [f for f in CHECKS["cuda-compat"].judge(old, env) if f.code == "cufft-too-old-for-gpu"]
    assert "compute capability 9.0" in finding.title and "CUDA 11.8 or later" in finding.title
    assert finding.remedies[0].id == "torch-wheel-for-gpu"
    for cuda in ("11.8", "13.0"):
        newer = dict(facts, torch=dict(facts["torch"], cuda=cuda))
        assert "cufft-too-old-for-gpu" not in codes(CHECKS["cuda-compat"].judge(newer, env))
    (first, *_) = match(read_text("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR\n"), list(CHECKS.values())).diagnoses
    assert (first.check, first.code) == ("cuda-compat", "cufft-too-old-for-gpu")


CUFFT_EXPLAINED = FIXTURES / "measurements" / "h200-cufft-explained"
CUFFT_LOGS = ("cuda-compat--melotts-cufft-internal-error-rtx4090", "cuda-compat--melotts-cufft-internal-error-l40s-cu117")


def test_cufft_runs_on_the_h200_so_a_cu117_log_of_cufft_internal_error_is_not_reproduced_there() -> None:
    """cuda-compat runs a float32 rfft on each selected GPU: on the H200 (torch 2.11.0+cu130) it ran and matched the
    CPU's; the corpus's two CUFFT_INTERNAL_ERROR logs (torch cu117 on an RTX 4090 and an L40S), explained there live,
    were read as cufft-too-old-for-gpu and not reproduced. Explained there again in stop 52, the live verdict names the
    FFT that ran, as judging the recorded facts again does."""
    facts = checks_of("h200-torch-2.11.0-cu130-fft.json")["cuda-compat"]["facts"]
    [device] = facts["torch"]["devices"]
    fft = device["fft"]
    assert (fft["op"], fft["device"], fft["dtype"], fft["ok"], fft["shape"]) == ("fft", "cuda:0", "float32", True, [256])
    assert fft["max_rel_err"] < 1e-5
    report = rejudged(load_fixture("h200-torch-2.11.0-cu130-fft.json"))
    assert "cufft" not in " ".join(f.code for r in report.checks for f in r.findings)
    for name in CUFFT_LOGS:
        live = json.loads((CUFFT_EXPLAINED / ("%s.explain.json" % name)).read_text(encoding="utf-8"))["diagnoses"][0]
        assert (live["check"], live["code"], live["confirmed"]) == ("cuda-compat", "cufft-too-old-for-gpu", False)
        assert "runs fft float32 on cuda:0" in live["confirmation"], live["confirmation"]
        text = (FIXTURES.parent / "data" / "tracebacks" / ("%s.txt" % name)).read_text(encoding="utf-8")
        matching = match(read_text(text), list(CHECKS.values()))
        diagnoses = list(matching.diagnoses)
        apply_verdicts(diagnoses, report, matching.supporting)
        first = diagnoses[0]
        assert (first.check, first.code, first.confirmed) == ("cuda-compat", "cufft-too-old-for-gpu", False)
        assert "runs fft float32 on cuda:0" in first.confirmation, first.confirmation


def test_a_failing_fft_on_a_gpu_is_an_error_that_confirms_the_log_and_one_that_runs_overrules_the_table() -> None:
    """The recorded H200 facts with torch's build set back to CUDA 11.7 (pytorch#88038): where the FFT failed as it
    fails there, an error with the live message, and the log's reading confirmed with the same message; where it ran
    (a newer nvidia-cufft beside the old torch), no finding, whatever the table says; a failure the table does not
    explain is cuFFT's own, unless the GPU was out of memory (device-memory's)."""
    report = load_fixture("h200-torch-2.11.0-cu130-fft.json")
    env = env_of(report)
    facts = checks_of("h200-torch-2.11.0-cu130-fft.json")["cuda-compat"]["facts"]
    failed = dict(facts["torch"]["devices"][0]["fft"], ok=False, max_rel_err=None, error="cuFFT error: CUFFT_INTERNAL_ERROR",
                  error_type="RuntimeError")

    def with_fft(cuda: str, fft: Dict[str, Any]) -> Dict[str, Any]:
        device = dict(facts["torch"]["devices"][0], fft=fft)
        return dict(facts, torch=dict(facts["torch"], version="1.13.1+cu117" if cuda == "11.7" else facts["torch"]["version"],
                                      cuda=cuda, devices=[device]))

    (finding,) = [f for f in CHECKS["cuda-compat"].judge(with_fft("11.7", failed), env) if f.code.startswith("cufft")]
    assert (finding.code, finding.severity.value) == ("cufft-too-old-for-gpu", "error")
    assert "fails here" in finding.title and finding.evidence[0] == (
        "cuda:0: torch.fft.rfft float32 (256 points) fails: cuFFT error: CUFFT_INTERNAL_ERROR")
    ran = facts["torch"]["devices"][0]["fft"]
    assert not [f for f in CHECKS["cuda-compat"].judge(with_fft("11.7", ran), env) if f.code.startswith("cufft")]
    (own,) = [f for f in CHECKS["cuda-compat"].judge(with_fft("13.0", failed), env) if f.code.startswith("cufft")]
    assert own.code == "cufft-failed" and own.remedies[0].id == "torch-wheel-for-gpu"
    full = dict(failed, error="CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 139.81 GiB total capacity)")
    assert not [f for f in CHECKS["cuda-compat"].judge(with_fft("13.0", full), env) if f.code.startswith("cufft")]
    # the log read beside those facts: confirmed with the same message
    recorded = json.loads(json.dumps(report))
    for check in recorded["checks"]:
        if check["id"] == "cuda-compat":
            check["facts"] = with_fft("11.7", failed)
    matching = match(read_text("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR\n"), list(CHECKS.values()))
    diagnoses = list(matching.diagnoses)
    apply_verdicts(diagnoses, rejudged(recorded), matching.supporting)
    assert (diagnoses[0].code, diagnoses[0].confirmed) == ("cufft-too-old-for-gpu", True)
    assert "fft float32 on cuda:0 fails with the same message" in diagnoses[0].confirmation


def test_cuda_compat_reads_the_driver_three_ways_and_they_agree() -> None:
    facts = checks_of("h200-torch-2.11.0-cu130.json")["cuda-compat"]["facts"]
    assert facts["nvidia_smi"]["gpus"][0]["driver_version"] == "580.159.04"
    assert facts["proc_driver"]["version"] == "580.159.04"
    assert facts["libcuda"]["cuInit"] == "CUDA_SUCCESS" and facts["libcuda"]["driver_version"] == 13000


def test_bf16_is_native_on_sm90_and_measured_faster_than_fp32() -> None:
    facts = checks_of("h200-torch-2.11.0-cu130.json")["bf16-support"]["facts"]
    device = facts["devices"][0]
    assert device["is_bf16_supported_native"] is True
    assert all(op["ok"] for op in facts["ops"])
    assert device["timing"]["ms"]["bfloat16"] < device["timing"]["ms"]["float32"]


def test_cublas_gemms_and_cudnn_convs_run_in_every_dtype() -> None:
    facts = checks_of("h200-torch-2.11.0-cu130.json")["cublas"]["facts"]
    assert facts["devices"][0]["handle"]["ok"] is True
    ran = {(op["op"], op["dtype"]) for op in facts["ops"] if op["ok"]}
    assert {("gemm", "float32"), ("gemm", "float16"), ("gemm", "bfloat16"), ("conv2d", "float32")} <= ran


def test_fp8_matmul_hardware_and_scaled_mm_on_hopper_while_cpu_promotion_still_fails() -> None:
    facts = checks_of("h200-torch-2.11.0-cu130.json")["fp8"]["facts"]
    gpu = next(d for d in facts["devices"] if d["id"] == "cuda:0")
    assert gpu["fp8_matmul_hardware"] is True and facts["scaled_mm"] is True
    # float8 never promotes, on any device: seed 003's message is a property of torch, not of the CPU
    promotions = [op for op in facts["ops"] if op["op"] == "add" and op["dtype"].startswith("float8")]
    assert promotions and not any(op["ok"] for op in promotions)
    assert any("Promotion for Float8 Types is not supported" in (op["error"] or "") for op in promotions)


def test_seed_003_fails_on_a_real_hopper_too_and_the_remedies_are_measured_there() -> None:
    """DoRA on a float8 base is not a CPU artefact: peft 0.21.0 on the H200 fails while adding
    the adapter, and plain LoRA on the same base and DoRA on a bf16 base pass there."""
    finding = checks_of("h200-seed-003-dora-fp8.json")["dora-fp8"]["findings"][0]
    assert finding["code"] == "dora-float8-base" and finding["severity"] == "error"
    evidence = "\n".join(finding["evidence"])
    assert "cuda:0: NotImplementedError: \"addmm_cuda\" not implemented for 'Float8_e4m3fn'" in evidence
    assert "LoRA, float8_e4m3fn base, float16 adapter, cuda:0: passes" in evidence
    assert "DoRA, bfloat16 base, float16 adapter, cuda:0: passes" in evidence
    assert [r["id"] for r in finding["remedies"]] == ["dora-off", "base-bf16"]


def test_explain_names_dora_fp8_for_the_error_the_h200_raised() -> None:
    """The message the real GPU gave (not the CPU's mul_cpu_reduced_float) with peft's frame."""
    run = next(r for r in checks_of("h200-seed-003-dora-fp8.json")["dora-fp8"]["facts"]["runs"]
               if r["device"] == "cuda:0" and r["adapter"] == "dora" and r["base_dtype"] == "float8_e4m3fn")
    text = ("Traceback (most recent call last):\n"
            '  File "/home/me/venv/lib/python3.12/site-packages/peft/tuners/lora/dora.py", line 80, in update_layer\n'
            "    weight_norm = self.get_weight_norm(weight, lora_weight, scaling)\n"
            "%s: %s\n" % (run["error_type"], run["error"]))
    found = match(read_text(text), list(CHECKS.values())).diagnoses
    assert found and found[0].check == "dora-fp8"


def test_a_4bit_base_runs_with_bitsandbytes_on_the_gpu() -> None:
    check = checks_of("h200-onetrainer-flux-nf4.json")["quantized-base"]
    assert check["facts"]["runs"] == [{"op": "Linear4bit", "device": "cuda:0", "dtype": "nf4", "ok": True, "error": None,
                                       "max_rel_err": None, "out_dtype": "float32"}]
    assert codes(check["findings"]) == ["quantized-runs"]


def test_a_python_only_apex_fails_its_fused_norms_on_the_gpu_and_is_told_to_rebuild() -> None:
    """NVIDIA apex from its repository installed without --cuda_ext, under the same torch."""
    finding = checks_of("h200-apex-python-only.json")["apex"]["findings"][0]
    assert finding["code"] == "apex-no-cuda-extensions" and finding["severity"] == "error"
    assert any("FusedRMSNorm(8) raises ModuleNotFoundError: No module named 'fused_layer_norm_cuda'" in e for e in finding["evidence"])
    assert [r["id"] for r in finding["remedies"]][:1] == ["apex-build-from-source"]


def test_real_apex_kernels_on_sm90_run_each_dtype_and_refuse_seed_002s_mix() -> None:
    """NVIDIA apex 6424da3 built on the H200 with its CUDA extensions for sm_90 (tests/fixtures/record_apex_gpu.sh):
    the fused norms run in fp32, fp16 and bf16 within each dtype's rounding, and every pair whose input and weight
    dtypes differ fails in the kernel with seed 002's message: a warning with the same-dtype remedy, no rebuild."""
    check = checks_of("h200-apex-sm90-cuda-ext.json")["apex"]
    ops = check["facts"]["ops"]
    same = [o for o in ops if o["dtype"] == o["weight_dtype"]]
    assert len(ops) == 18 and len(same) == 6 and all(o["ok"] and o["max_rel_err"] is not None for o in same)
    mixed = {(o["dtype"], o["weight_dtype"]): o["error"] for o in ops if o not in same}
    assert len(mixed) == 6 and not any(o["ok"] for o in ops if o not in same)
    assert mixed[("float32", "float16")] == "expected scalar type Float but found Half"  # seed 002, on real kernels
    findings = {f["code"]: f for f in check["findings"]}
    assert set(findings) == {"apex-fused-norm-fails", "apex-no-amp"}
    assert findings["apex-fused-norm-fails"]["severity"] == "warning"
    assert [r["id"] for r in findings["apex-fused-norm-fails"]["remedies"]] == ["apex-norm-same-dtype", "apex-uninstall"]


def test_apex_built_for_another_gpu_is_named_and_rebuilt_for_this_one() -> None:
    """The same apex built for sm_80 alone (no PTX) and run on the H200: its kernels never launch. Recorded after
    the probe's launch check: before it, the fp32 runs came back as garbage (relative error 1.0) and the fp16 and bf16
    ones passed until the next torch op raised the pending error, as in the measured log below."""
    report = load_fixture("h200-apex-sm80-only.json")
    facts = checks_of("h200-apex-sm80-only.json")["apex"]["facts"]
    same = [o for o in facts["ops"] if o["dtype"] == o["weight_dtype"]]
    assert {o["error"] for o in same} == {"CUDA error: no kernel image is available for execution on the device"}
    findings = {f.code: f for f in CHECKS["apex"].judge(facts, env_of(report))}
    assert set(findings) == {"apex-wrong-arch", "apex-fused-norm-fails", "apex-no-amp"}
    arch = findings["apex-wrong-arch"]
    assert arch.severity.value == "error" and "cuda:0 (NVIDIA H200, sm_90)" in arch.title
    assert any("no sm_90 code" in e for e in arch.evidence)
    build = arch.remedies[0]
    assert build.id == "apex-build-from-source" and "for sm_90" in build.summary
    assert build.commands[-1].startswith("TORCH_CUDA_ARCH_LIST=9.0 APEX_CPP_EXT=1 APEX_CUDA_EXT=1 ")
    assert build.action["build_from_source"]["env"]["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert arch.remedies[1].commands[0].startswith("TORCH_CUDA_ARCH_LIST=9.0 ")
    # the dtype pairs still fail as on any build, and are told apart from the launch failures
    norm = findings["apex-fused-norm-fails"]
    assert norm.severity.value == "warning" and "in 6 of 9" in norm.title


def test_explain_names_apex_for_a_no_kernel_image_error_that_shows_no_apex() -> None:
    """What the user's script printed with that apex on the H200 (tests/fixtures/measurements): the error surfaces at
    the next torch op, with no apex frame in it. The text reads as a torch without code for the GPU; apex's live
    finding says it is apex."""
    from envdoctor.pipeline.explain.confirm import apply_verdicts
    from envdoctor.target.model import report_from_dict

    text = (FIXTURES / "measurements" / "h200-apex-sm80-fused-rms-fp16.log").read_text()
    checks = [c.check for c in load_checks(plugins=False)[0]]
    diagnoses = match(read_text(text), checks).diagnoses
    assert (diagnoses[0].check, diagnoses[0].code) == ("cuda-compat", "no-kernel-image")
    assert "apex:apex-wrong-arch" in diagnoses[0].signature.confirmed_by
    apply_verdicts(diagnoses, rejudged(load_fixture("h200-apex-sm80-only.json")))  # recorded before apex-wrong-arch existed
    assert diagnoses[0].confirmed is True
    assert diagnoses[0].confirmation.startswith("confirmed here: apex's CUDA kernels were built for another GPU")
    assert diagnoses[0].remedies[0].id == "apex-build-from-source"
    # and read from the text alone, the reading names the extensions beside torch's wheel and the driver
    assert [r.id for r in diagnoses[0].signature.remedies] == ["torch-wheel-for-gpu", "driver-upgrade", "extension-for-gpu"]
    # on the healthy sm_90 build nothing witnesses it, and cuda-compat was not probed in that run
    diagnoses = match(read_text(text), checks).diagnoses
    apply_verdicts(diagnoses, report_from_dict(load_fixture("h200-apex-sm90-cuda-ext.json")))
    assert diagnoses[0].confirmed is None


def test_seed_002_on_real_apex_kernels_is_read_as_apex() -> None:
    text = (FIXTURES / "measurements" / "h200-apex-fused-rms-fp32-input-fp16-weight.log").read_text()
    checks = [c.check for c in load_checks(plugins=False)[0]]
    diagnoses = match(read_text(text), checks).diagnoses
    assert (diagnoses[0].check, diagnoses[0].code) == ("apex", "apex-fused-norm-fails")


# ---- check --distributed on the H100 (one GPU: NCCL really runs)


def job_of(name: str) -> Dict[str, Any]:
    return checks_of(name)["distributed"]


def test_nccl_carries_known_values_exactly_in_every_dtype_on_a_real_gpu() -> None:
    job = job_of("h100-distributed-one-rank.json")
    rank = job["facts"]["ranks"][0]
    assert rank["gpu"]["name"] == "NVIDIA H100 80GB HBM3" and rank["nccl"] == "2.28.9"
    on_nccl = [(c["op"], c["dtype"]) for c in rank["collectives"] if c["backend"] == "nccl" and c["ok"] and c["op"] != "bandwidth"]
    assert len(on_nccl) == 9 and {d for _, d in on_nccl} == {"float32", "float16", "bfloat16"}
    assert job["findings"] == [] and job["status"] == "ok"
    assert job["facts"]["bandwidth"] == {}  # one rank: nothing crosses a link, so no bandwidth is claimed
    # the link facts the bandwidth rule reads, as the H100 gave them: PCIe 5.0 x16, no NVLink up in its VM
    assert rank["gpu"]["links"]["pcie"]["max_gt_s"] == 32.0 and rank["gpu"]["links"]["nvlink"]["active"] == 0


def test_two_launcher_nodes_on_one_gpu_are_named_and_nccls_own_refusal_gets_the_same_remedy() -> None:
    """Two torchrun "nodes" of one job on the H100's machine: each node's only rank is LOCAL_RANK 0, so both took cuda:0.
    The rules judge the recorded ranks again as the GPU machine did, and NCCL's error is told once a rank, in one line."""
    job = job_of("h100-two-nodes-one-gpu.json")
    again = cluster_result(Gathered(ranks=job["facts"]["ranks"], exchange=job["facts"]["exchange"]), 2)
    assert codes(again.findings) == codes(job["findings"]) == ["collective-fails", "same-gpu"]
    findings = {f.code: f for f in again.findings}
    assert findings["same-gpu"].title.startswith("ranks 0-1 on vm (nodes 0, 1) share one GPU (NVIDIA H100 80GB HBM3, ")
    fails = findings["collective-fails"]
    assert fails.title == "nccl collectives fail on ranks 0-1 (all_reduce, all_gather, broadcast in float32, float16, bfloat16)"
    assert len(fails.evidence) == 2 and all("\n" not in e for e in fails.evidence)
    assert all(e.endswith("both on CUDA device 60") and "/ Duplicate GPU detected : rank" in e for e in fails.evidence)
    assert [r.id for r in fails.remedies] == [r.id for r in findings["same-gpu"].remedies] == ["one-gpu-per-rank"]


def test_explain_names_the_duplicate_gpu_from_the_log_nccl_wrote_on_the_h100() -> None:
    text = (FIXTURES / "measurements" / "h100-nccl-duplicate-gpu.log").read_text(encoding="utf-8")
    found = match(read_text(text), list(CHECKS.values())).diagnoses
    assert found and (found[0].check, found[0].code) == ("distributed", "same-gpu")
    assert found[0].remedies[0].id == "one-gpu-per-rank"
