"""envdoctor/target/cuda_tables.py: lookups checked against rows of docs/facts.md,
parsers checked on real outputs of nvidia-smi, /proc/driver/nvidia/version and nvcc."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, find_python

from envdoctor.target import cuda_tables as ct
from envdoctor.target.model import Target
from envdoctor.target.remedies.actions import pip_action
from envdoctor.target.remedies.kinds import commands_for

# ---------------------------------------------------------------- §1 driver table


@pytest.mark.parametrize(
    ("cuda", "system", "driver"),
    [
        ((12, 1), "linux", "530.30.02"),  # "12.1 GA / Update 1 | >= 530.30.02 | >= 531.14"
        ((12, 1), "win32", "531.14"),
        ((11, 8), "linux", "520.61.05"),
        ((12, 8), "linux", "570.26"),  # GA row, not Update 1's 570.124.06
        ((12, 2), "linux", "535.54.03"),
        ((13, 0), "linux", "580.65.06"),
        ((11, 4), "linux", "470.42.01"),
        ((12, 9), "win32", "576.02"),
    ],
)
def test_min_driver_is_the_ga_row_of_gpu_facts_table_1(cuda, system, driver):
    assert ct.min_driver(cuda, system) == driver


def test_min_driver_unknown_toolkit_and_windows_gap():
    assert ct.min_driver((10, 2)) is None  # not in §1
    assert ct.min_driver((13, 0), "win32") is None  # "N/A" on Windows from 13.0


def test_unverified_rows_are_only_the_third_party_13_x_rows():
    unverified = [row[0] for row in ct.DRIVER_TABLE if not row[3]]
    assert unverified == ["13.3 GA / Update 1", "13.2 Update 1", "13.2 GA", "13.1 Update 1"]


@pytest.mark.parametrize(
    ("driver", "system", "cuda"),
    [
        ("535.104.05", "linux", (12, 2)),  # nvidia-smi prints "CUDA Version: 12.2" for 535.104.05
        ("470.223.02", "linux", (11, 4)),  # ... and "11.4" for the 470 branch
        ("580.95.05", "linux", (13, 0)),
        ("570.133.20", "linux", (12, 8)),
        ("576.02", "win32", (12, 9)),
        ("440.33.01", "linux", None),
    ],
)
def test_max_cuda_for_driver(driver, system, cuda):
    assert ct.max_cuda_for_driver(driver, system) == cuda


@pytest.mark.parametrize(
    ("cuda", "driver", "driver_cuda", "expected"),
    [
        ((12, 1), "470.223.02", None, "too-old"),  # seed of the driver-too-old case
        ((11, 8), "470.223.02", None, "minor-compat"),  # 11.x family minimum 450.80.02
        ((11, 8), "450.80.02", None, "minor-compat"),
        ((11, 8), "450.51.06", None, "too-old"),  # below the 11.x compat minimum
        ((12, 6), "535.104.05", None, "minor-compat"),  # 12.x family minimum 525.60.13
        ((12, 1), "535.104.05", None, "full"),
        ((12, 1), "525.60.11", None, "too-old"),  # open module 525.60.11 < 525.60.13
        ((13, 0), "575.57.08", None, "too-old"),  # no compat across majors: cu130 needs >= 580
        ((13, 0), "580.95.05", None, "full"),
        ((13, 2), "580.95.05", None, "minor-compat"),
        ((12, 1), None, (11, 4), "too-old"),  # torch's "found version 11040"
        ((12, 8), None, (12, 2), "minor-compat"),
        ((13, 0), None, (12, 8), "too-old"),  # pytorch/pytorch#162531: found version 12080 with a 13.0 build
        ((12, 6), None, (12, 6), "full"),
        ((10, 2), "535.104.05", None, "unknown"),
        ((12, 1), None, None, "unknown"),
    ],
)
def test_driver_support(cuda, driver, driver_cuda, expected):
    assert ct.driver_support(cuda, driver, driver_cuda) == expected


def test_driver_support_uses_the_windows_column():
    # 12.1 needs 531.14 on Windows; 12.x minor-version compat starts at 527.41 there
    assert ct.driver_support((12, 1), "531.14", system="win32") == "full"
    assert ct.driver_support((12, 1), "528.24", system="win32") == "minor-compat"
    assert ct.driver_support((12, 1), "526.98", system="win32") == "too-old"


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [("535.104.05", (535, 104, 5)), ("570.26", (570, 26, 0)), (" 555.58 ", (555, 58, 0)), ("[N/A]", None), (None, None)],
)
def test_parse_driver(text, expected):
    assert ct.parse_driver(text) == expected


@pytest.mark.parametrize(("number", "cuda"), [(12020, (12, 2)), (11040, (11, 4)), (13000, (13, 0)), (12080, (12, 8)), (0, None)])
def test_cuda_from_driver_api(number, cuda):
    assert ct.cuda_from_driver_api(number) == cuda  # 1000*major + 10*minor (§1)


def test_found_version_reads_torchs_warning():
    # https://github.com/pytorch/pytorch/pull/162531 (CI log quoted there)
    warning = (
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 12080). "
        "Please update your GPU driver by downloading and installing a new version from the URL: "
        "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org/ to install a PyTorch "
        "version that has been compiled with your version of the CUDA driver. (Triggered internally at "
        "/var/lib/jenkins/workspace/c10/cuda/CUDAFunctions.cpp:119.)"
    )
    assert ct.found_version(warning) == 12080
    assert ct.cuda_from_driver_api(ct.found_version(warning)) == (12, 8)
    assert ct.found_version("Torch not compiled with CUDA enabled") is None


def test_parse_nvidia_smi_csv_with_header_and_other_field_order():
    # https://github.com/triton-inference-server/server/pull/8070 (output quoted in the PR)
    text = (
        "compute_cap, compute_mode, driver_version, name, index\n"
        "7.0, Default, 570.86.15, NVIDIA TITAN V, 0\n"
        "8.9, Default, 570.86.15, NVIDIA RTX 5880 Ada Generation, 1\n"
    )
    rows = ct.parse_nvidia_smi_csv(text, ["compute_cap", "compute_mode", "driver_version", "name", "index"])
    assert rows == [
        {"compute_cap": "7.0", "compute_mode": "Default", "driver_version": "570.86.15", "name": "NVIDIA TITAN V", "index": "0"},
        {"compute_cap": "8.9", "compute_mode": "Default", "driver_version": "570.86.15",
         "name": "NVIDIA RTX 5880 Ada Generation", "index": "1"},
    ]
    assert [ct.parse_capability(r["compute_cap"]) for r in rows] == [(7, 0), (8, 9)]


def test_parse_nvidia_smi_csv_noheader_and_header_with_units():
    # https://github.com/akash-network/provider-configs/pull/91: --query-gpu=name,pci.device_id --format=csv,noheader
    assert ct.parse_nvidia_smi_csv("NVIDIA H100 NVL, 0x232110DE\n", ["name", "pci.device_id"]) == [
        {"name": "NVIDIA H100 NVL", "pci.device_id": "0x232110DE"}
    ]
    # the header form names units in brackets ("memory.total [MiB]"); T4 reports 15360 MiB
    # (https://github.com/modal-labs/modal-client/pull/2797)
    text = "name, memory.total [MiB]\nTesla T4, 15360 MiB\n"
    assert ct.parse_nvidia_smi_csv(text, ["name", "memory.total"]) == [{"name": "Tesla T4", "memory.total": "15360 MiB"}]


def test_parse_nvidia_smi_csv_ignores_error_text():
    fields = ["index", "name", "driver_version", "compute_cap", "memory.total"]
    # the 470 branch's answer to compute_cap, exit status 2 (https://github.com/canonical/inference-snaps/issues/128,
    # https://github.com/huggingface/candle/issues/733)
    assert ct.parse_nvidia_smi_csv('Field "compute_cap" is not a valid field to query.\n\n', fields) == []
    assert ct.parse_nvidia_smi_csv("No devices were found\n", fields) == []
    assert ct.parse_nvidia_smi_csv(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
        "NVIDIA driver is installed and running.\n", fields) == []


@pytest.mark.parametrize(
    ("text", "version"),
    [
        # proprietary module: https://github.com/weaviate/Verba/issues/72
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.223.02  Sat Oct  7 15:39:11 UTC 2023\n"
         "GCC version:  gcc version 9.4.0 (Ubuntu 9.4.0-1ubuntu1~20.04.2) \n", "470.223.02"),
        # open module: https://github.com/nix-community/nixGL/issues/121
        ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  525.60.11  Release Build  (archlinux-builder@localhost)  \n"
         "GCC version:  gcc version 12.2.0 (GCC) \n", "525.60.11"),
        # https://github.com/nix-community/nixGL/issues/186
        ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16-A24-9-2)  "
         "Thu Oct 10 12:15:00 UTC 2024\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n", "565.57.01"),
        # two-component version and a localised date: https://github.com/hyprwm/Hyprland/pull/6715
        ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  555.58  Release Build  (portage@localhost)  "
         "Сб 29 июн 2024 14:36:22 MSK\n", "555.58"),
        ("GCC version:  gcc version 12.2.0 (GCC)\n", None),
        ("", None),
    ],
)
def test_parse_proc_driver_version(text, version):
    assert ct.parse_proc_driver_version(text) == version


# nvcc --version of the CUDA 13.0 toolkit
NVCC_13_0 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""


def test_parse_nvcc_version():
    assert ct.parse_nvcc_version(NVCC_13_0) == {"release": "13.0", "version": "13.0.88"}
    assert ct.parse_nvcc_version("bash: nvcc: command not found") == {"release": None, "version": None}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc on PATH")
def test_parse_nvcc_version_on_the_real_nvcc():
    out = subprocess.run([shutil.which("nvcc") or "nvcc", "--version"], capture_output=True, text=True, timeout=30).stdout
    parsed = ct.parse_nvcc_version(out)
    assert parsed["release"] and parsed["version"] and parsed["version"].startswith(parsed["release"])


@pytest.mark.parametrize(
    ("name", "cap"),
    [
        ("NVIDIA GeForce GTX 1050 Ti", (6, 1)),
        ("Tesla K80", (3, 7)),
        ("Tesla P100-PCIE-16GB", (6, 0)),
        ("Tesla V100-SXM2-16GB", (7, 0)),
        ("NVIDIA TITAN V", (7, 0)),
        ("Tesla T4", (7, 5)),
        ("Quadro RTX 4000", (7, 5)),
        ("NVIDIA A100-SXM4-80GB", (8, 0)),
        ("NVIDIA A10G", (8, 6)),
        ("NVIDIA A10", (8, 6)),
        ("NVIDIA GeForce RTX 3090", (8, 6)),
        ("NVIDIA L4", (8, 9)),
        ("NVIDIA L40S", (8, 9)),
        ("NVIDIA RTX 5880 Ada Generation", (8, 9)),
        ("NVIDIA H100 80GB HBM3", (9, 0)),
        ("NVIDIA GH200 480GB", (9, 0)),
        ("NVIDIA B200", (10, 0)),
        ("NVIDIA GB200", (10, 0)),
        ("NVIDIA GeForce RTX 5090", (12, 0)),
        ("NVIDIA GeForce RTX 5050", (12, 0)),
        ("Quadro RTX 5000", (7, 5)),
        ("RTX 5000", None),  # Turing's Quadro without its prefix, not a Blackwell GeForce
        ("NVIDIA GB10", (12, 1)),
        ("Some Future GPU", None),
        # as people name the GeForce cards in a log: by number, prefix and case as they come
        ("a 3090", (8, 6)),
        ("2080ti", (7, 5)),
        ("RTX2080 Ti", (7, 5)),
        ("4060 Ti 16GB", (8, 9)),
        ("1920x1080", None),
        ("port 3000", None),
        # a number that is plainly something else: a line, a step, a port, a fraction or a version
        ("(3090)", (8, 6)),
        ("line 2080", None),
        ("model.py:2080", None),
        ("step 4090/10000", None),
        ("MASTER_PORT=3090", None),
        ("3090.5", None),
    ],
)
def test_capability_from_name_follows_gpu_facts_table_2(name, cap):
    assert ct.capability_from_name(name) == cap


# ---------------------------------------------------------------- §2 arch coverage


def test_arch_coverage_binary_compatibility():
    # L4 (8.9) runs sm_86 code; H100 (9.0) cannot run any sm_8x code (docs/facts.md §2)
    assert ct.arch_coverage(["sm_80", "sm_86"], (8, 9)) == ("native", "sm_86")
    assert ct.arch_coverage(["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"], (9, 0)) is None
    assert ct.arch_coverage(ct.ARCH_CU12_OLD, (9, 0)) == ("native", "sm_90")
    # B300 (10.3) runs sm_100 cubins; GB10 (12.1) runs sm_120
    assert ct.arch_coverage(ct.ARCH_CU13, (10, 3)) == ("native", "sm_100")
    assert ct.arch_coverage(ct.ARCH_CU128, (12, 1)) == ("native", "sm_120")


def test_arch_coverage_v100_not_in_cu130_list():
    # torch 2.11 cu130: sm_75 .. sm_120 (§3a): sm_75 has the same major but a higher minor
    arch_2_11_cu130 = "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"
    assert ct.arch_coverage(arch_2_11_cu130, (7, 0)) is None
    assert ct.arch_coverage(ct.ARCH_CU126, (7, 0)) == ("native", "sm_70")
    assert ct.arch_coverage(ct.ARCH_CU128, (7, 0)) == ("native", "sm_70")


def test_arch_coverage_jetson_needs_the_exact_cubin():
    assert ct.arch_coverage(["sm_80", "sm_86"], (8, 7)) is None  # Orin
    assert ct.arch_coverage(["sm_80", "sm_87"], (8, 7)) == ("native", "sm_87")
    assert ct.arch_coverage(["sm_70"], (7, 2)) is None  # Xavier
    assert ct.arch_coverage(["sm_80", "compute_80"], (8, 7)) == ("ptx", "compute_80")  # PTX still JITs


def test_arch_coverage_ptx_and_arch_specific_entries():
    # a real list with PTX: "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_61 sm_70
    # sm_75 sm_80 sm_86 compute_37" (https://github.com/amithkk/stable-diffusion-k8s/issues/10, on an H100)
    real = "sm_37 sm_50 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 compute_37"
    assert ct.arch_coverage(real, (9, 0)) == ("ptx", "compute_37")
    assert ct.arch_coverage(real, (6, 1)) == ("native", "sm_61")
    assert ct.arch_coverage(ct.ARCH_CU128_27, (12, 0)) == ("native", "sm_120")
    assert ct.arch_coverage(["compute_120"], (10, 0)) is None  # PTX runs only on newer or equal CCs
    assert ct.arch_coverage(["sm_90a"], (9, 0)) == ("native", "sm_90a")
    assert ct.arch_coverage(["sm_100a"], (10, 3)) is None  # "a" cubins run on their exact CC only
    assert ct.arch_coverage(["sm_100f"], (10, 3)) == ("native", "sm_100f")


def test_parse_arch_list_ignores_rocm_entries():
    assert [a.text for a in ct.parse_arch_list("gfx90a gfx942 sm_90")] == ["sm_90"]
    assert ct.parse_arch("sm_120") == ct.Arch("sm", 12, 0, "", "sm_120")
    assert ct.parse_arch_list(None) == []


@pytest.mark.parametrize(
    ("value", "physical", "visible"),
    [
        (None, 2, 2),
        ("", 1, 0),
        ("-1", 2, 0),
        ("NoDevFiles", 1, 0),
        ("1", 1, 0),  # an index beyond the count
        ("0", 1, 1),
        ("0,1", 1, 1),  # stops at the first invalid entry
        ("0,-1,1", 2, 1),
        ("1,0", 2, 2),
        (" 0 ", 1, 1),
        ("GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", 1, None),  # UUIDs cannot be checked
    ],
)
def test_visible_device_count(value, physical, visible):
    assert ct.visible_device_count(value, physical) == visible


# ---------------------------------------------------------------- §3 wheel choice


def test_release_table_is_consistent():
    versions = [ct.release_key(r.version) for r in ct.TORCH_RELEASES]
    assert versions == sorted(versions, reverse=True)  # newest first: choose_wheel relies on it
    for release in ct.TORCH_RELEASES:
        assert release.torchvision, release.version
        for tag, arch in release.tags + release.aarch64_tags:
            assert ct.min_driver(ct.TAG_CUDA[tag]) is not None, (release.version, tag)  # every tag is in §1
            assert all(ct.parse_arch(a) for a in arch)


def test_wheel_for_old_driver_keeps_the_installed_release():
    # GTX 1050 Ti on driver 470 with torch 2.1.1+cu121: the cu118 build of the same release runs (11.x compat)
    choice = ct.choose_wheel([(6, 1)], driver="470.223.02", python=(3, 10), prefer="2.1.1+cu121")
    assert choice is not None
    assert (choice.torch, choice.tag, choice.support) == ("2.1.2", "cu118", "minor-compat")
    action = pip_action(Target(torch="2.1.1+cu121"), install=choice.requirements(torchvision=True), index_url=choice.index_url)
    assert commands_for("pip", action, "python") == (
        "python -m pip install torch==2.1.2+cu118 torchvision==0.16.2+cu118 --index-url https://download.pytorch.org/whl/cu118",)


def test_wheel_for_v100():
    # V100 on driver 580: cu130 lacks sm_70; cu126 carries it through 2.14, cu128 through 2.11 (§3b, "what got dropped")
    newest = ct.choose_wheel([(7, 0)], driver="580.95.05", python=(3, 12))
    assert newest is not None and (newest.torch, newest.tag, newest.support) == ("2.14.1", "cu126", "full")
    assert newest.index_url == "https://download.pytorch.org/whl/cu126"
    same = ct.choose_wheel([(7, 0)], driver="580.95.05", python=(3, 12), prefer="2.11.0+cu130")
    assert same is not None and (same.torch, same.tag) == ("2.11.0", "cu128")


def test_wheel_for_k80_is_at_most_2_7_cu118():
    choice = ct.choose_wheel([(3, 7)], driver="470.82.01", python=(3, 10), prefer="2.5.1+cu121")
    assert choice is not None and (choice.torch, choice.tag) == ("2.5.1", "cu118")
    newest = ct.choose_wheel([(3, 7)], driver="470.82.01", python=(3, 10))
    assert newest is not None and (newest.torch, newest.tag) == ("2.7.1", "cu118")
    assert "sm_37" in newest.arch
    assert ct.choose_wheel([(3, 7)], driver="470.82.01", python=(3, 14)) is None  # no such wheel for 3.14


def test_wheel_for_blackwell_consumer_gpu():
    # RTX 50xx (12.0) on an old cu121 build: cu128+ (2.7+); a 570 driver cannot run cu130
    choice = ct.choose_wheel([(12, 0)], driver="570.124.06", python=(3, 12), prefer="2.5.1+cu121")
    assert choice is not None and (choice.torch, choice.tag, choice.support) == ("2.11.0", "cu128", "full")
    on_580 = ct.choose_wheel([(12, 0)], driver="580.95.05", python=(3, 12))
    assert on_580 is not None and (on_580.torch, on_580.tag) == ("2.14.1", "cu130")
    old_python = ct.choose_wheel([(12, 0)], driver="570.124.06", python=(3, 9))
    assert old_python is not None and (old_python.torch, old_python.tag) == ("2.8.0", "cu128")


@pytest.mark.parametrize(
    ("driver", "driver_cuda", "expected"),
    [
        ("525.60.13", None, ("2.14.1", "cu126", "minor-compat")),
        ("535.104.05", None, ("2.14.1", "cu126", "minor-compat")),
        ("560.35.03", None, ("2.14.1", "cu126", "full")),
        ("580.95.05", None, ("2.14.1", "cu130", "full")),
        ("595.58.03", None, ("2.14.1", "cu132", "full")),
        ("450.80.02", None, ("2.7.1", "cu118", "minor-compat")),
        (None, (12, 4), ("2.14.1", "cu126", "minor-compat")),
    ],
)
def test_wheel_for_h100_by_driver(driver, driver_cuda, expected):
    choice = ct.choose_wheel([(9, 0)], driver=driver, driver_cuda=driver_cuda, python=(3, 12))
    assert choice is not None and (choice.torch, choice.tag, choice.support) == expected


def test_wheel_for_several_gpus_must_cover_all():
    # a V100 beside an RTX 5090: only cu128 of 2.8-2.11 carries both sm_70 and sm_120
    choice = ct.choose_wheel([(7, 0), (12, 0)], driver="580.95.05", python=(3, 12))
    assert choice is not None and (choice.torch, choice.tag) == ("2.11.0", "cu128")


def test_wheel_platforms():
    gh200 = ct.choose_wheel([(9, 0)], driver="580.95.05", python=(3, 12), machine="aarch64")
    assert gh200 is not None and (gh200.torch, gh200.tag) == ("2.14.1", "cu130")
    assert gh200.arch == ct.ARCH_AARCH64_CU13
    assert ct.choose_wheel([(8, 7)], driver="540.4.0", python=(3, 10), machine="aarch64") is None  # Jetson: NVIDIA's wheels
    assert ct.choose_wheel([(8, 6)], python=(3, 12), system="darwin") is None
    win = ct.choose_wheel([(8, 9)], driver="576.02", python=(3, 12), system="win32")
    assert win is not None and (win.tag, win.support) == ("cu126", "full")


def test_requirements_pin_local_versions_and_skip_missing_torchaudio():
    choice = ct.choose_wheel([(8, 0)], driver="580.95.05", python=(3, 12))
    assert choice is not None and choice.torchaudio is None  # none exists for torch >= 2.12 (§4)
    assert choice.requirements(torchvision=True, torchaudio=True) == ["torch==2.14.1+cu130", "torchvision==0.29.1+cu130"]
    older = ct.choose_wheel([(8, 0)], driver="570.26", python=(3, 12), prefer="2.9.1+cu128")
    assert older is not None
    assert older.requirements(torchvision=True, torchaudio=True) == [
        "torch==2.9.1+cu128", "torchvision==0.24.1+cu128", "torchaudio==2.9.1+cu128"]


# ---------------------------------------------------------------- Python 3.8, stdlib only


PYTHON38 = find_python("3.8")


@pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 interpreter here")
def test_tables_import_and_work_on_python_3_8():
    code = ("import sys; sys.path.insert(0, %r); from envdoctor.target import cuda_tables as ct; "
            "c = ct.choose_wheel([(7, 0)], driver='580.95.05', python=(3, 8)); print(c.torch, c.tag)" % str(ROOT))
    out = subprocess.run([str(PYTHON38), "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2.4.1", "cu124"]  # newest release with wheels for Python 3.8 carrying sm_70
    assert sys.version_info >= (3, 8)
