"""What every remedy kind shares: a prepared change (`Action`) and its one error type.

A kind module (config_step, pip_step, env_step) turns a Remedy's action into an Action at
plan time, without changing anything. `apply(step)` first writes into the journal step
what undo needs (file backups, stashed distributions), then changes the system; `confirm()`
is the kind's own proof right after (the config re-parsed, the distribution gone); each
kind's module-level `undo(step)` reverts from the journal step alone, in a later process.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, List, Protocol

if TYPE_CHECKING:
    from envdoctor.fix.journal import JournalStep


# Each kind is its own module, imported by name when a step of that kind is planned or undone:
# `prepare(...)` makes its Action, `undo(step)` reverts a journal step.
KIND_MODULES = {"config": "envdoctor.fix.config_step", "pip": "envdoctor.fix.pip_step", "env": "envdoctor.fix.env_step"}


def kind_module(kind: str) -> ModuleType:
    module = KIND_MODULES.get(kind)
    if module is None:
        raise FixError("unknown kind %r" % kind)
    return importlib.import_module(module)


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
