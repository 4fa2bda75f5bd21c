"""NVIDIA driver / CUDA / GPU architecture / PyTorch wheel tables, and the pure
functions that read them (parsers of nvidia-smi, /proc and nvcc output, arch
coverage, driver compatibility, wheel choice).

Every table is copied from docs/facts.md (the facts with their public sources);
each one names its section there. Stdlib only and Python 3.8
syntax: checks import it inside the worker, in foreign interpreters.
"""

from __future__ import annotations

import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

Version = Tuple[int, int, int]  # an NVIDIA driver number: 535.104.05 -> (535, 104, 5)
Cuda = Tuple[int, int]  # a CUDA version: 12.1 -> (12, 1)
Capability = Tuple[int, int]  # a compute capability: 8.9 -> (8, 9)

DOWNLOAD_INDEX = "https://download.pytorch.org/whl/"
# the CPU-only wheels (https://pytorch.org/get-started/locally/, "Compute Platform: CPU"): what a
# machine without an NVIDIA GPU needs, where PyPI's Linux default brings GBs of CUDA libraries
CPU_INDEX = DOWNLOAD_INDEX + "cpu"

# ---------------------------------------------------------------- §1 driver table

# docs/facts.md §1 "CUDA toolkit → minimum NVIDIA driver": NVIDIA CUDA Toolkit Release
# Notes, Table 3, https://docs.nvidia.com/cuda/archive/13.1.0/cuda-toolkit-release-notes/index.html
# (release, Linux x86_64 minimum, Windows x86_64 minimum or None, verified at NVIDIA).
# Rows with verified=False are the "³" rows of §1, seen only in third-party summaries.
DRIVER_TABLE: Tuple[Tuple[str, str, Optional[str], bool], ...] = (
    ("13.3 GA / Update 1", "610.43.02", None, False),
    ("13.2 Update 1", "595.58.03", None, False),
    ("13.2 GA", "595.45.04", None, False),
    ("13.1 Update 1", "590.48.01", None, False),
    ("13.1", "590.44.01", None, True),
    ("13.0 Update 2", "580.95.05", None, True),
    ("13.0 Update 1", "580.82.07", None, True),
    ("13.0 GA", "580.65.06", None, True),
    ("12.9 Update 1", "575.57.08", "576.57", True),
    ("12.9 GA", "575.51.03", "576.02", True),
    ("12.8 Update 1", "570.124.06", "572.61", True),
    ("12.8 GA", "570.26", "570.65", True),
    ("12.6 Update 3", "560.35.05", "561.17", True),
    ("12.6 Update 1, 2", "560.35.03", "560.94", True),
    ("12.6 GA", "560.28.03", "560.76", True),
    ("12.5 Update 1", "555.42.06", "555.85", True),
    ("12.5 GA", "555.42.02", "555.85", True),
    ("12.4 Update 1", "550.54.15", "551.78", True),
    ("12.4 GA", "550.54.14", "551.61", True),
    ("12.3 Update 1", "545.23.08", "546.12", True),
    ("12.3 GA", "545.23.06", "545.84", True),
    ("12.2 Update 2", "535.104.05", "537.13", True),
    ("12.2 Update 1", "535.86.09", "536.67", True),
    ("12.2 GA", "535.54.03", "536.25", True),
    ("12.1 GA / Update 1", "530.30.02", "531.14", True),
    ("12.0 Update 1", "525.85.12", "528.33", True),
    ("12.0 GA", "525.60.13", "527.41", True),
    ("11.8 GA", "520.61.05", "520.06", True),
    ("11.7 Update 1", "515.48.07", "516.31", True),
    ("11.7 GA", "515.43.04", "516.01", True),
    ("11.6 Update 1, 2", "510.47.03", "511.65", True),
    ("11.6 GA", "510.39.01", "511.23", True),
    ("11.5 GA / Update 1, 2", "495.29.05", "496.04", True),
    ("11.4 Update 3, 4", "470.82.01", "472.50", True),
    ("11.4 Update 1, 2", "470.57.02", "471.41", True),
    ("11.4.0 GA", "470.42.01", "471.11", True),
    ("11.3.0 GA / 11.3.1", "465.19.01", "465.89", True),
    ("11.2.2 Update 2", "460.32.03", "461.33", True),
    ("11.2.1 Update 1", "460.32.03", "461.09", True),
    ("11.2.0 GA", "460.27.03", "460.82", True),
    ("11.1.1 Update 1", "455.32", "456.81", True),
    ("11.1 GA", "455.23", "456.38", True),
    ("11.0.3 Update 1", "450.51.06", "451.82", True),
    ("11.0.2 GA", "450.51.05", "451.48", True),
)

