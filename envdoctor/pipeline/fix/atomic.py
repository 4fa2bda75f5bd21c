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
    its permission bits and its owner; a new one is private to its owner (0600, as mkstemp
    makes it). A symlink is followed: its target is written and the link stays a link. A
    file with other hard links is written in place instead (a rename would give this name a
    new file and leave the others on the old one); the caller holds a backup of its bytes."""
    path = Path(os.path.realpath(path))
    existing = path.stat() if path.exists() else None
    if mode is None and existing is not None:
        mode = existing.st_mode & 0o7777
    if existing is not None and existing.st_nlink > 1:
        _write_in_place(path, data)
        return
    fd, temp = tempfile.mkstemp(prefix=".%s." % path.name, suffix=".envdoctor-tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        if existing is not None and hasattr(os, "chown"):
            _keep_owner(temp, existing)
        os.replace(temp, path)
    except BaseException:  # a Ctrl-C included: no temp file is left behind
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _fsync_folder(path.parent)


def _keep_owner(temp: str, existing: os.stat_result) -> None:
    """The new file belongs to whom the old one did (a fix run as root must not take a user's config)."""
    if (existing.st_uid, existing.st_gid) == (os.getuid(), os.getgid()):
        return
    try:
        os.chown(temp, existing.st_uid, existing.st_gid)
    except PermissionError:  # not root: a file owned by another user stays writable only by that user's group rules
        pass


def _write_in_place(path: Path, data: bytes) -> None:
    with open(path, "r+b") as handle:
        handle.write(data)
        handle.truncate(len(data))
        handle.flush()
        os.fsync(handle.fileno())


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
