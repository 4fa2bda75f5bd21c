"""What every remedy kind shares: a prepared change (`Action`) and its one error type.

A kind's module (pipeline/fix/kinds/: config, pip, env; named by the kinds table,
envdoctor.target.remedies.kinds) turns a Remedy's action into an Action at
plan time, without changing anything. `apply(step)` first writes into the journal step
what undo needs (file backups, stashed distributions), then changes the system; `confirm()`
is the kind's own proof right after (the config re-parsed, the distribution gone); each
kind's module-level `undo(step)` reverts from the journal step alone, in a later process.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Protocol, TypeVar, Union

from envdoctor.target.remedies.kinds import KINDS

if TYPE_CHECKING:
    from envdoctor.pipeline.fix.journal import JournalStep


def kind_module(kind: str) -> ModuleType:
    """The module that applies remedies of `kind`, imported when a step of that kind is planned or
    undone: `prepare_steps(actions, target)` makes its Actions, `undo(step)` reverts a journal step."""
    found = KINDS.get(kind)
    if found is None:
        raise FixError("unknown kind %r" % kind)
    if found.applier is None:
        raise FixError("a %s step is shown, never applied or undone" % kind)
    return importlib.import_module(found.applier)


class FixError(Exception):
    """A step that cannot be planned, applied, confirmed or undone: one line for the user."""


class NotApplicable(FixError):
    """This remedy cannot be applied here (no config names the setting, a manual step, ...):
    the plan shows it with the reason and chooses another."""


class Action(Protocol):
    kind: str

    def lines(self) -> List[str]:
        """What the plan shows: exact command lines, or a unified diff."""

    def to_dict(self) -> Dict[str, Any]:
        """The plan step as data (--json), and what the journal keeps of it."""

    def apply(self, step: JournalStep) -> None:
        """Record what undo needs into `step` (and save it), then change the system.
        Raises FixError; a half-done apply is reverted by undo(step)."""

    def confirm(self) -> None:
        """The kind's own proof right after apply; raises FixError."""


Prepared = TypeVar("Prepared")


def prepared(make: Callable[[], Prepared]) -> Union[Prepared, NotApplicable]:
    """What a kind's `prepare_steps` returns for one action: the Action, or why it cannot apply here."""
    try:
        return make()
    except NotApplicable as exc:
        return exc