# docs/facts.md §1 "Minor version compatibility": a build with any toolkit of a major
# family runs (cubin/SASS only, PTX JIT excluded) on a driver at or above the
# family minimum; there is no compatibility across majors.
# https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
# 11.x: 450.80.02 Linux / 452.39 Windows (13.1 release notes footnote ***).
# 12.x: ">= 525" (12.0 GA rows: 525.60.13 Linux, 527.41 Windows).
# 13.x: ">= 580"; NVIDIA lists no Windows row for 13.x, the R580 branch is assumed.
FAMILY_MIN_DRIVER: Dict[int, Dict[str, str]] = {
    11: {"linux": "450.80.02", "win32": "452.39"},
    12: {"linux": "525.60.13", "win32": "527.41"},
    13: {"linux": "580.00", "win32": "580.00"},
}

# ---------------------------------------------------------------- §2 GPUs

# docs/facts.md §2 "Binary compatibility inside torch": a cubin for sm_XY runs on CC X.Z
# with Z >= Y, except on these Jetson parts, which need their exact cubin
# (DEVICE_REQUIREMENT in torch v2.14.1 torch/cuda/__init__.py).
EXACT_ONLY: Tuple[Capability, ...] = ((8, 7), (7, 2), (6, 2), (5, 3))

# cuFFT kernels for Ada (sm_89) and Hopper (sm_90) arrived in CUDA 11.8, and cuFFT does not run older code forward on
# them: torch built with CUDA 11.7 or earlier fails every FFT there with "cuFFT error: CUFFT_INTERNAL_ERROR"
# (github.com/pytorch/pytorch/issues/88038: RTX 4090, cu117 fails, CUDA 11.8 works; an L4 the same:
# github.com/HazyResearch/hyena-dna/issues/75)
CUFFT_FIRST_CUDA: Dict[Capability, Cuda] = {(8, 9): (11, 8), (9, 0): (11, 8)}

# docs/facts.md §2 "GPU → compute capability" (developer.nvidia.com/cuda-gpus and the legacy
# list). Used when nvidia-smi cannot report compute_cap (drivers before ~510 reject
# the field) and torch cannot see the GPU, and by `explain` for a GPU named in a log. Most specific patterns first.
GPU_NAME_CAPABILITY: Tuple[Tuple[str, Capability], ...] = (
    (r"\bK80\b", (3, 7)),
    (r"\bP100\b", (6, 0)),
    (r"\bP40\b|\bP4\b|\bGTX 10\d\d", (6, 1)),
    (r"\bV100\b|\bGV100\b|TITAN V\b", (7, 0)),
    (r"\bT4\b|\bRTX ?20\d\d|Quadro RTX", (7, 5)),
    (r"\bA100\b|\bA30\b", (8, 0)),
    (r"\bA10G\b", (8, 6)),  # AWS variant of the A10: 8.6 inferred (§2)
    (r"\bA10\b|\bA40\b|\bA16\b|\bA2\b|RTX A\d000|\bRTX ?30\d\d", (8, 6)),
    (r"\bOrin\b", (8, 7)),
    (r"\bL40S?\b|\bL4\b|\bRTX ?40\d\d|Ada Generation", (8, 9)),
    (r"\bGH200\b|\bH100\b|\bH200\b", (9, 0)),
    (r"\bGB200\b|\bB200\b", (10, 0)),
    (r"\bGB300\b|\bB300\b", (10, 3)),
    (r"\bThor\b|Jetson T[45]000", (11, 0)),
    (r"\bGB10\b", (12, 1)),
    (r"\bRTX ?50[5-9]0|RTX PRO \d+ Blackwell", (12, 0)),  # not "RTX 5000": Turing's Quadro
)
# The GeForce cards as people write them in a log by their number alone ("a 3090", "2080ti", "4060 Ti 16GB"), read after
# the names: a bare number may be a line number, a step or a port, so a reading that only needs a GPU's name leaves
# these out. Where a number is plainly something else it is no GPU: a line number ("line 2080", "model.py:2080", nvcc's
# "fp8_gemm.cu(2080)"), a step, an iteration or a port, a list of sizes ("dims=[4090, 4096]"), one side of a fraction or a
# version ("4090/10000", "3090.5"). A neighbour in another script is no word boundary ("4090显卡"), and two cards may share
# a slash ("3090/4090")
_NOT_A_COUNT = (r"(?<![A-Za-z0-9_.:=#\[-])(?<!\d/)(?<!\w\()(?<![Ll]ine )(?<![Pp]ort )(?<![Ss]tep )(?<![Ii]ter )"
                r"(?<![Ii]teration )(?<![Bb]atch )(?<![Ee]poch )")
