"""`envdoctor run -- CMD ARGS...`: run a training command as it is, and explain it if it fails.

The child's stdout and stderr are copied through byte for byte as they come (each to
the same stream of ours), its stdin is ours, and its exit status is returned (128+N
when a signal N killed it, as shells report it). Meanwhile a LogScanner per stream
keeps only the windows around errors, so a run that prints gigabytes costs no memory.

Ctrl-C in a terminal reaches the child directly (it is in our process group); we
ignore it while the child lives, so that we can still report what it printed. A
SIGINT or SIGTERM sent to envdoctor alone is passed on to the child.

Python children are asked for unbuffered output (PYTHONUNBUFFERED=1, unless set):
through a pipe their prints would otherwise arrive in blocks, not live.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, List, Optional, Sequence

from envdoctor.pipeline.explain.reader import LogExcerpt, LogLine, LogScanner

READ = 1 << 16
_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$")


class CommandNotFound(Exception):
    """The command cannot be started (no such file, not executable)."""


@dataclass
class Finished:
    exit_code: int  # the child's status as a shell reports it
    signal: Optional[int]  # the signal that killed it, if one did
    excerpt: LogExcerpt = field(default_factory=LogExcerpt)


def interpreter_of_command(argv: Sequence[str]) -> Optional[str]:
    """The interpreter a command runs in, to confirm against: `python train.py`, `/venv/bin/python3 -m x`,
    or a console script (`accelerate`, `torchrun`) whose `#!` line names one. None: unknown."""
    if not argv:
        return None
    found = shutil.which(argv[0])
    if found is None:
        return None
    if _PYTHON_NAME.match(os.path.basename(found)):
        return found
    try:
        with open(found, "rb") as script:
            first = script.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        words = words[1:]  # "#!/usr/bin/env python3"
    if words and _PYTHON_NAME.match(os.path.basename(words[0])):
        return shutil.which(words[0]) or (words[0] if os.path.isabs(words[0]) else None)
    return None


def _child_environment() -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _pump(source: IO[bytes], sink: Any, scanner: LogScanner) -> None:
    """Copy one stream through as it comes, feeding the scanner."""
    read = getattr(source, "read1", source.read)
    while True:
        data = read(READ)
        if not data:
            break
        try:
            sink.write(data)
            sink.flush()
        except (OSError, ValueError):  # our own output closed (a pipe to `head`): keep draining the child
            pass
        scanner.feed(data)


def _merge(first: LogExcerpt, second: LogExcerpt) -> LogExcerpt:
    """One excerpt of two streams: the second's lines numbered after the first's, so none collide."""
    shift = first.total_lines
    moved = [LogLine(line.number + shift, line.text, line.stream) for line in second.lines]
    context = list(first.context) + [LogLine(line.number + shift, line.text, line.stream) for line in second.context]
    return LogExcerpt(list(first.lines) + moved, context, first.total_lines + second.total_lines,
                      first.total_bytes + second.total_bytes, first.dropped_lines + second.dropped_lines,
                      first.has_text or second.has_text)


def run_command(argv: Sequence[str], stdout: Any = None, stderr: Any = None) -> Finished:
    """Run argv with its output passed through; return its status and what its output held."""
    out_sink = stdout or sys.stdout.buffer
    err_sink = stderr or sys.stderr.buffer
    try:
        child = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_child_environment())
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        raise CommandNotFound("cannot run %s: %s" % (argv[0], exc.strerror or exc)) from None
    assert child.stdout is not None and child.stderr is not None
    scanners = (LogScanner(strict=False), LogScanner(strict=False))
    pumps = [threading.Thread(target=_pump, args=(child.stderr, err_sink, scanners[0]), daemon=True),
             threading.Thread(target=_pump, args=(child.stdout, out_sink, scanners[1]), daemon=True)]
    restore = _forward_signals(child)
    try:
        for pump in pumps:
            pump.start()
        code = child.wait()
        for pump in pumps:
            pump.join()
    finally:
        restore()
    killed = -code if code < 0 else None
    status = 128 + killed if killed else code
    return Finished(status, killed, _merge(scanners[0].close(), scanners[1].close()))


def _forward_signals(child: subprocess.Popen[bytes]) -> Callable[[], None]:
    """While the child runs: Ctrl-C is the child's to handle (the terminal sent it to both of
    us), a SIGTERM sent to envdoctor alone is passed on. Returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous: List[Any] = []

    def forward(signum: int, frame: Any) -> None:
        try:
            child.send_signal(signum)
        except OSError:
            pass

    # From a terminal, Ctrl-C reaches the child already; sent to envdoctor alone (kill -INT, a scheduler), it is passed on.
    interactive = sys.stdin is not None and sys.stdin.isatty()
    handled = [(signal.SIGINT, signal.SIG_IGN if interactive else forward)]
    if hasattr(signal, "SIGTERM"):
        handled.append((signal.SIGTERM, forward))
    for signum, handler in handled:
        previous.append((signum, signal.signal(signum, handler)))

    def restore() -> None:
        for signum, handler in previous:
            signal.signal(signum, handler)

    return restore
