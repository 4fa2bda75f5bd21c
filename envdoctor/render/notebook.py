"""Showing things in a notebook cell: a report displayed once per cell, and a progress line
that the report replaces. IPython is touched only inside a kernel, where it is already imported.

Loading this module gives Report its notebook display (HTML with the terminal text as the
fallback); `displayable` does the same for the other results a notebook shows (an
explanation, a fix). The model itself imports no renderer."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Callable, Dict, Optional, Type

from envdoctor.render.html import render_html
from envdoctor.render.terminal import render_text
from envdoctor.render.vocabulary import summary_line
from envdoctor.target.model import Report
from envdoctor.target.platform.where import ipython_shell

_SHOWN = "_envdoctor_shown_in"  # the execution count of the cell that displayed an object


def _count() -> Optional[int]:
    shell = ipython_shell()
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


Bundle = Callable[[Any], Dict[str, str]]


def displayable(cls: type, bundle: Bundle, describe: Optional[Callable[[Any], str]] = None) -> None:
    """Give `cls` its notebook display: `bundle(obj)` ({mime type: text}) shown once per cell,
    and `describe(obj)` as its repr."""

    def _repr_mimebundle_(self: Any, include: Any = None, exclude: Any = None) -> Dict[str, str]:
        return bundle(self)

    def _ipython_display_(self: Any) -> None:
        show_once(self, lambda: bundle(self))

    cls._repr_mimebundle_ = _repr_mimebundle_  # type: ignore[attr-defined]
    cls._ipython_display_ = _ipython_display_  # type: ignore[attr-defined]
    if describe is not None:
        said = describe

        def __repr__(self: Any) -> str:
            return said(self)

        cls.__repr__ = __repr__  # type: ignore[assignment]


def report_bundle(report: Report) -> Dict[str, str]:
    return {"text/html": render_html(report), "text/plain": render_text(report)}


displayable(Report, report_bundle, lambda report: "<envdoctor Report: %s>" % summary_line(report))

