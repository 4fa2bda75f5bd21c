"""dora-fp8: LoRA / DoRA adapters on a float8 base, run for real.

- Setups: which runs a config's intent asks for (pure).
- Real runs: through the CLI on the test interpreter (no peft: the plain-torch DoRA math,
  seed 003's promotion error) and on the libraries venv (peft 0.21.2: DoRA fails inside
  peft's get_weight_norm, LoRA passes); with an intent and --quick through the engine,
  the way `check --config` hands them to the probe.
- Rules: on the recorded facts of those runs (tests/fixtures/cpu-dora-fp8-*.json), with an
  Intent built from Settings as the config readers write them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import check_of, codes, facts_of, load_fixture, run_envdoctor

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.intent import ConfigSource, Intent, Setting
from envdoctor.target.model import Finding, Severity, Target

CHECK = {c.check.id: c.check for c in load_checks(plugins=False)[0]}["dora-fp8"]
PEFT = load_fixture("cpu-dora-fp8-peft-0.21.2.json")
NO_PEFT = load_fixture("cpu-dora-fp8-no-peft.json")

PEFT_DORA_ERROR = "\"mul_cpu_reduced_float\" not implemented for 'Float8_e4m3fn'"
PEFT_DORA_FRAME = "peft/tuners/lora/dora.py: get_weight_norm"
SEED_003 = "Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and Half"

Run = Dict[str, Any]


def runs(facts: Dict[str, Any], adapter: str, base: str, upcast: Optional[bool] = None) -> List[Run]:
    found = [r for r in facts["runs"] if r["adapter"] == adapter and r["base_dtype"] == base]
    return [r for r in found if upcast is None or bool(r.get("upcast")) == upcast]


def setups_module() -> Any:
    import importlib

    return importlib.import_module("envdoctor.checks.dora_fp8.setups")


# ---- intents, as the config readers build them

TRAIN = "/home/me/OneTrainer/training_presets/sdxl-dora-fp8.json"


def setting(name: str, value: Any, key: str, raw: Any, line: int, source: str, part: Optional[str] = None,
            default: bool = False) -> Setting:
    return Setting(name, value, "onetrainer", TRAIN, key, raw=raw, line=None if default else line,
                   column=None if default else 5, source=None if default else source, part=part, default=default)


def onetrainer_intent(dora: bool = True, unet: str = "fp8", unet_trained: bool = True,
                      precision: str = "fp16", device: str = "cuda") -> Intent:
    raw = {"fp8": "FLOAT_8", "bf16": "BFLOAT_16", "fp32": "FLOAT_32", "nf4": "NFLOAT_4", "fp16": "FLOAT_16"}
    return Intent(
        sources=(ConfigSource(TRAIN, "onetrainer", "json", "OneTrainer config (__version 9)"),),
        settings=(
            setting("device", device, "train_device", device, 4, '"%s"' % device),
            setting("precision", precision, "train_dtype", raw[precision], 5, '"%s"' % raw[precision]),
            setting("adapter", "lora", "training_method", "LORA", 7, '"LORA"'),
            setting("dora", dora, "lora_decompose", dora, 31, "true" if dora else "false"),
            setting("weight_dtype", unet, "unet.weight_dtype", raw[unet], 12, '"%s"' % raw[unet], part="unet"),
            setting("train", unet_trained, "unet.train", unet_trained, 11, "true" if unet_trained else "false", part="unet"),
            setting("weight_dtype", "fp16", "text_encoder.weight_dtype", "FLOAT_16", 17, '"FLOAT_16"', part="text_encoder"),
            setting("train", False, "text_encoder.train", False, 16, "false", part="text_encoder"),
        ),
    )


def env_with(intent: Optional[Intent], as_json: bool = False) -> Target:
    """The rules' environment; as_json: as a recorded report's JSON environment rebuilds it."""
    if as_json and intent is not None:
        return Target.from_report({"executable": "/home/me/venv/bin/python", "torch": "2.13.0+cpu",
                                        "torch_import": {"ok": True}, "intent": intent.to_dict()})
    return Target(python="/home/me/venv/bin/python", torch="2.13.0+cpu", torch_import={"ok": True}, intent=intent)


def judge(report: Dict[str, Any], intent: Optional[Intent] = None, as_json: bool = False) -> List[Finding]:
    return CHECK.judge(facts_of(report, "dora-fp8"), env_with(intent, as_json))


def one(findings: List[Finding], code: str) -> Finding:
    found = [f for f in findings if f.code == code]
    assert len(found) == 1, codes(findings)
    return found[0]


# ---- setups (pure)


def test_without_a_config_the_common_setups_run_on_each_device() -> None:
    setups = setups_module()
    cpu = [s.to_dict() for s in setups.common(["cpu"])]
    assert [(s["adapter"], s["base_dtype"], s["adapter_dtype"], s["role"]) for s in cpu] == [
        ("dora", "float8_e4m3fn", "float16", "common"), ("lora", "float8_e4m3fn", "float16", "common"),
        ("dora", "float8_e4m3fn", "bfloat16", "common"), ("lora", "float8_e4m3fn", "bfloat16", "common"),
        ("dora", "bfloat16", "bfloat16", "control")]
    both = setups.common(["cpu", "cuda:0", "mps"])  # MPS has no float8 at all
    assert sorted({s.device for s in both}) == ["cpu", "cuda:0"] and len(both) == 10


def test_a_dora_fp8_config_asks_for_its_run_and_the_two_controls() -> None:
    summary = onetrainer_intent().summary()
    assert summary["weights"] == {"unet": "fp8", "text_encoder": "fp16"} and summary["trained"] == ["unet"]
    setups, not_probed = setups_module().from_intent(summary, ["cpu"])
    assert [(s.adapter, s.base, s.compute, s.device, s.role) for s in setups] == [
        ("dora", "float8_e4m3fn", "float16", "cpu", "asked"),
        ("lora", "float8_e4m3fn", "float16", "cpu", "control"),  # is plain LoRA a way out?
        ("dora", "bfloat16", "float16", "cpu", "control"),  # is a bf16 base a way out?
    ]
    # the frozen text encoder's fp16 weights get no adapter; the absent GPU is said, not hidden
    assert not_probed == [{"device": "cuda", "reason": "no cuda device here: probed on cpu instead"}]
    on_gpu, nothing = setups_module().from_intent(summary, ["cpu", "cuda:0", "cuda:1"])
    assert {s.device for s in on_gpu} == {"cuda:0"} and nothing == []


def test_quantized_bases_and_full_finetuning_are_recorded_as_not_probed() -> None:
    setups = setups_module()
    summary = {"device": "auto", "precision": "bf16", "weights": {"transformer": "nf4", "te": "fp16"}, "trained": None,
               "adapter": "lora", "dora": True, "training": True}
    runs_, not_probed = setups.from_intent(summary, ["cpu"])
    assert [(s.adapter, s.base, s.compute) for s in runs_] == [("dora", "float16", "bfloat16"), ("lora", "float16", "bfloat16")]
    assert not_probed == [{"base": "nf4", "part": "transformer", "adapter": "dora",
                           "reason": "nf4 base weights are bitsandbytes Params4bit, which need bitsandbytes and a CUDA GPU"}]
    assert setups.from_intent(dict(summary, adapter="full"), ["cpu"])[0] == []
    # no weight dtype in the config: the weights are in the compute dtype; fp32 asks for fp32
    fp32, _ = setups.from_intent({"device": "cpu", "precision": "fp32", "weights": {}, "trained": None,
                                  "adapter": "lora", "dora": False, "training": False}, ["cpu"])
    assert [(s.adapter, s.base, s.compute, s.training) for s in fp32] == [("lora", "float32", "float32", False)]


# ---- real runs


def test_plain_torch_dora_math_on_float8_raises_the_seed_003_promotion_error() -> None:
    """The test interpreter has no peft: the DoRA weight math as OneTrainer wrote it before
    its fp8 fix, for real."""
    proc = run_envdoctor("check", "--json", "--only", "dora-fp8")
    assert proc.returncode == 0, proc.stderr  # nobody asked for DoRA on fp8: a note
    facts = facts_of(json.loads(proc.stdout), "dora-fp8")
    assert facts["library"] == "torch" and facts["peft"] is None and facts["imports"] == []
    half, bf16 = runs(facts, "dora", "float8_e4m3fn", upcast=False)
    assert (half["adapter_dtype"], half["ok"], half["phase"], half["error_type"], half["error"]) == (
        "float16", False, "merge", "RuntimeError", SEED_003)
    assert bf16["error"] == "Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and BFloat16"
    # OneTrainer's fix (upcast the stored weight first) and plain LoRA pass, with gradients
    for run in runs(facts, "dora", "float8_e4m3fn", upcast=True) + runs(facts, "lora", "float8_e4m3fn"):
        assert run["ok"] and run["training"], run
        assert run["out_dtype"] == run["adapter_dtype"]
    assert [r["grads"] for r in runs(facts, "dora", "float8_e4m3fn", upcast=True)] == ["3 of 3 adapter tensors"] * 2
    assert runs(facts, "dora", "bfloat16")[0]["ok"]


@pytest.mark.slow
def test_peft_dora_on_float8_fails_in_get_weight_norm_and_lora_passes(libs_python: Path) -> None:
    proc = run_envdoctor("check", "--json", "--python", str(libs_python), "--only", "dora-fp8")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    facts = facts_of(report, "dora-fp8")
    assert facts["library"] == "peft" and facts["peft"] == "0.21.2"
    assert [(i["op"], i["ok"], i["version"]) for i in facts["imports"]] == [("import peft", True, "0.21.2")]
    dora = runs(facts, "dora", "float8_e4m3fn")
    assert [r["adapter_dtype"] for r in dora] == ["float16", "bfloat16"]
    for run in dora:  # measured: peft fails while adding the adapter, before any forward
        assert (run["ok"], run["phase"], run["error_type"], run["error"], run["frame"]) == (
            False, "inject", "NotImplementedError", PEFT_DORA_ERROR, PEFT_DORA_FRAME)
    for run in runs(facts, "lora", "float8_e4m3fn"):  # the same base with plain LoRA: forward and backward
        assert run["ok"] and run["grads"] == "2 of 2 adapter tensors", run
    control = runs(facts, "dora", "bfloat16")[0]
    assert control["ok"] and control["grads"] == "3 of 3 adapter tensors"
    finding = check_of(report, "dora-fp8")["findings"][0]
    assert (finding["code"], finding["severity"]) == ("dora-float8-base", "info")
    assert [r["id"] for r in finding["remedies"]] == ["dora-off", "base-bf16"]


def _engine_facts(python: Optional[Path], **options: Any) -> Dict[str, Any]:
    """One real run with probe options, the way `check --config` / `--quick` hand them over."""
    from envdoctor.pipeline.check.engine import run_check
    from envdoctor.pipeline.check.request import CheckRequest
    report = run_check(CheckRequest(python=str(python) if python else None, only=["dora-fp8"], options=options))
    return report.checks[0].facts


@pytest.mark.slow
def test_the_intents_setup_runs_and_an_fp32_intent_passes_everything(libs_python: Path) -> None:
    asked = onetrainer_intent(device="cpu")
    facts = _engine_facts(libs_python, intent=asked.summary())
    assert [(r["adapter"], r["base_dtype"], r["adapter_dtype"], r["role"], r["ok"]) for r in facts["runs"]] == [
        ("dora", "float8_e4m3fn", "float16", "asked", False),
        ("lora", "float8_e4m3fn", "float16", "control", True),
        ("dora", "bfloat16", "float16", "control", True),
    ]
    assert facts["runs"][0]["error"] == PEFT_DORA_ERROR and facts["not_probed"] == []
    finding = one(CHECK.judge(facts, env_with(asked)), "dora-float8-base")
    assert finding.severity is Severity.ERROR

    fp32 = onetrainer_intent(unet="fp32", precision="fp32", device="cpu")
    facts = _engine_facts(libs_python, intent=fp32.summary())
    assert [(r["adapter"], r["base_dtype"], r["adapter_dtype"]) for r in facts["runs"]] == [
        ("dora", "float32", "float32"), ("lora", "float32", "float32")]
    assert all(r["ok"] and r["training"] for r in facts["runs"])
    assert CHECK.judge(facts, env_with(fp32)) == []


@pytest.mark.slow
def test_quick_skips_the_peft_import(libs_python: Path) -> None:
    facts = _engine_facts(libs_python, quick=True)
    assert facts["library"] == "torch" and facts["imports"] == [] and facts["peft"] == "0.21.2"
    assert runs(facts, "dora", "float8_e4m3fn", upcast=False)[0]["error"] == SEED_003


@pytest.mark.slow
def test_old_torch_has_no_float8_and_its_peft_dora_fails_on_bf16_cpu(old_torch_python: Path) -> None:
    proc = run_envdoctor("check", "--json", "--python", str(old_torch_python), "--only", "dora-fp8")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    facts = facts_of(report, "dora-fp8")
    assert facts["float8"] is False and facts["library"] == "peft" and facts["peft"] == "0.13.2"
    assert facts["not_probed"] == [{"base": "float8_e4m3fn", "reason": "torch 2.0.1+cu117 has no float8_e4m3fn dtype"}]
    control = runs(facts, "dora", "bfloat16")[0]
    # torch 2.0.1 has no CPU bf16 torch.eye, which peft 0.13's DoRA forward builds
    assert (control["ok"], control["phase"], control["error"]) == (False, "forward", "\"eye\" not implemented for 'BFloat16'")
    assert control["frame"].startswith("peft/tuners/lora/dora.py: ")
    assert [f["code"] for f in check_of(report, "dora-fp8")["findings"]] == ["adapter-fails", "not-probed"]


# ---- rules on the recorded facts


def test_recorded_facts_are_the_measured_ones() -> None:
    peft = facts_of(PEFT, "dora-fp8")
    assert {(r["error"], r["frame"]) for r in runs(peft, "dora", "float8_e4m3fn")} == {(PEFT_DORA_ERROR, PEFT_DORA_FRAME)}
    torch = facts_of(NO_PEFT, "dora-fp8")
    assert runs(torch, "dora", "float8_e4m3fn", upcast=False)[0]["error"] == SEED_003


@pytest.mark.parametrize("as_json", [False, True])
def test_a_config_asking_for_dora_on_fp8_is_an_error_naming_both_lines(as_json: bool) -> None:
    finding = one(judge(PEFT, onetrainer_intent(), as_json), "dora-float8-base")
    assert finding.severity is Severity.ERROR
    assert finding.title == ("DoRA on float8 base weights fails in peft 0.21.2: sdxl-dora-fp8.json:31 `lora_decompose: true` "
                             "with sdxl-dora-fp8.json:12 `weight_dtype: \"FLOAT_8\"`")
    assert finding.evidence[0] == (
        "peft 0.21.2 DoRA, float8_e4m3fn base, float16 adapter, cpu: NotImplementedError: " + PEFT_DORA_ERROR
        + " (while adding the adapter, in " + PEFT_DORA_FRAME + ")")
    assert "peft 0.21.2 LoRA, float8_e4m3fn base, float16 adapter, cpu: passes (forward and backward)" in finding.evidence
    remedies = {r.id: r for r in finding.remedies}
    assert list(remedies) == ["dora-off", "base-bf16"]
    assert (remedies["dora-off"].kind, remedies["dora-off"].action) == ("config", {"set": {"dora": False}})
    assert "sdxl-dora-fp8.json:31 `lora_decompose: true`" in remedies["dora-off"].summary
    assert remedies["base-bf16"].action == {"set": {"weight_dtype": "bf16"}, "when": {"weight_dtype": "fp8"}, "parts": ["unet"]}
    assert "sdxl-dora-fp8.json:12" in remedies["base-bf16"].summary
    assert finding.subject["asked"] is True and finding.subject["frame"] == PEFT_DORA_FRAME


def test_without_a_config_it_is_a_note_with_the_evidence() -> None:
    findings = judge(PEFT)
    assert codes(findings) == ["dora-float8-base"]
    finding = findings[0]
    assert finding.severity is Severity.INFO
    assert finding.title == ("DoRA on float8 base weights fails in peft 0.21.2 on cpu "
                             "(no config asks for it; a run that does will fail)")
    assert [r.id for r in finding.remedies] == ["dora-off", "base-bf16"]
    assert "sdxl" not in " ".join(r.summary for r in finding.remedies)


@pytest.mark.parametrize("intent", [
    onetrainer_intent(dora=False),  # LoRA on fp8: works, DoRA was not asked
    onetrainer_intent(unet="bf16"),  # DoRA on a bf16 base
    onetrainer_intent(unet_trained=False),  # the fp8 part is frozen: no adapter on it
])
def test_a_config_that_does_not_ask_for_dora_on_fp8_keeps_it_a_note(intent: Intent) -> None:
    assert one(judge(PEFT, intent), "dora-float8-base").severity is Severity.INFO


def test_without_peft_the_seed_003_error_and_the_upcast_fix_are_the_evidence() -> None:
    finding = one(judge(NO_PEFT, onetrainer_intent()), "dora-float8-base")
    assert finding.severity is Severity.ERROR
    assert finding.title.startswith("DoRA on float8 base weights fails in torch 2.13.0+cpu (plain-torch DoRA math): ")
    assert finding.evidence[0].endswith("RuntimeError: %s (at W + s·(B@A))" % SEED_003)
    assert any("DoRA upcasting the base first, float8_e4m3fn base, float16 adapter, cpu: passes" in e for e in finding.evidence)
    assert [r.id for r in finding.remedies] == ["dora-off", "base-bf16", "upcast-fp8"]
    assert finding.remedies[2].kind == "manual" and "2925dc8f" in finding.remedies[2].summary


def test_remedies_need_their_control_to_have_passed() -> None:
    """Derived from the recorded facts: had LoRA failed on that base too, or the bf16 control,
    the remedy that relies on it is not offered."""
    facts = json.loads(json.dumps(facts_of(PEFT, "dora-fp8")))
    for run in facts["runs"]:
        if run["adapter"] == "lora":
            run.update(ok=False, phase="forward", error_type="RuntimeError", error="lora broke")
    findings = CHECK.judge(facts, env_with(onetrainer_intent(dora=False)))
    assert [r.id for r in one(findings, "dora-float8-base").remedies] == ["base-bf16"]
    lora = one(findings, "lora-float8-base")
    assert lora.severity is Severity.ERROR  # the config asks for LoRA on its fp8 unet
    assert lora.title == "LoRA on float8 base weights fails in peft 0.21.2: sdxl-dora-fp8.json:12 `weight_dtype: \"FLOAT_8\"`"
    for run in facts["runs"]:
        if run["base_dtype"] == "bfloat16":
            run.update(ok=False, phase="forward", error_type="RuntimeError", error="bf16 broke")
    findings = CHECK.judge(facts, env_with(None))
    assert one(findings, "dora-float8-base").remedies == ()
    assert one(findings, "adapter-fails").severity is Severity.INFO


def test_a_quantized_base_is_named_as_not_probed_with_its_config_line() -> None:
    facts = dict(facts_of(PEFT, "dora-fp8"), runs=[], not_probed=[
        {"base": "nf4", "part": "unet", "adapter": "dora",
         "reason": "nf4 base weights are bitsandbytes Params4bit, which need bitsandbytes and a CUDA GPU"}])
    finding = one(CHECK.judge(facts, env_with(onetrainer_intent(unet="nf4"))), "not-probed")
    assert finding.severity is Severity.INFO
    assert finding.evidence == ("nf4 (sdxl-dora-fp8.json:12 `weight_dtype: \"NFLOAT_4\"`): nf4 base weights are "
                                "bitsandbytes Params4bit, which need bitsandbytes and a CUDA GPU",)


def test_summaries() -> None:
    assert CHECK.summarize(facts_of(PEFT, "dora-fp8")) == (
        "peft 0.21.2 · DoRA on float8 fails · LoRA on float8 ok · DoRA on bfloat16 ok")
    assert CHECK.summarize(facts_of(NO_PEFT, "dora-fp8")) == (
        "plain-torch DoRA math (no peft) · DoRA on float8 fails · DoRA on float8 upcast first ok · LoRA on float8 ok · "
        "DoRA on bfloat16 ok")


# ---- signatures, registration


def _traceback(message: str, frame: str, before: str = "") -> str:
    return (before + "Traceback (most recent call last):\n  File \"%s\", line 10, in forward\n    x = w + s * (b @ a)\n"
            "RuntimeError: %s\n" % (frame, message))


def _explained(text: str) -> List[str]:
    from envdoctor.pipeline.check.registry import load_checks
    from envdoctor.pipeline.explain.match import match
    from envdoctor.pipeline.explain.reader import read_text

    return [d.check for d in match(read_text(text), [c.check for c in load_checks(plugins=False)[0]]).diagnoses]


@pytest.mark.parametrize("text, frame", [
    (SEED_003, "/home/me/OneTrainer/modules/module/LoRAModule.py"),
    (SEED_003, "/home/me/venv/lib/python3.11/site-packages/peft/tuners/lora/layer.py"),
    (PEFT_DORA_ERROR, "/home/me/venv/lib/python3.11/site-packages/peft/tuners/lora/dora.py"),
    (SEED_003, "C:\\OneTrainer\\modules\\module\\LoRAModule.py"),
])
def test_float8_failures_in_an_adapter_frame_are_this_checks(text: str, frame: str) -> None:
    assert _explained(_traceback(text, frame))[0] == "dora-fp8"


def test_the_same_message_from_plain_fp8_math_is_the_fp8_checks() -> None:
    """A wrong cause is worse than none: without an adapter frame or DoRA named near it, it is fp8's."""
    plain = _traceback(SEED_003, "/home/me/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py")
    assert _explained(plain)[0] == "fp8"
    # OneTrainer names the training method in its log: DoRA next to the error is enough
    named = _traceback(SEED_003, "/home/me/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py",
                       before="Training method: LoRA, Decomposed Weights (DoRA): True\n")
    assert _explained(named)[0] == "dora-fp8"



