"""Version arithmetic for the rules, on `packaging` (PEP 440), written once.

Rules run in the parent, where packaging is a declared dependency; check modules are
also imported by the worker (for their probes) in environments that may lack it, so
packaging is imported inside the functions, never at module level.

Pre-releases and local labels compare as their release: an NGC container's
`2.4.0a0+nv24.06` is torch 2.4.0 for pairing purposes, `2.13.0+cpu` is 2.13.0.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence, Tuple

_LOCAL = re.compile(r"\+[A-Za-z0-9.]+")


def parse(text: Optional[str]) -> Any:
    """packaging's Version, or None for text that is not a version."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(text).strip()) if text else None
    except InvalidVersion:
        return None


def release_tuple(text: Optional[str]) -> Tuple[int, ...]:
    """(2, 13, 0) for '2.13.0+cpu'; the leading numbers of non-PEP 440 text; () for none."""
    version = parse(text)
    if version is not None:
        return tuple(version.release)
    match = re.match(r"^\s*v?(\d+(?:\.\d+)*)", text or "")
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def release(text: Optional[str], parts: int = 3) -> Optional[str]:
    """'2.13.0' for '2.13.0+cpu' (padded with zeros to `parts`); None when unreadable."""
    numbers = release_tuple(text)
    if not numbers:
        return None
    return ".".join(str(p) for p in (numbers + (0,) * parts)[:parts])


def local(text: Optional[str]) -> Optional[str]:
    """'cpu' for '2.13.0+cpu', None without a local label."""
    version = parse(text)
    return version.local if version is not None else None


def _comparable(text: Optional[str]) -> Any:
    """The release (and post number) alone: pre-releases and local labels dropped."""
    from packaging.version import Version

    version = parse(text)
    if version is None:
        return None
    return Version(".".join(str(p) for p in version.release) + (".post%d" % version.post if version.post is not None else ""))


def satisfies(text: Optional[str], specifier: str) -> Optional[bool]:
    """Does version `text` meet a PEP 440 specifier like '==2.13.0', '>=2.4,<3', '==2.10.*'?
    None when either side cannot be read."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    version = _comparable(text)
    if version is None:
        return None
    try:
        spec = SpecifierSet(_LOCAL.sub("", specifier.replace(" ", "")))
    except InvalidSpecifier:
        return None
    return spec.contains(version, prereleases=True)


def requirement_specifier(lines: Sequence[str], names: Sequence[str]) -> Optional[str]:
    """The specifier of the first Requires-Dist line on one of `names` that applies outside
    extras ('==2.13.0' from 'torch==2.13.0; platform_system == "Linux"'), '' when unpinned."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    wanted = {canonicalize_name(n) for n in names}
    for line in lines or ():
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) not in wanted or (req.marker is not None and "extra" in str(req.marker)):
            continue
        return str(req.specifier)
    return None


def requirement_name(line: str) -> Optional[str]:
    """The distribution a requirement names, normalised ('flash-attn' from 'flash_attn==2.7.4',
    'pytorch-triton' from a Requires-Dist line); None for what is not a requirement (a URL)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return str(canonicalize_name(Requirement(line).name))
    except InvalidRequirement:
        return None