_CARDS: Tuple[Tuple[str, str, Capability], ...] = (  # the number, the suffixes it is sold with, its capability
    (r"20[678]0", r"( ?([Tt][Ii]|[Ss][Uu][Pp][Ee][Rr]))?", (7, 5)),
    (r"30[5-9]0", r"( ?[Tt][Ii])?", (8, 6)),
    (r"40[6-9]0", r"( ?([Tt][Ii]|[Ss][Uu][Pp][Ee][Rr]))?", (8, 9)),
    (r"50[6-9]0", r"( ?[Tt][Ii])?", (12, 0)),
)
_NOT_A_FRACTION = r"(?![A-Za-z0-9_])(?!/(?!(%s)(?!\d))\d|[.:]\d|,\s*\d)" % "|".join(number for number, _, _ in _CARDS)
GPU_NUMBER_CAPABILITY: Tuple[Tuple[str, Capability], ...] = tuple(
    (_NOT_A_COUNT + number + suffixes + _NOT_A_FRACTION, cap) for number, suffixes, cap in _CARDS)
GPU_CAPABILITY_PATTERNS = GPU_NAME_CAPABILITY + GPU_NUMBER_CAPABILITY

# ---------------------------------------------------------------- §3 torch wheels

# docs/facts.md §3b "Arch list per CUDA variant" (download.pytorch.org wheels, Linux x86_64),
# written the way torch.cuda.get_arch_list() prints them.
ARCH_CU117 = ("sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86")  # 1.13, 2.0
ARCH_CU118_20 = ARCH_CU117 + ("sm_90",)  # cu118 2.0
ARCH_CU118 = ("sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")  # cu118 2.1-2.7
ARCH_CU12_OLD = ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")  # cu121 2.1-2.5, cu124 2.4-2.6
ARCH_CU126 = ARCH_CU12_OLD  # cu126 2.6-2.14
ARCH_CU128_27 = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120")  # cu128 2.7 only
ARCH_CU128 = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")  # cu128 2.8-2.11
ARCH_CU129 = ARCH_CU128 + ("compute_120",)  # cu129 2.8
# cu130/cu132 2.9-2.14. RELEASE.md says "+PTX" on Linux but no compute_120 was seen in
# the PyPI wheels [M], so PTX is left out: never promise coverage that may be absent.
ARCH_CU13 = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
# aarch64 (2.12-2.14, §3b): 12.6 = 8.0;9.0 and 13.x = 8.0;9.0;10.0;11.0;12.0+PTX
ARCH_AARCH64_CU126 = ("sm_80", "sm_90")
ARCH_AARCH64_CU13 = ("sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120")

TAG_CUDA: Dict[str, Cuda] = {
    "cu116": (11, 6), "cu117": (11, 7), "cu118": (11, 8), "cu121": (12, 1), "cu124": (12, 4),
    "cu126": (12, 6), "cu128": (12, 8), "cu129": (12, 9), "cu130": (13, 0), "cu132": (13, 2),
}


