"""Small system files (/proc, /sys, a package's version.py) read as text, written once: a file that is absent or
unreadable is None, never an exception.

Stdlib only, Python 3.8+.
"""

from __future__ import annotations

from typing import Optional


def read_file(path: str, limit: int = 1 << 20) -> Optional[str]:
    """The text of a small file (its first `limit` characters), or None when it is absent or unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return None
