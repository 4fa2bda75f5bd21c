"""`envdoctor check --config` end to end: real config files, the real CLI, real torch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional

import pytest
from conftest import check_of, run_envdoctor

SEED_004 = (  # the autotrain-advanced SDXL DreamBooth config of seed 004, run on a Colab CPU runtime
    "task: dreambooth\n"
    "base_model: stabilityai/stable-diffusion-xl-base-1.0\n"
    "project_name: my-dreambooth\n"
    "backend: local\n"
    "data:\n"
    "  path: images/\n"
    "  prompt: photo of sks dog\n"
    "params:\n"
    "  image_size: 1024\n"
    "  batch_size: 1\n"
    "  mixed_precision: fp16\n"
)


def write(tmp_path: Path, name: str, content, mode: str = "w") -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
    return str(path)


def one_line_exit_2(*args: str, env: Optional[Dict[str, str]] = None) -> str:
    proc = run_envdoctor("check", *args, env=env)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("envdoctor: error: "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    return proc.stderr.strip()


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("truncated.json", '{\n    "__version": 9,\n    "train_dtype": "FLOAT_16",\n    "unet": {\n', "truncated.json:5"),
        ("tabs.yaml", "params:\n  mixed_precision: fp16\n\tbatch_size: 1\n", "tabs.yaml:3"),
        ("dup.toml", 'mixed_precision = "fp16"\nlearning_rate = 1e-4\nmixed_precision = "bf16"\n', "dup.toml:3"),
        ("empty.yaml", "", "empty.yaml: is empty"),
        ("model.bin", b"\x00\x01\x02PK\x03\x04" * 50, "model.bin: is a binary file"),
        ("package.json", '{"name": "left-pad", "version": "1.3.0", "main": "index.js"}', "package.json: unknown layout"),
        ("notes.yaml", "shopping:\n  - milk\n  - eggs\n", "notes.yaml: unknown layout"),
    ],
)
def test_a_config_that_cannot_be_read_is_one_line_naming_the_file(tmp_path: Path, name: str, content, expected: str) -> None:
    message = one_line_exit_2("--config", write(tmp_path, name, content))
    assert expected in message, message


def test_a_missing_config_and_contradicting_options(tmp_path: Path) -> None:
    assert "no-such.yaml: no such file" in one_line_exit_2("--config", str(tmp_path / "no-such.yaml"))
    assert "--config and --no-config cannot be combined" in one_line_exit_2("--config", write(tmp_path, "t.yaml", SEED_004), "--no-config")


def run_report(*args: str, env: Optional[Dict[str, str]] = None) -> dict:
    proc = run_envdoctor("check", "--json", *args, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_the_intent_is_in_the_json_report_with_lines_spans_and_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "train.yaml", SEED_004.replace("\n", "\r\n"))
    report = run_report("--config", path, "--only", "torch-install,cpu-half-kernels")
    intent = report["environment"]["intent"]
    assert intent["sources"] == [{"file": path, "tool": "autotrain", "syntax": "yaml", "label": "autotrain-advanced dreambooth"}]
    assert intent["summary"]["precision"] == "fp16"
    precision = next(s for s in intent["settings"] if s["name"] == "precision")
    text = Path(path).read_bytes().decode("utf-8")
    assert (precision["line"], precision["source"]) == (11, "fp16")
    assert text[precision["start"]:precision["end"]] == "fp16"
    device = next(s for s in intent["settings"] if s["name"] == "device")
    assert device["default"] is True and device["line"] is None
    # torch 2.13 runs fp16 on the CPU: the config's ask is met, nothing to report
    assert check_of(report, "cpu-half-kernels")["findings"] == []


def test_accelerates_default_config_is_read_unasked_and_a_broken_one_is_only_a_note(tmp_path: Path) -> None:
    home = tmp_path / "hf"
    (home / "accelerate").mkdir(parents=True)
    config = home / "accelerate" / "default_config.yaml"
    config.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nmixed_precision: bf16\nuse_cpu: true\n")
    report = run_report("--only", "torch-install", env={"HF_HOME": str(home)})
    assert report["environment"]["intent"]["summary"]["precision"] == "bf16"
    assert report["environment"]["intent"]["sources"][0]["file"] == str(config)
    assert run_report("--only", "torch-install", "--no-config", env={"HF_HOME": str(home)})["environment"]["intent"] is None
    config.write_text("compute_environment: LOCAL_MACHINE\n\tmixed_precision: bf16\n")
    broken = run_report("--only", "torch-install", env={"HF_HOME": str(home)})
    assert broken["environment"]["intent"] is None
    assert broken["environment"]["config_notes"][0].startswith("accelerate's default config was not read: %s:2" % config)


@pytest.mark.slow
def test_seed_004_on_torch_2_0_1_is_an_error_naming_the_config_line(tmp_path: Path, old_torch_python: Path) -> None:
    path = write(tmp_path, "train.yaml", SEED_004)
    proc = run_envdoctor("check", "--config", path, "--python", str(old_torch_python), "--only", "cpu-half-kernels", "--quick")
    assert proc.returncode == 1, proc.stderr
    lines: List[str] = proc.stdout.splitlines()
    assert "  precision fp16  train.yaml:11 `mixed_precision: fp16`" in lines
    assert any(line.strip().startswith("✗ train.yaml:11 `mixed_precision: fp16` asks for fp16 on the CPU; this torch has no fp16 layer_norm")
               for line in lines), proc.stdout


def test_without_the_training_libraries_no_second_worker_imports_torch() -> None:
    report = run_report("--only", "torch-install,library-probes,dora-fp8")
    assert report["environment"]["workers"] == {"main": ["dora-fp8", "library-probes", "torch-install"]}
    assert check_of(report, "library-probes")["summary"] == "neither transformers nor diffusers is installed"


@pytest.mark.slow
def test_with_the_training_libraries_library_probes_run_in_a_second_worker(libs_python: Path) -> None:
    report = run_report("--python", str(libs_python), "--only", "torch-install,library-probes")
    assert report["environment"]["workers"] == {"main": ["torch-install"], "libraries": ["library-probes"]}
    assert check_of(report, "library-probes")["status"] == "ok"
    quick = run_report("--python", str(libs_python), "--only", "torch-install,library-probes", "--quick")
    assert quick["environment"]["workers"] == {"main": ["library-probes", "torch-install"]}
    assert check_of(quick, "library-probes")["status"] == "skipped"
