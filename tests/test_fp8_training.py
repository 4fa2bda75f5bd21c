"""fp8 mixed precision asked by a config (accelerate `mixed_precision: fp8`, axolotl `fp8: true`):
flagged where no GPU here ran fp8 matmul or no float8 backend is installed, and fixed by a
precision the measured machine runs. The configs are the tools' own (tests/data/configs)."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
from pathlib import Path
from typing import Any, Dict, List

from conftest import ENV, facts_of, load_fixture, run_envdoctor
from test_fix_e2e import fix_json, sha

from envdoctor.configs.detect import read_config
from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.model import Finding, Gpu, Severity

CORPUS = Path(__file__).resolve().parent / "data" / "configs"
ACCELERATE_FP8 = CORPUS / "accelerate" / "tmpl-fp8.yaml"  # huggingface/accelerate examples/config_yaml_templates/fp8.yaml
AXOLOTL_FP8 = CORPUS / "axolotl" / "llama3-3b-fp8-fsdp2.yaml"  # axolotl examples/llama-3/3b-fp8-fsdp2.yaml
CHECK = {c.check.id: c.check for c in load_checks(plugins=False)[0]}["fp8"]
CPU_FACTS = facts_of(load_fixture("cpu-torch-2.13.0.json"), "fp8")


def gpu_facts(capability: str, scaled_mm_ok: bool, backends: List[str]) -> Dict[str, Any]:
    """The recorded CPU facts with one CUDA device as the probe records it: a GPU cannot be here."""
    device = {"id": "cuda:0", "name": "NVIDIA H100 80GB HBM3" if capability == "9.0" else "Tesla T4", "capability": capability,
              "fp8_matmul_hardware": capability >= "8.9"}
    mm = {"op": "_scaled_mm", "device": "cuda:0", "dtype": "float8_e4m3fn", "ok": scaled_mm_ok}
    return dict(CPU_FACTS, devices=list(CPU_FACTS["devices"]) + [device], ops=list(CPU_FACTS["ops"]) + [mm], backends=backends)


def judge(facts: Dict[str, Any], config: Path, gpus: tuple = ()) -> List[Finding]:
    env = dataclasses.replace(ENV, intent=read_config(str(config)), gpus=gpus)
    return [f for f in CHECK.judge(facts, env) if f.code.startswith("config-")]


def test_fp8_mixed_precision_on_a_cpu_is_an_error_naming_the_line_with_bf16_as_the_edit() -> None:
    [finding] = judge(CPU_FACTS, ACCELERATE_FP8)
    assert finding.severity is Severity.ERROR and finding.code == "config-fp8-unsupported"
    assert finding.title == 'tmpl-fp8.yaml:4 `mixed_precision: "fp8"` asks for fp8 mixed precision; fp8 matmul ran on no device here'
    assert finding.remedies[0].action == {"set": {"precision": "bf16"}, "when": {"precision": "fp8"}}


def test_a_t4_without_native_bf16_gets_fp16_instead() -> None:
    t4 = (Gpu("Tesla T4", "cuda:0", "7.5", bf16=False),)
    [finding] = judge(gpu_facts("7.5", False, ["torchao"]), AXOLOTL_FP8, t4)
    assert "cuda:0 (Tesla T4, compute capability 7.5)" in " ".join(finding.evidence)
    assert finding.remedies[0].id == "precision-fp16"


def test_an_h100_runs_fp8_but_without_a_backend_accelerate_stops() -> None:
    h100 = (Gpu("NVIDIA H100 80GB HBM3", "cuda:0", "9.0", bf16=True),)
    [finding] = judge(gpu_facts("9.0", True, []), AXOLOTL_FP8, h100)  # names no backend
    assert finding.code == "config-fp8-no-backend"
    assert [r.id for r in finding.remedies] == ["torchao-install", "precision-bf16"]
    assert judge(gpu_facts("9.0", True, ["transformer_engine"]), ACCELERATE_FP8, h100) == []


def test_the_backend_accelerates_fp8_config_names_must_be_the_one_installed() -> None:
    """accelerate's fp8 template says `fp8_config: backend: TE`: torchao installed does not run it."""
    h100 = (Gpu("NVIDIA H100 80GB HBM3", "cuda:0", "9.0", bf16=True),)
    for installed in ([], ["torchao"]):
        [finding] = judge(gpu_facts("9.0", True, installed), ACCELERATE_FP8, h100)
        assert finding.code == "config-fp8-backend-missing"
        assert finding.title.startswith("tmpl-fp8.yaml:") and "names the fp8 backend TransformerEngine, which is not installed" in finding.title
        assert [(r.id, r.kind) for r in finding.remedies] == [("fp8-backend-install", "manual"), ("precision-bf16", "config")]
    assert read_config(str(ACCELERATE_FP8)).value("fp8_backend") == "te"


def test_a_config_without_fp8_is_not_judged_here() -> None:
    assert judge(CPU_FACTS, CORPUS / "accelerate" / "tmpl-single-accelerator.yaml") == []


def test_fix_turns_the_real_accelerate_fp8_template_into_bf16_on_this_cpu_and_undo_gives_the_bytes_back(tmp_path: Path) -> None:
    config = tmp_path / "fp8.yaml"
    shutil.copyfile(ACCELERATE_FP8, config)
    before = sha(config)
    state = tmp_path / "state"
    plan = fix_json("--json", "--config", str(config), state=state, code=1)["plan"]
    [step] = plan["steps"]  # bf16 measured fine on this CPU: nothing more to plan after the edit
    assert step["remedy"]["id"] == "precision-bf16"
    done = fix_json("--yes", "--json", "--config", str(config), state=state, code=0)
    assert done["outcome"]["status"] == "verified"
    assert 'mixed_precision: "bf16"' in config.read_text() and "backend: TE # Can be TE | MS-AMP" in config.read_text()
    proc = run_envdoctor("undo", env={"ENVDOCTOR_STATE_DIR": str(state)})
    assert proc.returncode == 0, proc.stderr
    assert sha(config) == before


def test_the_probe_records_the_fp8_backends_installed_here(live_report: Dict[str, Any]) -> None:
    installed = [m for m in ("transformer_engine", "msamp", "torchao") if importlib.util.find_spec(m) is not None]
    assert facts_of(live_report, "fp8")["backends"] == installed
