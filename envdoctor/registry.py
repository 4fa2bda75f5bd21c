"""Finds the checks: built-in modules in `checks/`, the `envdoctor.checks`
entry-point group, and files named by ENVDOCTOR_CHECKS_PATH.

In a wheel the built-in checks live at `envdoctor/checks/`; in a source tree at
the repository's top-level `checks/`. Either way they import as
`envdoctor.checks.<name>`, so the parent and the worker agree on names.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.target.model import Check
from envdoctor.target.worker import load_module_file

ENTRY_POINT_GROUP = "envdoctor.checks"
PATH_VARIABLE = "ENVDOCTOR_CHECKS_PATH"
DISABLE_AUTOLOAD_VARIABLE = "ENVDOCTOR_DISABLE_PLUGIN_AUTOLOAD"

PACKAGE_DIR = Path(__file__).resolve().parent


def checks_dir() -> Path:
    installed = PACKAGE_DIR / "checks"
    if (installed / "__init__.py").is_file():
        return installed
    return PACKAGE_DIR.parent / "checks"


def _ensure_checks_package() -> None:
    if "envdoctor.checks" in sys.modules:
        return
    directory = checks_dir()
    spec = importlib.util.spec_from_file_location(
        "envdoctor.checks", directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    if spec is None or spec.loader is None:  # pragma: no cover - a broken install
        raise ImportError("envdoctor's checks are missing from %s" % directory)
    module = importlib.util.module_from_spec(spec)
    sys.modules["envdoctor.checks"] = module
    spec.loader.exec_module(module)


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
    _ensure_checks_package()
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


def _plugin_sources():  # type: ignore[no-untyped-def]
    """(name, origin, loader) for each entry point and ENVDOCTOR_CHECKS_PATH file."""
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