# torchvision / torchaudio: the `Requires-Dist: torch==...` pin of each PyPI wheel
# (docs/facts.md §3a "torchvision"/"torchaudio" columns and §4 "torchvision /
# torchaudio"; 0.27.0 -> torch==2.12.0, 0.27.1 -> torch==2.12.1).
# torch release -> the companion release built for it.
TORCHVISION_FOR_TORCH: Dict[str, str] = {
    "1.13.0": "0.14.0", "1.13.1": "0.14.1",
    "2.0.0": "0.15.1", "2.0.1": "0.15.2",
    "2.1.0": "0.16.0", "2.1.1": "0.16.1", "2.1.2": "0.16.2",
    "2.2.0": "0.17.0", "2.2.1": "0.17.1", "2.2.2": "0.17.2",
    "2.3.0": "0.18.0", "2.3.1": "0.18.1",
    "2.4.0": "0.19.0", "2.4.1": "0.19.1",
    "2.5.0": "0.20.0", "2.5.1": "0.20.1",
    "2.6.0": "0.21.0",
    "2.7.0": "0.22.0", "2.7.1": "0.22.1",
    "2.8.0": "0.23.0",
    "2.9.0": "0.24.0", "2.9.1": "0.24.1",
    "2.10.0": "0.25.0",
    "2.11.0": "0.26.0",
    "2.12.0": "0.27.0", "2.12.1": "0.27.1",
    "2.13.0": "0.28.0",
    "2.14.0": "0.29.0", "2.14.1": "0.29.1",  # 0.29.1 pins torch>=2.14.0
}
TORCHAUDIO_FOR_TORCH: Dict[str, str] = {
    "1.13.0": "0.13.0", "1.13.1": "0.13.1",
    "2.0.0": "2.0.1", "2.0.1": "2.0.2",
    "2.1.0": "2.1.0", "2.1.1": "2.1.1", "2.1.2": "2.1.2",
    "2.2.0": "2.2.0", "2.2.1": "2.2.1", "2.2.2": "2.2.2",
    "2.3.0": "2.3.0", "2.3.1": "2.3.1",
    "2.4.0": "2.4.0", "2.4.1": "2.4.1",
    "2.5.0": "2.5.0", "2.5.1": "2.5.1",
    "2.6.0": "2.6.0",
    "2.7.0": "2.7.0", "2.7.1": "2.7.1",
    "2.8.0": "2.8.0",
    "2.9.0": "2.9.0", "2.9.1": "2.9.1",
    "2.10.0": "2.10.0",
    "2.11.0": "2.11.0",  # declares no torch requirement at all (§4)
}


class TorchRelease(NamedTuple):
    """One torch release as download.pytorch.org serves it (docs/facts.md §3a/§3c)."""

    version: str
    python_min: Tuple[int, int]
    python_max: Tuple[int, int]
    tags: Tuple[Tuple[str, Tuple[str, ...]], ...]  # Linux x86_64 / Windows: (tag, arch list)
    torchvision: Optional[str]
    torchaudio: Optional[str]
    aarch64_tags: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()


# docs/facts.md §3a (release matrix: Python range, stable + experimental CUDA builds,
# torchvision/torchaudio pins) and §3b (arch lists), newest first. Patch versions are the
# last patch of each minor that §3a/§4 name (torchvision 0.24.1 → torch 2.9.1, torch
# 2.14.1 read from the wheel), except 2.12.0 (chosen before 0.27.1 → torch 2.12.1 was read). Python
# ranges include the experimental column, which shipped wheels. torch 1.13 (local
# versions with --extra-index-url) and 2.15 (not covered by §3) are left out.
def _pins(torch_version: str) -> Tuple[Optional[str], Optional[str]]:
    """(torchvision, torchaudio) paired with a torch release, from the pins above."""
    return TORCHVISION_FOR_TORCH.get(torch_version), TORCHAUDIO_FOR_TORCH.get(torch_version)


