"""What pip refuses, said in one line that names the way out: an environment uv made (no pip
in it), a Python that is externally managed (PEP 668), a resolver conflict. The uv case on a
real uv environment; pip's own words for the others as pip prints them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_envdoctor

from envdoctor.pipeline.fix.action import NotApplicable
from envdoctor.pipeline.fix.kinds.pip import EXTERNALLY_MANAGED, _last_error, prepare

# pip 24's refusal in a Debian/Ubuntu system Python (the marker file in its stdlib folder)
PEP_668 = """error: externally-managed-environment

× This environment is externally managed
╰─> To install Python packages system-wide, try apt install
    python3-xyz, where xyz is the package you are trying to
    install.

note: If you believe this is a mistake, please contact your Python installation or OS distribution provider. \
You can override this, at the risk of breaking your Python installation or OS, by passing --break-system-packages.
hint: See PEP 668 for the detailed specification.
"""
# pip 23.2's dry run on this machine, where its configuration constrains torch<=2.14.1
CONFLICT = """ERROR: Cannot install torch==2.13.0+cu126 because these package versions have conflicting dependencies.

The conflict is caused by:
    The user requested torch==2.13.0+cu126
    The user requested (constraint) torch<=2.14.1

To fix this you could try to:
1. loosen the range of package versions you've specified
2. remove package versions to allow pip attempt to solve the dependency conflict

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts
"""


def test_an_externally_managed_python_is_refused_with_the_venv_route() -> None:
    said = _last_error(PEP_668)
    assert said.startswith("this Python is externally managed (PEP 668)") and "python3 -m venv" in said and "\n" not in said


def _externally_managed_python() -> str:
    """A real PEP 668 Python on this machine (Debian's /usr/bin/python3), or a skip."""
    for python in ("/usr/bin/python3", "/usr/local/bin/python3"):
        found = subprocess.run([python, "-c", "from envdoctor.target.worker import externally_managed as e; print(e())"],
                               capture_output=True, text=True, env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])}) \
            if Path(python).exists() else None
        if found is not None and found.stdout.strip() == "True":
            return python
    pytest.skip("no externally managed (PEP 668) Python on this machine")


def test_a_real_externally_managed_python_gets_no_pip_step_but_the_venv_route() -> None:
    """pip's `--dry-run --report` is exempt from PEP 668, so the dry run resolves; the install would be refused.
    The plan must not offer it as a step it can apply: it says why, with the way that works."""
    python = _externally_managed_python()
    checked = run_envdoctor("check", "--json", "--python", python, "--no-config", "--only", "torch-install")
    assert json.loads(checked.stdout)["environment"]["externally_managed"] is True
    proc = run_envdoctor("fix", "--json", "--python", python, "--no-config", "--only", "torch-install")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    steps = result["plan"]["steps"]
    assert steps and not any(step["applies"] for step in steps)
    reasons = [p["reason"] for step in steps for p in step["passed_over"]]
    assert reasons and all(r == "%s: %s" % (python, EXTERNALLY_MANAGED) for r in reasons), reasons
    assert "python3 -m venv" in EXTERNALLY_MANAGED


def test_a_resolver_conflict_is_named_by_pips_own_cause_lines() -> None:
    assert _last_error(CONFLICT) == ("the requirements conflict: The user requested torch==2.13.0+cu126; "
                                     "The user requested (constraint) torch<=2.14.1")
    quiet = "\n".join(line for line in CONFLICT.splitlines() if line.startswith("ERROR:"))  # what --quiet leaves
    assert _last_error(quiet).startswith("ERROR: Cannot install torch==2.13.0+cu126 because")


def _uv() -> str:
    return str(pytest.importorskip("uv", reason="uv is not installed here").find_uv_bin())


def _uv_env(folder: Path) -> Path:
    subprocess.run([_uv(), "venv", "-q", "-p", sys.executable, str(folder)], check=True, capture_output=True)
    assert "uv = " in (folder / "pyvenv.cfg").read_text()
    return folder / "bin" / "python"


def _freeze(uv: str, python: Path) -> str:
    return subprocess.run([uv, "pip", "freeze", "--python", str(python)], check=True, capture_output=True, text=True).stdout


def test_an_environment_uv_made_without_uv_at_hand_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = str(_uv_env(tmp_path / "env"))
    # a machine where uv is neither on PATH nor installed beside envdoctor
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nothing-here" / "python"))
    with pytest.raises(NotApplicable) as refused:
        prepare({"install": ["numpy"]}, python, "uv")
    assert str(refused.value) == (
        "%s is in an environment uv made, which has no pip, and uv is not on PATH here: install uv "
        "(https://docs.astral.sh/uv/getting-started/installation/) and run the step with it (`uv pip install ... --python %s`), "
        "or add pip with `%s -m ensurepip`" % (python, python, python))


def test_uv_says_why_it_cannot_resolve_in_one_line(tmp_path: Path) -> None:
    python = str(_uv_env(tmp_path / "env"))
    with pytest.raises(NotApplicable) as refused:
        prepare({"install": ["envdoctor-no-such-distribution==1.0"]}, python, "uv")
    said = str(refused.value)
    assert said.startswith("uv cannot install envdoctor-no-such-distribution: ") and "\n" not in said, said


