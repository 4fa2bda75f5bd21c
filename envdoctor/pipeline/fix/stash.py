"""Installed distributions of the target interpreter: listed, stashed into a journal folder,
and restored byte for byte, so that undoing a pip step needs no network.

What is installed is read *in the target* (it may be another venv than envdoctor's own)
by a small stdlib-only script on importlib.metadata, in sys.path order, first distribution
per name wins, as pip itself reads them (`pip freeze` lists the same names and versions).

A stash is a folder per distribution:

    <name>-<version>/manifest.json   [{"path": absolute path, "stored": "files/3"} | {"path", "link"} | {"path", "missing"}]
    <name>-<version>/files/<n>       the installed files, hard-linked where the filesystem allows
    <name>-<version>/dist-info/      the metadata folder, whole (METADATA, RECORD, INSTALLER, ...)

A hard link keeps the old bytes because pip unlinks a file before writing its new one
(and moves files away when it uninstalls): it never rewrites an installed file in place.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from envdoctor.pipeline.fix.action import FixError
from envdoctor.pipeline.fix.journal import write_json_atomically

READ_TIMEOUT_S = 120.0

# Runs in the target interpreter (Python 3.8+, stdlib only). argv[1]: JSON list of the
# names whose files are wanted. sys.path[0] is the current folder under -c: dropped, so a
# stray *.dist-info where envdoctor was started is not taken for an installed distribution.
_READ_SCRIPT = r"""
import json, os, re, sys
if sys.path and sys.path[0] in ("", os.getcwd()):
    sys.path.pop(0)
from importlib import metadata

def canon(name):
    return re.sub(r"[-_.]+", "-", name).lower()

def meta_dir(dist):
    path = getattr(dist, "_path", None)
    if path is not None:
        return os.path.normpath(str(path))
    for f in dist.files or ():
        if f.name in ("METADATA", "PKG-INFO") and f.parent.name.endswith((".dist-info", ".egg-info")):
            return os.path.normpath(str(dist.locate_file(f.parent)))
    return None

wanted = set(canon(n) for n in json.loads(sys.argv[1]))
listing, dists = {}, {}
for dist in metadata.distributions():
    try:
        name = dist.metadata["Name"]
    except Exception:
        name = None
    if not name or canon(name) in listing:
        continue
    key = canon(name)
    listing[key] = dist.version
    if key in wanted:
        files = dist.files
        dists[key] = {
            "name": name, "version": dist.version, "dist_info": meta_dir(dist),
            "files": None if files is None else sorted(set(os.path.normpath(str(dist.locate_file(f))) for f in files)),
        }
print(json.dumps({"listing": listing, "dists": dists}))
"""

@dataclass(frozen=True)
class Installed:
    """One installed distribution as the target reads it."""

    name: str
    version: str
    dist_info: Optional[str]
    files: Optional[List[str]]  # absolute paths from RECORD; None when the distribution has no RECORD


def _read(python: str, names: Sequence[str]) -> Dict[str, Any]:
    try:
        proc = subprocess.run([python, "-c", _READ_SCRIPT, json.dumps(list(names))], capture_output=True, text=True,
                              timeout=READ_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        raise FixError("cannot read the distributions installed in %s: %s" % (python, exc)) from exc
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]
        raise FixError("cannot read the distributions installed in %s: %s" % (python, tail))
    return dict(json.loads(proc.stdout))


def listing(python: str) -> Dict[str, str]:
    """{canonical name: version} of every distribution the target sees (pip freeze --all's set)."""
    return dict(_read(python, [])["listing"])


def installed(python: str, names: Sequence[str]) -> Dict[str, Installed]:
    """The installed distributions among `names` (canonical name → Installed); absent ones left out."""
    dists = _read(python, names)["dists"]
    return {key: Installed(d["name"], d["version"], d["dist_info"], d["files"]) for key, d in dists.items()}


def listing_changes(before: Dict[str, str], after: Dict[str, str]) -> List[str]:
    """'apex 0.9.10.dev0 → absent', 'packaging absent → 24.0': one line per name that differs."""
    lines = []
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            lines.append("%s %s → %s" % (name, before.get(name, "absent"), after.get(name, "absent")))
    return lines


def _place(source: str, target: str) -> None:
    """`target` becomes `source`'s bytes at once: a link (or a copy) under a temp name, then os.replace."""
    temp = "%s.envdoctor-%d.tmp" % (target, os.getpid())
    try:
        os.link(source, temp)
    except OSError:  # another filesystem, or links not allowed: a copy keeps the bytes as well
        shutil.copy2(source, temp)
    os.replace(temp, target)


def stash(dist: Installed, folder: Path) -> Dict[str, Any]:
    """Keep every installed file of `dist` and its metadata folder in `folder`; returns its record."""
    if dist.files is None or not dist.dist_info:
        raise FixError("cannot back up %s %s: it has no RECORD of its installed files, so undo could not restore it"
                       % (dist.name, dist.version))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "files").mkdir(exist_ok=True)
    meta_prefix = os.path.join(dist.dist_info, "")
    manifest: List[Dict[str, Any]] = []
    try:
        for path in dist.files:
            if path.startswith(meta_prefix):
                continue  # kept whole below
            if os.path.islink(path):
                manifest.append({"path": path, "link": os.readlink(path)})
            elif not os.path.isfile(path):
                manifest.append({"path": path, "missing": True})  # in RECORD, not on disk: nothing to restore
            else:
                stored = "files/%d" % len(manifest)
                _place(path, str(folder / stored))
                manifest.append({"path": path, "stored": stored})
        shutil.copytree(dist.dist_info, str(folder / "dist-info"), symlinks=True, copy_function=_place, dirs_exist_ok=True)
    except OSError as exc:
        raise FixError("cannot back up %s %s into %s: %s" % (dist.name, dist.version, folder, exc)) from exc
    write_json_atomically(folder / "manifest.json", manifest)
    return {"name": dist.name, "version": dist.version, "dist_info": dist.dist_info, "folder": folder.name,
            "files": sum(1 for m in manifest if "stored" in m)}


def restore(record: Dict[str, Any], folder: Path) -> None:
    """Put a stashed distribution back, file by file and its metadata folder whole."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        for entry in manifest:
            path = entry["path"]
            if entry.get("missing"):
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if "link" in entry:
                if os.path.lexists(path):
                    os.unlink(path)
                os.symlink(entry["link"], path)
            else:
                _place(str(folder / entry["stored"]), path)
        shutil.copytree(str(folder / "dist-info"), record["dist_info"], symlinks=True, copy_function=_place, dirs_exist_ok=True)
    except (OSError, ValueError, KeyError) as exc:
        raise FixError("cannot restore %s %s from %s: %s" % (record.get("name"), record.get("version"), folder, exc)) from exc
