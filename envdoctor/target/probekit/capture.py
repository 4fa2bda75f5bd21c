"""What a library says while a probe runs it: what it writes to fds 1 and 2 (C-level prints too), the log records
that reach the root logger, and those of a library's own logger.

A module of its own, imported where a probe captures (the worker): the parent imports the checks for their
declarations and never runs a probe, so it never pays for logging and tempfile.

Stdlib only, Python 3.8+: runs inside the worker.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from typing import Any, List, Tuple


class OutputCapture:
    """Send fds 1 and 2 to a temporary file while an extension imports, so that C-level
    prints and logging's last-resort handler are recorded. (The worker points faulthandler
    at a copy of the real stderr, so a crash inside the import still reaches the runner.)"""

    def __init__(self) -> None:
        self.text = ""
        self._saved: List[Tuple[int, int]] = []
        self._file: Any = None
        self._streams: List[Tuple[str, Any, Any]] = []  # (sys attribute, original, replacement)

    @staticmethod
    def _flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> OutputCapture:
        try:
            self._flush()
            self._file = tempfile.TemporaryFile()
            for fd in (1, 2):
                self._saved.append((fd, os.dup(fd)))
                os.dup2(self._file.fileno(), fd)
            # Python-level streams that do not write to fds 1/2 (a notebook, a test runner) are
            # pointed at them for the duration, so that print() is recorded too.
            for attr, fd in (("stdout", 1), ("stderr", 2)):
                stream = getattr(sys, attr)
                try:
                    same = stream is not None and stream.fileno() == fd
                except Exception:  # noqa: BLE001 - io.UnsupportedOperation and friends
                    same = False
                if not same:
                    replacement = open(fd, "w", encoding="utf-8", errors="replace", closefd=False)
                    self._streams.append((attr, stream, replacement))
                    setattr(sys, attr, replacement)
        except Exception:  # noqa: BLE001 - no capture is better than a broken probe
            self._restore()
        return self

    def _restore(self) -> None:
        self._flush()
        for attr, original, replacement in self._streams:
            setattr(sys, attr, original)
            try:
                replacement.close()
            except Exception:  # noqa: BLE001
                pass
        self._streams = []
        for fd, saved in self._saved:
            try:
                os.dup2(saved, fd)
            except OSError:
                pass
            try:
                os.close(saved)
            except OSError:
                pass
        self._saved = []

    def __exit__(self, *exc: Any) -> None:
        self._restore()
        if self._file is not None:
            try:
                self._file.seek(0)
                self.text = self._file.read(64 * 1024).decode("utf-8", "replace")
            finally:
                self._file.close()


class RootLog(logging.Handler):
    """Log records of WARNING and above that reach the root logger while a module imports (xformers warns this way),
    each as "logger: message"; the root's own handlers keep theirs."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.records.append("%s: %s" % (record.name, record.getMessage()))
        except Exception:  # noqa: BLE001
            pass

    def __enter__(self) -> RootLog:
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        logging.getLogger().removeHandler(self)


class LibraryLog(logging.Handler):
    """A library's own log records during a run (transformers and diffusers log to their own stderr
    handler, not the root logger): kept in the facts, once each, not printed."""

    def __init__(self, library: str) -> None:
        super().__init__(logging.WARNING)
        self.logger = logging.getLogger(library)
        self.records: List[str] = []
        self._saved: Tuple[List[logging.Handler], bool] = ([], True)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001
            return
        if text not in self.records:
            self.records.append(text)

    def __enter__(self) -> LibraryLog:
        self._saved = (list(self.logger.handlers), self.logger.propagate)
        self.logger.handlers = [self]
        self.logger.propagate = False
        return self

    def __exit__(self, *exc: Any) -> None:
        self.logger.handlers, self.logger.propagate = self._saved
