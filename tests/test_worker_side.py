"""The wall: everything the worker loads runs inside the *target* interpreter, which may be an
old environment with nothing but torch. That is envdoctor/target/ and the checks, found from the
folders themselves: Python 3.8 syntax, only the standard library at module level (torch and the
training libraries inside functions), and no import of envdoctor outside the wall, not even a
lazy one. The whole package's import graph has no circle."""

from __future__ import annotations

import ast
import json
import sys
from typing import List

import import_graph
import pytest
from conftest import check_of, find_python, run_envdoctor

MODULES = import_graph.modules()
WALL = sorted(name for name in MODULES if name.startswith("envdoctor.target"))
CHECKS = sorted(name for name in MODULES if name.startswith(import_graph.CHECKS_PACKAGE))
PYTHON38 = find_python("3.8")


def _inside(name: str, check_module: bool) -> bool:
    """Whether an import of `name` stays inside the wall (a check may also import its own package)."""
    if name == "envdoctor.target" or name.startswith("envdoctor.target."):
        return True
    return check_module and (name == import_graph.CHECKS_PACKAGE or name.startswith(import_graph.CHECKS_PACKAGE + "."))


def test_the_wall_is_the_target_folder_and_the_checks() -> None:
    assert "envdoctor.target.worker" in WALL and "envdoctor.target.model" in WALL and "envdoctor.target.probekit.ops" in WALL
    assert "envdoctor.checks.apex" in CHECKS and len(CHECKS) >= 12
    # the worker-side modules that once lived beside the parent's are all inside it now
    outside = sorted(n for n in MODULES if not _inside(n, True) and n.rsplit(".", 1)[-1] in ("model", "worker", "probekit", "sysinfo", "redact"))
    assert outside == []


@pytest.mark.parametrize("name", WALL + CHECKS)
def test_python_3_8_syntax_and_stdlib_only(name: str) -> None:
    module = MODULES[name]
    ast.parse(module.path.read_text(encoding="utf-8"), feature_version=(3, 8))
    check_module = name in CHECKS
    for imported, top in import_graph.imports(module, MODULES):
        if imported.split(".")[0] == "envdoctor":
            assert _inside(imported, check_module), "%s imports %s, outside the wall" % (name, imported)
        elif top:  # probes import torch & co. inside functions: those are allowed
            assert imported.split(".")[0] in sys.stdlib_module_names, "%s imports %s at module level" % (name, imported)


def test_no_arrow_leaves_the_wall_and_no_circle_anywhere() -> None:
    edges = import_graph.graph()
    leaving: List[str] = ["%s -> %s" % (a, b) for a in WALL for b in sorted(edges[a]) if not _inside(b, False)]
    leaving += ["%s -> %s" % (a, b) for a in CHECKS for b in sorted(edges[a]) if not _inside(b, True)]
    assert leaving == []
    assert import_graph.cycles(edges) == []


@pytest.mark.skipif(PYTHON38 is None, reason="no Python 3.8 here")
def test_every_check_runs_in_a_python_3_8_without_torch() -> None:
    proc = run_envdoctor("check", "--json", "--python", str(PYTHON38))
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["environment"]["python"].startswith("3.8.")
    assert not [c["id"] for c in report["checks"] if c["status"] in ("crashed", "timeout")]
    assert check_of(report, "torch-install")["findings"][0]["code"] == "torch-missing"
    assert check_of(report, "fp8")["status"] == "skipped"


@pytest.mark.parametrize("version", ["2.7", "3.7"])
def test_an_interpreter_too_old_for_the_worker_is_bad_input(version: str) -> None:
    python = find_python(version)
    if python is None:
        pytest.skip("no Python %s here" % version)
    proc = run_envdoctor("check", "--python", str(python))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "envdoctor: error: %s: Python %s is too old for the envdoctor worker (3.8 or newer)" % (
        python, version)
