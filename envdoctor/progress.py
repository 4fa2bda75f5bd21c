"""A live progress line on stderr while probes run (terminals only)."""

from __future__ import annotations

from types import TracebackType
from typing import Optional, Type


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
