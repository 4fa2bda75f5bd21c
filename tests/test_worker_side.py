"""Everything the worker loads runs inside the *target* interpreter, which may be
an old environment with nothing but torch: Python 3.8 syntax, and only the
standard library and envdoctor's other worker-side modules at module level."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT, check_of, find_python, run_envdoctor

WORKER_SIDE_PACKAGE = ["__init__", "model", "worker", "redact", "microops", "commands", "cuda_tables", "versions", "sysinfo",
                       "probekit/__init__", "probekit/steps", "probekit/ops", "probekit/text", "probekit/gpus",
                       "probekit/distributions", "probekit/imports", "configs/__init__", "configs/intent",
                       "notebook/__init__", "notebook/where", "notebook/menus"]
WORKER_SIDE = [ROOT / "envdoctor" / (m + ".py") for m in WORKER_SIDE_PACKAGE] + sorted((ROOT / "checks").rglob("*.py"))
ALLOWED_ENVDOCTOR = {"envdoctor", "envdoctor.probekit", "envdoctor.configs", "envdoctor.notebook"} | {
    "envdoctor." + m.replace("/", ".") for m in WORKER_SIDE_PACKAGE}
PYTHON38 = find_python("3.8")


def _module_level_imports(tree: ast.Module) -> set:
    names = set()
    for node in tree.body:  # probes import torch & co. inside functions: those are allowed
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))  # relative: a sibling in the same check package
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` blocks never run
            continue
    return names


@pytest.mark.parametrize("path", WORKER_SIDE, ids=lambda p: str(p.relative_to(ROOT)))
def test_python_3_8_syntax_and_stdlib_only(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 8))
    for name in _module_level_imports(tree):
        top = name.split(".")[0]
        assert name.startswith(".") or top in sys.stdlib_module_names or name in ALLOWED_ENVDOCTOR, (path.name, name)


def test_the_worker_never_imports_the_parent_only_modules() -> None:
    parent_only = {"cli", "engine", "registry", "runner", "report", "progress"}
    for path in WORKER_SIDE:
        for name in _module_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
            assert name.split(".")[-1] not in parent_only or not name.startswith("envdoctor"), (path.name, name)


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
