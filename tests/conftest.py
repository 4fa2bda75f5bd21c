"""Shared test helpers: run envdoctor for real, load recorded fact snapshots."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from envdoctor.target.model import Check, Finding, Target

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PLUGINS = Path(__file__).resolve().parent / "plugins"


def load_fixture(name: str) -> Dict[str, Any]:
    """A recorded `envdoctor check --json` report (see tests/fixtures/README.md)."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def handwritten(name: str) -> Dict[str, Any]:
    """The facts of a hand-written snapshot (tests/fixtures/handwritten/), which must say so."""
    data = json.loads((FIXTURES / "handwritten" / name).read_text(encoding="utf-8"))
    assert data["source"].startswith("hand-written: ")
    return data["facts"]


# The target the rules see when a snapshot does not say (hand-written GPU snapshots).
ENV = Target(python="/home/me/venv/bin/python", python_version="3.11.7", platform="Linux-6.1.0-x86_64-with-glibc2.36",
                  sys_platform="linux", machine="x86_64", prefix="/home/me/venv", torch="2.13.0+cpu", torch_import={"ok": True})


def env_of(report: Dict[str, Any]) -> Target:
    """The environment a recorded report was judged in."""
    return Target.from_report(report["environment"])


def env_for(facts: Dict[str, Any]) -> Target:
    """The target of a snapshot: snapshots recorded before rules took `env` carry the
    interpreter, prefix and platform in their facts; otherwise ENV."""
    torch = facts.get("torch")
    version = torch.get("version") if isinstance(torch, dict) else torch
    version = version or (facts.get("torch_import") or {}).get("version")
    return Target(
        python=facts.get("python") or ENV.python,
        python_version=facts.get("python_version") or ENV.python_version,
        platform=ENV.platform,
        sys_platform=facts.get("platform") or ENV.sys_platform,
        machine=facts.get("machine") or ENV.machine,
        prefix=facts.get("prefix") or ENV.prefix,
        torch=version if isinstance(version, str) else (None if "torch_import" in facts else ENV.torch),
        torch_import=facts.get("torch_import") or {"ok": True},
    )


def judge(check: Check, facts: Dict[str, Any], env: Optional[Target] = None) -> List[Finding]:
    """A check's rules on a snapshot, as the engine calls them."""
    return check.judge(facts, env or env_for(facts))


def find_python(version: str) -> Optional[Path]:
    """Another CPython for the cross-version tests ("3.8", "2.7"), or None when there is none:
    $ENVDOCTOR_TEST_PYTHON<major><minor> (e.g. ENVDOCTOR_TEST_PYTHON38), `pythonX.Y` on PATH,
    or the newest pyenv install of that version ($PYENV_ROOT, default ~/.pyenv). A candidate
    counts only if it runs and reports that version (a pyenv shim may do neither)."""
    candidates: List[Path] = []
    given = os.environ.get("ENVDOCTOR_TEST_PYTHON" + version.replace(".", ""))
    if given:
        candidates.append(Path(given))
    on_path = shutil.which("python" + version)
    if on_path:
        candidates.append(Path(on_path))
    versions = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if versions.is_dir():
        installs = [p for p in versions.glob(version + ".*/bin/python") if p.exists()]
        candidates += sorted(installs, key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.parent.name)], reverse=True)
    for python in candidates:
        try:
            out = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return python
    return None


def torch_has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def check_of(report: Dict[str, Any], check_id: str) -> Dict[str, Any]:
    for check in report["checks"]:
        if check["id"] == check_id:
            return check
    raise KeyError(check_id)


def facts_of(report: Dict[str, Any], check_id: str) -> Dict[str, Any]:
    return check_of(report, check_id)["facts"]


def codes(findings: List[Any]) -> List[str]:
    return [f.code for f in findings]


_EMPTY_HF_HOME = tempfile.mkdtemp(prefix="envdoctor-tests-hf-home-")
# `fix` journals its runs here, never in the developer's own state folder
_STATE_DIR = tempfile.mkdtemp(prefix="envdoctor-tests-state-")


