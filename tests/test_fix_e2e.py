"""`envdoctor fix` and `envdoctor undo` end to end: the seeds' stacks really installed, real
config files, the real CLI; every edit verified by re-probing and undone byte for byte."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml
from conftest import IMPOSTOR_APEX, broken_build_links, run_envdoctor

SEED_004 = (  # seed 004: autotrain-advanced SDXL DreamBooth, fp16, on a CPU runtime (torch 2.0.1 there)
    "task: dreambooth\r\n"
    "base_model: stabilityai/stable-diffusion-xl-base-1.0\r\n"
    "project_name: my-dreambooth  # the Colab notebook's name\r\n"
    "backend: local\r\n"
    "data:\r\n"
    "  path: images/\r\n"
    "  prompt: photo of sks dog\r\n"
    "params:\r\n"
    "  # mixed_precision: bf16\r\n"
    "  image_size: 1024\r\n"
    "  mixed_precision: fp16\r\n"
    "  batch_size: 1"  # no final newline
)

ACCELERATE = (  # what `accelerate config` writes, trimmed
    "compute_environment: LOCAL_MACHINE\n"
    "debug: false\n"
    "distributed_type: 'NO'\n"
    "downcast_bf16: 'no'\n"
    "machine_rank: 0\n"
    "main_training_function: main\n"
    "mixed_precision: fp16\n"
    "num_machines: 1\n"
    "num_processes: 1\n"
    "use_cpu: false\n"
)

ONETRAINER_DORA_FP8 = """{
    "__version": 9,
    "training_method": "LORA",
    "model_type": "STABLE_DIFFUSION_XL_10_BASE",
    "base_model_name": "stabilityai/stable-diffusion-xl-base-1.0",
    "vae": {"model_name": "madebyollin/sdxl-vae-fp16-fix", "weight_dtype": "FLOAT_32"},
    "train_device": "cpu",
    "temp_device": "cpu",
    "train_dtype": "BFLOAT_16",
    "unet": {
        "train": true,
        "weight_dtype": "FLOAT_8"
    },
    "text_encoder": {
        "train": false,
        "weight_dtype": "FLOAT_16"
    },
    "lora_rank": 16,
    "lora_decompose": true
}"""


# ---------------------------------------------------------------- helpers


def write(path: Path, text: str) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def envdoctor(*args: str, state: Path, env: Optional[Dict[str, str]] = None, code: Optional[int] = None, timeout: float = 600) -> Any:
    proc = run_envdoctor(*args, env=dict(env or {}, ENVDOCTOR_STATE_DIR=str(state)), timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    if code is not None:
        assert proc.returncode == code, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def fix_json(*args: str, state: Path, code: int, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    proc = envdoctor("fix", "--json", *args, state=state, env=env, code=code)
    return json.loads(proc.stdout)


def changed_lines(before: str, after: str) -> List[tuple]:
    """(old line, new line) for every line that differs: the rest of the file is untouched."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old) == len(new)
    return [(a, b) for a, b in zip(old, new) if a != b]


# ---------------------------------------------------------------- seed 004 on torch 2.0.1


