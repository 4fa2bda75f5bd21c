"""Kind "pip" for real: the target's own pip in a throwaway venv with torch 2.13.0 (CPU) and
the PyPI impostor `apex` 0.9.10.dev0; every change undone offline (PIP_NO_INDEX=1) from the
journal alone, proven by `pip freeze --all` and the hashes of the stashed files.

One venv serves the whole module (torch installs once): each test leaves it as it found it,
which is what undo must prove anyway.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
from conftest import IMPOSTOR_APEX, broken_build_project, pip_install

from envdoctor.pipeline.fix import stash
from envdoctor.pipeline.fix.action import FixError, NotApplicable
from envdoctor.pipeline.fix.journal import Journal, JournalStep
from envdoctor.pipeline.fix.kinds.pip import PipAction, pip_version, prepare
from envdoctor.pipeline.fix.undo import undo_run
from envdoctor.target.model import Target
from envdoctor.target.remedies.actions import pip_action
from envdoctor.target.remedies.commandline import pip_commands

pytestmark = [pytest.mark.slow, IMPOSTOR_APEX]  # they change the impostor venv, and undo

@pytest.fixture()
def target(impostor_apex_python: Path) -> Path:
    """torch 2.13 and the impostor apex; every test leaves it as it found it (it undoes)."""
    return impostor_apex_python


@pytest.fixture()
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pip in the target sees no index: what undo must cope with."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    yield


def freeze(python: Path) -> str:
    return subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True).stdout


def hashes(python: Path, names: List[str]) -> Dict[str, str]:
    """sha256 of every installed file of `names` (RECORD's list, read in the target)."""
    found: Dict[str, str] = {}
    for dist in stash.installed(str(python), names).values():
        for path in dist.files or ():
            if Path(path).is_file():
                found[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return found


def env_of(python: Path) -> Target:
    return Target(python=str(python), torch=stash.listing(str(python))["torch"])


def start(tmp_path: Path, action: PipAction) -> JournalStep:
    """A journal run with the action as step 1, "started" as the lead's apply marks it."""
    run = Journal(tmp_path / "state").begin({"python": action.python})
    step = run.add_step(1, "pip", action.to_dict())
    step.mark("started")
    return step


def undo_later(tmp_path: Path) -> List[str]:
    """`envdoctor undo` in a later process: the run read back from disk."""
    return undo_run(Journal(tmp_path / "state").runs()[-1])


def test_uninstall_apex_then_undo_offline(target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = freeze(target)
    assert "apex==0.9.10.dev0" in before.splitlines()
    apex_files = hashes(target, ["apex"])
    assert any(p.endswith("METADATA") for p in apex_files)

    action = prepare({"uninstall": ["apex"]}, str(target))
    assert action.lines() == list(pip_commands({"uninstall": ["apex"]}, str(target)))
    step = start(tmp_path, action)
    action.apply(step)
    step.mark("applied")
    action.confirm()
    after = freeze(target)
    assert "apex" not in after.lower()
    assert [line for line in after.splitlines() if line.startswith("torch==")] == ["torch==2.13.0+cpu"]
    stashed = Journal(tmp_path / "state").runs()[-1].steps[0].record["stashed"]
    assert [(s["name"], s["version"]) for s in stashed] == [("apex", "0.9.10.dev0")]

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    lines = undo_later(tmp_path)
    assert lines and lines[0].startswith("step 1 (pip) undone")
    assert freeze(target) == before
    assert hashes(target, ["apex"]) == apex_files
    assert Journal(tmp_path / "state").runs()[-1].status == "undone"


def test_a_missing_requirement_is_refused_at_plan_time_and_at_apply_time_undone(target: Path, tmp_path: Path, offline: None) -> None:
    """pip's dry run at plan time finds no such distribution: the step is not applicable, in one
    line. Prepared earlier (its index gone since), the same step fails at apply and undoes."""
    before = freeze(target)
    wanted = pip_action(env_of(target), install=["envdoctor-no-such-dist==1.0"])
    assert wanted["constraints"] == ["torch==2.13.0+cpu"]
    with pytest.raises(NotApplicable, match=r"^pip cannot install envdoctor-no-such-dist: .*envdoctor-no-such-dist") as refused:
        prepare(wanted, str(target))
    assert "\n" not in str(refused.value)
    action = PipAction(action=wanted, python=str(target), pip=pip_version(str(target)))
    step = start(tmp_path, action)
    with pytest.raises(FixError, match="envdoctor-no-such-dist") as caught:
        action.apply(step)
    assert "\n" not in str(caught.value)
    step.mark("failed", error=str(caught.value))
    undo_later(tmp_path)
    assert freeze(target) == before


def test_an_index_that_cannot_be_reached_is_said_so(target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No network to the index: one line naming the host, not pip's "no matching distribution"; nothing changed."""
    monkeypatch.setenv("PIP_RETRIES", "1")  # pip says why a connection failed when it retries it
    monkeypatch.setenv("PIP_TIMEOUT", "5")
    before = freeze(target)
    # a name no local wheel folder (PIP_FIND_LINKS) can answer: pip has to ask the index
    wanted = pip_action(env_of(target), install=["envdoctor-no-such-dist==1.0"], index_url="http://127.0.0.1:9/simple")
    with pytest.raises(NotApplicable) as refused:  # at plan time, before anything changes
        prepare(wanted, str(target))
    assert str(refused.value).startswith("pip cannot install envdoctor-no-such-dist: cannot reach 127.0.0.1: "), refused.value
    action = PipAction(action=wanted, python=str(target), pip=pip_version(str(target)))  # planned while the index answered
    step = start(tmp_path, action)
    with pytest.raises(FixError) as caught:
        action.apply(step)
    assert str(caught.value) == str(refused.value)
    step.mark("failed", error=str(caught.value))
    undo_later(tmp_path)
    assert freeze(target) == before


def test_install_failing_midway_after_the_uninstall_is_undone(target: Path, tmp_path: Path, offline: None) -> None:
    project = broken_build_project(tmp_path / "broken", "envdoctor-broken", "1.0")
    before = freeze(target)
    apex_files = hashes(target, ["apex"])

    action = prepare({"uninstall": ["apex"], "install": [str(project)], "no_deps": True}, str(target))
    step = start(tmp_path, action)
    with pytest.raises(FixError, match="pip install"):
        action.apply(step)
    assert "apex" not in freeze(target).lower()  # midway: the uninstall ran, the install did not
    assert Journal(tmp_path / "state").runs()[-1].steps[0].record["ran"] == ["uninstall", "install"]  # on disk before pip ran
    step.mark("failed")

    undo_later(tmp_path)
    assert freeze(target) == before
    assert hashes(target, ["apex"]) == apex_files


def test_pip_without_report_stashes_the_named_requirements(target: Path, tmp_path: Path, offline: None) -> None:
    """A target pip older than 22.2 has no --dry-run --report: the named requirements that are
    installed are stashed instead, and undo puts them back byte for byte (here pip finds apex
    already satisfied, so the only change is undo's own uninstall and restore), also when the
    undo itself was interrupted and is run again."""
    before = freeze(target)
    apex_files = hashes(target, ["apex"])
    action = PipAction(action=pip_action(env_of(target), install=["apex==0.9.10.dev0"], no_deps=True), python=str(target), pip=(22, 0))
    assert action.will_install() is None
    step = start(tmp_path, action)
    action.apply(step)
    action.confirm()
    assert [s["name"] for s in step.record["stashed"]] == ["apex"]
    step.mark("confirmed")

    # Ctrl-C in the undo, after its own uninstall and before the restore: run again, it finishes
    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stash, "restore", interrupt)
        with pytest.raises(KeyboardInterrupt):
            undo_later(tmp_path)
    assert "apex" not in freeze(target).lower()
    undo_later(tmp_path)
    assert freeze(target) == before
    assert hashes(target, ["apex"]) == apex_files


def test_undo_refuses_what_changed_since_the_fix(target: Path, tmp_path: Path, offline: None) -> None:
    before = freeze(target)
    action = prepare({"uninstall": ["apex"]}, str(target))
    step = start(tmp_path, action)
    action.apply(step)
    step.mark("confirmed")
    # the user puts apex back themselves (here from the stash, to stay offline)
    entry = step.record["stashed"][0]
    stash.restore(entry, step.dir / "stash" / entry["folder"])
    with pytest.raises(FixError, match=r"changed since the fix: apex absent → 0\.9\.10\.dev0"):
        undo_later(tmp_path)
    assert freeze(target) == before
    assert Journal(tmp_path / "state").runs()[-1].steps[0].status == "confirmed"


def test_prepare_refuses_unknown_keys_and_a_target_without_pip(target: Path, tmp_path: Path) -> None:
    with pytest.raises(NotApplicable, match="teleport"):
        prepare({"install": ["numpy"], "teleport": True}, str(target))
    with pytest.raises(NotApplicable, match="nothing to install"):
        prepare({"constraints": ["torch==2.13.0"]}, str(target))
    bare = tmp_path / "bare"
    subprocess.run([str(target), "-m", "venv", "--without-pip", str(bare)], check=True, capture_output=True)
    with pytest.raises(NotApplicable, match="has no pip"):
        prepare({"uninstall": ["apex"]}, str(bare / "bin" / "python"))


def test_upgrade_replaces_a_distribution_and_undo_restores_it_offline(target: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Needs the registry (packaging 23.0, then 24.0); undo runs with no index."""
    try:
        pip_install(target, "packaging==23.0")
    except subprocess.CalledProcessError as exc:
        pytest.skip("the package registry is not reachable: %s" % (exc.stderr or "").strip().splitlines()[-1:])
    before = freeze(target)
    old_files = hashes(target, ["packaging"])
    action = prepare(pip_action(env_of(target), install=["packaging==24.0"]), str(target))
    step = start(tmp_path, action)
    action.apply(step)
    action.confirm()
    assert "packaging==24.0" in freeze(target).splitlines()
    assert [s["version"] for s in step.record["stashed"]] == ["23.0"]
    step.mark("confirmed")

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    undo_later(tmp_path)
    assert freeze(target) == before
    assert "packaging==23.0" in before.splitlines()
    assert hashes(target, ["packaging"]) == old_files
