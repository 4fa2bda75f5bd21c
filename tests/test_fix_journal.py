"""The fix journal: runs saved whole and atomically, found again by a later process, an
unwritable state folder refused before anything changes, and undo_run's order and marks."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Iterator, List

import pytest
from conftest import run_envdoctor

from envdoctor.pipeline.fix import journal as journal_module
from envdoctor.pipeline.fix.action import FixError
from envdoctor.pipeline.fix.journal import Journal, JournalError, RunJournal, state_dir
from envdoctor.pipeline.fix.undo import undo_run


def meta() -> dict:
    return {"python": "/venv/bin/python", "argv": ["fix", "--yes"], "configs": []}


def on_disk(run: RunJournal) -> dict:
    return dict(json.loads((run.path / "journal.json").read_text(encoding="utf-8")))


def test_state_dir_from_the_environment_else_platformdirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert state_dir({"ENVDOCTOR_STATE_DIR": str(tmp_path / "s")}) == tmp_path / "s"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))  # platformdirs' own rule on Linux
    monkeypatch.delenv("ENVDOCTOR_STATE_DIR", raising=False)
    assert state_dir({}) == tmp_path / "xdg" / "envdoctor"
    assert state_dir() == tmp_path / "xdg" / "envdoctor"


def test_round_trip_and_status_transitions_saved_at_once(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    run = journal.begin(meta())
    assert run.path == tmp_path / "runs" / run.id and (run.path / "journal.json").is_file()
    assert run.status == "applying" and run.meta["envdoctor"] and run.meta["created"]
    assert on_disk(run)["status"] == "applying"

    step = run.add_step(1, "pip", {"kind": "pip", "commands": ["python -m pip uninstall -y apex"]})
    assert on_disk(run)["steps"][0]["status"] == "pending"
    step.mark("started")
    step.record["listing_before"] = {"apex": "0.9.10.dev0"}
    step.save()
    assert on_disk(run)["steps"][0]["record"] == {"listing_before": {"apex": "0.9.10.dev0"}}
    assert step.dir == run.path / "step-1" and step.dir.is_dir()
    step.mark("applied", message="apex uninstalled")
    run.set_status("applied")
    run.set_status("verified", checks=["apex"])

    again = Journal(tmp_path).find(run.id)  # what a later process reads
    assert again.to_dict() == run.to_dict()
    assert again.status == "verified" and again.info == {"checks": ["apex"]}
    assert again.steps[0].status == "applied" and again.steps[0].info == {"message": "apex uninstalled"}
    assert again.steps[0].dir == step.dir
    assert [p.name for p in run.path.iterdir() if p.name.startswith(".")] == []  # no temp file left

    with pytest.raises(ValueError):
        again.set_status("done")
    with pytest.raises(ValueError):
        again.steps[0].mark("finished")


def test_runs_oldest_first_and_find(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    with pytest.raises(FixError, match="no fix run"):
        journal.find()
    ids = [journal.begin(meta()).id for _ in range(3)]
    assert [r.id for r in journal.runs()] == ids
    assert all(re.match(r"^\d{8}-\d{6}-[0-9a-f]{4}$", i) for i in ids)  # UTC time first: sortable by time
    assert journal.find().id == ids[-1]
    assert journal.find(ids[0]).id == ids[0]
    with pytest.raises(FixError, match="no fix run 'nope'"):
        journal.find("nope")


def test_unwritable_state_dir_is_refused_by_begin(tmp_path: Path) -> None:
    """Under a file no user, root included, can make a folder."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    journal = Journal(state_dir({"ENVDOCTOR_STATE_DIR": str(blocker / "state")}))
    with pytest.raises(JournalError) as caught:
        journal.begin(meta())
    message = str(caught.value)
    assert "\n" not in message and str(blocker / "state") in message and "ENVDOCTOR_STATE_DIR" in message
    assert blocker.read_text(encoding="utf-8") == "x"


