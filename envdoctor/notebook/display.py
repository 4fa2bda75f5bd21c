"""Showing things in a notebook cell: a report displayed once per cell, and a progress line
that the report replaces. Used only inside a kernel, where IPython is already imported."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Callable, Dict, Optional, Type

_SHOWN = "_envdoctor_shown_in"  # the execution count of the cell that displayed an object


def in_kernel() -> bool:
    """Inside a Jupyter/Colab/Kaggle/VS Code kernel (not a terminal, not `!envdoctor` in a cell)."""
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    shell = _shell()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _shell() -> Any:
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get else None


def _count() -> Optional[int]:
    shell = _shell()
    return getattr(shell, "execution_count", None) if shell is not None else None


def show(obj: Any, bundle: Callable[[], Dict[str, str]]) -> None:
    """Display obj's bundle in the cell now, and remember the cell."""
    from IPython.display import display

    display(bundle(), raw=True)
    try:
        setattr(obj, _SHOWN, _count())
    except AttributeError:  # a frozen object: it may be shown twice, no harm
        pass


def show_once(obj: Any, bundle: Callable[[], Dict[str, str]]) -> None:
    """The cell's last expression: shown unless this very cell displayed it already."""
    shown = getattr(obj, _SHOWN, None)
    if shown is not None and shown == _count():
        return
    show(obj, bundle)


class NotebookProgress:
    """One line in the cell while the probes run ("probing cublas… 5 checks done"), removed
    when the report appears. The same on_event as the terminal's ProbeProgress."""

    def __init__(self) -> None:
        self._handle: Any = None
        self._done = 0

    def __enter__(self) -> NotebookProgress:
        from IPython.display import display

        self._handle = display(self._bundle("starting the probe worker (importing torch)…"), raw=True, display_id=True)
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        if self._handle is not None:
            self._handle.update({"text/plain": ""}, raw=True)

    @staticmethod
    def _bundle(text: str) -> Dict[str, str]:
        from html import escape

        return {"text/plain": "envdoctor: " + text,
                "text/html": '<div style="font-family:monospace;opacity:.7">envdoctor: %s</div>' % escape(text)}

    def on_event(self, event: str, check_id: str) -> None:
        if event == "finish":
            self._done += 1
        if event in ("start", "finish") and self._handle is not None:
            doing = "probing %s… " % check_id if event == "start" else ""
            self._handle.update(self._bundle("%s%d checks done" % (doing, self._done)), raw=True)
