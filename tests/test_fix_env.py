"""The "env" kind (a file the user sources, undone byte for byte) and plans made from
recorded GPU facts, where this machine has no GPU to fix."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import ENV, handwritten, judge

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.fix.action import FixError
from envdoctor.pipeline.fix.journal import Journal, JournalStep
from envdoctor.pipeline.fix.kinds import env as env_kind
from envdoctor.pipeline.fix.plan import make_plan
from envdoctor.target.model import CheckResult, Report, status_from_findings

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}


def journal_step(tmp_path: Path, plan: Dict[str, Any]) -> JournalStep:
    run = Journal(tmp_path / "state").begin({"python": "python"})
    return run.add_step(1, "env", plan)


def report_of(check_id: str, snapshot: str) -> Report:
    """A report holding one check judged on a hand-written snapshot of a GPU machine."""
    facts = handwritten(snapshot)
    findings = judge(CHECKS[check_id], facts)
    result = CheckResult(check_id, check_id, status_from_findings(findings), facts, findings)
    # planned for this interpreter, whose pip the plan asks for its version; never applied
    return Report(environment={"executable": sys.executable, "torch": ENV.torch, "torch_import": {"ok": True}}, checks=[result])


def test_variables_go_to_a_file_beside_the_users_own_lines_and_undo_restores_it(tmp_path: Path) -> None:
    path = tmp_path / "env.sh"
    mine = b"# my own\nexport HF_HOME=/data/hf\nexport CUDA_VISIBLE_DEVICES=0,1\n"
    path.write_bytes(mine)
    action = env_kind.prepare({"unset_env": ["CUDA_VISIBLE_DEVICES"], "set_env": {"ACCELERATE_MIXED_PRECISION": "no"}}, path)
    assert action.lines()[:2] == ["export ACCELERATE_MIXED_PRECISION=no", "unset CUDA_VISIBLE_DEVICES"]
    assert action.variables() == {"CUDA_VISIBLE_DEVICES": None, "ACCELERATE_MIXED_PRECISION": "no"}
    step = journal_step(tmp_path, action.to_dict())
    action.apply(step)
    action.confirm()
    assert path.read_text(encoding="utf-8") == ("# my own\nexport HF_HOME=/data/hf\n"
                                                 "export ACCELERATE_MIXED_PRECISION=no\nunset CUDA_VISIBLE_DEVICES\n")
    env_kind.undo(step)
    assert path.read_bytes() == mine


def test_a_new_file_is_removed_on_undo_and_a_changed_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state" / "env.sh"
    action = env_kind.prepare({"set_env": {"ACCELERATE_MIXED_PRECISION": "bf16"}}, path)
    step = journal_step(tmp_path, action.to_dict())
    action.apply(step)
    assert "export ACCELERATE_MIXED_PRECISION=bf16\n" in path.read_text(encoding="utf-8")
    env_kind.undo(step)
    assert not path.exists()
    action.apply(step := journal_step(tmp_path, action.to_dict()))
    path.write_text("export OTHER=1\n", encoding="utf-8")
    with pytest.raises(FixError, match="changed after the fix"):
        env_kind.undo(step)


def test_a_hidden_gpu_is_fixed_by_unsetting_the_variable() -> None:
    """cuda-compat on an A10G with CUDA_VISIBLE_DEVICES='' (recorded facts): an env step."""
    plan = make_plan(report_of("cuda-compat", "cuda-compat-visible-devices-empty.json"))
    (step,) = plan.steps
    assert step.kind == "env" and step.action is not None
    assert step.action.lines()[0] == "unset CUDA_VISIBLE_DEVICES"
    assert plan.checks() == ["cuda-compat"]


def test_a_cpu_only_torch_on_a_gpu_machine_gets_the_build_for_its_driver_resolved_before_anything_changes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A T4 with driver 535 and a CPU wheel (recorded facts): the step installs the CUDA build
    that driver runs, from its index. pip resolves it at plan time; with that index out of reach
    (a proxy that answers nothing) or a conflict, the plan says why in one line and shows
    the command as a manual step instead of applying one that cannot work."""
    for variable in ("HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(variable, "http://127.0.0.1:9")
    monkeypatch.setenv("PIP_RETRIES", "0")
    plan = make_plan(report_of("cuda-compat", "cuda-compat-cpu-torch-t4-driver-535.json"))
    (step,) = plan.steps
    assert step.kind == "manual" and step.remedy.id == "torch-cuda-wheel"
    [command] = step.remedy.commands
    assert command.endswith(" -m pip install torch==2.13.0+cu126 --index-url https://download.pytorch.org/whl/cu126"), command
    [(_, why)] = step.passed_over
    # from here: "cannot reach download.pytorch.org", or the conflict pip names with this machine's own constraints
    assert why.startswith("pip cannot install torch: ") and "\n" not in why and "for help visit" not in why, why


def test_a_remedy_that_cannot_apply_here_is_shown_with_why() -> None:
    """The same finding for a target without a usable pip: a step shown, never applied."""
    report = report_of("cuda-compat", "cuda-compat-cpu-torch-t4-driver-535.json")
    report = Report(dict(report.environment, executable="/nonexistent/venv/bin/python"), report.checks)
    (step,) = make_plan(report).steps
    assert step.kind == "manual" and step.action is None and step.remedy.id == "torch-cuda-wheel"
    assert "cannot run the target interpreter" in step.passed_over[0][1]
