"""The remedy builders: one spelling per action, commands generated from the action,
the target interpreter's own pip, torch pinned whenever pip resolves dependencies."""

from __future__ import annotations

from envdoctor.target.model import Target
from envdoctor.target.remedies.actions import config_remedy, env_remedy, pip_action, pip_remedy
from envdoctor.target.remedies.kinds import KINDS, commands_for
from envdoctor.target.versions import requirement_name

ENV = Target(python="/home/me/my venv/bin/python", torch="2.13.0+cpu")
NO_TORCH = Target(python="/home/me/venv/bin/python", torch=None)


def test_installing_a_companion_pins_the_installed_torch() -> None:
    remedy = pip_remedy("pair torchvision", "tv", ENV, install=["torchvision==0.28.0+cpu"], index_url="https://download.pytorch.org/whl/cpu")
    assert remedy.action == {"install": ["torchvision==0.28.0+cpu"], "constraints": ["torch==2.13.0+cpu"],
                             "index_url": "https://download.pytorch.org/whl/cpu"}
    assert remedy.commands == ("'/home/me/my venv/bin/python' -m pip install torchvision==0.28.0+cpu torch==2.13.0+cpu "
                               "--index-url https://download.pytorch.org/whl/cpu",)


def test_the_pin_names_torch_as_pip_knows_it() -> None:
    """PyPI's CUDA torch 2.0.1 says `2.0.1+cu117` in torch.__version__ but is installed as 2.0.1:
    `torch==2.0.1+cu117` on a pip line is ResolutionImpossible, so the pin is the distribution's version."""
    pypi = Target(python="/v/bin/python", torch="2.0.1+cu117", torch_distribution="2.0.1")
    assert pip_action(pypi, install=["numpy<2"])["constraints"] == ["torch==2.0.1"]
    cpu_wheel = Target(python="/v/bin/python", torch="2.13.0+cpu", torch_distribution="2.13.0+cpu")
    assert pip_action(cpu_wheel, install=["numpy<2"])["constraints"] == ["torch==2.13.0+cpu"]


def test_torch_itself_no_deps_or_no_torch_means_no_pin() -> None:
    assert "constraints" not in pip_action(ENV, upgrade=["torch"])
    assert "constraints" not in pip_action(ENV, install=["Torch>=2.4"])  # the name is normalised
    assert "constraints" not in pip_action(ENV, install=["nvidia-cublas-cu12==12.8.4.1"], no_deps=True)
    assert "constraints" not in pip_action(NO_TORCH, install=["numpy"])
    assert "constraints" not in pip_action(ENV, uninstall=["apex"])


def test_uninstall_first_then_one_install_with_flags_and_build_environment() -> None:
    action = pip_action(ENV, uninstall=["flash-attn"], install=["flash-attn==2.7.4"], no_build_isolation=True, no_cache=True,
                        build_env={"MAX_JOBS": "4", "FLASH_ATTENTION_FORCE_BUILD": "TRUE"})
    assert set(action) <= set(KINDS["pip"].keys)
    assert commands_for("pip", action, "/v/bin/python") == (
        "/v/bin/python -m pip uninstall -y flash-attn",
        "FLASH_ATTENTION_FORCE_BUILD=TRUE MAX_JOBS=4 /v/bin/python -m pip install --no-build-isolation --no-cache-dir "
        "flash-attn==2.7.4 torch==2.13.0+cpu",
    )


def test_shell_metacharacters_are_quoted() -> None:
    remedy = pip_remedy("numpy 1", "np", ENV, install=["numpy<2"])
    assert remedy.commands == ("'/home/me/my venv/bin/python' -m pip install 'numpy<2' torch==2.13.0+cpu",)


def test_env_and_config_remedies() -> None:
    visible = env_remedy("use GPU 1", "cvd", set_env={"CUDA_VISIBLE_DEVICES": "1"})
    assert visible.action == {"set_env": {"CUDA_VISIBLE_DEVICES": "1"}}
    assert visible.commands == ("export CUDA_VISIBLE_DEVICES=1",)
    unset = env_remedy("unset it", "u", unset_env=["CUDA_VISIBLE_DEVICES"])
    assert unset.commands == ("unset CUDA_VISIBLE_DEVICES",)
    fp32 = config_remedy("fp32 on cpu", "fp32", {"precision": "fp32"}, when={"device": "cpu"})
    assert (fp32.kind, fp32.action, fp32.commands) == ("config", {"set": {"precision": "fp32"}, "when": {"device": "cpu"}}, ())
    smaller = config_remedy("smaller batch", "b", {}, reduce=["batch_size"])
    assert smaller.action == {"reduce": ["batch_size"]}


def test_requirement_names() -> None:
    assert requirement_name("flash_attn==2.7.4") == "flash-attn"
    assert requirement_name("Torch>=2") == "torch"
