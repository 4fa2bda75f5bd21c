"""`envdoctor undo`: a recorded fix run reverted, last step first, from the journal alone."""

from __future__ import annotations

from typing import Callable, List, Sequence, cast

from envdoctor.pipeline.fix.action import FixError, kind_module
from envdoctor.pipeline.fix.journal import JournalError, JournalStep, RunJournal

# Steps that may have changed something: the record is saved before a kind changes anything,
# and a step is "started" from then on (a failed step too: it may have stopped midway).
UNDOABLE = ("started", "applied", "confirmed", "failed")


def kind_undo(kind: str) -> Callable[[JournalStep], None]:
    """The module-level undo(step) of a kind."""
    return cast(Callable[[JournalStep], None], kind_module(kind).undo)


def undo_run(run: RunJournal) -> List[str]:
    """Undo every step that may have changed something, in reverse order; each is marked
    "undone" as soon as it is, the run "undone" at the end. A step that cannot be undone
    raises FixError naming it, after the later steps were undone (their marks are saved)."""
    if run.status == "undone":
        raise FixError("fix run %s is already undone" % run.id)
    lines = undo_steps(run, [s.number for s in run.steps])
    if _recorded(run.set_status, "undone"):
        lines.append("the journal could not record that the run is undone (it cannot be written); nothing is left to undo")
    return lines


def _recorded(mark: Callable[..., None], status: str) -> str:
    """Mark a status; the journal write failing (a full disk) does not undo what was undone: the
    in-memory status is set either way, and the error is returned for the summary ("" when saved)."""
    try:
        mark(status)
    except JournalError as exc:
        return str(exc)
    return ""


def undo_steps(run: RunJournal, numbers: Sequence[int]) -> List[str]:
    """Undo these steps of the run (those that may have changed something), newest first, each
    marked "undone" as soon as it is; the run's other steps stay as they are."""
    lines: List[str] = []
    for step in sorted((s for s in run.steps if s.number in numbers), key=lambda s: s.number, reverse=True):
        if step.status not in UNDOABLE:
            continue
        try:
            kind_undo(step.kind)(step)
        except FixError as exc:
            raise FixError("step %d (%s): %s" % (step.number, step.kind, exc)) from exc
        unrecorded = _recorded(step.mark, "undone")
        lines.append("step %d (%s) undone: %s%s" % (step.number, step.kind, _what(step),
                                                     " (the journal could not record it)" if unrecorded else ""))
    return lines


def _what(step: JournalStep) -> str:
    commands = step.plan.get("commands") or step.plan.get("lines")
    if isinstance(commands, list) and commands:
        return "; ".join(str(c) for c in commands)
    return str(step.plan.get("summary") or step.kind)
