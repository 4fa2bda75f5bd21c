"""Remedies as actions: the one place that turns a remedy's action into command lines.

A remedy of kind pip, env or config is built from its action (model.ACTION_KEYS);
its printed commands are generated here from that action, never written by hand,
so that `envdoctor fix` executes actions and never parses shell strings. Commands
are exact, copy-pasteable and shell-safe, and always name the target interpreter's
own pip.

Stdlib only, Python 3.8+: the checks' rules build their remedies with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from envdoctor.target.model import Environment, Remedy
from envdoctor.target.versions import requirement_name

_SAFE = re.compile(r"^[A-Za-z0-9/._+:=,@%-]+$")


def quote(word: str) -> str:
    """POSIX-shell quoting: `numpy<2` must not become a redirection, `a[b]` a glob."""
    if word and _SAFE.match(word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def join(argv: Iterable[str]) -> str:
    return " ".join(quote(a) for a in argv)


def pip_command(python: Optional[str], *args: str) -> str:
    """`<python> -m pip ARGS`: always the target interpreter's own pip.

    An argument that already carries its own double quotes (as the apex README
    writes `--config-settings "--build-option=--cpp_ext"`) is written as given.
    """
    words = [a if '"' in a else quote(a) for a in args]
    return " ".join([quote(python or "python"), "-m", "pip", *words])


def torch_pin(env: Environment) -> Optional[str]:
    """'torch==2.13.0+cpu': the installed torch, as a constraint that keeps pip off it."""
    return "torch==%s" % env.torch if env.torch else None


# ---------------------------------------------------------------- actions


def pip_action(
    env: Environment,
    install: Sequence[str] = (),
    upgrade: Sequence[str] = (),
    uninstall: Sequence[str] = (),
    index_url: Optional[str] = None,
    force_reinstall: bool = False,
    no_deps: bool = False,
    no_build_isolation: bool = False,
    no_cache: bool = False,
    build_env: Optional[Mapping[str, str]] = None,
    pin_torch: bool = True,
) -> Dict[str, Any]:
    """A pip action in the one spelling `fix` reads. When it installs anything but torch
    itself and resolves dependencies, the installed torch is added as a constraint, so
    that no companion can make pip swap torch (a CUDA wheel for a CPU one, a newer release)."""
    action: Dict[str, Any] = {}
    if uninstall:
        action["uninstall"] = list(uninstall)
    if install:
        action["install"] = list(install)
    if upgrade:
        action["upgrade"] = list(upgrade)
    pin = torch_pin(env)
    if pin and pin_torch and (install or upgrade) and "torch" not in action_names(action) and not no_deps:
        action["constraints"] = [pin]
    if index_url:
        action["index_url"] = index_url
    for key, value in (("force_reinstall", force_reinstall), ("no_deps", no_deps),
                       ("no_build_isolation", no_build_isolation), ("no_cache", no_cache)):
        if value:
            action[key] = True
    if build_env:
        action["build_env"] = dict(build_env)
    return action


@dataclass(frozen=True)
class PipRun:
    """One pip invocation of an action, as data: `fix` runs its argv, the plan prints its line."""

    args: Tuple[str, ...]  # after `python -m pip`
    env: Tuple[Tuple[str, str], ...] = ()  # build variables, sorted

    @property
    def verb(self) -> str:
        return self.args[0]

    def argv(self, python: str) -> List[str]:
        return [python, "-m", "pip", *self.args]

    def line(self, python: Optional[str]) -> str:
        return "".join("%s=%s " % (k, quote(v)) for k, v in self.env) + pip_command(python, *self.args)


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


def action_names(action: Mapping[str, Any], keys: Sequence[str] = ("install", "upgrade")) -> List[str]:
    """The distributions a pip action names under `keys`, normalised ('flash-attn'); a bare
    URL names none."""
    found = (requirement_name(r) for key in keys for r in action.get(key) or ())
    return [n for n in found if n]


def pip_commands(action: Mapping[str, Any], python: Optional[str]) -> Tuple[str, ...]:
    """The command lines of a pip action (pip_runs), as the user would type them."""
    return tuple(run.line(python) for run in pip_runs(action))


def env_commands(action: Mapping[str, Any]) -> Tuple[str, ...]:
    commands = ["export %s=%s" % (k, quote(str(v))) for k, v in sorted((action.get("set_env") or {}).items())]
    commands += ["unset %s" % k for k in action.get("unset_env") or ()]
    return tuple(commands)


def commands_for(kind: str, action: Mapping[str, Any], python: Optional[str]) -> Tuple[str, ...]:
    """What a remedy of `kind` prints for `action`. Config actions print nothing: `fix`
    edits the config file's span, and the remedy's words name the settings."""
    if kind == "pip":
        return pip_commands(action, python)
    if kind == "env":
        return env_commands(action)
    return ()


# ---------------------------------------------------------------- remedies


def pip_remedy(summary: str, rid: str, env: Environment, **action: Any) -> Remedy:
    """A pip remedy in the target interpreter: pip_action's keywords, commands generated."""
    built = pip_action(env, **action)
    return Remedy(summary, kind="pip", commands=pip_commands(built, env.python), id=rid, action=built)


def env_remedy(summary: str, rid: str, set_env: Optional[Mapping[str, str]] = None, unset_env: Sequence[str] = ()) -> Remedy:
    action: Dict[str, Any] = {}
    if set_env:
        action["set_env"] = dict(set_env)
    if unset_env:
        action["unset_env"] = list(unset_env)
    return Remedy(summary, kind="env", commands=env_commands(action), id=rid, action=action)


def config_remedy(summary: str, rid: str, settings: Mapping[str, Any], when: Optional[Mapping[str, Any]] = None,
                  reduce: Sequence[str] = (), parts: Sequence[str] = ()) -> Remedy:
    """A change to the training config's intent: {"precision": "fp32"}, {"dora": False};
    `parts` limits a per-part setting (weight_dtype) to those model parts."""
    action: Dict[str, Any] = {"set": dict(settings)} if settings else {}
    if when:
        action["when"] = dict(when)
    if reduce:
        action["reduce"] = list(reduce)
    if parts:
        action["parts"] = list(parts)
    return Remedy(summary, kind="config", id=rid, action=action)
