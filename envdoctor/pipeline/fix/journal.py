"""The fix journal: every run of `envdoctor fix` as one JSON file, written before anything
changes, so that `envdoctor undo` (a later process, offline) can revert it.

Layout under the state folder:

    runs/<id>/journal.json   the run: meta, status, and each step's plan, status and record
    runs/<id>/step-<n>/      what a step's undo needs besides its record (file backups,
                             stashed distributions)

Every save replaces journal.json atomically (a temp file in the same folder, fsync,
os.replace): a Ctrl-C or a crash at any moment leaves the previous or the next state,
never half a file.
"""

from __future__ import annotations

import datetime
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.pipeline.fix.action import FixError
from envdoctor.pipeline.fix.atomic import write_atomically

SCHEMA = "envdoctor-journal/1"
JOURNAL_FILE = "journal.json"
# partly-verified: some steps were verified and kept, the others rolled back
RUN_STATUSES = ("applying", "applied", "verified", "partly-verified", "failed", "rolled-back", "undone", "interrupted")
STEP_STATUSES = ("pending", "started", "applied", "confirmed", "failed", "undone")


class JournalError(Exception):
    """The journal cannot be written or read: one line for the user; nothing was changed."""


def state_dir(environ: Optional[Mapping[str, str]] = None) -> Path:
    """$ENVDOCTOR_STATE_DIR, else platformdirs.user_state_dir("envdoctor")."""
    env = os.environ if environ is None else environ
    given = env.get("ENVDOCTOR_STATE_DIR")
    if given:
        return Path(given).expanduser()
    import platformdirs  # only `fix` and `undo` need it: `check` never pays for the import

    return Path(platformdirs.user_state_dir("envdoctor"))


def _reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def write_json_atomically(path: Path, data: Any) -> None:
    """`path` holds the old JSON or the new one, whatever interrupts this."""
    # ASCII with escapes: a config path that is not UTF-8 (surrogate-escaped bytes) round-trips exactly
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    try:
        write_atomically(path, text.encode("utf-8"))
    except OSError as exc:
        raise JournalError("cannot write the fix journal %s: %s" % (path, _reason(exc))) from exc


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def _new_id(now: datetime.datetime) -> str:
    """"20261123-141502-3f2a": UTC time first, so ids sort by time."""
    return now.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _check(status: str, allowed: tuple) -> str:
    if status not in allowed:
        raise ValueError("status %r is not one of %s" % (status, ", ".join(allowed)))
    return status


@dataclass
class JournalStep:
    """One planned change: its plan, its fate, and what its kind's undo needs (`record`)."""

    number: int
    kind: str  # "config" | "pip" | "env"
    plan: Dict[str, Any]
    run: RunJournal = field(repr=False, compare=False)
    status: str = "pending"
    record: Dict[str, Any] = field(default_factory=dict)
    info: Dict[str, Any] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        """root/runs/<id>/step-<n>/: file backups and stashed distributions."""
        path = self.run.path / ("step-%d" % self.number)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError("cannot write the fix journal in %s: %s" % (path, _reason(exc))) from exc
        return path

    def save(self) -> None:
        self.run.save()

    def mark(self, status: str, **info: Any) -> None:
        self.status = _check(status, STEP_STATUSES)
        self.info.update(info)
        self.save()

    def to_dict(self) -> Dict[str, Any]:
        return {"number": self.number, "kind": self.kind, "plan": self.plan, "status": self.status,
                "record": self.record, "info": self.info}


