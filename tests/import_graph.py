"""envdoctor's import graph, read from the source with ast (nothing is imported).

Every module of envdoctor/ and checks/ (installed as envdoctor.checks) is a node; an edge is
an import of another envdoctor module anywhere in the file, at module level or inside a
function (a lazy import is still an arrow), except under `if TYPE_CHECKING:`, which never runs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
CHECKS_PACKAGE = "envdoctor.checks"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"


def modules() -> Dict[str, Module]:
    found: Dict[str, Module] = {}
    for base, package in ((ROOT / "envdoctor", "envdoctor"), (ROOT / "checks", CHECKS_PACKAGE)):
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join([package, *parts])
            found[name] = Module(name, path)
    return found


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _walk(node: ast.AST, module_level: bool) -> Iterator[Tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if _type_checking(child):
            continue
        yield child, module_level
        inner = module_level and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _walk(child, inner)


def imports(module: Module, known: Dict[str, Module]) -> List[Tuple[str, bool]]:
    """(imported module, at module level) for every import in the file, relative imports resolved:
    `from package import name` is an import of package.name where that is a module, else of package."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"))
    names: List[Tuple[str, bool]] = []
    for node, top in _walk(tree, True):
        if isinstance(node, ast.Import):
            names.extend((alias.name, top) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = "%s.%s" % (source, alias.name)
                names.append((submodule if submodule in known else source, top))
    return names


def graph() -> Dict[str, Set[str]]:
    """module -> the envdoctor modules it imports."""
    known = modules()
    return {name: {imported for imported, _ in imports(module, known) if imported in known and imported != name}
            for name, module in known.items()}


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    """Each strongly connected component of more than one module (Tarjan), sorted."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)
