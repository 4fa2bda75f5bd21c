"""Where envdoctor runs: Colab (and its runtime), Kaggle (and its accelerator), a VS Code or a
Jupyter notebook, or a terminal. Read from what the platform sets (environment variables,
modules already imported, its folders) and the GPUs the report found; nothing is imported.
`detect` is pure, so each platform is tested on its recorded facts (tests/data/platforms/).
Python 3.8+, stdlib only: checks' rules read `Where` through the Target in the worker too.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Collection, Dict, Mapping, Optional, Sequence

COLAB, KAGGLE, VSCODE, JUPYTER, TERMINAL = "colab", "kaggle", "vscode", "jupyter", "terminal"
NAMES = {COLAB: "Colab", KAGGLE: "Kaggle", VSCODE: "VS Code", JUPYTER: "Jupyter", TERMINAL: "a terminal"}

# GPU models on the hosted runtimes, as nvidia-smi and torch name them ("Tesla T4", "NVIDIA A100-SXM4-40GB",
# "Tesla P100-PCIE-16GB", recorded) -> the runtime's menu name: Colab's "T4 GPU", "L4 GPU", "A100 GPU"
# (Runtime → Change runtime type), Kaggle's "GPU T4 x2", "GPU P100" (Settings → Accelerator). Sources in menus.py.
_COLAB_GPUS = (("A100", "A100 GPU"), ("L4", "L4 GPU"), ("T4", "T4 GPU"), ("V100", "V100 GPU"), ("H100", "H100 GPU"))
_KAGGLE_GPUS = (("P100", "GPU P100"), ("T4", "GPU T4"))


@dataclass(frozen=True)
class Where:
    platform: str  # COLAB, KAGGLE, VSCODE, JUPYTER, TERMINAL
    kernel: bool = False  # inside a notebook kernel (not a terminal, not `!envdoctor` in a cell)
    runtime: Optional[str] = None  # hosted runtimes: "CPU", "T4 GPU", "GPU T4 x2", "TPU"

    @property
    def name(self) -> str:
        return NAMES.get(self.platform, self.platform)

    def label(self) -> str:
        """'Colab (CPU runtime)', 'Kaggle (GPU T4 x2)', 'a Jupyter notebook', 'a terminal'."""
        if self.runtime:
            return "%s (%s%s)" % (self.name, self.runtime, " runtime" if self.platform == COLAB else "")
        if self.platform in (VSCODE, JUPYTER):
            return "a %s notebook" % self.name if self.kernel else "%s's terminal" % self.name
        return self.name

    def to_dict(self) -> Dict[str, Any]:
        return {"platform": self.platform, "kernel": self.kernel, "runtime": self.runtime, "label": self.label()}

    @classmethod
    def from_dict(cls, data: Optional[Mapping[str, Any]]) -> Where:
        data = data or {}
        return cls(str(data.get("platform") or TERMINAL), bool(data.get("kernel")), data.get("runtime"))


def _model(table: Sequence[Any], gpus: Sequence[str]) -> Optional[str]:
    """The menu name of the first known GPU model among gpus, with its count ("GPU T4 x2")."""
    for model, menu in table:
        matching = [g for g in gpus if model in g]
        if matching:
            return menu + (" x%d" % len(matching) if len(matching) > 1 else "")
    return None


def _colab(environ: Mapping[str, str], modules: Collection[str], exists: Callable[[str], bool]) -> bool:
    # google.colab is imported by Colab's own kernel; COLAB_GPU is exported (maybe empty) by its start-up
    # script; COLAB_RELEASE_TAG alone is not enough: Kaggle's image is built from Colab's and inherits it.
    return ("google.colab" in modules or any(k in environ for k in ("COLAB_GPU", "COLAB_JUPYTER_IP", "TBE_RUNTIME_ADDR"))
            or exists("/var/colab/hostname") or bool(environ.get("COLAB_RELEASE_TAG")))


def _kaggle(environ: Mapping[str, str], exists: Callable[[str], bool]) -> bool:
    # Not any KAGGLE_* (people set KAGGLE_USERNAME/KAGGLE_KEY in Colab), not /kaggle/working (Colab images have it).
    keys = ("KAGGLE_KERNEL_RUN_TYPE", "KAGGLE_DATA_PROXY_URL", "KAGGLE_URL_BASE", "KAGGLE_DOCKER_IMAGE")
    return any(environ.get(k) for k in keys) or exists("/opt/kaggle")


def _vscode(environ: Mapping[str, str], main: Collection[str]) -> bool:
    # vscode-jupyter runs `__vsc_ipynb_file__ = "<notebook>"` in the kernel; its kernels inherit the extension host's variables
    return ("__vsc_ipynb_file__" in main or environ.get("PYDEVD_IPYTHON_COMPATIBLE_DEBUGGING") == "1"
            or any(environ.get(k) for k in ("VSCODE_PID", "VSCODE_CWD")))


def detect(environ: Mapping[str, str], modules: Collection[str], exists: Callable[[str], bool],
           gpus: Sequence[str] = (), kernel: bool = False, main: Collection[str] = ()) -> Where:
    """Pure: the platform from its own marks, Kaggle before Colab (Kaggle's image is Colab's)."""
    if _kaggle(environ, exists):
        tpu = environ.get("ISTPUVM") == "1" or bool(environ.get("TPU_ACCELERATOR_TYPE"))
        return Where(KAGGLE, kernel, "TPU" if tpu else _model(_KAGGLE_GPUS, gpus) or ("GPU" if gpus else "CPU"))
    if _colab(environ, modules, exists):
        if environ.get("COLAB_TPU_1VM") == "1" or environ.get("TPU_ACCELERATOR_TYPE") or environ.get("COLAB_TPU_ADDR"):
            runtime = "TPU"
        elif environ.get("COLAB_GPU") == "1" or gpus:  # "" on CPU and TPU runtimes: the value, not the presence
            runtime = _model(_COLAB_GPUS, gpus) or "GPU"
        else:
            runtime = "CPU"
        return Where(COLAB, kernel, runtime)
    if _vscode(environ, main):
        return Where(VSCODE, kernel)
    if kernel or environ.get("JPY_PARENT_PID") or environ.get("JPY_SESSION_NAME"):
        return Where(JUPYTER, kernel)
    return Where(TERMINAL, False)


def in_kernel() -> bool:
    """Inside a Jupyter/Colab/Kaggle/VS Code kernel (not a terminal, not `!envdoctor` in a cell)."""
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    shell = ipython_shell()
    return shell is not None and getattr(shell, "kernel", None) is not None


def ipython_shell() -> Any:
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get else None


def here(gpus: Sequence[str] = ()) -> Where:
    main = getattr(sys.modules.get("__main__"), "__dict__", {})
    return detect(os.environ, sys.modules, os.path.exists, gpus, in_kernel(), main)
