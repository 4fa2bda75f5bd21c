"""Writing a file so that it is either as before or wholly new, never half-written."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Optional


def write_atomically(path: Path, data: bytes, mode: Optional[int] = None) -> None:
    """A temporary file in the same folder, flushed to disk, then renamed over `path`
    (os.replace is atomic within one filesystem), and the folder synced. The file keeps
    its permission bits; a new one is private to its owner (0600, as mkstemp makes it)."""
    path = Path(path)
    if mode is None and path.exists():
        mode = path.stat().st_mode & 0o7777
    fd, temp = tempfile.mkstemp(prefix=".%s." % path.name, suffix=".envdoctor-tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:  # a Ctrl-C included: no temp file is left behind
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    """The rename itself survives a power cut only once the folder is synced (POSIX)."""
    try:
        fd = os.open(str(folder), os.O_RDONLY)
    except OSError:  # Windows cannot open a folder: os.replace is already durable there
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def sha256(data: bytes) -> str:
    """What undo compares: a file is restored only when it is exactly as the fix left it."""
    return hashlib.sha256(data).hexdigest()
