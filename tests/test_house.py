"""The house's load-bearing facts that no single room's tests see: each remedy kind declared once
and dispatched by lookup, the checks importable by their one name, the interpreter resolved in
one place, and the front doors' names not shadowed by the rooms behind them."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest
from conftest import ROOT

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.fix.action import FixError, kind_module
from envdoctor.target.remedies.kinds import KINDS, MANUAL, PIP, kind_of, rank_of


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_remedy_kind_is_declared_once_and_applied_by_the_module_it_names(name: str) -> None:
    kind = KINDS[name]
    assert kind.name == name and kind.keys and len(set(kind.keys)) == len(kind.keys)
    if kind.applier is None:
        assert kind is MANUAL
        with pytest.raises(FixError, match="never applied"):
            kind_module(name)
        return
    module = kind_module(name)
    assert module.__name__ == kind.applier
    assert callable(module.prepare_steps) and callable(module.undo)


def test_the_kinds_rank_a_config_edit_before_a_variable_a_package_and_torch() -> None:
    order = [rank_of("config", {}), rank_of("env", {}), rank_of("pip", {"install": ["numpy"]}),
             rank_of("pip", {"install": ["torch==2.13.0"]}), rank_of("manual", {})]
    assert order == sorted(order) and len(set(order)) == len(order)
    assert kind_of("teleport") is MANUAL and kind_of("pip") is PIP
    with pytest.raises(FixError, match="unknown kind 'teleport'"):
        kind_module("teleport")


def test_no_kind_is_spelled_outside_the_table() -> None:
    """The fix room never lists the kinds itself: it looks them up."""
    for path in sorted((ROOT / "envdoctor" / "pipeline" / "fix").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "KIND_MODULES" not in text and "KIND_RANK" not in text, path.name


def test_a_check_imports_by_its_one_name_without_the_registry() -> None:
    """`import envdoctor.checks.apex` in a fresh interpreter is the module the engine runs: the packaging
    maps checks/ to envdoctor.checks, nothing stitches it together at run time."""
    code = ("import envdoctor.checks.apex as apex, sys; print(apex.__file__); "
            "print('envdoctor.pipeline.check.registry' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=str(ROOT.parent))
    path, registry_loaded = out.stdout.split()
    assert Path(path) == ROOT / "checks" / "apex" / "__init__.py" and registry_loaded == "False"
    engine_apex = {c.check.id: c for c in load_checks(plugins=False)[0]}["apex"]
    assert engine_apex.module == "envdoctor.checks.apex"
    assert importlib.import_module("envdoctor.checks.apex").CHECK is engine_apex.check


def _calls(name: str) -> List[str]:
    """The modules of envdoctor that call `name`(...)."""
    found = []
    for path in sorted((ROOT / "envdoctor").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == name:
                found.append(str(path.relative_to(ROOT)))
    return sorted(set(found))


def test_one_place_resolves_the_interpreter_and_detects_the_platform() -> None:
    assert _calls("resolve_python") == ["envdoctor/pipeline/check/engine.py"]
    assert _calls("here") == ["envdoctor/pipeline/check/target.py"]
    assert _calls("build_target") == ["envdoctor/pipeline/check/engine.py"]
    # the interpreter's fallback chain is written twice, no more: once where the Target is built from the
    # worker's hello, once where Target.from_report reads a report (a recorded one too)
    readers = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "envdoctor").rglob("*.py"))
               if 'get("executable") or' in p.read_text(encoding="utf-8")]
    assert readers == ["envdoctor/pipeline/check/target.py", "envdoctor/target/model.py"]


def test_the_calls_of_the_notebook_cell_stay_functions() -> None:
    """`envdoctor.fix()` and `envdoctor.explain()` again in the same notebook: no subpackage of the
    same name replaces the function on the package once the call has loaded its machinery."""
    code = ("import envdoctor, envdoctor.api, envdoctor.pipeline.fix.apply, envdoctor.pipeline.explain; "
            "print(callable(envdoctor.fix), callable(envdoctor.explain), callable(envdoctor.check))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


# Which rooms each room may import (README "How it works"); the wall's own rule is test_worker_side's.
ROOMS = {
    "envdoctor.cli": ("envdoctor.pipeline", "envdoctor.render", "envdoctor.target"),
    "envdoctor.api": ("envdoctor.pipeline", "envdoctor.render", "envdoctor.target"),
    "envdoctor.pipeline": ("envdoctor.pipeline", "envdoctor.configs", "envdoctor.checks", "envdoctor.target"),
    "envdoctor.configs": ("envdoctor.configs", "envdoctor.target"),
    "envdoctor.render": ("envdoctor.render", "envdoctor.target"),
}


def test_each_room_imports_only_the_rooms_below_it() -> None:
    import import_graph

    edges = import_graph.graph()
    wrong = []
    for module, imported in sorted(edges.items()):
        room = next((r for r in ROOMS if module == r or module.startswith(r + ".")), None)
        if room is None:
            continue
        wrong += ["%s -> %s" % (module, other) for other in sorted(imported)
                  if not any(other == allowed or other.startswith(allowed + ".") for allowed in ROOMS[room])]
    assert wrong == []
    assert set(edges["envdoctor"]) <= {"envdoctor.api", "envdoctor.target.version"}  # the package stays light