@pytest.mark.slow
def test_seed_004_fp16_on_a_cpu_without_half_kernels_is_fixed_verified_and_undone(old_torch_python: Path, tmp_path: Path) -> None:
    train = write(tmp_path / "train.yaml", SEED_004)
    state = tmp_path / "state"
    before = train.read_bytes()
    python = ("--python", str(old_torch_python), "--config", str(train))

    # the check names the line
    proc = envdoctor("check", *python, "--only", "cpu-half-kernels", state=state, code=1)
    assert "train.yaml:11 `mixed_precision: fp16` asks for fp16 on the CPU" in proc.stdout

    # without a terminal and without --yes: the plan only, exit 1, nothing changed
    proc = envdoctor("fix", *python, "--only", "cpu-half-kernels,library-probes", state=state, code=1)
    assert train.read_bytes() == before
    plan = proc.stdout
    assert "1. [config] " in plan and "(precision-fp32)" in plan
    assert "-  mixed_precision: fp16" in plan
    assert "+  mixed_precision: null" in plan
    assert "--prefer torch-upgrade" in plan  # the torch upgrade, as an alternative
    assert "Move the run to a GPU" in plan  # and the GPU switch
    assert not state.exists() or not list(state.rglob("journal.json"))

    # --yes: applied, verified by re-probing on torch 2.0.1
    result = fix_json("--yes", *python, "--only", "cpu-half-kernels,library-probes", state=state, code=0)
    assert result["outcome"]["status"] == "verified"
    assert all(v["fixed"] for v in result["outcome"]["verified"])
    after = train.read_bytes().decode("utf-8")
    assert changed_lines(before.decode("utf-8"), after) == [("  mixed_precision: fp16\r\n", "  mixed_precision: null\r\n")]
    assert yaml.safe_load(after)["params"]["mixed_precision"] is None
    assert not after.endswith("\n")  # still no final newline
    envdoctor("check", *python, "--only", "cpu-half-kernels", state=state, code=0)

    # undo: byte for byte
    envdoctor("undo", state=state, code=0)
    assert train.read_bytes() == before
    listing = envdoctor("undo", "--list", state=state, code=0).stdout
    assert result["outcome"]["journal"] in listing and "undone" in listing


@pytest.mark.slow
def test_accelerate_fp16_on_the_cpu_becomes_quoted_no(old_torch_python: Path, tmp_path: Path) -> None:
    config = write(tmp_path / "default_config.yaml", ACCELERATE)
    state = tmp_path / "state"
    result = fix_json("--yes", "--python", str(old_torch_python), "--config", str(config), "--only", "cpu-half-kernels", state=state, code=0)
    assert result["outcome"]["status"] == "verified"
    after = config.read_text(encoding="utf-8")
    assert changed_lines(ACCELERATE, after) == [("mixed_precision: fp16\n", "mixed_precision: 'no'\n")]
    assert yaml.safe_load(after)["mixed_precision"] == "no"  # a string, not YAML's False
    envdoctor("undo", state=state, code=0)
    assert config.read_text(encoding="utf-8") == ACCELERATE


@pytest.mark.slow
def test_secrets_beside_the_edited_line_reach_no_output_and_the_file_keeps_them(old_torch_python: Path, tmp_path: Path) -> None:
    """An autotrain config with a hub token and a W&B key next to the precision it edits: the plan's diff
    context, --json, the terminal and the journal mask them; the edit and the undo keep their bytes."""
    token, wandb = "hf_" + "T" * 34, "0123456789abcdef" * 2 + "01234567"
    config = write(tmp_path / "train.yml", SEED_004.replace("  image_size: 1024\r\n", "  image_size: 1024\r\n  token: %s\r\n" % token)
                   .replace("backend: local\r\n", "backend: local\r\nwandb_key: %s\r\n" % wandb))
    before = config.read_bytes()
    state = tmp_path / "state"
    applied = envdoctor("fix", "--yes", "--python", str(old_torch_python), "--config", str(config), "--only", "cpu-half-kernels",
                        state=state, code=0)
    assert "-  mixed_precision: fp16" in applied.stdout and "+  mixed_precision: null" in applied.stdout  # the diff is shown...
    journal = "".join(p.read_text(encoding="utf-8") for p in state.rglob("*.json"))
    for output in (applied.stdout, applied.stderr, journal):
        assert token not in output and wandb not in output  # ...without the secrets beside it
    assert "token: ***" in applied.stdout
    after = config.read_bytes()
    assert token.encode() in after and wandb.encode() in after and b"mixed_precision: null" in after
    envdoctor("undo", state=state, code=0)
    assert config.read_bytes() == before


# ---------------------------------------------------------------- seed 003: DoRA on a float8 base, torch 2.13 with peft


