"""Which companion release is paired with the installed torch: the release tables and
the rules that read them (Requires-Dist pins first, then the tables).

Pure functions over the probe's facts; runs in the parent (versions via packaging).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Tuple

from envdoctor.target.cuda_tables import TORCHAUDIO_FOR_TORCH, TORCHVISION_FOR_TORCH
from envdoctor.target.versions import local, release, release_tuple, requirement_name, requirement_specifier, satisfies

# ---------------------------------------------------------------- data tables
#
# torchvision releases whose pin is a range rather than the exact torch release.
TORCHVISION_RANGE_PINS: Dict[str, str] = {"0.29.1": ">=2.14.0", "0.29.2": ">=2.14.0"}

# No torchaudio release exists for torch >= 2.12 (PyPI stops at 2.11.0, §3a).
TORCHAUDIO_UNPINNED = ("2.11.0",)

# xformers -> the torch release its PyPI wheel pins (docs/facts.md §4 "xformers → torch").
XFORMERS_TORCH_PIN: Dict[str, str] = {
    "0.0.16": "1.13.1",
    "0.0.20": "2.0.1", "0.0.21": "2.0.1", "0.0.22": "2.0.1",
    "0.0.22.post7": "2.1.0", "0.0.23": "2.1.1", "0.0.23.post1": "2.1.2",
    "0.0.24": "2.2.0", "0.0.25": "2.2.1", "0.0.25.post1": "2.2.2",
    "0.0.26.post1": "2.3.0", "0.0.27": "2.3.1",
    "0.0.27.post2": "2.4.0", "0.0.28": "2.4.1", "0.0.28.post1": "2.4.1",
    "0.0.28.post2": "2.5.0", "0.0.28.post3": "2.5.1", "0.0.29": "2.5.1", "0.0.29.post1": "2.5.1",
    "0.0.29.post2": "2.6.0", "0.0.29.post3": "2.6.0",
    "0.0.30": "2.7.0", "0.0.31": "2.7.1", "0.0.31.post1": "2.7.1",
    "0.0.32.post1": "2.8.0", "0.0.32.post2": "2.8.0",
    "0.0.33": "2.9.0", "0.0.33.post1": "2.9.0", "0.0.33.post2": "2.9.1",
    "0.0.34": "2.10.0",
}
XFORMERS_RANGE_PINS: Dict[str, str] = {"0.0.35": ">=2.10"}  # first unpinned release (§4)
XFORMERS_UNPINNED_FROM = ((2, 10, 0), "0.0.35")  # torch >= 2.10 without an exact pin -> 0.0.35

# bitsandbytes: torch requirement of the PyPI wheels (docs/facts.md §4 "bitsandbytes"),
# newest first: (first bitsandbytes release of the row, requirement, newest release of the row).
BITSANDBYTES_RANGES: Tuple[Tuple[str, str, str], ...] = (
    ("0.50.0", ">=2.4,<3", "0.50.2"),
    ("0.48.0", ">=2.3,<3", "0.49.2"),
    ("0.46.0", ">=2.2,<3", "0.47.0"),
    ("0.45.0", ">=2.0,<3", "0.45.5"),
)

# flash-attn prebuilt wheels: the `cu` tag of the name by flash-attn release (§4 "flash-attn prebuilt wheel names").
# cxx11abi in the name must equal torch._C._GLIBCXX_USE_CXX11_ABI of the installed torch: FALSE for PyPI
# torch <= 2.6 (2.6.0+cu126 already TRUE), TRUE from 2.7 (§3a "C++11 ABI"); the wrong one gives `undefined symbol`.

def torch_variant(facts: Dict[str, Any]) -> Optional[str]:
    """'cpu', 'cu126', 'rocm6.2' for the builds download.pytorch.org serves; None for a PyPI
    default build (no local label) or a custom one."""
    torch = facts.get("torch") or {}
    label = local(torch.get("dist_version") or torch.get("version"))
    if label and re.match(r"^(cpu|cu\d+|rocm[\d.]+|xpu)$", label):
        return label
    return None


def torch_custom(facts: Dict[str, Any]) -> bool:
    """A torch built from source or shipped by a container (2.4.0a0+f70bd71a48.nv24.06): no wheel is paired with it."""
    torch = facts.get("torch") or {}
    version = torch.get("dist_version") or torch.get("version") or ""
    label = local(version)
    return bool((label and torch_variant(facts) is None) or re.search(r"(a|b|rc)\d+|dev", version.split("+")[0]))


def variant_of(version: Optional[str]) -> Optional[str]:
    label = local(version)
    return label if label and re.match(r"^(cpu|cu\d+|rocm[\d.]+)$", label) else None


def torch_cuda_variant(facts: Dict[str, Any]) -> Optional[str]:
    """The CUDA flavour of the installed torch as a wheel label: 'cpu', 'cu130', 'rocm6.2'."""
    torch = facts.get("torch") or {}
    label = variant_of(torch.get("dist_version") or torch.get("version"))
    if label:
        return label
    if torch.get("hip"):
        return "rocm%s" % ".".join(str(torch["hip"]).split(".")[:2])
    if torch.get("cuda"):
        return "cu" + "".join(str(torch["cuda"]).split(".")[:2])
    return "cpu"


def describe_variant(label: str) -> str:
    if label == "cpu":
        return "CPU-only"
    match = re.match(r"^cu(\d+)(\d)$", label)
    if match:
        return "CUDA %s.%s" % match.groups()
    return label.replace("rocm", "ROCm ")


def expected_torch(ext: Dict[str, Any]) -> Tuple[Optional[str], str]:
    """(torch specifier the installed extension was built for, where that came from)."""
    spec = requirement_specifier(ext.get("requires_torch") or (), ("torch",))
    if spec:
        return spec, "its Requires-Dist"
    name, version = ext.get("name"), ext.get("version")
    if name == "torchvision":
        if version in TORCHVISION_RANGE_PINS:
            return TORCHVISION_RANGE_PINS[version], "envdoctor's torchvision table"
        pinned = [t for t, v in TORCHVISION_FOR_TORCH.items() if v == release(version)]
        return ("==" + pinned[0], "envdoctor's torchvision table") if pinned else (None, "")
    if name == "torchaudio":
        pinned = [t for t, v in TORCHAUDIO_FOR_TORCH.items() if v == release(version) and v not in TORCHAUDIO_UNPINNED]
        return ("==" + pinned[0], "envdoctor's torchaudio table") if pinned else (None, "")
    if name == "xformers":
        if version in XFORMERS_TORCH_PIN:
            return "==" + XFORMERS_TORCH_PIN[version], "envdoctor's xformers table"
        if version in XFORMERS_RANGE_PINS:
            return XFORMERS_RANGE_PINS[version], "envdoctor's xformers table"
        return None, ""
    if name == "bitsandbytes":
        for first, requirement, _newest in BITSANDBYTES_RANGES:
            if satisfies(version, ">=" + first):
                return requirement, "envdoctor's bitsandbytes table"
        return None, ""
    return None, ""


def triton_pin(facts: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """(distribution, specifier) torch itself requires for triton, e.g. ('triton', '==3.5.1')."""
    lines = (facts.get("torch") or {}).get("requires") or ()
    for line in lines:
        name = requirement_name(line)
        spec = requirement_specifier([line], [name]) if name else None
        if name and spec:
            return name, spec
    return None


def paired_version(facts: Dict[str, Any], ext: Dict[str, Any]) -> Optional[str]:
    """The release of this companion built for the installed torch (None: not known)."""
    torch = facts.get("torch") or {}
    torch_release = release(torch.get("dist_version") or torch.get("version"))
    name = ext.get("name")
    if torch_release is None:
        return None
    if name == "torchvision":
        return TORCHVISION_FOR_TORCH.get(torch_release)
    if name == "torchaudio":
        return TORCHAUDIO_FOR_TORCH.get(torch_release)
    if name == "xformers":
        newest = None
        for xf, pinned_torch in XFORMERS_TORCH_PIN.items():
            if pinned_torch == torch_release:
                newest = xf  # the table is in release order: keep the last (newest) one
        if newest:
            return newest
        if release_tuple(torch_release)[:3] >= XFORMERS_UNPINNED_FROM[0]:
            return XFORMERS_UNPINNED_FROM[1]
        return None
    if name == "bitsandbytes":
        for _first, requirement, newest_bnb in BITSANDBYTES_RANGES:
            if satisfies(torch_release, requirement):
                return newest_bnb
        return "0.43.3" if satisfies(torch_release, "<2.0") else None
    if name == "triton":
        pin = triton_pin(facts)
        if pin and pin[1].startswith("=="):
            return pin[1][2:].split(";")[0]
        return None
    return None


def pairing(facts: Dict[str, Any], ext: Dict[str, Any]) -> Dict[str, Any]:
    """Is the installed companion the one paired with the installed torch?"""
    torch = facts.get("torch") or {}
    torch_version = torch.get("dist_version") or torch.get("version")
    result: Dict[str, Any] = {"mismatch": False, "expected": None, "source": "", "paired": paired_version(facts, ext)}
    if ext.get("name") == "triton":
        pin = triton_pin(facts)
        if pin:
            result["expected"], result["source"] = pin[1], "torch's Requires-Dist (%s)" % pin[0]
            result["mismatch"] = satisfies(ext.get("version"), pin[1]) is False
        return result
    expected, source = expected_torch(ext)
    result["expected"], result["source"] = expected, source
    if expected:
        result["mismatch"] = satisfies(torch_version, expected) is False
    return result


def variant_mismatch(facts: Dict[str, Any], ext: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """(companion's CUDA flavour, torch's) when they cannot work together: CPU vs CUDA or
    different CUDA major versions. torchvision/torchaudio carry it in their local version,
    xformers in cpp_lib.json (CUDA 1208 -> cu128)."""
    mine: Optional[str] = None
    if ext.get("name") in ("torchvision", "torchaudio"):
        mine = variant_of(ext.get("build_version"))
    elif ext.get("name") == "xformers":
        built = ext.get("built_for") or {}
        if built.get("hip"):
            mine = "rocm%s" % ".".join(str(built["hip"]).split(".")[:2])
        elif isinstance(built.get("cuda"), int) and built["cuda"] >= 100:
            mine = "cu%d%d" % (built["cuda"] // 100, built["cuda"] % 100)  # xformers writes CUDA 12.8 as 1208
    theirs = torch_cuda_variant(facts)
    if not mine or not theirs or mine == theirs:
        return None
    if mine.startswith("cu") and theirs.startswith("cu") and mine[2:-1] == theirs[2:-1]:
        return None  # same CUDA major version: works by minor-version compatibility
    return mine, theirs


