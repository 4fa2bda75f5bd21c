"""Finds the checks: the built-in package `envdoctor.checks`, the `envdoctor.checks`
entry-point group, and files named by ENVDOCTOR_CHECKS_PATH.

The built-in checks are the repository's top-level `checks/` folder, installed as the
package `envdoctor.checks` by the packaging itself (setup.py's package_dir), in a wheel and
in an editable install alike: the parent imports them by name like any module, and the
worker (another interpreter, where envdoctor is not installed) gets the same folder under
the same name from its bootstrap.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import envdoctor.checks as builtin_checks
from envdoctor.target.model import Check
from envdoctor.target.worker import load_module_file

ENTRY_POINT_GROUP = "envdoctor.checks"
PATH_VARIABLE = "ENVDOCTOR_CHECKS_PATH"
DISABLE_AUTOLOAD_VARIABLE = "ENVDOCTOR_DISABLE_PLUGIN_AUTOLOAD"



def checks_dir() -> Path:
    """The built-in checks' folder: what the worker's bootstrap puts on its path as envdoctor.checks."""
    return Path(str(builtin_checks.__file__)).resolve().parent


@dataclass(frozen=True)
class LoadedCheck:
    check: Check
    module: str
    path: Optional[str]  # set for plug-ins: the worker loads them from this file
    origin: str  # "builtin", "entry point <name> (<dist> <version>)", "path <file>"
    attr: str = "CHECK"

    def worker_spec(self) -> Dict[str, object]:
        spec: Dict[str, object] = {"id": self.check.id, "module": self.module}
        if self.path:
            spec["path"] = self.path
            spec["attr"] = self.attr
        if self.check.timeout_s:
            spec["timeout_s"] = self.check.timeout_s
        return spec


@dataclass(frozen=True)
class BrokenPlugin:
    name: str
    origin: str
    error: str


def _builtin_modules() -> List[str]:
    """One module per check: a file, or a package (a folder with __init__.py) when its
    family needs several files (a probe, rules, tables)."""
    directory = checks_dir()
    files = [p.stem for p in directory.glob("*.py") if not p.name.startswith("_")]
    packages = [p.name for p in directory.iterdir() if p.is_dir() and (p / "__init__.py").is_file() and not p.name.startswith("_")]
    return sorted(files + packages)


def _from_module(module_name: str, origin: str, path: Optional[str], attr: str = "CHECK") -> LoadedCheck:
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    check = getattr(module, attr)
    if not isinstance(check, Check):
        raise TypeError("%s.%s is not an envdoctor.target.model.Check" % (module_name, attr))
    check.validate()
    return LoadedCheck(check, module_name, path, origin, attr)


def _load_file(path: Path) -> LoadedCheck:
    module_name = "envdoctor_local_" + path.stem.replace("-", "_")
    load_module_file(module_name, str(path))
    return _from_module(module_name, "path %s" % path, str(path))


def _path_plugins(value: str) -> List[Path]:
    files: List[Path] = []
    for entry in filter(None, value.split(os.pathsep)):
        p = Path(entry)
        files.extend(sorted(q for q in p.glob("*.py") if not q.name.startswith("_")) if p.is_dir() else [p])
    return files


def load_checks(plugins: bool = True) -> Tuple[List[LoadedCheck], List[BrokenPlugin]]:
    """Every check, built-in first, in report order; plug-ins that fail to load are
    returned separately so the report can name them instead of crashing."""
    loaded: List[LoadedCheck] = [_from_module("envdoctor.checks." + m, "builtin", None) for m in _builtin_modules()]
    broken: List[BrokenPlugin] = []
    if plugins and not os.environ.get(DISABLE_AUTOLOAD_VARIABLE):
        for name, origin, load in _plugin_sources():
            try:
                loaded.append(load())
            except Exception as exc:  # noqa: BLE001 - a broken plug-in is a finding
                broken.append(BrokenPlugin(name, origin, "%s: %s" % (type(exc).__name__, exc)))
    seen: Dict[str, LoadedCheck] = {}
    unique: List[LoadedCheck] = []
    for item in loaded:
        if item.check.id in seen:
            broken.append(BrokenPlugin(item.check.id, item.origin, "duplicate check id (already from %s)" % seen[item.check.id].origin))
            continue
        seen[item.check.id] = item
        unique.append(item)
    unique.sort(key=lambda item: (item.check.order, item.check.id))
    return unique, broken


def _may_declare(group: str) -> bool:
    """Whether any distribution on sys.path may declare entry points in `group`: their entry_points.txt files, read
    where importlib.metadata reads them. Where none names the group, importlib.metadata is not imported at all (it
    brings email, zipfile and csv: a fifth of explain's start-up); anything this scan cannot read (a zipped path)
    counts as a maybe."""
    header = "[%s]" % group
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return True
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
                        if header in f.read():
                            return True
                except OSError:
                    continue
    return False


def _plugin_sources():  # type: ignore[no-untyped-def]
    """(name, origin, loader) for each entry point and ENVDOCTOR_CHECKS_PATH file."""
    eps: Any = []
    if _may_declare(ENTRY_POINT_GROUP):
        from importlib.metadata import entry_points

        found: Any = entry_points()
        # Python 3.10+ has .select(); 3.9 returns a dict of groups
        eps = found.select(group=ENTRY_POINT_GROUP) if hasattr(found, "select") else found.get(ENTRY_POINT_GROUP, [])
    for ep in eps:
        dist = getattr(ep, "dist", None)
        origin = "entry point %s" % ep.name
        if dist is not None:
            origin += " (%s %s)" % (dist.metadata["Name"], dist.version)

        def load(ep=ep, origin=origin):  # type: ignore[no-untyped-def]
            module_name, _, attr = ep.value.partition(":")
            module = importlib.import_module(module_name.strip())
            path = getattr(module, "__file__", None)
            return _from_module(module.__name__, origin, path, attr.strip() or "CHECK")

        yield ep.name, origin, load
    for path in _path_plugins(os.environ.get(PATH_VARIABLE, "")):
        yield path.stem, "path %s" % path, (lambda path=path: _load_file(path))