@pytest.mark.slow
def test_dora_on_float8_is_turned_off_and_the_probe_passes(libs_python: Path, tmp_path: Path) -> None:
    train = write(tmp_path / "sdxl-dora-fp8.json", ONETRAINER_DORA_FP8)
    state = tmp_path / "state"
    args = ("--python", str(libs_python), "--config", str(train), "--only", "dora-fp8")
    envdoctor("check", *args, state=state, code=1)
    result = fix_json("--yes", *args, state=state, code=0)
    (step,) = result["plan"]["steps"]
    assert step["remedy"]["id"] == "dora-off"
    assert "base-bf16" in [a["id"] for a in step["alternatives"]]
    assert result["outcome"]["status"] == "verified"
    after = train.read_text(encoding="utf-8")
    assert changed_lines(ONETRAINER_DORA_FP8, after) == [('    "lora_decompose": true\n', '    "lora_decompose": false\n')] or \
        changed_lines(ONETRAINER_DORA_FP8 + "\n", after + "\n") == [('    "lora_decompose": true\n', '    "lora_decompose": false\n')]
    assert json.loads(after)["lora_decompose"] is False  # and "verified": the fix re-ran the probe on the edited config
    envdoctor("undo", state=state, code=0)
    assert train.read_text(encoding="utf-8") == ONETRAINER_DORA_FP8


@pytest.mark.slow
def test_prefer_base_bf16_changes_only_the_trained_parts_weights(libs_python: Path, tmp_path: Path) -> None:
    train = write(tmp_path / "sdxl-dora-fp8.json", ONETRAINER_DORA_FP8)
    state = tmp_path / "state"
    args = ("--python", str(libs_python), "--config", str(train), "--only", "dora-fp8")
    result = fix_json("--yes", "--prefer", "base-bf16", *args, state=state, code=0)
    assert result["plan"]["steps"][0]["remedy"]["id"] == "base-bf16" and result["plan"]["steps"][0]["preferred"]
    assert result["outcome"]["status"] == "verified"
    data = json.loads(train.read_text(encoding="utf-8"))
    assert data["unet"]["weight_dtype"] == "BFLOAT_16"
    assert data["text_encoder"]["weight_dtype"] == "FLOAT_16" and data["lora_decompose"] is True
    envdoctor("undo", state=state, code=0)
    assert train.read_text(encoding="utf-8") == ONETRAINER_DORA_FP8


# ---------------------------------------------------------------- faults: nothing half-done


@pytest.mark.slow
def test_an_unwritable_journal_stops_before_anything_changes(old_torch_python: Path, tmp_path: Path) -> None:
    train = write(tmp_path / "train.yaml", SEED_004)
    blocker = write(tmp_path / "not-a-folder", "a file where the state folder would go")
    proc = envdoctor("fix", "--yes", "--python", str(old_torch_python), "--config", str(train), "--only", "cpu-half-kernels",
                     state=blocker / "state")
    assert proc.returncode != 0
    assert proc.stderr.startswith("envdoctor: error: ") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert train.read_bytes().decode("utf-8") == SEED_004


