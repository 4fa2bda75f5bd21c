"""Each platform's own menu steps for what a remedy asks: a GPU runtime, a bf16-capable GPU, a
restart of the kernel. A Colab user changes the runtime from a menu, not with a command.

Sources (recorded in tests/data/platforms/ with the addresses):
- Colab: "Runtime → Change runtime type" with the accelerators "CPU", "T4 GPU", "L4 GPU", "A100 GPU",
  "v5e-1 TPU" (googlecolab/colabtools notebooks/Gemini_and_Stable_Diffusion.ipynb; colabtools issues
  #5342 and #5719); "Runtime → Restart session" (the menu's wording in 2025-26 notebooks; older releases
  said "Restart runtime").
- Kaggle: "Settings → Accelerator" with "None", "GPU T4 x2", "TPU v5e-8" (Kaggle/kaggle-cli issue #1196,
  pull request #1198). The restart wording "Run → Restart & clear cell outputs" is the editor's Run menu
  as users quote it; no Kaggle page states it.
- JupyterLab and Notebook 7: "Kernel → Restart Kernel…" (jupyterlab packages/notebook-extension);
  VS Code: "Restart" in the notebook toolbar, the command "Jupyter: Restart Kernel" (microsoft/vscode-jupyter
  package.nls.json).
Python 3.8+, stdlib only (checks' rules call these in the worker too).
"""

from __future__ import annotations

from envdoctor.target.platform.where import COLAB, JUPYTER, KAGGLE, VSCODE, Where

_GPU = {COLAB: "Runtime → Change runtime type → T4 GPU", KAGGLE: "Settings → Accelerator → GPU T4 x2"}
_BF16_GPU = {COLAB: "Runtime → Change runtime type → L4 GPU or A100 GPU"}
_RESTART = {
    COLAB: "Runtime → Restart session",
    KAGGLE: "Run → Restart & clear cell outputs",
    JUPYTER: "Kernel → Restart Kernel…",
    VSCODE: "Restart in the notebook's toolbar (or the command “Jupyter: Restart Kernel”)",
}


def gpu_runtime_step(place: Where) -> str:
    """'in Colab: Runtime → Change runtime type → T4 GPU' here; both hosted platforms' steps elsewhere."""
    if place.platform in _GPU:
        return "in %s: %s" % (place.name, _GPU[place.platform])
    return "in Colab: %s; in Kaggle: %s" % (_GPU[COLAB], _GPU[KAGGLE])


def bf16_gpu_step(place: Where) -> str:
    if place.platform == KAGGLE:
        return "Kaggle's GPUs (T4, P100) have no native bf16: use fp16 there"
    return "in Colab: %s" % _BF16_GPU[COLAB]


def restart_step(place: Where) -> str:
    if place.kernel and place.platform in _RESTART:
        return "%s: %s" % (place.name, _RESTART[place.platform])
    if place.kernel:
        return "restart the notebook's kernel"
    return "start a new Python process"
