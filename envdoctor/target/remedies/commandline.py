"""A remedy's action as command lines: what the plan and the report print, and the argv `fix`
runs. Generated here from the action, never written by hand, so that `fix` executes actions
and never parses shell strings. Commands are exact, copy-pasteable and shell-safe, and always
name the target interpreter's own installer: its pip (`python -m pip ...`), or, in an
environment uv made that has no pip, uv pointed at it (`uv pip ... --python python`)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, List, Mapping, Optional, Tuple

_SAFE = re.compile(r"^[A-Za-z0-9/._+:=,@%-]+$")


def quote(word: str) -> str:
    """POSIX-shell quoting: `numpy<2` must not become a redirection, `a[b]` a glob."""
    if word and _SAFE.match(word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def join(argv: Iterable[str]) -> str:
    return " ".join(quote(a) for a in argv)


PIP = "pip"
UV = "uv"  # https://docs.astral.sh/uv/pip/environments/: `uv pip` acts on the environment `--python` names
# pip options that uv does not take: it never asks for confirmation and never checks its own version
_NOT_FOR_UV = ("-y", "--yes", "--disable-pip-version-check")


def made_by_uv(prefix: Optional[str]) -> bool:
    """The environment at `prefix` was made by uv: its pyvenv.cfg says so (`uv = 0.13.9`)."""
    if not prefix:
        return False
    try:
        with open(os.path.join(prefix, "pyvenv.cfg"), encoding="utf-8", errors="replace") as handle:
            return any(line.split("=")[0].strip() == "uv" for line in handle)
    except OSError:
        return False


def installer_of(prefix: Optional[str], has_pip: Optional[bool]) -> str:
    """Which installer changes the environment: uv where uv made it and put no pip in it; else pip
    (a target that has none gets pip's commands, and `fix` says how to get pip)."""
    return UV if has_pip is False and made_by_uv(prefix) else PIP


def installer_argv(python: str, args: Iterable[str], installer: str = PIP, uv: str = "uv") -> List[str]:
    """The argv of one pip-style invocation: `python -m pip ARGS`, or `uv pip ARGS --python python`."""
    if installer == UV:
        return [uv, "pip", *(a for a in args if a not in _NOT_FOR_UV), "--python", python]
    return [python, "-m", "pip", *args]


def pip_command(python: Optional[str], *args: str, installer: str = PIP) -> str:
    """`<python> -m pip ARGS` (or uv's form of it): always the target interpreter's own installer.

    An argument that already carries its own double quotes (as the apex README
    writes `--config-settings "--build-option=--cpp_ext"`) is written as given.
    """
    words = [a if '"' in a else quote(a) for a in args]
    return " ".join(installer_argv(quote(python or "python"), words, installer))


@dataclass(frozen=True)
class PipRun:
    """One pip invocation of an action, as data: `fix` runs its argv, the plan prints its line."""

    args: Tuple[str, ...]  # after `python -m pip`
    env: Tuple[Tuple[str, str], ...] = ()  # build variables, sorted

    @property
    def verb(self) -> str:
        return self.args[0]

    def argv(self, python: str, installer: str = PIP, uv: str = "uv") -> List[str]:
        return installer_argv(python, self.args, installer, uv)

    def line(self, python: Optional[str], installer: str = PIP) -> str:
        return "".join("%s=%s " % (k, quote(v)) for k, v in self.env) + pip_command(python, *self.args, installer=installer)


def pip_runs(action: Mapping[str, Any]) -> Tuple[PipRun, ...]:
    """The pip invocations of a pip action: an uninstall first (when asked), then one install.
    Constraints are written as requirements on the same command line: pip must then keep
    them, with no constraints file to manage."""
    runs: List[PipRun] = []
    if action.get("uninstall"):
        runs.append(PipRun(("uninstall", "-y", *action["uninstall"])))
    wanted = list(action.get("install") or ()) + list(action.get("upgrade") or ())
    if wanted:
        args = ["install"]
        if action.get("upgrade"):
            args.append("--upgrade")
        for key, flag in (("force_reinstall", "--force-reinstall"), ("no_deps", "--no-deps"),
                          ("no_build_isolation", "--no-build-isolation"), ("no_cache", "--no-cache-dir")):
            if action.get(key):
                args.append(flag)
        args += wanted + list(action.get("constraints") or ())
        if action.get("index_url"):
            args += ["--index-url", action["index_url"]]
        env = tuple(sorted((str(k), str(v)) for k, v in (action.get("build_env") or {}).items()))
        runs.append(PipRun(tuple(args), env))
    return tuple(runs)


def pip_commands(action: Mapping[str, Any], python: Optional[str], installer: str = PIP) -> Tuple[str, ...]:
    """The command lines of a pip action (pip_runs), as the user would type them."""
    return tuple(run.line(python, installer) for run in pip_runs(action))


def env_commands(action: Mapping[str, Any]) -> Tuple[str, ...]:
    commands = ["export %s=%s" % (k, quote(str(v))) for k, v in sorted((action.get("set_env") or {}).items())]
    commands += ["unset %s" % k for k in action.get("unset_env") or ()]
    return tuple(commands)