@pytest.mark.slow
def test_a_read_only_config_is_refused_untouched(old_torch_python: Path, tmp_path: Path) -> None:
    train = write(tmp_path / "train.yaml", SEED_004)
    os.chmod(train, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    state = tmp_path / "state"
    result = fix_json("--yes", "--python", str(old_torch_python), "--config", str(train), "--only", "cpu-half-kernels", state=state, code=1)
    assert result["outcome"]["status"] == "rolled-back"
    assert "read-only" in result["outcome"]["failure"]
    assert train.read_bytes().decode("utf-8") == SEED_004
    assert stat.S_IMODE(train.stat().st_mode) == stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH


def test_nothing_to_fix_exits_0(tmp_path: Path) -> None:
    proc = envdoctor("fix", "--no-config", "--only", "cpu-half-kernels,dtype-mismatch", state=tmp_path / "state", code=0)
    assert "Nothing to fix" in proc.stdout


def test_a_malformed_config_is_one_line_exit_2_untouched(tmp_path: Path) -> None:
    broken = write(tmp_path / "train.yaml", "params:\n  mixed_precision: fp16\n   bad: [\n")
    before = broken.read_bytes()
    proc = envdoctor("fix", "--yes", "--config", str(broken), state=tmp_path / "state", code=2)
    assert proc.stderr.startswith("envdoctor: error: ") and len(proc.stderr.strip().splitlines()) == 1
    assert broken.read_bytes() == before


def test_undo_without_runs_is_one_line(tmp_path: Path) -> None:
    proc = envdoctor("undo", state=tmp_path / "state", code=2)
    assert proc.stderr.startswith("envdoctor: error: ") and len(proc.stderr.strip().splitlines()) == 1
    assert "No fix runs" in envdoctor("undo", "--list", state=tmp_path / "state", code=0).stdout


# ---------------------------------------------------------------- seed 002's aftermath: the impostor apex, real pip


def freeze(python: Path) -> str:
    return subprocess.run([str(python), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True).stdout


@IMPOSTOR_APEX
@pytest.mark.slow
def test_impostor_apex_is_uninstalled_verified_and_brought_back_offline(impostor_apex_python: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    args = ("--python", str(impostor_apex_python), "--no-config", "--only", "apex")
    before = freeze(impostor_apex_python)
    assert "apex==0.9.10.dev0" in before
    envdoctor("check", *args, state=state, code=1)
    result = fix_json("--yes", *args, state=state, code=0)
    (step,) = result["plan"]["steps"]
    assert (step["kind"], step["remedy"]["action"]) == ("pip", {"uninstall": ["apex"]})
    assert step["lines"] == ["%s -m pip uninstall -y apex" % impostor_apex_python]
    assert result["outcome"]["status"] == "verified"
    after = freeze(impostor_apex_python)
    assert "apex==" not in after
    assert [line for line in after.splitlines() if line.startswith("torch==")] == ["torch==2.13.0+cpu"]
    envdoctor("check", *args, state=state, code=0)
    # undo with no index at all: the journal holds the distribution itself
    envdoctor("undo", state=state, env={"PIP_NO_INDEX": "1"}, code=0)
    assert freeze(impostor_apex_python) == before


@IMPOSTOR_APEX
@pytest.mark.slow
def test_a_second_fix_of_the_same_target_stops_naming_the_first(impostor_apex_python: Path, tmp_path: Path) -> None:
    """While one run holds the target (here a process standing in for a `fix --yes` midway), `fix --yes`
    changes nothing and says who holds it, in one line, exit 1; `undo` likewise."""
    state = tmp_path / "state"
    before = freeze(impostor_apex_python)
    holding = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom envdoctor.pipeline.fix.lock import hold\n"
                                "with hold(sys.argv[1], sys.argv[2], 'fix'):\n    print('held', flush=True)\n    time.sleep(600)\n",
                                str(state), str(impostor_apex_python)], stdout=subprocess.PIPE, text=True)
    try:
        assert holding.stdout is not None and holding.stdout.readline().strip() == "held"
        proc = envdoctor("fix", "--yes", "--python", str(impostor_apex_python), "--no-config", "--only", "apex", state=state, code=1)
        line = "envdoctor: error: another envdoctor fix (pid %d, since " % holding.pid
        assert proc.stderr.startswith(line) and proc.stderr.count("\n") == 1, proc.stderr
        assert freeze(impostor_apex_python) == before
    finally:
        holding.kill()
        holding.wait()


def _children(pid: int) -> List[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid) and not fields.get("State", "").startswith("Z"):
            found.append(int(status.parent.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


@IMPOSTOR_APEX
@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="finds pip's process in /proc (Linux)")
def test_kill_9_during_the_pip_step_leaves_no_pip_and_undo_gives_back_the_environment(impostor_apex_python: Path,
                                                                                        tmp_path: Path) -> None:
    """`fix --yes` killed with SIGKILL while its pip uninstall runs: pip does not outlive it, `undo --list`
    says the run was interrupted, and `undo` (offline) gives back the same `pip freeze`; torch imports."""
    before = freeze(impostor_apex_python)
    state = tmp_path / "state"
    argv = [sys.executable, "-m", "envdoctor", "fix", "--yes", "--python", str(impostor_apex_python), "--no-config", "--only", "apex"]
    env = dict(os.environ, ENVDOCTOR_STATE_DIR=str(state))
    fixing = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    pip = None
    deadline = time.monotonic() + 300
    while pip is None and fixing.poll() is None and time.monotonic() < deadline:
        pip = next((c for c in _children(fixing.pid) if " -m pip uninstall" in _cmdline(c)), None)
        time.sleep(0.005)
    fixing.send_signal(signal.SIGKILL)
    fixing.wait()
    if pip is None:
        pytest.skip("the uninstall finished before it could be seen; nothing was killed mid-step")
    gone = time.monotonic() + 5
    while Path("/proc/%d" % pip).exists() and "pip" in _cmdline(pip) and time.monotonic() < gone:
        time.sleep(0.05)
    assert "pip" not in _cmdline(pip), "pip outlived the envdoctor that started it"
    listing = envdoctor("undo", "--list", state=state, code=0).stdout
    assert "interrupted" in listing
    envdoctor("undo", state=state, env={"PIP_NO_INDEX": "1"}, code=0)
    assert freeze(impostor_apex_python) == before
    subprocess.run([str(impostor_apex_python), "-c", "import torch"], check=True, capture_output=True)


@IMPOSTOR_APEX
@pytest.mark.slow
def test_a_pip_step_failing_midway_is_rolled_back_alone_and_the_independent_steps_stay(impostor_apex_python: Path,
                                                                                       tmp_path: Path) -> None:
    """Three steps, least invasive first: the config's device (cuda on a machine without a GPU) → cpu, apex
    uninstalled, numpy installed. The only numpy on offer resolves (pip's dry run at plan time passes) but its
    build fails: that step alone is rolled back; the config edit and the apex uninstall do not build on it,
    were verified and stay (exit 1, the summary says which). `undo` then reverts what was kept: every file
    and `pip freeze` as before."""
    train = write(tmp_path / "train.json", ONETRAINER_DORA_FP8.replace('"train_device": "cpu"', '"train_device": "cuda"'))
    config_before = train.read_bytes()
    state = tmp_path / "state"
    before = freeze(impostor_apex_python)
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(broken_build_links(tmp_path / "links", "numpy", "99.0"))}
    result = fix_json("--yes", "--python", str(impostor_apex_python), "--config", str(train), "--only", "torch-install,apex",
                      state=state, env=offline, code=1)
    kinds = [(s["kind"], s["remedy"]["id"]) for s in result["plan"]["steps"]]
    assert kinds[:3] == [("config", "device-cpu"), ("pip", "apex-uninstall"), ("pip", "numpy-install")], kinds
    outcome = result["outcome"]
    assert outcome["status"] == "partly-verified" and outcome["applied"] == [1, 2] and outcome["kept"] == [1, 2]
    assert [d["step"] for d in outcome["dropped"]] == [3]
    assert outcome["failure"].startswith("step 3 (pip): ") and "numpy" in outcome["failure"]
    assert result["plan"]["steps"][2]["change"]["resolved"] == {"numpy": "99.0"}
    assert [(v["step"], v["fixed"]) for v in outcome["verified"]] == [(1, True), (2, True)]
    assert json.loads(train.read_text(encoding="utf-8"))["train_device"] == "cpu"
    assert "apex==" not in freeze(impostor_apex_python)
    listing = envdoctor("undo", "--list", state=state, code=0).stdout
    assert "partly-verified" in listing
    envdoctor("undo", state=state, env=offline, code=0)
    assert train.read_bytes() == config_before
    assert freeze(impostor_apex_python) == before


def test_prefer_that_nothing_offers_is_a_note(tmp_path: Path) -> None:
    proc = envdoctor("fix", "--no-config", "--only", "cpu-half-kernels", "--prefer", "no-such-remedy", state=tmp_path / "state", code=0)
    assert "note: --prefer no-such-remedy: no finding here offers that remedy" in proc.stdout


ONETRAINER_FP16 = (  # seed 000's OneTrainer setup, 2-space JSON from a third-party UI, trained on the CPU
    '{\n'
    '  "__version": 9,\n'
    '  "training_method": "LORA",\n'
    '  "model_type": "STABLE_DIFFUSION_15",\n'
    '  "train_device": "cpu",\n'
    '  "train_dtype": "FLOAT_16",\n'
    '  "unet": {"train": true, "weight_dtype": "FLOAT_16"},\n'
    '  "text_encoder": {"train": false, "weight_dtype": "FLOAT_16"},\n'
    '  "vae": {"model_name": "stabilityai/sd-vae-ft-mse", "weight_dtype": "FLOAT_32"}\n'
    '}'
)


@pytest.mark.slow
def test_onetrainer_half_weights_on_the_cpu_go_to_fp32_with_the_precision(old_torch_python: Path, tmp_path: Path) -> None:
    train = write(tmp_path / "onetrainer.json", ONETRAINER_FP16)
    state = tmp_path / "state"
    result = fix_json("--yes", "--python", str(old_torch_python), "--config", str(train), "--only", "cpu-half-kernels", state=state, code=0)
    assert result["outcome"]["status"] == "verified"
    data = json.loads(train.read_text(encoding="utf-8"))
    assert (data["train_dtype"], data["unet"]["weight_dtype"], data["text_encoder"]["weight_dtype"]) == ("FLOAT_32",) * 3
    assert data["vae"]["weight_dtype"] == "FLOAT_32" and data["vae"]["model_name"] == "stabilityai/sd-vae-ft-mse"
    assert len(changed_lines(ONETRAINER_FP16, train.read_text(encoding="utf-8"))) == 3
    envdoctor("undo", state=state, code=0)
    assert train.read_text(encoding="utf-8") == ONETRAINER_FP16


# A OneTrainer config forced onto a GPU this machine lacks: bf16 compute, fp16 U-Net, bf16 text encoder.
CUDA_MIXED = (
    '{\n    "__version": 9,\n    "train_device": "cuda",\n    "train_dtype": "BFLOAT_16",\n'
    '    "unet": {"weight_dtype": "FLOAT_16", "train": true},\n'
    '    "text_encoder": {"weight_dtype": "BFLOAT_16", "train": false},\n'
    '    "vae": {"weight_dtype": "FLOAT_32"}\n}\n'
)


@pytest.mark.slow
def test_moving_to_the_cpu_plans_fp32_for_the_fp16_the_cpu_cannot_run_and_keeps_the_bf16_it_can(old_torch_python: Path,
                                                                                                 tmp_path: Path) -> None:
    """torch 2.0.1 has no CPU fp16 kernels but runs bf16 (measured): the device edit alone would
    leave an fp16 U-Net there, so the plan, checked again as it would leave the config, adds that."""
    train = write(tmp_path / "onetrainer.json", CUDA_MIXED)
    state = tmp_path / "state"
    python = ("--python", str(old_torch_python), "--config", str(train), "--only", "torch-install,cpu-half-kernels")
    steps = fix_json(*python, state=state, code=1)["plan"]["steps"]
    assert [(s["remedy"]["id"], s["consequence"]) for s in steps] == [("device-cpu", False), ("precision-fp32", True)]
    assert steps[1]["findings"][0]["check"] == "cpu-half-kernels"
    result = fix_json("--yes", *python, state=state, code=0)
    assert result["outcome"]["status"] == "verified"
    data = json.loads(train.read_text(encoding="utf-8"))
    assert (data["train_device"], data["train_dtype"], data["unet"]["weight_dtype"], data["text_encoder"]["weight_dtype"]) == \
        ("cpu", "BFLOAT_16", "FLOAT_32", "BFLOAT_16")
    envdoctor("undo", state=state, code=0)
    assert train.read_text(encoding="utf-8") == CUDA_MIXED


def test_moving_to_a_cpu_that_runs_both_halves_changes_the_device_alone(tmp_path: Path) -> None:
    """torch 2.13 runs fp16 and bf16 on this CPU (measured): nothing but the device is condemned."""
    train = write(tmp_path / "onetrainer.json", CUDA_MIXED)
    [step] = fix_json("--config", str(train), "--only", "torch-install,cpu-half-kernels", state=tmp_path / "state", code=1)["plan"]["steps"]
    assert step["remedy"]["id"] == "device-cpu"
    assert [(e["old"], e["new"]) for f in step["change"]["files"] for e in f["edits"]] == [('"cuda"', '"cpu"')]


@pytest.mark.slow
def test_pins_name_torch_as_pip_knows_it_on_pypis_cuda_torch(old_torch_python: Path) -> None:
    """PyPI's torch 2.0.1 reports `2.0.1+cu117` but is installed as 2.0.1: every pip step that keeps torch
    where it is pins `torch==2.0.1`, which pip resolves against the installed torch without a download."""
    from envdoctor.target.model import Target
    from envdoctor.target.remedies.actions import pip_action
    from envdoctor.target.remedies.commandline import pip_runs

    proc = run_envdoctor("check", "--json", "--no-config", "--only", "torch-install", "--python", str(old_torch_python))
    environment = json.loads(proc.stdout)["environment"]
    assert (environment["torch"], environment["torch_distribution"]) == ("2.0.1+cu117", "2.0.1")
    action = pip_action(Target.from_report(environment), install=["numpy<2"])
    assert action["constraints"] == ["torch==2.0.1"]
    (install,) = pip_runs(action)
    dry = subprocess.run([*install.argv(str(old_torch_python)), "--dry-run", "--no-index", "--quiet"],
                         capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr  # all satisfied as installed: nothing to fetch, nothing to change
    stale = subprocess.run([str(old_torch_python), "-m", "pip", "install", "--dry-run", "--no-index", "--quiet", "numpy<2",
                            "torch==2.0.1+cu117"], capture_output=True, text=True, timeout=300)
    assert stale.returncode != 0  # what the plan used to pin: pip cannot find that torch


def test_a_config_whose_file_name_is_not_utf8_is_fixed_and_undone_with_valid_json_throughout(tmp_path: Path) -> None:
    """A byte that is no UTF-8 in the file name: `--json` stays valid UTF-8 (the byte escaped), the
    journal keeps the exact name, and undo finds the file again."""
    config = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"\xffrun.json")))
    write(config, CUDA_MIXED)
    state = tmp_path / "state"
    proc = envdoctor("fix", "--yes", "--json", "--config", str(config), "--only", "torch-install", state=state, code=0)
    assert json.loads(proc.stdout)["outcome"]["status"] == "verified"  # decoded as strict UTF-8 by run_envdoctor
    assert '"train_device": "cpu"' in config.read_text(encoding="utf-8")
    listing = envdoctor("undo", "--list", "--json", state=state, code=0).stdout
    assert json.loads(listing)[0]["status"] == "verified"
    envdoctor("undo", state=state, code=0)
    assert config.read_text(encoding="utf-8") == CUDA_MIXED


