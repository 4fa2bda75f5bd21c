"""One `fix` or `undo` at a time per target environment.

Two runs changing the same interpreter's packages (or undoing each other's journal) at once
would both "verify" and leave an environment neither journal describes. The lock is an OS
file lock on a file named for the target interpreter under the state folder: the operating
system releases it when its holder ends, however it ends (kill -9 included), so a lock left by
a killed run is never stale. The file also says who holds it, for the one line the second
run prints.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import time
from pathlib import Path
from typing import IO, Any, Dict, Iterator, Optional

from envdoctor.pipeline.fix.action import FixError

LOCKS = "locks"


def _key(python: str) -> str:
    """The target, as one interpreter however it was named (a venv folder, a symlink, bin/python3)."""
    try:
        resolved = str(Path(python).resolve())
    except OSError:
        resolved = python
    return hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:16]


def _try_lock(handle: IO[str]) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _acquire(handle: IO[str], tries: int = 10) -> bool:
    """The lock, allowing a second for a reader (`undo --list`) that holds it a moment to see who has it."""
    for attempt in range(tries):
        if _try_lock(handle):
            return True
        if attempt < tries - 1:
            time.sleep(0.1)
    return False


def holder(state: Path, python: str) -> Optional[Dict[str, Any]]:
    """Who holds the target's lock now ({"pid", "what", "since", "python"}), or None when no live run does."""
    path = Path(state) / LOCKS / (_key(python) + ".lock")
    if not path.exists():
        return None
    with open(path, "a+", encoding="utf-8") as handle:
        if _try_lock(handle):
            return None  # nobody holds it (a run that ended, or was killed, released it)
        handle.seek(0)
        try:
            return dict(json.loads(handle.read() or "{}"))
        except ValueError:
            return {}


@contextlib.contextmanager
def hold(state: Path, python: str, what: str) -> Iterator[None]:
    """Hold the target's lock while the body changes it; FixError naming the holder when another run has it."""
    folder = Path(state) / LOCKS
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / (_key(python) + ".lock"), "a+", encoding="utf-8")  # noqa: SIM115 - held by the `with` below
    except OSError as exc:
        raise FixError("cannot lock %s for this run in %s: %s" % (python, folder, exc.strerror or exc)) from exc
    with handle:
        if not _acquire(handle):
            handle.seek(0)
            try:
                other = dict(json.loads(handle.read() or "{}"))
            except ValueError:
                other = {}
            raise FixError("another envdoctor %s (pid %s, since %s) is changing %s: wait for it to finish, then run this again"
                           % (other.get("what", "fix"), other.get("pid", "?"), other.get("since", "?"), python))
        handle.seek(0)
        handle.truncate()
        info = json.dumps({"pid": os.getpid(), "what": what, "python": python,
                           "since": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")})
        # who holds it is a courtesy to a second run: a full disk must not stop this one, and an
        # unbuffered write leaves nothing for close() to fail on
        with contextlib.suppress(OSError):
            os.write(handle.fileno(), info.encode("utf-8"))
        yield
