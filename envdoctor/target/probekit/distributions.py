"""Installed distributions, read from their metadata without importing them.

Stdlib only, Python 3.8+: probes call it inside the worker.
"""

from __future__ import annotations

import re
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


_CANON = re.compile(r"[-_.]+")


def canonical(name: str) -> str:
    """PEP 503 name (https://peps.python.org/pep-0503/#normalized-names): what pip, the listing and
    the stash key distributions by."""
    return _CANON.sub("-", name).lower()


def _versions(paths: Sequence[str]) -> dict:
    """{canonical name: version} of the distributions found on `paths`, the first per name."""
    metadata = _metadata()
    found: dict = {}
    if metadata is None:
        return found
    for dist in metadata.distributions(path=list(paths)):
        try:
            name = dist.metadata["Name"]
        except Exception:  # noqa: BLE001 - a corrupt METADATA is not our crash
            continue
        if name:
            found.setdefault(canonical(name), dist.version)
    return found


def user_site_shadowing() -> dict:
    """The user site (`pip install --user`) and what in it shadows this environment's own copies: Python
    puts the user site before the environment's site-packages outside a venv (a conda env, a system
    Python), so a `--user` install wins there. {"path", "shadowing": [{"name", "user", "env"}]}; {} when
    the user site is off or absent."""
    import os
    import site
    import sys

    if not getattr(site, "ENABLE_USER_SITE", False):
        return {}
    try:
        user = site.getusersitepackages()
    except Exception:  # noqa: BLE001 - an odd site module (embedded Pythons)
        return {}
    if not user or not os.path.isdir(user) or user not in sys.path:
        return {}
    where = sys.path.index(user)
    mine = _versions([user])
    behind = _versions([p for p in sys.path[where + 1:] if p])  # what the user site comes before
    shadowing = [{"name": n, "user": v, "env": behind[n]} for n, v in sorted(mine.items()) if n in behind]
    return {"path": user, "shadowing": shadowing}
