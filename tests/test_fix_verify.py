"""Which step a finding that appears after a fix is blamed on (fix.verify.new_findings), on
findings the real rules give for recorded snapshots and a real OneTrainer config."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path
from typing import List

from conftest import FIXTURES, facts_of, judge, load_fixture

from envdoctor.configs.detect import read_config
from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.fix.plan import Plan, Step
from envdoctor.pipeline.fix.verify import new_findings, verdicts
from envdoctor.target.model import CheckResult, Finding, Remedy, Report, Severity, Status, Target

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
# OneTrainer's own 2023 SDXL LoRA preset: `train_device: "cuda"`
ONETRAINER = FIXTURES.parent / "data" / "configs" / "onetrainer" / "legacy-2023-sdxl-lora.json"


class _Edit:
    """A config step's action, as far as blame reads it: the files it edits."""

    def __init__(self, path: str) -> None:
        self.files = [type("F", (), {"path": path})()]


def _after(config: Path, target: Target) -> Report:
    """The verification run's report once torch imports: torch 2.13.0 CPU, judged against the config."""
    env = dataclasses.replace(target, intent=read_config(str(config)))
    findings = judge(CHECKS["torch-install"], facts_of(load_fixture("cpu-torch-2.13.0.json"), "torch-install"), env)
    return Report(environment=load_fixture("cpu-torch-2.13.0.json")["environment"],
                  checks=[CheckResult("torch-install", "torch installation", Status.ERROR, findings=findings)])


def _plan(before: Report, steps: List[Step]) -> Plan:
    return Plan(steps=steps, unresolved=[], target=before.target, ran=[c.id for c in before.checks],
                seen={(f.check, f.code) for f in before.findings})


def _pip_step(number: int, finding: Finding) -> Step:
    return Step(number, "pip", finding.remedies[0], [finding])


def test_what_torch_shows_once_it_imports_is_revealed_not_blamed(tmp_path: Path) -> None:
    config = tmp_path / "train.json"
    shutil.copy(ONETRAINER, config)
    before = Report(environment=load_fixture("no-torch.json")["environment"],
                    checks=[CheckResult("torch-install", "torch installation", Status.ERROR,
                                        findings=judge(CHECKS["torch-install"], facts_of(load_fixture("no-torch.json"), "torch-install")))])
    assert not before.target.torch_ok
    install = _pip_step(1, before.findings[0])  # torch-missing: install torch
    after = _after(config, before.target)
    new = [f for f in after.findings if f.code == "config-device-missing"]
    assert new and new[0].subject["config"]["file"].endswith("train.json")  # the config's cuda, on a machine with none

    caused, revealed = new_findings(_plan(before, [install]), [install], after)
    assert caused == {} and revealed == new  # there before, unseen: the install does not roll back for it
    [verdict] = verdicts([install], after, caused)
    assert verdict.fixed  # torch-missing is gone

    # a step that edited that config is still answerable for what the config now asks
    edit = Step(2, "config", install.remedy, [], action=_Edit(os.path.realpath(config)))  # type: ignore[arg-type]
    caused, revealed = new_findings(_plan(before, [install, edit]), [install, edit], after)
    assert caused == {2: new} and revealed == []


def test_with_torch_importing_before_a_new_error_is_blamed_on_the_package_steps(tmp_path: Path) -> None:
    config = tmp_path / "train.json"
    shutil.copy(ONETRAINER, config)
    before = Report(environment=load_fixture("cpu-torch-2.13.0.json")["environment"],
                    checks=[CheckResult("torch-install", "torch installation", Status.OK)])
    assert before.target.torch_ok
    numpy = Finding("torch-install", "numpy-missing", Severity.WARNING, "numpy is not installed", (), ())
    step = Step(1, "pip", Remedy("Install numpy", kind="pip", id="numpy-install"), [numpy])
    after = _after(config, before.target)
    caused, revealed = new_findings(_plan(before, [step]), [step], after)
    assert revealed == [] and [f.code for f in caused[1]] == ["config-device-missing"]
    [verdict] = verdicts([step], after, caused)
    assert not verdict.fixed and any(e.startswith("new since the fix: torch-install") for e in verdict.evidence)


def test_a_manual_steps_finding_still_there_after_the_fix_is_left_to_the_user_and_exit_1() -> None:
    """open-r1's FSDP recipe on a machine without a GPU: one process per GPU, which only `accelerate config`
    (the user) can change. A fix that verified its other steps must not end in exit 0 with that left."""
    from envdoctor.pipeline.fix.apply import FixOutcome
    from envdoctor.pipeline.fix.verify import left

    config = FIXTURES.parent / "data" / "configs" / "accelerate" / "open-r1-fsdp.yaml"
    report = _after(config, Report(environment=load_fixture("cpu-torch-2.13.0.json")["environment"], checks=[]).target)
    manual = [f for f in report.findings if f.code == "config-distributed-no-gpu"]
    assert manual and all(r.kind == "manual" for r in manual[0].remedies)
    assert left(manual, report) == manual
    outcome = FixOutcome(status="verified", left=left(manual, report))
    assert outcome.exit_code == 1 and outcome.to_dict()["left"][0]["code"] == "config-distributed-no-gpu"
    answered = Report(report.environment, [CheckResult("torch-install", "torch installation", Status.OK)])
    assert left(manual, answered) == [] and FixOutcome(status="verified", left=left(manual, answered)).exit_code == 0


def test_a_package_that_does_not_import_after_the_fix_is_blamed_on_the_step_that_installed_it() -> None:
    """Seen for real on torch 2.0.1 with numpy 2: the plan installed bitsandbytes (its latest, 0.45.5, then failed
    to import there) and downgraded numpy; the numpy step, verified, must not be rolled back for bitsandbytes."""
    from envdoctor.target.remedies.actions import pip_remedy

    before = Report(environment=load_fixture("cpu-torch-2.0.1.json")["environment"], checks=[])
    env = before.target
    bnb = Finding("quantized-base", "bitsandbytes-missing", Severity.ERROR, "bitsandbytes does not import here", (), ())
    numpy = Finding("torch-install", "numpy-abi", Severity.WARNING, "numpy 2.1.3 does not work with this torch build", (), ())
    steps = [Step(1, "pip", pip_remedy("Install bitsandbytes", "bitsandbytes-install", env, install=["bitsandbytes"]), [bnb]),
             Step(2, "pip", pip_remedy("numpy<2", "numpy-downgrade", env, install=["numpy<2"]), [numpy])]
    broken = Finding("extension-abi", "import-fails", Severity.ERROR, "bitsandbytes 0.45.5 does not import", (), (),
                     {"package": "bitsandbytes", "version": "0.45.5", "torch": "2.0.1"})
    after = Report(environment=before.environment, checks=[CheckResult("extension-abi", "compiled extensions", Status.ERROR, findings=[broken])])
    caused, revealed = new_findings(_plan(before, steps), steps, after)
    assert caused == {1: [broken]} and revealed == []
    fixed = {v.number: v.fixed for v in verdicts(steps, after, caused)}
    assert fixed == {1: False, 2: True}