def test_read_only_state_dir_is_refused_by_begin(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir()
    root.chmod(0o500)
    try:
        if os.access(root, os.W_OK):
            pytest.skip("running as root: a read-only mode does not stop writes (the path-under-a-file test covers it)")
        with pytest.raises(JournalError, match="cannot write the fix journal"):
            Journal(root).begin(meta())
        assert list(root.iterdir()) == []
    finally:
        root.chmod(0o700)


def test_interrupted_save_leaves_the_previous_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the journal is written: the file on disk is the last complete state."""
    run = Journal(tmp_path).begin(meta())
    run.add_step(1, "pip", {"kind": "pip"})
    saved = on_disk(run)

    def interrupt(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(journal_module.os, "fsync", interrupt)
    run.steps[0].status = "started"
    with pytest.raises(KeyboardInterrupt):
        run.save()
    monkeypatch.undo()
    assert on_disk(run) == saved
    assert sorted(p.name for p in run.path.iterdir()) == ["journal.json"]


def test_damaged_journal_is_one_line_and_does_not_hide_the_other_runs(tmp_path: Path) -> None:
    good = Journal(tmp_path).begin(meta())
    run = Journal(tmp_path).begin(meta())
    (run.path / "journal.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(JournalError, match="damaged"):
        RunJournal.load(run.path)
    journal = Journal(tmp_path)
    assert [r.id for r in journal.runs()] == [good.id]
    assert [d["id"] for d in journal.damaged] == [run.id] and "is damaged" in journal.damaged[0]["error"]
    assert "\n" not in journal.damaged[0]["error"]
    assert journal.find(good.id).id == good.id
    with pytest.raises(FixError, match="is damaged"):
        journal.find(run.id)  # asked by name: said, in one line


def test_undo_run_reverse_order_skips_pending_and_marks(tmp_path: Path) -> None:
    """pip steps whose record was never written changed nothing: their undo is a no-op."""
    run = Journal(tmp_path).begin(meta())
    for number, status in ((1, "confirmed"), (2, "failed"), (3, "pending")):
        run.add_step(number, "pip", {"kind": "pip", "commands": ["step %d" % number]}).mark(status)
    lines: List[str] = undo_run(run)
    assert lines == ["step 2 (pip) undone: step 2", "step 1 (pip) undone: step 1"]
    again = Journal(tmp_path).find(run.id)
    assert [s.status for s in again.steps] == ["undone", "undone", "pending"]
    assert again.status == "undone"
    with pytest.raises(FixError, match="already undone"):
        undo_run(again)


def test_undo_run_unknown_kind(tmp_path: Path) -> None:
    run = Journal(tmp_path).begin(meta())
    run.add_step(1, "teleport", {}).mark("applied")
    with pytest.raises(FixError, match="unknown kind 'teleport'"):
        undo_run(run)
    assert Journal(tmp_path).find().steps[0].status == "applied"


def test_undo_without_an_id_takes_the_newest_run_still_in_place(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    first = journal.begin({"python": "python"})
    second = journal.begin({"python": "python"})
    second.set_status("undone")
    third = journal.begin({"python": "python"})
    third.set_status("rolled-back")
    assert journal.find().id == first.id
    first.set_status("undone")
    with pytest.raises(FixError, match="nothing to undo"):
        journal.find()


# ---- what `undo --list` and a second run see


def test_undo_list_shows_a_damaged_run_and_a_killed_one_as_interrupted(tmp_path: Path) -> None:
    import sys

    from conftest import run_envdoctor

    killed = Journal(tmp_path).begin(dict(meta(), python=sys.executable))  # left "applying" by a run that was killed
    damaged = Journal(tmp_path).begin(meta())
    (damaged.path / "journal.json").write_text("", encoding="utf-8")
    proc = run_envdoctor("undo", "--list", "--json", env={"ENVDOCTOR_STATE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    listed = {r["id"]: r for r in json.loads(proc.stdout)}
    assert listed[killed.id]["status"] == "interrupted" and listed[damaged.id]["status"] == "damaged"
    text = run_envdoctor("undo", "--list", env={"ENVDOCTOR_STATE_DIR": str(tmp_path)}).stdout
    assert "interrupted" in text and "damaged" in text


def test_a_second_run_on_the_same_target_is_refused_naming_the_holder_and_a_killed_holder_frees_it(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from envdoctor.pipeline.fix.lock import hold, holder

    holding = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom envdoctor.pipeline.fix.lock import hold\n"
                                "with hold(sys.argv[1], sys.argv[2], 'fix'):\n    print('held', flush=True)\n    time.sleep(600)\n",
                                str(tmp_path), "/venv/bin/python"], stdout=subprocess.PIPE, text=True)
    try:
        assert holding.stdout is not None and holding.stdout.readline().strip() == "held"
        assert (holder(tmp_path, "/venv/bin/python") or {}).get("pid") == holding.pid
        refused = r"another envdoctor fix \(pid %d, since .*\) is changing /venv/bin/python" % holding.pid
        with pytest.raises(FixError, match=refused), hold(tmp_path, "/venv/bin/python", "undo"):
            pass
        with hold(tmp_path, "/other/venv/bin/python", "fix"):  # another target is not held
            pass
    finally:
        holding.send_signal(signal.SIGKILL)  # kill -9: the operating system drops its lock
        holding.wait()
    deadline = time.monotonic() + 10
    while holder(tmp_path, "/venv/bin/python") is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    with hold(tmp_path, "/venv/bin/python", "fix"):
        assert holder(tmp_path, "/venv/bin/python") is not None  # held by this process now: a reader sees it


# A OneTrainer config forced onto a GPU this machine lacks: `fix` plans one config edit here.
CUDA_CONFIG = '{\n    "__version": 9,\n    "train_device": "cuda",\n    "train_dtype": "FLOAT_32"\n}\n'


@pytest.fixture()
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB filesystem for the journal (a tmpfs): where mounting is not allowed, skipped."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here: %s" % (made.stderr.strip() or made.returncode))
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.slow
def test_a_journal_that_fills_its_disk_at_any_point_leaves_the_config_fixed_or_exactly_as_it_was(small_disk: Path,
                                                                                                 tmp_path: Path) -> None:
    """The disk fills while `fix --yes` writes its journal, at many points of the run: each run
    either stops before anything changes (exit 2, "nothing was changed"), rolls back what it did
    and says so (exit 1), or completes and verifies (exit 0). Never a traceback, never a
    config left changed by a run that says it rolled back."""
    seen = set()
    for fill_kib in range(22, 64, 10):
        for leftover in small_disk.iterdir():
            shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        (small_disk / "filler").write_bytes(b"\0" * fill_kib * 1024)
        config = tmp_path / "train.json"
        config.write_text(CUDA_CONFIG, encoding="utf-8")
        proc = run_envdoctor("fix", "--yes", "--json", "--config", str(config), "--only", "torch-install",
                             env={"ENVDOCTOR_STATE_DIR": str(small_disk / "state")})
        assert "Traceback" not in proc.stderr, (fill_kib, proc.stderr)
        text = config.read_text(encoding="utf-8")
        if proc.returncode == 2:
            assert "cannot write the journal, so nothing was changed" in proc.stderr and text == CUDA_CONFIG
            seen.add("refused")
            continue
        outcome = json.loads(proc.stdout)["outcome"]
        if outcome["status"] == "verified":
            assert proc.returncode == 0 and '"train_device": "cpu"' in text
        else:
            assert (proc.returncode, outcome["status"]) == (1, "rolled-back"), (fill_kib, outcome)
            assert "the journal stopped taking writes mid-run" in outcome["failure"] and text == CUDA_CONFIG
        seen.add(outcome["status"])
    assert {"refused", "rolled-back"} <= seen, seen  # the sweep reached past the journal's first write