def test_the_plans_configs_are_judged_in_the_workers_that_measured_the_stack(tmp_path: Path) -> None:
    """close_over's check of the configs as a plan leaves them costs no second `import torch`: the worker that
    measured the stack stays, probes again only what reads the config (dora-fp8 runs the setups it asks for),
    and every other check's facts are judged again with the new intent; close() ends the worker."""
    from envdoctor.pipeline.check.engine import PendingCheck
    from envdoctor.pipeline.check.request import CheckRequest

    config = write(tmp_path / "sdxl-dora-fp8.json", ONETRAINER_DORA_FP8)
    pending = PendingCheck(CheckRequest(configs=[str(config)], only=["dora-fp8", "cpu-half-kernels"], plugins=False))
    try:
        before = pending.finish(keep=True)
        worker = pending.runners["main"]._worker
        assert worker is not None and worker.proc.poll() is None
        assert "dora-float8-base" in [f.code for f in before.findings]
        edited = ONETRAINER_DORA_FP8.replace('"lora_decompose": true', '"lora_decompose": false')
        after = pending.again({str(config): edited})
        assert pending.runners["main"]._worker is worker and worker.proc.poll() is None  # the same process
        dora = next(c for c in after.checks if c.id == "dora-fp8")
        assert dora.facts["intent"]["dora"] is False  # probed again, with the config as the plan leaves it
        assert "dora-float8-base" not in [f.code for f in after.findings]
        cpu = next(c for c in after.checks if c.id == "cpu-half-kernels")
        assert cpu.facts == next(c for c in before.checks if c.id == "cpu-half-kernels").facts  # judged again, not probed
    finally:
        pending.close()
    worker.proc.wait(timeout=30)