def test_it_runs_in_the_main_worker_beside_library_probes() -> None:
    # peft's import balances library-probes' imports in the other worker; --quick keeps it (plain torch)
    assert (CHECK.group, CHECK.quick) == ("main", True)


# ---- the innermost library frame (probekit.text.library_frame)


def _raised_in(filename: str) -> BaseException:
    code = compile("def get_weight_norm():\n    raise NotImplementedError('x')\n", filename, "exec")
    space: Dict[str, Any] = {}
    exec(code, space)
    try:
        space["get_weight_norm"]()
    except NotImplementedError as exc:
        return exc
    raise AssertionError("did not raise")


@pytest.mark.parametrize("filename, frame", [
    ("/home/me/venv/lib/python3.11/site-packages/peft/tuners/lora/dora.py", PEFT_DORA_FRAME),
    ("C:\\Users\\me\\venv\\Lib\\site-packages\\peft\\tuners\\lora\\dora.py", PEFT_DORA_FRAME),
    ("/home/me/src/peft/src/peft/tuners/lora/dora.py", PEFT_DORA_FRAME),  # an editable checkout
    ("/home/me/venv/lib/python3.11/site-packages/torch/nn/functional.py", None),
])
def test_library_frame_is_relative_to_the_package(filename: str, frame: Optional[str]) -> None:
    from envdoctor.target.probekit.text import library_frame

    assert library_frame(_raised_in(filename), "peft") == frame


def test_an_asked_adapter_failing_on_a_half_base_is_a_warning_beside_the_kernel_error() -> None:
    facts = json.loads(json.dumps(facts_of(load_fixture("cpu-dora-fp8-peft-0.21.2.json"), "dora-fp8")))
    run = dict(facts["runs"][0], adapter="lora", base_dtype="float16", adapter_dtype="float16", role="asked", ok=False,
               phase="forward", error_type="RuntimeError", error='"addmm_impl_cpu_" not implemented for \'Half\'')
    facts["runs"] = [run]
    [finding] = [f for f in CHECK.judge(facts, env_with(onetrainer_intent(unet="fp16", dora=False))) if f.code == "adapter-fails"]
    assert finding.severity is Severity.WARNING  # cpu-half-kernels and library-probes carry the error
    assert finding.title == "LoRA on a float16 base with a float16 adapter fails in peft 0.21.2 on cpu"
