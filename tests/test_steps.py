"""A crash or hang names its culprit and loses nothing else: every risky step (an import,
a GPU op, an extension call) is announced, a worker that dies or hangs inside one is
replaced, and the check resumes past that step.

The broken environments are real: packages installed on PYTHONPATH beside the CPU
torch, one whose import really segfaults, one whose import really hangs, and the real
`torchvision==0.28.0` (a CUDA build that cannot load beside a CPU torch).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import PLUGINS, check_of, run_envdoctor

from envdoctor.pipeline.check.runner import DEFAULT_TIMEOUT_S, Runner

ID = "extension-abi"
NMS = "operator torchvision::nms does not exist"


def _fake_package(root: Path, dist: str, module: str, version: str, body: str) -> None:
    """An installed distribution (dist-info with METADATA) whose import runs `body`."""
    (root / module).mkdir()
    (root / module / "__init__.py").write_text(body)
    info = root / ("%s-%s.dist-info" % (module, version))
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (dist, version))
    (info / "RECORD").write_text("")


@pytest.fixture(scope="module")
def torchvision_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("tv")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--target", str(root),
                    "torchvision==0.28.0"], check=True, capture_output=True)
    return root


def _check(pythonpath: Path, *args: str) -> Dict[str, Any]:
    proc = run_envdoctor("check", "--json", *args, env={"PYTHONPATH": str(pythonpath)}, timeout=240)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_a_segfaulting_import_is_named_and_the_rest_of_the_check_is_kept(torchvision_dir: Path) -> None:
    _fake_package(torchvision_dir, "flash-attn", "flash_attn", "2.7.4", "import ctypes\nctypes.string_at(0)\n")
    try:
        report = _check(torchvision_dir, "--only", "torch-install,cpu-half-kernels,extension-abi")
    finally:
        import shutil

        shutil.rmtree(torchvision_dir / "flash_attn")
        shutil.rmtree(torchvision_dir / "flash_attn-2.7.4.dist-info")
    check = check_of(report, ID)
    findings = {f["code"]: f for f in check["findings"]}
    crashed = findings["import-crashed"]
    assert crashed["title"] == "importing flash_attn 2.7.4 crashed the interpreter (SIGSEGV)"
    assert crashed["severity"] == "error"
    assert crashed["subject"]["package"] == "flash-attn" and crashed["subject"]["state"] == "crashed"
    assert any("flash_attn/__init__.py" in line for line in crashed["evidence"])  # faulthandler's stack names the file
    assert next(r["id"] for r in crashed["remedies"]) == "flash-attn-reinstall"  # that package's own remedies
    # the torchvision finding, measured in the fresh worker after the crash, is still there
    assert findings["import-fails"]["evidence"][0] == "import torchvision: RuntimeError: " + NMS
    assert not [f for f in check["findings"] if f["code"] == "step-crashed"]  # the check's own finding replaced the generic one
    (lost,) = check["facts"]["lost_steps"]
    assert lost["what"] == "importing flash_attn 2.7.4" and lost["state"] == "crashed"
    ops = {o["module"]: o for o in check["facts"]["ops"]}
    assert ops["flash_attn"]["ok"] is False and ops["flash_attn"]["error_type"] == "Crash"
    assert report["environment"]["worker_restarts"] == 1
    assert check_of(report, "cpu-half-kernels")["status"] == "ok"


@pytest.mark.slow
def test_a_hanging_import_is_named_within_the_users_timeout(tmp_path: Path) -> None:
    _fake_package(tmp_path, "bitsandbytes", "bitsandbytes", "0.45.0", "import time\ntime.sleep(600)\n")
    start = time.monotonic()
    report = _check(tmp_path, "--timeout", "10", "--only", "torch-install,fp8,extension-abi")
    elapsed = time.monotonic() - start
    assert elapsed < 60  # extension-abi declares 180 s; the user's 10 s wins
    check = check_of(report, ID)
    (hang,) = [f for f in check["findings"] if f["code"] == "import-hangs"]
    assert hang["title"] == "importing bitsandbytes 0.45.0 did not return within 10 s"
    assert any("bitsandbytes/__init__.py" in line for line in hang["evidence"])  # the stack dumped just before the limit
    assert check_of(report, "fp8")["status"] == "ok" and check_of(report, "torch-install")["status"] == "ok"


def test_a_crash_in_a_plugin_step_is_named_generically_and_the_probe_goes_on() -> None:
    proc = run_envdoctor("check", "--json", "--only", "torch-install,test-step-crash",
                         env={"ENVDOCTOR_CHECKS_PATH": str(PLUGINS / "step_crash_check.py")})
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    check = check_of(report, "test-step-crash")
    assert check["status"] == "error"
    assert check["facts"]["after"] == "measured"  # the step after the crash still ran, in a fresh worker
    assert check["facts"]["risky"] == "lost: crashed the interpreter (SIGABRT)"
    (finding,) = check["findings"]
    assert finding["code"] == "step-crashed"
    assert finding["title"] == "calling the fragile extension crashed the interpreter (SIGABRT)"
    assert finding["subject"]["package"] == "fragile" and finding["subject"]["version"] == "1.0"
    assert finding["remedies"][0]["action"] == {"install": ["fragile==1.0"], "force_reinstall": True, "no_deps": True}


def test_the_users_timeout_overrides_a_checks_declared_budget() -> None:
    runner = Runner("python", Path("."), Path("."), timeout_s=15)
    assert runner._limit({"id": "extension-abi", "timeout_s": 180}) == 15
    defaults = Runner("python", Path("."), Path("."))
    assert defaults._limit({"id": "extension-abi", "timeout_s": 180}) == 180
    assert defaults._limit({"id": "fp8"}) == DEFAULT_TIMEOUT_S


def test_a_check_whose_every_step_crashes_is_given_up_after_a_few() -> None:
    from envdoctor.pipeline.check.runner import MAX_LOST_STEPS

    proc = run_envdoctor("check", "--json", "--only", "test-every-step-crashes",
                         env={"ENVDOCTOR_CHECKS_PATH": str(PLUGINS / "every_step_crashes_check.py")})
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    check = check_of(report, "test-every-step-crashes")
    assert check["status"] == "crashed" and check["summary"] == "crashed: SIGABRT"
    titles = [f["title"] for f in check["findings"] if f["code"] == "step-crashed"]
    assert titles == ["fragile call %d crashed the interpreter (SIGABRT)" % n for n in range(MAX_LOST_STEPS + 1)]
    assert report["environment"]["worker_restarts"] == MAX_LOST_STEPS  # none after the last crash: nothing is left to run
