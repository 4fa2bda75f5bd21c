"""A live progress line while probes run: on stderr in a terminal, in the cell in a notebook
(envdoctor.render.notebook.NotebookProgress); nothing when output goes to a file or a pipe."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Optional, Type


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


def finish(pending: Any, show: bool) -> Any:
    """pending.finish() (an engine.PendingCheck) with the progress display that suits where it runs."""
    from envdoctor.render.notebook import NotebookProgress
    from envdoctor.target.platform.where import in_kernel

    if show and in_kernel():
        with NotebookProgress() as shown:
            return pending.finish(shown.on_event)
    if show and sys.stderr.isatty():
        with ProbeProgress() as progress:
            return pending.finish(progress.on_event)
    return pending.finish()
