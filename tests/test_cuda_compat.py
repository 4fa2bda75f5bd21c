"""cuda-compat: torch CUDA build vs NVIDIA driver vs GPU arch list.

Rules on hand-written snapshots (tests/fixtures/handwritten/cuda-compat-*.json: GPUs and
drivers no machine here has), on the real snapshot of this machine, and end to end on
this machine's CPU torch (no driver): plainly, with CUDA_VISIBLE_DEVICES="", with a
stand-in nvidia-smi on PATH, and on a Python 3.8 interpreter without torch. A real GPU
run (`-m gpu`) checks the driver sources against what torch sees.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import check_of, codes, facts_of, find_python, handwritten, judge, load_fixture, run_json

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.model import Severity

CHECK = {c.check.id: c.check for c in load_checks(plugins=False)[0]}["cuda-compat"]
REAL = load_fixture("cpu-cuda-compat.json")

# torch's message for an old driver, as users report it (https://github.com/weaviate/Verba/issues/72; docs/facts.md §6)
TOO_OLD_WARNING = (
    "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please "
    "update your GPU driver by downloading and installing a new version from the URL: "
    "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version "
    "that has been compiled with your version of the CUDA driver. (Triggered internally at "
    "../c10/cuda/CUDAFunctions.cpp:108.)"
)


def one(findings: List[Any], code: str) -> Any:
    found = [f for f in findings if f.code == code]
    assert len(found) == 1, codes(findings)
    return found[0]


def remedy(finding: Any, rid: str) -> Any:
    found = [r for r in finding.remedies if r.id == rid]
    assert len(found) == 1, [r.id for r in finding.remedies]
    return found[0]


# ---------------------------------------------------------------- rules on hand-written snapshots


def test_driver_470_with_a_cu121_build_is_driver_too_old() -> None:
    facts = handwritten("cuda-compat-driver-470-torch-cu121.json")
    assert facts["torch"]["available_warnings"] == [TOO_OLD_WARNING]
    findings = judge(CHECK, facts)
    assert codes(findings) == ["driver-too-old"]  # the 6.1 GPU is covered by sm_60: no arch error on top
    too_old = findings[0]
    assert too_old.severity is Severity.ERROR
    assert TOO_OLD_WARNING in too_old.evidence
    assert "driver 470.223.02 (nvidia-smi, supports CUDA <= 11.4); CUDA driver API 11.4 (cuDriverGetVersion)" in too_old.evidence
    driver = remedy(too_old, "driver-upgrade")
    assert driver.action == {"driver_min": "530.30.02"}  # CUDA 12.1 row of docs/facts.md §1
    assert "530.30.02" in driver.summary
    wheel = remedy(too_old, "torch-wheel-for-driver")
    assert wheel.kind == "pip"
    # same torch release, the cu118 build (11.x runs on 470), torchvision paired because it is installed
    assert wheel.commands == ("/home/me/venv/bin/python -m pip install torch==2.1.2+cu118 torchvision==0.16.2+cu118 "
                              "--index-url https://download.pytorch.org/whl/cu118",)
    assert wheel.action == {"install": ["torch==2.1.2+cu118", "torchvision==0.16.2+cu118"],
                            "index_url": "https://download.pytorch.org/whl/cu118"}
    assert "minor-version compatibility" in wheel.summary


def test_old_nvidia_smi_without_compute_cap_falls_back_to_the_name_table() -> None:
    facts = handwritten("cuda-compat-driver-470-torch-cu121.json")
    assert facts["nvidia_smi"]["fallback"]["returncode"] == 0
    assert "GeForce GTX 1050 Ti 6.1" in CHECK.summarize(facts)


def test_driver_too_old_is_found_from_torchs_message_alone() -> None:
    # no nvidia-smi, no /proc, no libcuda (a container without them): only torch's
    # "found version 11040" says that a driver exists and which CUDA it supports
    facts = handwritten("cuda-compat-driver-470-torch-cu121.json")
    absent = facts_of(REAL, "cuda-compat")
    for source in ("nvidia_smi", "proc_driver", "libcuda"):
        facts[source] = copy.deepcopy(absent[source])
    findings = judge(CHECK, facts)
    assert codes(findings) == ["driver-too-old"]
    assert "CUDA driver API 11.4 (torch (found version 11040))" in findings[0].evidence
    assert remedy(findings[0], "torch-wheel-for-driver").action["install"][0] == "torch==2.1.2+cu118"
    assert "driver version unknown" not in CHECK.summarize(facts)


def test_driver_cuda_from_torch_when_libcuda_gives_no_version() -> None:
    facts = handwritten("cuda-compat-driver-470-torch-cu121.json")
    facts["nvidia_smi"] = copy.deepcopy(facts_of(REAL, "cuda-compat")["nvidia_smi"])
    facts["proc_driver"] = copy.deepcopy(facts_of(REAL, "cuda-compat")["proc_driver"])
    facts["libcuda"]["driver_version"] = None  # libcuda counts 1 device; torch's message names the version
    findings = judge(CHECK, facts)
    too_old = one(findings, "driver-too-old")
    assert "CUDA driver API 11.4 (torch (found version 11040))" in too_old.evidence
    assert "torch==2.1.2+cu118" in remedy(too_old, "torch-wheel-for-driver").commands[0]


def test_v100_on_torch_2_11_cu130_has_no_kernel_image() -> None:
    findings = judge(CHECK, handwritten("cuda-compat-v100-torch-2.11-cu130.json"))
    assert codes(findings) == ["no-kernel-image"]
    nki = findings[0]
    assert nki.severity is Severity.ERROR
    assert nki.subject["capability"] == "7.0" and nki.subject["device"] == "cuda:0"
    assert any("sm_75 sm_80 sm_86 sm_90 sm_100 sm_120" in e for e in nki.evidence)
    assert any("no kernel image is available for execution on the device" in e for e in nki.evidence)
    assert any("_check_cubins() warning compares only the major version" in e for e in nki.evidence)
    wheel = remedy(nki, "torch-wheel-for-gpu")
    # the same release from an index that carries sm_70 (cu128 keeps Volta up to 2.11, docs/facts.md §3b)
    assert wheel.commands == ("/opt/conda/bin/python -m pip install torch==2.11.0+cu128 "
                              "--index-url https://download.pytorch.org/whl/cu128",)
    assert "sm_70" in wheel.summary


def test_v100_on_a_newer_release_gets_the_cu126_index() -> None:
    facts = handwritten("cuda-compat-v100-torch-2.11-cu130.json")
    facts["torch"]["version"] = facts["packages"]["torch"] = "2.13.0+cu130"
    wheel = remedy(one(judge(CHECK, facts), "no-kernel-image"), "torch-wheel-for-gpu")
    assert wheel.commands == ("/opt/conda/bin/python -m pip install torch==2.13.0+cu126 "
                              "--index-url https://download.pytorch.org/whl/cu126",)


def test_cpu_only_torch_on_a_t4_with_driver_535() -> None:
    facts = handwritten("cuda-compat-cpu-torch-t4-driver-535.json")
    assert facts["torch"] == facts_of(REAL, "cuda-compat")["torch"]  # the real CPU wheel's facts
    findings = judge(CHECK, facts)
    assert codes(findings) == ["cpu-only-torch"]
    cpu = findings[0]
    assert cpu.severity is Severity.ERROR
    assert "torch.cuda.init(): AssertionError: Torch not compiled with CUDA enabled" in cpu.evidence
    assert "GPUs: GPU 0 (Tesla T4, compute capability 7.5)" in cpu.evidence
    wheel = remedy(cpu, "torch-cuda-wheel")
    # a +cu126 pin: a bare torch==2.13.0 is already satisfied by 2.13.0+cpu and pip would do nothing
    assert wheel.commands == ("/usr/bin/python3 -m pip install torch==2.13.0+cu126 "
                              "--index-url https://download.pytorch.org/whl/cu126",)


def test_cuda_visible_devices_empty_hides_the_gpu() -> None:
    findings = judge(CHECK, handwritten("cuda-compat-visible-devices-empty.json"))
    assert codes(findings) == ["cuda-visible-devices-hides-all"]  # explained: no generic cuda-init-failed
    hidden = findings[0]
    assert hidden.severity is Severity.ERROR
    assert "CUDA_VISIBLE_DEVICES=''" in hidden.evidence
    assert "torch.cuda.init(): RuntimeError: No CUDA GPUs are available" in hidden.evidence
    env = remedy(hidden, "unset-cuda-visible-devices")
    assert env.kind == "env" and env.action == {"unset_env": ["CUDA_VISIBLE_DEVICES"]}


@pytest.mark.parametrize(("value", "hidden"), [("-1", True), ("NoDevFiles", True), ("1", True), (" ", True),
                                               ("0", False), ("GPU-5a9b8cda-19b6-64e5-c3a8-ad3ec4a35acd", False)])
def test_cuda_visible_devices_values(value: str, hidden: bool) -> None:
    facts = handwritten("cuda-compat-visible-devices-empty.json")
    facts["env"]["CUDA_VISIBLE_DEVICES"] = value
    assert ("cuda-visible-devices-hides-all" in codes(judge(CHECK, facts))) is hidden


def test_unset_cuda_visible_devices_with_torch_unable_to_init_is_cuda_init_failed() -> None:
    facts = handwritten("cuda-compat-visible-devices-empty.json")
    facts["env"]["CUDA_VISIBLE_DEVICES"] = None
    findings = judge(CHECK, facts)
    assert codes(findings) == ["cuda-init-failed"]
    assert findings[0].severity is Severity.ERROR


def test_healthy_h100_with_driver_580_and_cu130() -> None:
    facts = handwritten("cuda-compat-h100-driver-580-cu130.json")
    assert judge(CHECK, facts) == []
    assert CHECK.summarize(facts) == "driver 580.95.05 · torch CUDA 13.0 · 1 GPU(s): NVIDIA H100 80GB HBM3 9.0"


def test_cu130_build_on_a_575_driver_is_too_old_across_majors() -> None:
    facts = handwritten("cuda-compat-h100-driver-580-cu130.json")
    facts["nvidia_smi"]["gpus"][0]["driver_version"] = "575.57.08"
    facts["libcuda"]["driver_version"] = 12090
    facts["torch"]["is_available"] = False
    facts["torch"]["devices"] = []
    facts["torch"]["device_count"] = 0
    findings = judge(CHECK, facts)
    too_old = one(findings, "driver-too-old")
    assert remedy(too_old, "driver-upgrade").action == {"driver_min": "580.65.06"}
    wheel = remedy(too_old, "torch-wheel-for-driver")
    assert wheel.action["install"] == ["torch==2.11.0+cu128", "torchvision==0.26.0+cu128"]
    assert "cuda-init-failed" not in codes(findings)


def test_cu128_build_on_a_535_driver_runs_by_minor_version_compatibility() -> None:
    facts = handwritten("cuda-compat-h100-driver-580-cu130.json")
    facts["nvidia_smi"]["gpus"][0]["driver_version"] = "535.104.05"
    facts["libcuda"]["driver_version"] = 12020
    facts["torch"].update(version="2.9.1+cu128", cuda="12.8", arch_flags="sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 sm_120")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["driver-minor-compat"]
    assert findings[0].severity is Severity.WARNING
    assert remedy(findings[0], "driver-upgrade").action == {"driver_min": "570.26"}


def test_h100_on_a_ptx_only_build_warns() -> None:
    # arch list of https://github.com/amithkk/stable-diffusion-k8s/issues/10 (an H100 on an sm_37..sm_86 build)
    facts = handwritten("cuda-compat-h100-driver-580-cu130.json")
    facts["torch"].update(version="1.12.1", cuda="11.3",
                          arch_flags="sm_37 sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 compute_37")
    findings = judge(CHECK, facts)
    # (and CUDA 11.3's cuFFT has no Hopper kernels: its FFTs fail whatever the PTX does)
    assert codes(findings) == ["ptx-jit-only", "cufft-too-old-for-gpu"]
    assert findings[0].severity is Severity.WARNING
    assert "compute_37" in findings[0].title
    assert "torch==2.14.1+cu130" in remedy(findings[0], "torch-wheel-for-gpu").commands[0]


def test_ptx_only_gpu_on_a_minor_compat_driver_cannot_jit() -> None:
    facts = handwritten("cuda-compat-h100-driver-580-cu130.json")
    facts["nvidia_smi"]["gpus"][0]["driver_version"] = "525.85.12"  # CUDA 12.0: runs 12.x SASS, not 12.8 PTX
    facts["libcuda"]["driver_version"] = 12000
    facts["torch"].update(version="2.7.1+cu128", cuda="12.8", arch_flags="sm_75 sm_80 sm_86 compute_86")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["driver-minor-compat", "ptx-jit-only"]
    ptx = findings[1]
    assert ptx.severity is Severity.ERROR
    assert any("the provided PTX was compiled with an unsupported toolchain" in e for e in ptx.evidence)


def test_rtx_5090_on_an_old_cu121_build() -> None:
    facts = handwritten("cuda-compat-h100-driver-580-cu130.json")
    facts["nvidia_smi"]["gpus"][0].update(name="NVIDIA GeForce RTX 5090", driver_version="570.124.06", compute_cap="12.0")
    facts["libcuda"]["driver_version"] = 12080
    facts["packages"]["torchvision"] = None
    facts["torch"].update(version="2.5.1+cu121", cuda="12.1", arch_flags="sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90")
    facts["torch"]["devices"][0].update(name="NVIDIA GeForce RTX 5090", capability=[12, 0])
    nki = one(judge(CHECK, facts), "no-kernel-image")
    assert remedy(nki, "torch-wheel-for-gpu").commands == (
        "/workspace/.venv/bin/python -m pip install torch==2.11.0+cu128 --index-url https://download.pytorch.org/whl/cu128",)


def test_an_rtx_4090_under_torch_cu117_fails_its_ffts_and_cu118_runs_them() -> None:
    # github.com/pytorch/pytorch/issues/88038: torch.fft.rfft on an RTX 4090 with torch 1.13 cu117 -> CUFFT_INTERNAL_ERROR
    facts = handwritten("cuda-compat-h100-driver-580-cu130.json")
    facts["nvidia_smi"]["gpus"][0].update(name="NVIDIA GeForce RTX 4090", compute_cap="8.9")
    facts["torch"]["devices"][0].update(name="NVIDIA GeForce RTX 4090", capability=[8, 9])
    facts["torch"].update(version="1.13.1+cu117", cuda="11.7", arch_flags="sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86")
    finding = one(judge(CHECK, facts), "cufft-too-old-for-gpu")
    assert finding.severity is Severity.WARNING and "CUFFT_INTERNAL_ERROR" in finding.title
    assert "cu1" in remedy(finding, "torch-wheel-for-gpu").commands[0]
    facts["torch"].update(version="2.0.1+cu118", cuda="11.8")
    assert "cufft-too-old-for-gpu" not in codes(judge(CHECK, facts))


def test_torch_missing_names_the_wheel_for_the_driver() -> None:
    findings = judge(CHECK, handwritten("cuda-compat-no-torch-l4-driver-550.json"))
    assert codes(findings) == ["torch-wheel-for-driver"]
    info = findings[0]
    assert info.severity is Severity.INFO  # torch-install reports the missing torch itself
    assert "ModuleNotFoundError: No module named 'torch'" in info.evidence
    assert remedy(info, "torch-wheel-for-driver").commands == (
        "/srv/app/.venv/bin/python -m pip install torch==2.14.1+cu126 --index-url https://download.pytorch.org/whl/cu126",)


def test_rocm_build_is_recorded_not_judged() -> None:
    facts = handwritten("cuda-compat-rocm-mi300x.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["rocm-build"]
    assert findings[0].severity is Severity.INFO
    assert "torch ROCm 6.2.41133-dd7f95766" in CHECK.summarize(facts)


def test_rocm_build_seeing_no_gpu_is_still_only_recorded() -> None:
    facts = handwritten("cuda-compat-rocm-mi300x.json")
    facts["torch"].update(is_available=False, device_count=0, devices=[])
    assert codes(judge(CHECK, facts)) == ["rocm-build"]  # not "no CUDA device": NVIDIA rules do not apply


def test_rocm_build_on_an_nvidia_machine_warns() -> None:
    facts = handwritten("cuda-compat-rocm-mi300x.json")
    facts["nvidia_smi"] = handwritten("cuda-compat-cpu-torch-t4-driver-535.json")["nvidia_smi"]
    facts["torch"].update(is_available=False, device_count=0, devices=[])
    findings = judge(CHECK, facts)
    assert codes(findings) == ["rocm-build", "rocm-torch-on-nvidia"]
    assert "torch==2.14.1+cu126" in remedy(findings[1], "torch-wheel-for-driver").commands[0]


def test_driver_library_mismatch() -> None:
    facts = handwritten("cuda-compat-cpu-torch-t4-driver-535.json")
    facts["nvidia_smi"].update(returncode=18, ok=False, gpus=[], stdout="Failed to initialize NVML: Driver/library version mismatch\n")
    facts["libcuda"].update(cuInit="CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)", device_count=None)
    findings = judge(CHECK, facts)
    assert codes(findings) == ["driver-library-mismatch"]
    assert "Failed to initialize NVML: Driver/library version mismatch" in findings[0].evidence


# ---------------------------------------------------------------- the real snapshot of this machine


def test_recorded_snapshot_of_this_machine_is_no_cuda_device() -> None:
    facts = facts_of(REAL, "cuda-compat")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["no-cuda-device"]
    assert findings[0].severity is Severity.INFO
    assert findings[0].remedies == ()  # a CPU wheel: nothing to slim down
    assert check_of(REAL, "cuda-compat")["status"] == "ok"


def test_no_cuda_device_with_a_cuda_build_offers_the_cpu_wheel() -> None:
    facts = copy.deepcopy(facts_of(REAL, "cuda-compat"))
    facts["torch"].update(version="2.0.1+cu117", cuda="11.7", init_error=(
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
        "driver from http://www.nvidia.com/Download/index.aspx"))
    finding = one(judge(CHECK, facts), "no-cuda-device")
    cpu = remedy(finding, "torch-cpu-wheel")
    assert cpu.commands == ("/home/me/venv/bin/python3 -m pip install torch==2.0.1+cpu "
                            "--index-url https://download.pytorch.org/whl/cpu",)
    assert any("Found no NVIDIA driver on your system" in e for e in finding.evidence)


# ---------------------------------------------------------------- signatures (real messages, docs/facts.md §6)


def signature_codes(text: str) -> List[str]:
    return sorted({s.code for s in CHECK.signatures if re.search(s.message, text)})


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("RuntimeError: CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be "
         "asynchronously reported at some other API call", "no-kernel-image"),
        ("UserWarning: \nNVIDIA H100 80GB HBM3 with CUDA capability sm_90 is not compatible with the current PyTorch "
         "installation.\nThe current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 "
         "sm_86 compute_37.", "no-kernel-image"),
        ("RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version", "driver-too-old"),
        (TOO_OLD_WARNING, "driver-too-old"),
        ("the provided PTX was compiled with an unsupported toolchain.", "driver-too-old"),
        ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a "
         "driver from http://www.nvidia.com/Download/index.aspx", "no-cuda-device"),
        ("RuntimeError: CUDA error: no CUDA-capable device is detected", "cuda-visible-devices-hides-all"),
        ("RuntimeError: No CUDA GPUs are available", "cuda-visible-devices-hides-all"),
        ("Failed to initialize NVML: Driver/library version mismatch", "driver-library-mismatch"),
    ],
)
def test_signatures_match_the_real_messages(text: str, code: str) -> None:
    assert signature_codes(text) == [code]


def test_signatures_do_not_match_unrelated_errors() -> None:
    assert signature_codes("RuntimeError: expected scalar type Float but found Half") == []
    assert signature_codes("CUDA out of memory. Tried to allocate 20.00 MiB") == []


# ---------------------------------------------------------------- end to end on this machine


def _require_the_pinned_cpu_torch(check: Dict[str, Any]) -> None:
    torch = check["facts"]["torch"] or {}
    if torch.get("version") != "2.13.0+cpu":  # the remedies below are computed for this wheel (the torch pinned in noxfile.py)
        pytest.skip("these expectations are for the pinned torch 2.13.0 CPU wheel, not %s" % torch.get("version"))


@pytest.fixture(scope="module")
def live() -> Dict[str, Any]:
    return run_json("--only", "cuda-compat")


def test_end_to_end_without_a_driver_is_a_quick_no_cuda_info(live: Dict[str, Any]) -> None:
    check = check_of(live, "cuda-compat")
    facts = check["facts"]
    if facts["nvidia_smi"]["gpus"] or (facts["torch"] or {}).get("is_available"):
        pytest.skip("this machine has an NVIDIA GPU")
    _require_the_pinned_cpu_torch(check)
    assert check["status"] == "ok" and live["summary"]["exit_code"] == 0
    assert [(f["code"], f["severity"]) for f in check["findings"]] == [("no-cuda-device", "info")]
    assert check["duration_s"] < 5
    # every driver source was tried and is recorded as absent, each with its own error
    assert facts["nvidia_smi"]["error"].startswith("FileNotFoundError") and facts["nvidia_smi"]["returncode"] is None
    assert facts["proc_driver"]["error"].startswith("FileNotFoundError")
    assert facts["proc_driver"]["version"] is None
    assert facts["libcuda"]["loaded"] is False and "libcuda.so.1" in facts["libcuda"]["error"]
    assert facts["libcuda"]["driver_version"] is None
    assert facts["torch"]["cuda"] is None and facts["torch"]["is_available"] is False
    assert facts["torch"]["init_error"] == "AssertionError: Torch not compiled with CUDA enabled"
    assert facts["env"] == {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}
    assert check["summary"].startswith("no NVIDIA driver · torch CPU-only · no GPU")


def test_end_to_end_records_nvcc_as_the_toolkit_on_path(live: Dict[str, Any]) -> None:
    nvcc = facts_of(live, "cuda-compat")["nvcc"]
    assert "not torch's CUDA runtime" in nvcc["label"]
    path = shutil.which("nvcc")
    assert nvcc["path"] == path
    if path:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
        assert re.search(r"release %s, V%s" % (re.escape(nvcc["release"]), re.escape(nvcc["version"])), out)
        assert "nvcc %s on PATH (build toolkit)" % nvcc["release"] in check_of(live, "cuda-compat")["summary"]


def test_end_to_end_with_empty_cuda_visible_devices_and_no_gpu_raises_nothing() -> None:
    report = run_json("--only", "cuda-compat", env={"CUDA_VISIBLE_DEVICES": ""})
    check = check_of(report, "cuda-compat")
    assert check["facts"]["env"] == {"CUDA_VISIBLE_DEVICES": ""}
    if check["facts"]["nvidia_smi"]["gpus"]:
        pytest.skip("this machine has an NVIDIA GPU")
    assert [f["code"] for f in check["findings"]] == ["no-cuda-device"]  # nothing to hide: no hides-all error
    assert report["summary"]["exit_code"] == 0


def _stub_nvidia_smi(directory: Path, modern_row: str, old_row: str) -> Path:
    """A stand-in `nvidia-smi` (a test double, not a driver): a modern one answers the
    compute_cap query, an old one (old_row) rejects it the way the 470 branch does."""
    script = directory / "nvidia-smi"
    lines = ["#!/bin/sh", 'case "$*" in']
    if modern_row:
        lines += ["  *compute_cap*) echo '%s'; exit 0;;" % modern_row]
    else:
        lines += ["  *compute_cap*) echo 'Field \"compute_cap\" is not a valid field to query.'; echo; exit 2;;"]
    lines += ["  *) echo '%s'; exit 0;;" % old_row, "esac", ""]
    script.write_text("\n".join(lines), encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return directory


def test_end_to_end_cpu_torch_with_a_stub_modern_nvidia_smi_and_hidden_devices(tmp_path: Path) -> None:
    stub = _stub_nvidia_smi(tmp_path, "0, NVIDIA H100 80GB HBM3, 580.95.05, 9.0, 81559 MiB", "")
    report = run_json("--only", "cuda-compat",
                      env={"PATH": str(stub) + os.pathsep + os.environ["PATH"], "CUDA_VISIBLE_DEVICES": ""})
    check = check_of(report, "cuda-compat")
    _require_the_pinned_cpu_torch(check)
    smi = check["facts"]["nvidia_smi"]
    assert smi["returncode"] == 0 and smi["fallback"] is None
    assert smi["gpus"] == [{"index": "0", "name": "NVIDIA H100 80GB HBM3", "driver_version": "580.95.05",
                            "compute_cap": "9.0", "memory.total": "81559 MiB"}]
    findings = {f["code"]: f for f in check["findings"]}
    assert list(findings) == ["cpu-only-torch", "cuda-visible-devices-hides-all"]
    assert findings["cpu-only-torch"]["severity"] == "error"
    python = report["environment"]["executable"]
    assert findings["cpu-only-torch"]["remedies"][0]["commands"] == [
        "%s -m pip install torch==2.13.0+cu130 --index-url https://download.pytorch.org/whl/cu130" % python]
    assert findings["cuda-visible-devices-hides-all"]["severity"] == "warning"  # a CPU torch: not the blocker
    assert report["summary"]["exit_code"] == 1


def test_end_to_end_cpu_torch_with_a_stub_470_nvidia_smi_uses_the_fallback_query(tmp_path: Path) -> None:
    stub = _stub_nvidia_smi(tmp_path, "", "0, Tesla T4, 470.82.01, 15109 MiB")
    report = run_json("--only", "cuda-compat", env={"PATH": str(stub) + os.pathsep + os.environ["PATH"]})
    check = check_of(report, "cuda-compat")
    _require_the_pinned_cpu_torch(check)
    smi = check["facts"]["nvidia_smi"]
    assert smi["returncode"] == 2 and 'Field "compute_cap" is not a valid field to query.' in smi["stdout"]
    assert smi["fallback"]["returncode"] == 0 and "compute_cap" not in smi["fallback"]["argv"][1]
    assert smi["gpus"] == [{"index": "0", "name": "Tesla T4", "driver_version": "470.82.01", "memory.total": "15109 MiB"}]
    cpu = [f for f in check["findings"] if f["code"] == "cpu-only-torch"]
    assert len(cpu) == 1
    # torch 2.13 has no CUDA 11 build: the newest release with one (2.7.1 cu118) fits a 470 driver and sm_75
    python = report["environment"]["executable"]
    assert cpu[0]["remedies"][0]["commands"] == [
        "%s -m pip install torch==2.7.1+cu118 --index-url https://download.pytorch.org/whl/cu118" % python]
    assert "GPUs: GPU 0 (Tesla T4, compute capability 7.5)" in cpu[0]["evidence"]  # 7.5 from the name table


PYTHON38 = find_python("3.8")


@pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 interpreter here")
def test_end_to_end_on_python_3_8_without_torch() -> None:
    report = run_json("--python", str(PYTHON38), "--only", "cuda-compat")
    check = check_of(report, "cuda-compat")
    assert check["status"] == "ok", check  # requires_torch=False: the probe ran
    facts = check["facts"]
    assert report["environment"]["python"].startswith("3.8.")
    assert facts["torch"] is None
    assert facts["torch_import"]["error_type"] == "ModuleNotFoundError"
    assert facts["nvidia_smi"]["error"] and facts["proc_driver"]["error"] and facts["libcuda"]["error"]
    assert [f["code"] for f in check["findings"]] == ["no-cuda-device"]
    assert "torch not importable" in check["summary"]


@pytest.mark.gpu
def test_on_a_real_gpu_the_driver_sources_agree_with_torch(live: Dict[str, Any]) -> None:
    facts = facts_of(live, "cuda-compat")
    if not (facts["torch"] or {}).get("is_available"):
        pytest.skip("torch.cuda.is_available() is False here")
    assert facts["nvidia_smi"]["ok"] and facts["nvidia_smi"]["gpus"]
    assert facts["libcuda"]["loaded"] and facts["libcuda"]["driver_version"] >= 11000
    assert facts["libcuda"]["cuInit"] == "CUDA_SUCCESS"
    smi_caps = {g.get("compute_cap") for g in facts["nvidia_smi"]["gpus"]}
    for dev in facts["torch"]["devices"]:
        assert "%d.%d" % tuple(dev["capability"]) in smi_caps
    codes_found = [f["code"] for f in check_of(live, "cuda-compat")["findings"]]
    assert "driver-too-old" not in codes_found and "no-kernel-image" not in codes_found


def test_the_fft_micro_op_runs_for_real_against_the_cpu_reference() -> None:
    """The op cuda-compat runs on each selected GPU (recorded on the H200 in h200-torch-2.11.0-cu130-fft.json), run
    here on the CPU with this machine's torch: the same code, a real rfft compared with the CPU's."""
    import torch
    from envdoctor.checks.cuda_compat.probe import FFT_N, _fft

    fact = _fft(torch, "cpu")
    assert (fact["op"], fact["device"], fact["dtype"], fact["ok"], fact["shape"]) == ("fft", "cpu", "float32", True, [FFT_N])
    assert fact["max_rel_err"] == 0.0 and fact["out_dtype"] == "float32"
    # without a selected GPU nothing runs: this machine's report has no fft fact
    assert all("fft" not in device for device in (REAL["checks"][0]["facts"]["torch"] or {}).get("devices") or ())
