"""Does the kernel still run what is no longer installed? After `fix` changed torch, apex or
transformers under a running notebook, the kernel keeps the versions it imported until it
restarts. Compared without importing anything: the modules already in sys.modules against the
installed distributions' metadata. Python 3.8+, stdlib only."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from envdoctor.target.platform.menus import restart_step
from envdoctor.target.platform.where import Where

# distribution -> the module the kernel imports it as: what a fix changes and a training notebook imports
WATCHED = {
    "torch": "torch", "torchvision": "torchvision", "torchaudio": "torchaudio", "numpy": "numpy", "apex": "apex",
    "transformers": "transformers", "diffusers": "diffusers", "peft": "peft", "accelerate": "accelerate",
    "xformers": "xformers", "flash-attn": "flash_attn", "bitsandbytes": "bitsandbytes", "triton": "triton",
}


@dataclass(frozen=True)
class Stale:
    distribution: str
    loaded: Optional[str]  # the version the kernel imported (its __version__)
    installed: Optional[str]  # None: no longer installed

    def text(self) -> str:
        if self.installed is None:
            return "%s %s is loaded in this kernel but no longer installed" % (self.distribution, self.loaded or "")
        return "%s %s is loaded in this kernel, %s is installed" % (self.distribution, self.loaded or "(unknown version)", self.installed)

    def to_dict(self) -> Dict[str, Optional[str]]:
        return {"distribution": self.distribution, "loaded": self.loaded, "installed": self.installed}


def loaded_versions(modules: Optional[Mapping[str, Any]] = None) -> Dict[str, Optional[str]]:
    """The watched distributions this process has imported, with their modules' __version__."""
    modules = sys.modules if modules is None else modules
    found: Dict[str, Optional[str]] = {}
    for distribution, name in WATCHED.items():
        module = modules.get(name)
        if module is not None:
            version = getattr(module, "__version__", None)
            found[distribution] = str(version) if version else None
    return found


def installed_versions(distributions: List[str]) -> Dict[str, Optional[str]]:
    from importlib import metadata

    found: Dict[str, Optional[str]] = {}
    for name in distributions:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def stale(loaded: Mapping[str, Optional[str]], installed: Mapping[str, Optional[str]]) -> List[Stale]:
    """The loaded distributions whose installed version differs or is gone. Pure."""
    out: List[Stale] = []
    for name, version in loaded.items():
        now = installed.get(name)
        # exact: torch's __version__ and its metadata agree ("2.13.0+cpu"), and a CPU build replaced by
        # a CUDA one differs only in that tag
        if now is None or (version is not None and version.strip() != now.strip()):
            out.append(Stale(name, version, now))
    return out


def in_this_kernel() -> List[Stale]:
    loaded = loaded_versions()
    return stale(loaded, installed_versions(list(loaded))) if loaded else []


def kernel_state(where: Where) -> Dict[str, Any]:
    """What the report says about this kernel: the stale modules and, if any, the restart step."""
    if not where.kernel:
        return {}
    gone = in_this_kernel()
    notes = ["Restart before training (%s): %s." % (restart_step(where), "; ".join(s.text() for s in gone))] if gone else []
    return {"stale": [s.to_dict() for s in gone], "notes": notes}
