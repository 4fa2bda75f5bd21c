"""Import a package with `torch.compile` deferred, and still know what its import would have done.

Packages wrap functions in `torch.compile` while they import (bitsandbytes' default backend does so for a
dozen ops). Compiling is lazy, but the call itself imports all of torch._dynamo, torch._inductor and sympy:
seconds, more than `import torch` on some machines, paid by a probe that only asks whether the package
imports. Here `torch.compile` is replaced for the import by a stand-in that returns what it is given and
records where it was called. A call inside a `try` whose handler catches Exception (bitsandbytes'
`_try_torch_compile` falls back to the plain function) cannot have failed the import, whatever
`torch.compile` does; for any other call the real `torch.compile` is run afterwards with the same
arguments on a trivial function, and what it raises is what the import would have raised.

Stdlib only, Python 3.8+: runs inside the worker; torch is passed in.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

_BROAD = ("Exception", "BaseException")


@dataclass
class CompileCall:
    filename: str
    line: int
    kwargs: Dict[str, Any]


@dataclass
class DeferredCompile:
    """`with DeferredCompile(torch) as deferred: import package`, then `deferred.replay()`."""

    torch: Any
    calls: List[CompileCall] = field(default_factory=list)
    _real: Any = None
    _guards: Dict[str, Set[int]] = field(default_factory=dict)  # each source file parsed once

    def __enter__(self) -> DeferredCompile:
        self._real = getattr(self.torch, "compile", None)
        if self._real is not None:
            self.torch.compile = self._stand_in
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._real is not None:
            self.torch.compile = self._real

    def _stand_in(self, model: Any = None, **kwargs: Any) -> Any:
        caller = sys._getframe(1)
        self.calls.append(CompileCall(caller.f_code.co_filename, caller.f_lineno, dict(kwargs)))
        return model if model is not None else (lambda fn: fn)

    def unguarded(self) -> List[CompileCall]:
        """The recorded calls that no broad `try` around them could have caught."""
        out = []
        for call in self.calls:
            if call.filename not in self._guards:
                self._guards[call.filename] = guarded_lines(call.filename)
            if call.line not in self._guards[call.filename]:
                out.append(call)
        return out

    def replay(self) -> Optional[BaseException]:
        """What the real `torch.compile` raises for the unguarded calls (None: nothing, or none to replay)."""
        if self._real is None:
            return None
        for call in self.unguarded():
            try:
                self._real(_nothing, **call.kwargs)
            except Exception as exc:  # noqa: BLE001 - what the import would have raised
                return exc
        return None

    def summary(self) -> Dict[str, Any]:
        return {"calls": len(self.calls), "unguarded": len(self.unguarded())}


def _nothing() -> None:
    return None


def guarded_lines(filename: str) -> Set[int]:
    """The lines of a source file that lie in the body of a `try` with a handler for Exception (or a bare
    `except:`): a call there that raises does not leave it. Unreadable or unparsable: none."""
    try:
        with open(filename, encoding="utf-8") as source:
            tree = ast.parse(source.read(), filename)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return set()
    lines: Set[int] = set()
    for node in ast.walk(tree):
        is_try = isinstance(node, ast.Try) or type(node).__name__ == "TryStar"  # TryStar: `except*`, Python 3.11+
        if is_try and any(_broad(handler.type) for handler in getattr(node, "handlers", ())):
            for start, end in _spans(getattr(node, "body", ())):
                lines.update(range(start, end + 1))
    return lines


def _broad(kind: Optional[ast.expr]) -> bool:
    if kind is None:
        return True
    if isinstance(kind, ast.Tuple):
        return any(_broad(element) for element in kind.elts)
    name = kind.id if isinstance(kind, ast.Name) else kind.attr if isinstance(kind, ast.Attribute) else ""
    return name in _BROAD


def _spans(body: Any) -> List[Tuple[int, int]]:
    return [(stmt.lineno, getattr(stmt, "end_lineno", None) or stmt.lineno) for stmt in body]


__all__ = ["CompileCall", "DeferredCompile", "guarded_lines"]