TORCH_RELEASES: Tuple[TorchRelease, ...] = (
    TorchRelease("2.14.1", (3, 10), (3, 15), (("cu126", ARCH_CU126), ("cu130", ARCH_CU13), ("cu132", ARCH_CU13)), *_pins("2.14.1"),
                 (("cu126", ARCH_AARCH64_CU126), ("cu130", ARCH_AARCH64_CU13), ("cu132", ARCH_AARCH64_CU13))),
    TorchRelease("2.13.0", (3, 10), (3, 15), (("cu126", ARCH_CU126), ("cu130", ARCH_CU13), ("cu132", ARCH_CU13)), *_pins("2.13.0"),
                 (("cu126", ARCH_AARCH64_CU126), ("cu130", ARCH_AARCH64_CU13), ("cu132", ARCH_AARCH64_CU13))),
    TorchRelease("2.12.0", (3, 10), (3, 14), (("cu126", ARCH_CU126), ("cu130", ARCH_CU13), ("cu132", ARCH_CU13)), *_pins("2.12.0"),
                 (("cu126", ARCH_AARCH64_CU126), ("cu130", ARCH_AARCH64_CU13), ("cu132", ARCH_AARCH64_CU13))),
    TorchRelease("2.11.0", (3, 10), (3, 14), (("cu126", ARCH_CU126), ("cu128", ARCH_CU128), ("cu130", ARCH_CU13)), *_pins("2.11.0")),
    TorchRelease("2.10.0", (3, 10), (3, 14), (("cu126", ARCH_CU126), ("cu128", ARCH_CU128), ("cu130", ARCH_CU13)), *_pins("2.10.0")),
    TorchRelease("2.9.1", (3, 10), (3, 14), (("cu126", ARCH_CU126), ("cu128", ARCH_CU128), ("cu130", ARCH_CU13)), *_pins("2.9.1")),
    TorchRelease("2.8.0", (3, 9), (3, 13), (("cu126", ARCH_CU126), ("cu128", ARCH_CU128), ("cu129", ARCH_CU129)), *_pins("2.8.0")),
    TorchRelease("2.7.1", (3, 9), (3, 13), (("cu118", ARCH_CU118), ("cu126", ARCH_CU126), ("cu128", ARCH_CU128_27)), *_pins("2.7.1")),
    TorchRelease("2.6.0", (3, 9), (3, 13), (("cu118", ARCH_CU118), ("cu124", ARCH_CU12_OLD), ("cu126", ARCH_CU126)), *_pins("2.6.0")),
    TorchRelease("2.5.1", (3, 9), (3, 13), (("cu118", ARCH_CU118), ("cu121", ARCH_CU12_OLD), ("cu124", ARCH_CU12_OLD)), *_pins("2.5.1")),
    TorchRelease("2.4.1", (3, 8), (3, 12), (("cu118", ARCH_CU118), ("cu121", ARCH_CU12_OLD), ("cu124", ARCH_CU12_OLD)), *_pins("2.4.1")),
    TorchRelease("2.3.1", (3, 8), (3, 12), (("cu118", ARCH_CU118), ("cu121", ARCH_CU12_OLD)), *_pins("2.3.1")),
    TorchRelease("2.2.2", (3, 8), (3, 12), (("cu118", ARCH_CU118), ("cu121", ARCH_CU12_OLD)), *_pins("2.2.2")),
    TorchRelease("2.1.2", (3, 8), (3, 11), (("cu118", ARCH_CU118), ("cu121", ARCH_CU12_OLD)), *_pins("2.1.2")),
    TorchRelease("2.0.1", (3, 8), (3, 11), (("cu117", ARCH_CU117), ("cu118", ARCH_CU118_20)), *_pins("2.0.1")),
)

# ---------------------------------------------------------------- parsing


