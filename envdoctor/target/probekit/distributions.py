"""Installed distributions, read from their metadata without importing them.

Stdlib only, Python 3.8+: probes call it inside the worker.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple


def _metadata() -> Any:
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover - Python 3.7
        return None
    return metadata


def installed(names: Sequence[str]) -> Tuple[Optional[str], Optional[str]]:
    """(distribution name, version) of the first of `names` that is installed."""
    metadata = _metadata()
    if metadata is None:
        return None, None
    for name in names:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        except Exception:  # noqa: BLE001 - a corrupt METADATA is not our crash
            continue
    return None, None


def installed_version(name: str) -> Optional[str]:
    """Version of `name` (also tried with `_` for `-`), or None."""
    return installed((name, name.replace("-", "_")))[1]


def requires(name: Optional[str]) -> List[str]:
    """The Requires-Dist lines of an installed distribution ([] when absent or unreadable)."""
    metadata = _metadata()
    if not name or metadata is None:
        return []
    try:
        return list(metadata.requires(name) or [])
    except Exception:  # noqa: BLE001 - PackageNotFoundError or a broken record
        return []


def distribution(name: str) -> Any:
    """The importlib.metadata Distribution, None when absent; raises on a broken record."""
    metadata = _metadata()
    if metadata is None:
        return None
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
