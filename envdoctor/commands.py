"""Command lines that remedies print: exact, copy-pasteable, shell-safe.

Stdlib only, Python 3.8+: the checks' rules build their commands with it.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Optional

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


def pip_for(facts: Mapping[str, Any], *args: str) -> str:
    """pip_command for the interpreter a probe recorded as facts["python"]."""
    return pip_command(facts.get("python"), *args)
