"""Where envdoctor runs, read from each platform's recorded facts (tests/data/platforms/: the
environment variables, modules and paths of real Colab, Kaggle, VS Code and Jupyter sessions as
posted publicly, with their sources), and the menu steps that follow from it. Recorded facts,
not this machine: none of these platforms can be run here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from envdoctor.target.model import Finding, Target
from envdoctor.target.platform.kernel import Stale, loaded_versions, stale
from envdoctor.target.platform.menus import bf16_gpu_step, gpu_runtime_step, restart_step
from envdoctor.target.platform.where import Where, detect

PLATFORMS = Path(__file__).parent / "data" / "platforms"


def recorded(name: str) -> Dict[str, Any]:
    data: Dict[str, Any] = json.loads((PLATFORMS / ("%s.json" % name)).read_text(encoding="utf-8"))
    assert data["source"], name  # every snapshot says where its values come from
    return data


def where_of(name: str, kernel: bool = True) -> Where:
    facts = recorded(name)
    paths = set(facts.get("paths") or ())
    return detect(facts["environ"], facts.get("modules") or (), paths.__contains__, facts.get("gpus") or (), kernel,
                  facts.get("main") or ())


@pytest.mark.parametrize("name, platform, runtime, label", [
    ("colab-cpu", "colab", "CPU", "Colab (CPU runtime)"),
    ("colab-t4", "colab", "T4 GPU", "Colab (T4 GPU runtime)"),
    ("colab-tpu", "colab", "TPU", "Colab (TPU runtime)"),
    ("kaggle-cpu", "kaggle", "CPU", "Kaggle (CPU)"),
    ("kaggle-t4x2", "kaggle", "GPU T4 x2", "Kaggle (GPU T4 x2)"),
    ("kaggle-p100", "kaggle", "GPU P100", "Kaggle (GPU P100)"),
    ("vscode", "vscode", None, "a VS Code notebook"),
    ("jupyter", "jupyter", None, "a Jupyter notebook"),
])
def test_each_platform_is_told_apart_on_its_recorded_facts(name: str, platform: str, runtime: Any, label: str) -> None:
    where = where_of(name)
    assert (where.platform, where.runtime, where.label()) == (platform, runtime, label)


def test_a_terminal_is_a_terminal() -> None:
    assert where_of("terminal", kernel=False) == Where("terminal", False, None)


def test_kaggle_is_not_colab_although_its_image_is_colabs() -> None:
    """Kaggle's notebook image is built from Colab's runtime image: it carries COLAB_RELEASE_TAG."""
    kaggle = recorded("kaggle-t4x2")
    assert "COLAB_RELEASE_TAG" in kaggle["environ"]
    assert where_of("kaggle-t4x2").platform == "kaggle"


def test_colab_with_a_kaggle_folder_or_kaggle_credentials_is_colab() -> None:
    facts = recorded("colab-t4")
    environ = dict(facts["environ"], KAGGLE_USERNAME="me", KAGGLE_KEY="<redacted>")  # what people set to use the Kaggle API
    paths = set(facts["paths"]) | {"/kaggle", "/kaggle/working", "/kaggle/input"}  # Colab images have these (recorded 2026)
    assert detect(environ, facts["modules"], paths.__contains__, facts["gpus"], True).platform == "colab"


def test_an_empty_colab_gpu_variable_is_a_cpu_runtime() -> None:
    environ = recorded("colab-cpu")["environ"]
    assert environ["COLAB_GPU"] == "" and where_of("colab-cpu").runtime == "CPU"


def test_envdoctor_in_a_shell_cell_of_colab_is_colab_without_a_kernel() -> None:
    """`!envdoctor check` runs in a subprocess of the kernel: same variables, not the kernel itself."""
    assert where_of("colab-cpu", kernel=False) == Where("colab", False, "CPU")


@pytest.mark.parametrize("name, gpu, restart", [
    ("colab-cpu", "in Colab: Runtime → Change runtime type → T4 GPU", "Colab: Runtime → Restart session"),
    ("kaggle-cpu", "in Kaggle: Settings → Accelerator → GPU T4 x2", "Kaggle: Run → Restart & clear cell outputs"),
    ("jupyter", "in Colab: Runtime → Change runtime type → T4 GPU; in Kaggle: Settings → Accelerator → GPU T4 x2",
     "Jupyter: Kernel → Restart Kernel…"),
    ("vscode", "in Colab: Runtime → Change runtime type → T4 GPU; in Kaggle: Settings → Accelerator → GPU T4 x2",
     "VS Code: Restart in the notebook's toolbar (or the command “Jupyter: Restart Kernel”)"),
])
def test_menu_steps_follow_the_platform(name: str, gpu: str, restart: str) -> None:
    where = where_of(name)
    assert gpu_runtime_step(where) == gpu
    assert restart_step(where) == restart


def test_bf16_advice_knows_kaggle_has_no_bf16_gpu() -> None:
    assert "no native bf16" in bf16_gpu_step(where_of("kaggle-t4x2"))
    assert "L4 GPU or A100 GPU" in bf16_gpu_step(where_of("colab-t4"))


def _use_gpu(findings: List[Finding]) -> str:
    return next(r.summary for f in findings for r in f.remedies if r.id == "use-gpu")


def test_the_rules_say_the_menu_step_of_where_they_run() -> None:
    """cpu-half-kernels on torch 2.0.1's recorded facts, judged as in a Colab and in a Kaggle CPU session."""
    from conftest import load_fixture

    from envdoctor.pipeline.check.registry import load_checks
    from envdoctor.target.intent import ConfigSource, Intent, Setting

    check = next(c.check for c in load_checks(plugins=False)[0] if c.check.id == "cpu-half-kernels")
    facts = next(c["facts"] for c in load_fixture("cpu-torch-2.0.1.json")["checks"] if c["id"] == "cpu-half-kernels")
    fp16 = Setting("precision", "fp16", "autotrain", "train.yaml", "params.mixed_precision", raw="fp16", line=6)
    intent = Intent((ConfigSource("train.yaml", "autotrain", "yaml", "autotrain-advanced dreambooth"),), (fp16,))
    for name, step in (("colab-cpu", "Runtime → Change runtime type → T4 GPU"), ("kaggle-cpu", "Settings → Accelerator → GPU T4 x2")):
        env = Target(torch="2.0.1", intent=intent, where=where_of(name))
        assert step in _use_gpu(check.judge(facts, env))
        assert ("Kaggle" in _use_gpu(check.judge(facts, env))) == (name == "kaggle-cpu")


def test_stale_modules_are_what_the_kernel_loaded_and_is_no_longer_installed() -> None:
    loaded = {"torch": "2.0.1+cu117", "numpy": "1.26.4", "apex": None, "peft": "0.13.2"}
    installed = {"torch": "2.13.0+cpu", "numpy": "1.26.4", "apex": "0.1", "peft": None}
    assert stale(loaded, installed) == [Stale("torch", "2.0.1+cu117", "2.13.0+cpu"), Stale("peft", "0.13.2", None)]
    assert stale({"torch": "2.13.0+cpu"}, {"torch": "2.13.0+cu126"})  # a CPU build replaced by a CUDA one
    assert Stale("torch", "2.0.1", "2.13.0").text() == "torch 2.0.1 is loaded in this kernel, 2.13.0 is installed"


def test_loaded_versions_reads_modules_without_importing() -> None:
    class Module:
        __version__ = "9.9"

    assert loaded_versions({"torch": Module(), "flash_attn": Module(), "json": Module()}) == {"torch": "9.9", "flash-attn": "9.9"}
