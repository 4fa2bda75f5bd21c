"""Which installed distributions conda owns in a conda environment: pip must not replace them.

conda records every package it links in `<prefix>/conda-meta/<name>-<version>-<build>.json`, with
the list of its files (https://docs.conda.io/projects/conda/en/latest/user-guide/concepts/environments.html);
a Python package's files include its `*.dist-info` folder. A distribution whose metadata folder a record
lists came from conda: if pip replaces or removes it, conda's records no longer say what is installed,
and the next `conda install` or `conda update` works from a false picture of the environment.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Mapping, Optional

from envdoctor.pipeline.fix.stash import Installed


@dataclass(frozen=True)
class CondaRecord:
    package: str  # conda's name for it ("pytorch" for torch)
    version: str
    record: str  # the file under conda-meta that says so


def is_conda_env(prefix: Optional[str]) -> bool:
    return bool(prefix) and os.path.isdir(os.path.join(str(prefix), "conda-meta"))


def conda_owned(prefix: Optional[str], installed: Mapping[str, Installed]) -> Dict[str, CondaRecord]:
    """Of the `installed` distributions (canonical name -> Installed), those a conda record lists."""
    if not is_conda_env(prefix):
        return {}
    folders = {key: os.path.basename(dist.dist_info) for key, dist in installed.items() if dist.dist_info}
    owned: Dict[str, CondaRecord] = {}
    for record in sorted(Path(str(prefix), "conda-meta").glob("*.json")):
        if not folders:
            break
        try:
            text = record.read_text(encoding="utf-8")
        except OSError:
            continue
        named = [key for key, folder in folders.items() if folder in text]  # a quick look before parsing
        if not named:
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        files = ["/" + str(f).replace("\\", "/") for f in data.get("files") or ()]
        for key in named:
            if any("/%s/" % folders[key] in f for f in files):
                owned[key] = CondaRecord(str(data.get("name") or key), str(data.get("version") or "?"), "conda-meta/" + record.name)
                del folders[key]
    return owned
