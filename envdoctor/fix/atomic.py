"""Writing a file so that it is either as before or wholly new, never half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional


def write_atomically(path: Path, data: bytes, mode: Optional[int] = None) -> None:
    """A temporary file in the same folder, flushed to disk, then renamed over `path`
    (os.replace is atomic within one filesystem). The file keeps its permission bits."""
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
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
