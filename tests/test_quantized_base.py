"""quantized-base: the bitsandbytes 4/8-bit bases a training config asks for, run for real.

Real configs from the corpus (axolotl QLoRA and 8-bit LoRA examples), real bitsandbytes wheels
beside a real CPU torch: 0.50.2 runs nf4 and int8 on the CPU, 0.43.1 does not (its
`Linear4bit` quantizes only on `.cuda()`); without bitsandbytes at all, the config edit or the
install is offered, and fix applies, verifies and undoes the edit."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import run_envdoctor
from test_fix_e2e import fix_json, sha

CORPUS = Path(__file__).resolve().parent / "data" / "configs" / "axolotl"
QLORA = CORPUS / "falcon-7b-qlora.yml"  # load_in_4bit: true, adapter: qlora
INT8 = CORPUS / "phi35-lora-bfloat16-8bit.yaml"  # load_in_8bit: true


def bitsandbytes_beside(torch_python: Path, folder: Path, version: str) -> Dict[str, str]:
    """bitsandbytes `version` and what it imports besides torch, in a folder put on the target's path."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile", "--target", str(folder),
                    "bitsandbytes==%s" % version, "numpy", "packaging"], check=True, capture_output=True)
    return {"PYTHONPATH": str(folder)}


def check(python: Path, config: Path, env: Dict[str, str]) -> Dict[str, Any]:
    proc = run_envdoctor("check", "--json", "--python", str(python), "--config", str(config), "--only", "quantized-base", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "quantized-base")


@pytest.mark.slow
def test_bitsandbytes_0_50_runs_nf4_and_int8_on_this_cpu(torch_python: Path, tmp_path: Path) -> None:
    env = bitsandbytes_beside(torch_python, tmp_path / "site", "0.50.2")
    for config, dtype in ((QLORA, "nf4"), (INT8, "int8")):
        result = check(torch_python, config, env)
        assert result["status"] == "ok", result
        [run] = result["facts"]["runs"]
        assert (run["dtype"], run["device"], run["ok"]) == (dtype, "cpu", True)
        assert result["findings"][0]["code"] == "quantized-runs"


@pytest.mark.slow
def test_bitsandbytes_0_43_cannot_quantize_on_the_cpu_and_the_way_out_is_named(torch_python: Path, tmp_path: Path) -> None:
    env = bitsandbytes_beside(torch_python, tmp_path / "site", "0.43.1")
    result = check(torch_python, QLORA, env)
    [finding] = result["findings"]
    assert finding["code"] == "quantized-fails" and finding["severity"] == "error"
    assert finding["title"].startswith("falcon-7b-qlora.yml:") and "bitsandbytes 0.43.1 fails to run them on cpu" in finding["title"]
    assert [r["id"] for r in finding["remedies"]] == ["weights-bf16", "use-gpu", "bitsandbytes-upgrade"]


def test_without_bitsandbytes_fix_loads_the_base_in_bf16_and_undo_gives_the_bytes_back(tmp_path: Path) -> None:
    if importlib.util.find_spec("bitsandbytes") is not None:
        pytest.skip("bitsandbytes is installed in the test interpreter")
    config = tmp_path / "qlora.yml"
    shutil.copyfile(QLORA, config)
    before = sha(config)
    state = tmp_path / "state"
    plan = fix_json("--config", str(config), "--only", "quantized-base", state=state, code=1)["plan"]
    [step] = plan["steps"]
    assert step["remedy"]["id"] == "weights-bf16" and step["findings"][0]["code"] == "bitsandbytes-missing"
    assert "bitsandbytes-install" in [a["id"] for a in step["alternatives"]]
    done = fix_json("--yes", "--config", str(config), "--only", "quantized-base", state=state, code=0)
    assert done["outcome"]["status"] == "verified"
    text = config.read_text(encoding="utf-8")
    assert "load_in_4bit: false" in text and "adapter: lora\n" in text
    assert run_envdoctor("undo", env={"ENVDOCTOR_STATE_DIR": str(state)}).returncode == 0
    assert sha(config) == before
