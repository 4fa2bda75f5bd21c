"""The remedy kinds, each declared once: the action keys `fix` reads, the command lines the
report prints, the place in the plan (least invasive first), and the module that prepares,
applies and undoes it.

    kind     keys of its action                                  rank  applied by
    config   set, when, reduce, parts                            0     pipeline/fix/kinds/config.py
    env      set_env, unset_env                                  1     pipeline/fix/kinds/env.py
    pip      install, upgrade, uninstall, constraints, ...       2     pipeline/fix/kinds/pip.py (3 when it touches torch)
    manual   build_from_source, driver_min                       9     (shown, never applied)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from envdoctor.target.remedies.commandline import PIP as PIP_INSTALLER
from envdoctor.target.remedies.commandline import env_commands, pip_commands
from envdoctor.target.versions import requirement_name

Commands = Callable[[Mapping[str, Any], Optional[str], str], Tuple[str, ...]]  # (action, python, installer)


def _no_commands(action: Mapping[str, Any], python: Optional[str], installer: str = PIP_INSTALLER) -> Tuple[str, ...]:
    """Config actions print nothing: `fix` edits the config's span, and the remedy's words name the settings."""
    return ()


def _env(action: Mapping[str, Any], python: Optional[str], installer: str = PIP_INSTALLER) -> Tuple[str, ...]:
    return env_commands(action)


@dataclass(frozen=True)
class RemedyKind:
    name: str  # Remedy.kind
    keys: Tuple[str, ...]  # the closed vocabulary of its action
    rank: int  # the plan's order: a config edit before a variable, a package, torch itself
    commands: Commands  # (action, target python, its installer) -> the command lines printed for it
    applier: Optional[str] = None  # the module of `fix` that prepares, applies and undoes it; None: never applied


CONFIG = RemedyKind(
    "config",
    # set: {setting: value} on the training config's intent; when: the values it applies to; reduce: settings to
    # lower; parts: the model parts a per-part setting (weight_dtype) is changed for (all when absent)
    ("set", "when", "reduce", "parts"),
    0, _no_commands, "envdoctor.pipeline.fix.kinds.config")
ENV = RemedyKind("env", ("set_env", "unset_env"), 1, _env, "envdoctor.pipeline.fix.kinds.env")
PIP = RemedyKind(
    "pip",
    # install / upgrade: requirement strings; uninstall: distribution names; constraints: requirements that
    # must stay as they are (torch pinned); index_url; force_reinstall / no_deps / no_build_isolation /
    # no_cache: bool; build_env: {variable: value} for the build
    ("install", "upgrade", "uninstall", "constraints", "index_url", "force_reinstall", "no_deps",
     "no_build_isolation", "no_cache", "build_env"),
    2, pip_commands, "envdoctor.pipeline.fix.kinds.pip")
MANUAL = RemedyKind("manual", ("build_from_source", "driver_min"), 9, _no_commands)

KINDS: Dict[str, RemedyKind] = {kind.name: kind for kind in (CONFIG, ENV, PIP, MANUAL)}
TORCH_RANK = 3  # a pip remedy that installs, upgrades or removes torch itself: after every other package


def kind_of(name: str) -> RemedyKind:
    """The kind a remedy names; an unknown one is shown like a manual step, never applied."""
    return KINDS.get(name, MANUAL)


def touches_torch(action: Mapping[str, Any]) -> bool:
    names = (requirement_name(r) for key in ("install", "upgrade", "uninstall") for r in action.get(key) or ())
    return "torch" in names


def rank_of(kind: str, action: Mapping[str, Any]) -> int:
    """Where a remedy stands among the ways out: least invasive first."""
    if kind == PIP.name and touches_torch(action):
        return TORCH_RANK
    return kind_of(kind).rank


def commands_for(kind: str, action: Mapping[str, Any], python: Optional[str], installer: str = PIP_INSTALLER) -> Tuple[str, ...]:
    """What a remedy of `kind` prints for `action`, in the target's installer."""
    return kind_of(kind).commands(action, python, installer)
