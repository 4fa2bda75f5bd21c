"""Version arithmetic for the rules (envdoctor.target.versions, on packaging): pairing tables and
Requires-Dist pins depend on it, so it is also run on the lowest packaging admitted."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from envdoctor.target import versions


@pytest.mark.parametrize(("version", "spec", "expected"), [
    ("2.13.0+cpu", "==2.13.0", True), ("2.13.0", "==2.12.0", False), ("2.13.0", ">=2.4,<3", True),
    ("3.0.0", ">=2.4,<3", False), ("2.10.1", "==2.10.*", True), ("2.4.0a0+f70bd71a48.nv24.06", ">=2.4", True),
    ("0.0.28.post3", "==0.0.28.post2", False), ("2.3.1", "~=2.3.0", True), ("2.4.0", "~=2.3.0", False), ("x", "==1", None),
    ("2.13.0", "==2.13.0+cpu", True),  # a local label in a pin compares as its release
    ("2.13.0", "not a specifier", None),
])
def test_satisfies(version: str, spec: str, expected: Any) -> None:
    assert versions.satisfies(version, spec) is expected


@pytest.mark.parametrize(("text", "release", "local", "numbers"), [
    ("2.13.0+cpu", "2.13.0", "cpu", (2, 13, 0)),
    ("2.4.0a0+f70bd71a48.nv24.06", "2.4.0", "f70bd71a48.nv24.6", (2, 4, 0)),  # PEP 440 normalises the label
    ("0.9.10.dev0", "0.9.10", None, (0, 9, 10)),
    ("2.1", "2.1.0", None, (2, 1)),
    ("12.8.4.1", "12.8.4", None, (12, 8, 4, 1)),
    ("535.104.05-open", "535.104.5", None, (535, 104, 5)),  # not PEP 440: its leading numbers
    (None, None, None, ()),
])
def test_release_local_and_numbers(text: Optional[str], release: Optional[str], local: Optional[str], numbers: tuple) -> None:
    assert versions.release(text) == release
    assert versions.local(text) == local
    assert versions.release_tuple(text) == numbers


def test_requirement_specifier_reads_requires_dist_lines() -> None:
    lines = ['numpy; extra == "opt"', 'torch==2.13.0; platform_system == "Linux"', "pillow!=8.3.*,>=5.3.0"]
    assert versions.requirement_specifier(lines, ["torch"]) == "==2.13.0"
    assert versions.requirement_specifier(lines, ["numpy"]) is None  # only inside an extra
    assert versions.requirement_specifier(lines, ["Pillow"]) in ("!=8.3.*,>=5.3.0", ">=5.3.0,!=8.3.*")
    assert versions.requirement_specifier(["not a requirement ((("], ["x"]) is None
    assert versions.requirement_name("pytorch-triton==3.5.1; platform_system == 'Linux'") == "pytorch-triton"
