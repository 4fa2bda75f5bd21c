"""A live progress line while probes run: on stderr in a terminal, in the cell in a notebook
(envdoctor.render.notebook.NotebookProgress); nothing when output goes to a file or a pipe."""

from __future__ import annotations

import contextlib
import sys
from types import TracebackType
from typing import Callable, ContextManager, Iterator, Optional, Type


class ProbeProgress:
    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._progress.add_task("starting the probe worker (importing torch)…", total=None)
        self._done = 0

    def __enter__(self) -> ProbeProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        self._progress.stop()

    def on_event(self, event: str, check_id: str) -> None:
        if event == "start":
            self._progress.update(self._task, description="probing %s…" % check_id)
        elif event == "finish":
            self._done += 1
            self._progress.update(self._task, description="%d checks done" % self._done)


@contextlib.contextmanager
def _no_display() -> Iterator[Optional[Callable[[str, str], None]]]:
    yield None


@contextlib.contextmanager
def _in_the_cell() -> Iterator[Optional[Callable[[str, str], None]]]:
    from envdoctor.render.notebook import NotebookProgress

    with NotebookProgress() as shown:
        yield shown.on_event


@contextlib.contextmanager
def _on_stderr() -> Iterator[Optional[Callable[[str, str], None]]]:
    with ProbeProgress() as progress:
        yield progress.on_event


def progress_display(show: bool) -> Callable[[], ContextManager[Optional[Callable[[str, str], None]]]]:
    """The progress display that suits where envdoctor runs (a flows.Progress): the cell in a
    notebook kernel, stderr in a terminal, none when output goes to a file or a pipe or `show` is False."""
    from envdoctor.target.platform.where import in_kernel

    if show and in_kernel():
        return _in_the_cell
    if show and sys.stderr.isatty():
        return _on_stderr
    return _no_display
