"""Installed distributions, read from their metadata without importing them.

Stdlib only, Python 3.8+: probes call it inside the worker.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple


def installed(names: Sequence[str]) -> Tuple[Optional[str], Optional[str]]:
    """(distribution name, version) of the first of `names` that is installed."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python 3.7
        return None, None
    for name in names:
        try:
            return name, version(name)
        except PackageNotFoundError:
            continue
        except Exception:  # noqa: BLE001 - a corrupt METADATA is not our crash
            continue
    return None, None


def installed_version(name: str) -> Optional[str]:
    """Version of `name` (also tried with `_` for `-`), or None."""
    return installed((name, name.replace("-", "_")))[1]
