"""The built wheel: checks ship inside the package, no top-level `checks` module,
no torch requirement, and the installed console script works."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT, make_venv, pip_install

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy of the sources: setuptools leaves build/ and an .egg-info where it builds
    source = tmp_path_factory.mktemp("source") / "envdoctor"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", ".nox", "build", "*.egg-info", "__pycache__",
                                                                  ".mypy_cache", ".ruff_cache", ".pytest_cache", "tests"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True, capture_output=True, text=True,
    )
    (built,) = out.glob("envdoctor-*.whl")
    return built


def test_wheel_contents(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith("checks/")], "a top-level checks package would shadow others"
    assert "envdoctor/checks/__init__.py" in names
    builtin = sorted(p.relative_to(ROOT / "checks").as_posix() for p in (ROOT / "checks").rglob("*.py"))  # check packages too
    assert sorted(n[len("envdoctor/checks/"):] for n in names if n.startswith("envdoctor/checks/")) == builtin
    assert "envdoctor/target/probekit/steps.py" in names
    assert "envdoctor/target/worker.py" in names
    top_levels = {n.split("/")[0] for n in names}
    assert top_levels == {"envdoctor", next(n.split("/")[0] for n in names if ".dist-info/" in n)}
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines() if line.startswith("Requires-Dist:")]
    assert requires and not [r for r in requires if "torch" in r.lower()], requires
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "envdoctor = envdoctor.cli:main" in entry_points


def test_installed_wheel_checks_another_interpreter(wheel: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    pip_install(python, str(wheel))
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True)
    assert "torch" not in {p["name"].lower() for p in json.loads(listed.stdout)}  # installing envdoctor never installs torch
    no_checks = subprocess.run([str(python), "-c", "import checks"], capture_output=True, text=True, cwd=str(tmp_path))
    assert "No module named 'checks'" in no_checks.stderr
    envdoctor = tmp_path / "venv" / "bin" / "envdoctor"
    proc = subprocess.run([str(envdoctor), "check", "--json", "--python", sys.executable, "--only", "torch-install,fp8"],
                          capture_output=True, text=True, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [c["id"] for c in report["checks"]] == ["torch-install", "fp8"]
    assert report["environment"]["torch"].startswith("2.13.0")
    assert report["checks"][1]["findings"][0]["code"] == "float8-promotion"
    # the envdoctor venv itself has no torch: its own check says so, as a finding
    own = subprocess.run([str(envdoctor), "check", "--json", "--only", "torch-install"], capture_output=True, text=True)
    assert own.returncode == 1
    assert json.loads(own.stdout)["checks"][0]["findings"][0]["code"] == "torch-missing"