def run_envdoctor(
    *args: str,
    env: Optional[Dict[str, str]] = None,
    timeout: float = 300,
    python: str = sys.executable,
    encoding: str = "utf-8",
    cwd: Optional[Path] = None,
    input: Optional[str] = None,
) -> subprocess.CompletedProcess:
    """`python -m envdoctor ARGS` in a subprocess, as a user would run it."""
    full_env = dict(os.environ)
    full_env.pop("ENVDOCTOR_CHECKS_PATH", None)
    # the developer's own accelerate default config must not reach the tests unasked (and
    # the libraries the probes import may create cache folders there: not in the repository)
    full_env["HF_HOME"] = _EMPTY_HF_HOME
    full_env["ENVDOCTOR_STATE_DIR"] = _STATE_DIR
    full_env.pop("ACCELERATE_CONFIG_FILE", None)
    full_env.update(env or {})
    return subprocess.run(
        [python, "-m", "envdoctor", *args],
        capture_output=True,
        encoding=encoding,
        timeout=timeout,
        env=full_env,
        cwd=str(cwd or ROOT),
        input=input,
    )


def run_json(*args: str, env: Optional[Dict[str, str]] = None, timeout: float = 300) -> Dict[str, Any]:
    proc = run_envdoctor("check", "--json", *args, env=env, timeout=timeout)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="session")
def live_report() -> Dict[str, Any]:
    """One real `envdoctor check --json` on this machine's torch, shared by tests."""
    return run_json()


def make_venv(path: Path, system_site_packages: bool = False) -> Path:
    """A throwaway venv; returns its python."""
    args = [sys.executable, "-m", "venv", str(path)]
    if system_site_packages:
        args.append("--system-site-packages")
    subprocess.run(args, check=True, capture_output=True)
    return path / "bin" / "python"


def pip_install(python: Path, *requirements: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
                   check=True, capture_output=True, text=True)


# ---- environments with the training libraries, built once per test run

TORCH = "torch==2.13.0"  # the CPU wheel: a looser pin pulls GBs of CUDA packages
# transformers, diffusers and peft pinned beside torch on one pip line (FACTS: they install together)
LIBRARIES = ("transformers==5.23.0", "diffusers==0.42.1", "peft==0.21.2", "accelerate==1.15.0", "numpy")
# the same families in releases that still run on torch 2.0.1 (numpy 1.x: torch 2.0.1 was built against it)
OLD_TORCH = "torch==2.0.1"
OLD_LIBRARIES = ("transformers==4.46.3", "diffusers==0.31.0", "peft==0.13.2", "accelerate==1.0.1", "huggingface_hub==0.26.5", "numpy==1.26.4")


def _built_venv(factory: Any, name: str, override: str, *requirements: str) -> Path:
    """A venv with `requirements`, built once per run; $`override` names a ready interpreter
    to reuse (a developer's prepared venv) instead."""
    given = os.environ.get(override)
    if given:
        return Path(given)
    python = make_venv(factory.mktemp(name) / "venv")
    pip_install(python, *requirements)
    return python


@pytest.fixture(scope="session")
def libs_python(tmp_path_factory: Any) -> Path:
    """torch 2.13 CPU with transformers, diffusers, peft and accelerate really installed."""
    return _built_venv(tmp_path_factory, "libs", "ENVDOCTOR_TEST_LIBS_PYTHON", TORCH, *LIBRARIES)


@pytest.fixture(scope="session")
def old_torch_python(tmp_path_factory: Any) -> Path:
    """torch 2.0.1 (CPU kernels without fp16 layer_norm, addmm, conv) with libraries of its time."""
    return _built_venv(tmp_path_factory, "old-torch", "ENVDOCTOR_TEST_OLD_TORCH_PYTHON", OLD_TORCH, *OLD_LIBRARIES)


@pytest.fixture(scope="session")
def impostor_apex_python(tmp_path_factory: Any) -> Path:
    """torch 2.13 CPU and the PyPI `apex` (the Pyramid web toolkit 0.9.10.dev0), no numpy:
    what `fix` must uninstall, verify and bring back offline. Tests that change it undo."""
    python = make_venv(tmp_path_factory.mktemp("impostor-apex") / "venv")
    pip_install(python, TORCH)
    pip_install(python, "--no-deps", "apex")
    return python