def parse_driver(text: Optional[str]) -> Optional[Version]:
    """'535.104.05' -> (535, 104, 5); '570.26' -> (570, 26, 0); junk -> None."""
    if not text:
        return None
    m = re.match(r"\s*(\d+)\.(\d+)(?:\.(\d+))?", str(text))
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def parse_cuda(text: Optional[str]) -> Optional[Cuda]:
    """torch.version.cuda '12.1' -> (12, 1); '11.8.89' -> (11, 8); None -> None."""
    if not text:
        return None
    m = re.match(r"\s*(\d+)\.(\d+)", str(text))
    return (int(m.group(1)), int(m.group(2))) if m else None


def cuda_from_driver_api(number: Optional[int]) -> Optional[Cuda]:
    """cuDriverGetVersion / torch's 'found version N': 1000*major + 10*minor (§1)."""
    if not number or number <= 0:
        return None
    return number // 1000, (number % 1000) // 10


def found_version(text: Optional[str]) -> Optional[int]:
    """N from torch's 'The NVIDIA driver on your system is too old (found version N)' (§6)."""
    m = re.search(r"found version (\d+)", text or "")
    return int(m.group(1)) if m else None


def parse_capability(value: object) -> Optional[Capability]:
    """'8.9', [8, 9], (8, 9) -> (8, 9); '[N/A]' or None -> None."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        try:
            return int(value[0]), int(value[1])
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        m = re.match(r"\s*(\d+)\.(\d+)\s*$", value)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def capability_text(cap: Optional[Capability]) -> str:
    return "%d.%d" % cap if cap else "unknown"


def capability_from_name(name: Optional[str]) -> Optional[Capability]:
    for pattern, cap in GPU_CAPABILITY_PATTERNS:
        if name and re.search(pattern, name, re.IGNORECASE):
            return cap
    return None


def parse_nvidia_smi_csv(text: str, fields: Sequence[str]) -> List[Dict[str, str]]:
    """Rows of `nvidia-smi --query-gpu=<fields> --format=csv[,noheader]` as dicts.

    A header line (present without `noheader`) is skipped; lines with another number
    of columns (e.g. "No devices were found", error text) are ignored. GPU names hold
    no commas, so a plain split is exact.
    """
    rows: List[Dict[str, str]] = []
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(fields) or not line.strip():
            continue
        if [c.split(" [")[0] for c in cells] == list(fields):  # header: "memory.total [MiB]"
            continue
        rows.append(dict(zip(fields, cells)))
    return rows


def parse_proc_driver_version(text: Optional[str]) -> Optional[str]:
    """The driver number in /proc/driver/nvidia/version, proprietary or open module:
    'NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.223.02  Sat Oct ...' or
    'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build ...'."""
    for line in (text or "").splitlines():
        if line.startswith("NVRM version:"):
            m = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)\b", line)
            if m:
                return m.group(1)
    return None


def parse_nvcc_version(text: Optional[str]) -> Dict[str, Optional[str]]:
    """'Cuda compilation tools, release 13.0, V13.0.88' -> release 13.0, version 13.0.88."""
    m = re.search(r"release (\d+\.\d+), V(\d+(?:\.\d+)*)", text or "")
    return {"release": m.group(1) if m else None, "version": m.group(2) if m else None}


class Arch(NamedTuple):
    kind: str  # "sm" (cubin) or "compute" (PTX)
    major: int
    minor: int
    suffix: str  # "", "a" (arch-specific: exact CC only) or "f" (family)
    text: str


def parse_arch(entry: str) -> Optional[Arch]:
    """'sm_86' -> Arch('sm', 8, 6, '', 'sm_86'); 'compute_120'; 'sm_90a'; gfx... -> None."""
    m = re.match(r"^(sm|compute)_(\d+)(\d)([af]?)$", entry.strip())
    if not m:
        return None
    return Arch(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), entry.strip())


def parse_arch_list(value: object) -> List[Arch]:
    """torch._C._cuda_getArchFlags() text or torch.cuda.get_arch_list() list -> entries."""
    entries = value.split() if isinstance(value, str) else list(value or []) if isinstance(value, (list, tuple)) else []
    parsed = [parse_arch(str(e)) for e in entries]
    return [a for a in parsed if a is not None]


def arch_coverage(arch_list: object, cap: Capability) -> Optional[Tuple[str, str]]:
    """How a GPU of capability `cap` gets kernels from this arch list (§2 binary compat).

    Returns ("native", "sm_86") for a cubin that runs on it, ("ptx", "compute_80") when
    only PTX can be JIT-compiled for it, or None: "no kernel image is available".
    """
    archs = parse_arch_list(arch_list)
    exact_only = cap in EXACT_ONLY
    best: Optional[Arch] = None
    for a in archs:
        if a.kind != "sm" or a.major != cap[0]:
            continue
        fits = a.minor == cap[1] if a.suffix == "a" or exact_only else a.minor <= cap[1]
        if fits and (best is None or a.minor > best.minor):
            best = a
    if best is not None:
        return "native", best.text
    ptx = [a for a in archs if a.kind == "compute" and not a.suffix and (a.major, a.minor) <= cap]
    if ptx:
        return "ptx", max(ptx, key=lambda a: (a.major, a.minor)).text
    return None


def visible_device_count(value: Optional[str], physical: int) -> Optional[int]:
    """How many GPUs CUDA shows under CUDA_VISIBLE_DEVICES=value with `physical` GPUs.

    Unset -> all. CUDA reads the comma list up to the first invalid entry: "" , "-1",
    "NoDevFiles" or an index >= the GPU count hide everything from there on. GPU-/MIG-
    UUIDs cannot be checked against nvidia-smi's index list: None (unknown).
    """
    if value is None:
        return physical
    count = 0
    seen = set()
    for token in value.split(","):
        token = token.strip()
        if re.match(r"^(GPU|MIG)-", token, re.IGNORECASE):
            return None
        if not re.match(r"^-?\d+$", token):
            break
        index = int(token)
        if index < 0 or index >= physical:
            break
        if index not in seen:
            seen.add(index)
            count += 1
    return count


# ---------------------------------------------------------------- driver rules


def _platform_key(system: str) -> str:
    return "win32" if system.startswith("win") else "linux"


def toolkit_of(release: str) -> Optional[Cuda]:
    m = re.match(r"^(\d+)\.(\d+)", release)
    return (int(m.group(1)), int(m.group(2))) if m else None


def min_driver(cuda: Cuda, system: str = "linux") -> Optional[str]:
    """The lowest driver of §1 listed for toolkit `cuda` (its GA row): 12.1 -> 530.30.02."""
    column = 2 if _platform_key(system) == "win32" else 1
    best: Optional[str] = None
    for row in DRIVER_TABLE:
        value = row[column]
        if toolkit_of(row[0]) == cuda and isinstance(value, str) and (
            best is None or (parse_driver(value) or (0, 0, 0)) < (parse_driver(best) or (0, 0, 0))
        ):
            best = value
    return best


def family_min_driver(major: int, system: str = "linux") -> Optional[str]:
    return FAMILY_MIN_DRIVER.get(major, {}).get(_platform_key(system))


def max_cuda_for_driver(driver: str, system: str = "linux") -> Optional[Cuda]:
    """The newest toolkit whose §1 row this driver satisfies (nvidia-smi's "CUDA Version")."""
    have = parse_driver(driver)
    if have is None:
        return None
    column = 2 if _platform_key(system) == "win32" else 1
    fits = []
    for row in DRIVER_TABLE:
        value = row[column]
        if isinstance(value, str) and (parse_driver(value) or (999, 0, 0)) <= have:
            fits.append(toolkit_of(row[0]))
    found = [c for c in fits if c is not None]
    return max(found) if found else None


def driver_support(cuda: Cuda, driver: Optional[str] = None, driver_cuda: Optional[Cuda] = None,
                   system: str = "linux") -> str:
    """Can a build for CUDA `cuda` run on this driver?

    "full": driver >= the toolkit's own row; "minor-compat": same major family and
    driver >= the family minimum (runs, but PTX JIT needs the full row); "too-old";
    "unknown" when neither the driver number nor its CUDA API version is known or the
    toolkit is not in the tables.
    """
    have = parse_driver(driver)
    if have is not None:
        row = min_driver(cuda, system)
        family = family_min_driver(cuda[0], system)
        if row is not None and have >= (parse_driver(row) or (0, 0, 0)):
            return "full"
        if family is not None and have >= (parse_driver(family) or (0, 0, 0)):
            return "minor-compat"
        if row is not None or family is not None:
            return "too-old"
    if driver_cuda is not None:
        if driver_cuda >= cuda:
            return "full"
        if driver_cuda[0] == cuda[0] and cuda[0] in FAMILY_MIN_DRIVER:
            return "minor-compat"
        return "too-old"
    return "unknown"


# ---------------------------------------------------------------- wheel choice


class WheelChoice(NamedTuple):
    torch: str
    tag: str
    cuda: Cuda
    support: str  # driver_support() of this tag: "full" | "minor-compat" | "unknown"
    arch: Tuple[str, ...]
    torchvision: Optional[str]
    torchaudio: Optional[str]
    python_min: Tuple[int, int]
    python_max: Tuple[int, int]

    @property
    def index_url(self) -> str:
        return DOWNLOAD_INDEX + self.tag

    def requirements(self, torchvision: bool = False, torchaudio: bool = False) -> List[str]:
        """Exact pins with the local version (+cuNNN): a bare ==X.Y.Z would be satisfied by
        an installed X.Y.Z+cpu and pip would change nothing."""
        reqs = ["torch==%s+%s" % (self.torch, self.tag)]
        if torchvision and self.torchvision:
            reqs.append("torchvision==%s+%s" % (self.torchvision, self.tag))
        if torchaudio and self.torchaudio:
            reqs.append("torchaudio==%s+%s" % (self.torchaudio, self.tag))
        return reqs


def release_key(version: Optional[str]) -> Optional[Tuple[int, int]]:
    m = re.match(r"^(\d+)\.(\d+)", version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def _tags_for(release: TorchRelease, system: str, machine: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    if system.startswith("linux") and machine.lower() in ("aarch64", "arm64"):
        return release.aarch64_tags
    if system.startswith("linux") or system.startswith("win"):
        return release.tags
    return ()  # macOS: no CUDA wheels


def choose_wheel(
    capabilities: Sequence[Capability],
    driver: Optional[str] = None,
    driver_cuda: Optional[Cuda] = None,
    python: Optional[Tuple[int, int]] = None,
    system: str = "linux",
    machine: str = "x86_64",
    prefer: Optional[str] = None,
) -> Optional[WheelChoice]:
    """The torch CUDA wheel to install for this driver and these GPUs.

    A candidate's CUDA major must run on the driver (§1, minor-version compat allowed),
    its arch list must cover every GPU (§2/§3b) and its Python range the interpreter
    (§3a). The release of `prefer` (the installed torch) wins when one of its tags fits,
    else the newest release. Within a release: the newest CUDA the driver fully
    supports, else the oldest CUDA of a compatible family.
    """
    wanted = release_key(prefer)
    candidates: List[Tuple[TorchRelease, WheelChoice]] = []
    for release in TORCH_RELEASES:
        if python is not None and not (release.python_min <= python <= release.python_max):
            continue
        fitting: List[WheelChoice] = []
        for tag, arch in _tags_for(release, system, machine):
            cuda = TAG_CUDA[tag]
            support = driver_support(cuda, driver, driver_cuda, system)
            if support == "too-old":
                continue
            if any(arch_coverage(arch, cap) is None for cap in capabilities):
                continue
            fitting.append(WheelChoice(release.version, tag, cuda, support, arch, release.torchvision,
                                       release.torchaudio, release.python_min, release.python_max))
        if not fitting:
            continue
        full = sorted((c for c in fitting if c.support != "minor-compat"), key=lambda c: c.cuda, reverse=True)
        compat = sorted((c for c in fitting if c.support == "minor-compat"), key=lambda c: c.cuda)
        candidates.append((release, (full or compat)[0]))
    if not candidates:
        return None
    for release, choice in candidates:
        if wanted is not None and release_key(release.version) == wanted:
            return choice
    return candidates[0][1]