@dataclass
class RunJournal:
    """One `envdoctor fix` run, saved whole as root/runs/<id>/journal.json."""

    id: str
    path: Path
    meta: Dict[str, Any]
    status: str = "applying"
    steps: List[JournalStep] = field(default_factory=list)
    info: Dict[str, Any] = field(default_factory=dict)

    @property
    def created(self) -> str:
        return str(self.meta.get("created") or "")

    def add_step(self, number: int, kind: str, plan: Dict[str, Any]) -> JournalStep:
        step = JournalStep(number=number, kind=kind, plan=dict(plan), run=self)
        self.steps.append(step)
        self.save()
        return step

    def step(self, number: int) -> JournalStep:
        for step in self.steps:
            if step.number == number:
                return step
        raise KeyError(number)

    def set_status(self, status: str, **info: Any) -> None:
        self.status = _check(status, RUN_STATUSES)
        self.info.update(info)
        self.save()

    def save(self) -> None:
        write_json_atomically(self.path / JOURNAL_FILE, self.to_dict())

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": SCHEMA, "id": self.id, "status": self.status, "meta": self.meta, "info": self.info,
                "steps": [s.to_dict() for s in self.steps]}

    @classmethod
    def load(cls, path: Path) -> RunJournal:
        """The run saved in folder `path`; JournalError when its file cannot be read."""
        file = path / JOURNAL_FILE
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
            if data.get("schema") != SCHEMA:
                raise ValueError("not an %s file" % SCHEMA)
            run = cls(id=data["id"], path=path, meta=dict(data["meta"]), status=data["status"], info=dict(data.get("info") or {}))
            for s in data["steps"]:
                run.steps.append(JournalStep(number=int(s["number"]), kind=s["kind"], plan=dict(s["plan"]), run=run,
                                             status=s["status"], record=dict(s["record"]), info=dict(s.get("info") or {})))
        except OSError as exc:
            raise JournalError("cannot read the fix journal %s: %s" % (file, _reason(exc))) from exc
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise JournalError("the fix journal %s is damaged: %s" % (file, exc)) from exc
        return run


class Journal:
    """The runs under a state folder (state_dir())."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.damaged: List[Dict[str, str]] = []  # runs whose journal cannot be read: {"id", "error"}, from runs()

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    def begin(self, meta: Dict[str, Any]) -> RunJournal:
        """A new run, saved at once: proof that the journal can be written before anything changes."""
        now = _now()
        full = dict(meta)
        full.setdefault("created", now.isoformat())
        if "envdoctor" not in full:
            from envdoctor.target.version import __version__

            full["envdoctor"] = __version__
        for _ in range(8):  # two runs in one second: another random suffix
            run_id = _new_id(now)
            path = self.runs_dir / run_id
            try:
                path.mkdir(parents=True)
            except FileExistsError:
                continue
            except OSError as exc:
                raise JournalError("cannot write the fix journal in %s: %s (set ENVDOCTOR_STATE_DIR to a writable folder)"
                                   % (self.root, _reason(exc))) from exc
            run = RunJournal(id=run_id, path=path, meta=full)
            try:
                run.save()
            except JournalError as exc:
                raise JournalError("%s (set ENVDOCTOR_STATE_DIR to a writable folder)" % exc) from exc
            return run
        raise JournalError("cannot create a new run folder in %s" % self.runs_dir)

    def runs(self) -> List[RunJournal]:
        """Every run, oldest first."""
        if not self.runs_dir.is_dir():
            return []
        try:
            folders = [p for p in self.runs_dir.iterdir() if (p / JOURNAL_FILE).is_file()]
        except OSError as exc:
            raise JournalError("cannot read the fix journal in %s: %s" % (self.runs_dir, _reason(exc))) from exc
        runs: List[RunJournal] = []
        self.damaged = []
        for folder in sorted(folders):
            try:
                runs.append(RunJournal.load(folder))
            except JournalError as exc:  # one damaged run is reported; it does not hide the others
                self.damaged.append({"id": folder.name, "error": str(exc)})
        return sorted(runs, key=lambda r: (r.created, r.id))

    def find(self, run_id: Optional[str] = None) -> RunJournal:
        """The run `run_id` (or the one a unique prefix names); None: the newest run that still
        has changes in place (not undone, not rolled back)."""
        runs = self.runs()
        damaged = [d for d in self.damaged if run_id is not None and d["id"].startswith(run_id)]
        if damaged and not [r for r in runs if r.id.startswith(str(run_id))]:
            raise FixError(damaged[0]["error"])
        if not runs:
            raise FixError("no fix run is recorded in %s" % self.runs_dir)
        if run_id is None:
            live = [r for r in runs if r.status not in ("undone", "rolled-back")]
            if not live:
                raise FixError("nothing to undo: every fix run in %s is undone or was rolled back" % self.runs_dir)
            return live[-1]
        exact = [r for r in runs if r.id == run_id]
        matches = exact or [r for r in runs if r.id.startswith(run_id)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise FixError("no fix run %r in %s (recorded: %s)" % (run_id, self.runs_dir, ", ".join(r.id for r in runs[-5:])))
        raise FixError("fix run %r is ambiguous: %s" % (run_id, ", ".join(r.id for r in matches)))