@pytest.mark.slow
def test_in_an_environment_uv_made_fix_runs_uv_and_undo_gives_it_back(tmp_path: Path) -> None:
    """A venv made by `uv venv` (no pip in it) holding the PyPI impostor `apex`, as `uv pip install apex`
    leaves it: the report's remedy and the plan say `uv pip uninstall apex --python <env>`, fix runs
    it with uv and verifies, and undo (offline) gives back the same freeze; no pip was added."""
    uv = _uv()
    python = _uv_env(tmp_path / "env")
    subprocess.run([uv, "pip", "install", "-q", "--no-deps", "apex==0.9.10dev", "--python", str(python)],
                   check=True, capture_output=True)
    before = _freeze(uv, python)
    assert "apex==0.9.10.dev0" in before
    state = {"ENVDOCTOR_STATE_DIR": str(tmp_path / "state")}
    args = ("--python", str(python), "--no-config", "--only", "apex", "--json")
    checked = run_envdoctor("check", *args, env=state)
    assert checked.returncode == 1, checked.stderr
    report = json.loads(checked.stdout)
    assert report["environment"]["installer"] == "uv"
    (apex,) = [c for c in report["checks"] if c["id"] == "apex"]
    commands = [c for f in apex["findings"] for r in f["remedies"] if r["kind"] == "pip" for c in r["commands"]]
    assert "uv pip uninstall apex --python %s" % python in commands, commands
    assert not any(" -m pip " in c for f in apex["findings"] for r in f["remedies"] for c in r["commands"])

    fixed = run_envdoctor("fix", "--yes", *args, env=state)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    result = json.loads(fixed.stdout)
    (step,) = result["plan"]["steps"]
    assert step["lines"] == ["uv pip uninstall apex --python %s" % python]
    assert result["outcome"]["status"] == "verified"
    assert "apex==" not in _freeze(uv, python)
    assert not list((tmp_path / "env").glob("lib/python*/site-packages/pip"))  # uv's way: no pip was added

    undone = run_envdoctor("undo", env=dict(state, UV_OFFLINE="1", PIP_NO_INDEX="1"))
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert _freeze(uv, python) == before


def test_what_pip_resolved_is_asked_again_in_the_next_fix_run(tmp_path: Path) -> None:
    """One fix run resolves each action once; the next run (a notebook's second `envdoctor.fix()`) meets an
    environment that changed since, and asks again."""
    from envdoctor.pipeline.fix.kinds.pip import forget_resolutions

    uv = _uv()
    python = _uv_env(tmp_path / "env")
    forget_resolutions()
    assert prepare({"install": ["packaging==23.0"]}, str(python), "uv").resolved == {"packaging": "23.0"}
    subprocess.run([uv, "pip", "install", "-q", "packaging==23.0", "--python", str(python)], check=True, capture_output=True)
    assert prepare({"install": ["packaging==23.0"]}, str(python), "uv").resolved == {"packaging": "23.0"}  # within one run
    forget_resolutions()  # what flows.fix does as a run begins
    assert prepare({"install": ["packaging==23.0"]}, str(python), "uv").resolved == {}


def _conda_record(env: Path, dist_info: Path, name: str, version: str) -> Path:
    """The record conda writes for a package it links (conda-meta/<name>-<version>-<build>.json: name, version,
    build, channel and the files relative to the prefix), here for a distribution already installed."""
    meta = env / "conda-meta"
    meta.mkdir(exist_ok=True)
    files = sorted(p.relative_to(env).as_posix() for p in dist_info.rglob("*") if p.is_file())
    record = meta / ("%s-%s-pyhd8ed1ab_0.json" % (name, version))
    record.write_text(json.dumps({"name": name, "version": version, "build": "pyhd8ed1ab_0", "build_number": 0,
                                  "channel": "https://conda.anaconda.org/conda-forge/noarch", "files": files}))
    return record


def test_pip_is_not_let_to_change_what_conda_installed_and_the_conda_command_is_said(tmp_path: Path) -> None:
    uv = _uv()
    env = tmp_path / "env"
    python = _uv_env(env)
    subprocess.run([uv, "pip", "install", "-q", "packaging==23.0", "six==1.16.0", "--python", str(python)], check=True, capture_output=True)
    [dist_info] = list(env.glob("lib/python*/site-packages/packaging-23.0.dist-info"))
    prefix = str(env)
    assert prepare({"install": ["packaging==24.0"]}, str(python), "uv", prefix=prefix).resolved == {"packaging": "24.0"}  # no conda yet
    _conda_record(env, dist_info, "packaging", "23.0")
    with pytest.raises(NotApplicable) as refused:
        prepare({"install": ["packaging==24.0"]}, str(python), "uv", prefix=prefix)
    said = str(refused.value)
    assert said.startswith("packaging 23.0 in this conda environment came from conda (conda-meta/packaging-23.0-pyhd8ed1ab_0.json): ")
    assert "`conda install -p %s -c conda-forge packaging`" % prefix in said
    with pytest.raises(NotApplicable, match="conda remove -p %s packaging" % prefix):
        prepare({"uninstall": ["packaging"]}, str(python), "uv", prefix=prefix)
    # what pip installed there itself stays pip's to change
    assert prepare({"install": ["six==1.17.0"]}, str(python), "uv", prefix=prefix).resolved == {"six": "1.17.0"}
