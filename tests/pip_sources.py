"""Where pip is configured to find packages here (indexes, local wheel folders, constraints), as uv's environment
variables: uv reads no pip.conf. The test venvs (tests/conftest.py) and nox's own session venvs (noxfile.py) are
installed with uv from the same places pip would use."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, List

# pip's setting -> uv's variable, and how uv separates several values in it
_UV = {"index-url": ("UV_INDEX_URL", " "), "extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
       "find-links": ("UV_FIND_LINKS", ","), "constraint": ("UV_CONSTRAINT", " ")}


def uv_environment(python: str = sys.executable) -> Dict[str, str]:
    """UV_* variables for what `python -m pip config list` shows ({} where that python has no pip); like pip, the best
    version from any of the indexes. {} too where the process that started this one set them already (nox for its
    sessions and their tests): they are inherited, and asking pip again would only repeat the answer."""
    if "UV_INDEX_STRATEGY" in os.environ:
        return {}
    proc = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True)
    if proc.returncode != 0:
        return {}
    values: Dict[str, List[str]] = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in _UV:
            for item in value.strip().strip("'\"").split():
                if item not in values.setdefault(name, []):  # the same setting from the file and the environment
                    values[name].append(item)
    found = {_UV[name][0]: _UV[name][1].join(items) for name, items in values.items() if items}
    return dict(found, UV_INDEX_STRATEGY="unsafe-best-match") if found else {}
