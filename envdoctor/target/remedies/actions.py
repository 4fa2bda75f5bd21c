"""Remedies as actions, in the one vocabulary `fix` reads (remedies/kinds.py): the builders
the checks' rules call. A remedy's printed commands come from its action (commandline.py)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from envdoctor.target.cuda_tables import DOWNLOAD_INDEX
from envdoctor.target.model import Remedy, Target
from envdoctor.target.remedies.commandline import env_commands, pip_commands
from envdoctor.target.remedies.kinds import CONFIG, ENV, PIP
from envdoctor.target.versions import requirement_name


def torch_pin(env: Target) -> Optional[str]:
    """'torch==2.13.0+cpu': the installed torch, as a constraint that keeps pip off it, in the
    version pip knows it by (its distribution's), not torch.__version__ where they differ."""
    version = env.torch_distribution or env.torch
    return "torch==%s" % version if version else None


def torch_wheel(version: str, cuda: Optional[str] = None) -> Optional[Tuple[str, str]]:
    """('torch==2.13.0', 'https://download.pytorch.org/whl/cu130'): the requirement and the index that serve
    this torch build, from its local version (+cu130, +cpu, +rocm6.2) or else the CUDA it was built for (13.0);
    None where neither says which build."""
    base, _, local = version.partition("+")
    tag = local if local.startswith(("cu", "cpu", "rocm")) else ("cu" + cuda.replace(".", "") if cuda else "")
    return ("torch==%s" % base, DOWNLOAD_INDEX + tag) if base and tag else None


def pip_action(
    env: Target,
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


def action_names(action: Mapping[str, Any], keys: Sequence[str] = ("install", "upgrade")) -> List[str]:
    """The distributions a pip action names under `keys`, normalised ('flash-attn'); a bare
    URL names none."""
    found = (requirement_name(r) for key in keys for r in action.get(key) or ())
    return [n for n in found if n]


def pip_remedy(summary: str, rid: str, env: Target, **action: Any) -> Remedy:
    """A pip remedy in the target interpreter: pip_action's keywords, commands generated."""
    built = pip_action(env, **action)
    return Remedy(summary, kind=PIP.name, commands=pip_commands(built, env.python, env.installer), id=rid, action=built)


def env_remedy(summary: str, rid: str, set_env: Optional[Mapping[str, str]] = None, unset_env: Sequence[str] = ()) -> Remedy:
    action: Dict[str, Any] = {}
    if set_env:
        action["set_env"] = dict(set_env)
    if unset_env:
        action["unset_env"] = list(unset_env)
    return Remedy(summary, kind=ENV.name, commands=env_commands(action), id=rid, action=action)


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
    return Remedy(summary, kind=CONFIG.name, id=rid, action=action)
