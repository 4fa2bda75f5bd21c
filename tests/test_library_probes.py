"""library-probes: the user's own transformers and diffusers models, built tiny from configs in
code, run forward and backward in the precision and on the device asked for.

The real runs go through the CLI (or the engine, for an intent, until `check --config` passes
one) on real environments: torch 2.13 with transformers 5.23 / diffusers 0.42 (every model
runs in fp32, fp16 and bf16 on the CPU), torch 2.0.1 with transformers 4.46 / diffusers 0.31
(the fp16 forwards fail in the kernels that torch lacks: seed 004). The rules are tested on
snapshots of those runs, recorded with the intent the probe was given.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import ENV, check_of, env_of, facts_of, handwritten, load_fixture, run_envdoctor

from envdoctor.configs.detect import read_configs
from envdoctor.pipeline.check.engine import run_check
from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.check.request import NOT_ASKED, CheckRequest, runs_libraries
from envdoctor.target.intent import ConfigSource, Intent, Setting, merge
from envdoctor.target.model import Finding, ProbeContext, Severity, Target

ID = "library-probes"
CHECK = {c.check.id: c.check for c in load_checks(plugins=False)[0]}[ID]
setups: Any = sys.modules["envdoctor.checks.library_probes.setups"]
PROBE: Any = sys.modules["envdoctor.checks.library_probes.probe"]
NEW = "library-probes-torch-2.13.0.json"  # torch 2.13 CPU, transformers 5.23.0, diffusers 0.42.1
OLD = "library-probes-torch-2.0.1.json"  # torch 2.0.1, transformers 4.46.3, diffusers 0.31.0
OLD_AUTOTRAIN = "library-probes-autotrain-sdxl-fp16-torch-2.0.1.json"  # the same, `--config` seed 004's autotrain YAML
CLASSES = {"CLIPTextModel", "T5EncoderModel", "UNet2DConditionModel", "AutoencoderKL"}
# What torch 2.0.1 lacks on the CPU, where each model meets it (measured), innermost frames last.
OLD_FP16 = {
    "CLIPTextModel": ('"LayerNormKernelImpl" not implemented for \'Half\'', "transformers/models/clip/modeling_clip.py: forward",
                      "torch/nn/functional.py: layer_norm"),
    "T5EncoderModel": ('"bernoulli_scalar_cpu_" not implemented for \'Half\'', "transformers/models/t5/modeling_t5.py: forward",
                       "torch/nn/functional.py: dropout"),
    "UNet2DConditionModel": ('"addmm_impl_cpu_" not implemented for \'Half\'', "diffusers/models/embeddings.py: forward",
                             "torch/nn/modules/linear.py: forward"),
    "AutoencoderKL": ('"slow_conv2d_cpu" not implemented for \'Half\'', "diffusers/models/autoencoders/vae.py: forward",
                      "torch/nn/modules/conv.py: _conv_forward"),
}
# Seed 004: autotrain-advanced SDXL DreamBooth in fp16, run on a Colab CPU runtime.
SEED_004 = ("task: dreambooth\nbase_model: stabilityai/stable-diffusion-xl-base-1.0\nproject_name: my-dreambooth\n"
            "backend: local\nparams:\n  mixed_precision: fp16\n  prompt: photo of sks dog\n")
SDXL = {"CLIPTextModel", "CLIPTextModelWithProjection", "UNet2DConditionModel"}


# ---------------------------------------------------------------- helpers


def runs(facts: Dict[str, Any]) -> Dict[tuple, Dict[str, Any]]:
    """(class, device, mode) -> the run, the alternatives tried for a failing one included."""
    return {(o["class"], o["device"], o["mode"]): o for o in facts["ops"] if "mode" in o}


def imports(facts: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {o["module"]: o for o in facts["ops"] if "module" in o}


def cli(python: Path, *args: str, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    proc = run_envdoctor("check", "--json", "--python", str(python), "--only", ID, *args, env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


def with_intent(python: Path, intent: Intent) -> Dict[str, Any]:
    """A real run whose probe is told the intent, as `check --config` tells it."""
    report = run_check(CheckRequest(python=str(python), only=[ID], options={"intent": intent.summary()}))
    return report.to_dict()


def onetrainer(precision: str, weights: Dict[str, str], trained: List[str], device: str = "cpu") -> Intent:
    """A OneTrainer SDXL config: `train_dtype`, `train_device`, a `weight_dtype` and `train` per part."""
    names = {"fp16": "FLOAT_16", "bf16": "BFLOAT_16", "fp32": "FLOAT_32", "fp8": "FLOAT_8"}
    settings = [Setting("precision", precision, "onetrainer", "sdxl.json", "train_dtype", raw=names[precision], line=4, source='"%s"' % names[precision]),
                Setting("device", device, "onetrainer", "sdxl.json", "train_device", raw=device, line=5, source='"%s"' % device)]
    for i, (part, dtype) in enumerate(weights.items()):
        settings.append(Setting("weight_dtype", dtype, "onetrainer", "sdxl.json", "%s.weight_dtype" % part, raw=names[dtype],
                                line=10 + 4 * i, source='"%s"' % names[dtype], part=part))
        settings.append(Setting("train", part in trained, "onetrainer", "sdxl.json", "%s.train" % part, raw=part in trained,
                                line=11 + 4 * i, source="true" if part in trained else "false", part=part))
    return Intent((ConfigSource("sdxl.json", "onetrainer", "json", "OneTrainer config (__version 11)"),), tuple(settings))


def judge(facts: Dict[str, Any], env: Target) -> List[Finding]:
    return CHECK.judge(facts, env)


def by_class(findings: List[Finding]) -> Dict[str, Finding]:
    return {f.subject["class"]: f for f in findings if "class" in f.subject}


# ---------------------------------------------------------------- real runs


@pytest.mark.slow
def test_every_model_runs_forward_and_backward_in_fp32_fp16_bf16_on_torch_2_13(libs_python: Path) -> None:
    report = cli(libs_python)
    check = check_of(report, ID)
    assert check["status"] == "ok" and check["findings"] == []
    facts = check["facts"]
    assert [(lib["name"], lib["imported"]) for lib in facts["libraries"]] == [("transformers", True), ("diffusers", True)]
    found = runs(facts)
    assert {c for c, _, _ in found} == CLASSES and len(found) == 12
    for (_, device, mode), run in found.items():
        assert run["ok"] and run["training"] and run["finite"] and run["grads_finite"], run
        assert device == "cpu" and run["out_dtype"] == {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}[mode]
        assert 3000 < run["parameters"] < 20000  # tiny: built from configs in code, no download
    assert found[("T5EncoderModel", "cpu", "fp16")]["kept_fp32"] == ["wo"]  # as from_pretrained(torch_dtype=fp16) leaves T5
    assert found[("T5EncoderModel", "cpu", "fp32")]["norm_class"] == "transformers.models.t5.modeling_t5.T5LayerNorm"
    # the classes come from their own submodules, each import a guarded step with its time
    assert set(imports(facts)) == {"transformers", "transformers.models.clip.modeling_clip", "transformers.models.t5.modeling_t5",
                                   "diffusers", "diffusers.models.unets.unet_2d_condition",
                                   "diffusers.models.autoencoders.autoencoder_kl"}
    # the probe's time beyond its imports is measured (benchmarks/run.py --libs-python reports it against its goal, < 1 s)
    assert isinstance(facts["runs_s"], float) and facts["runs_s"] > 0
    assert check["summary"] == "transformers 5.23.0, diffusers 0.42.1 · cpu: fp32 4/4, fp16 4/4, bf16 4/4 models pass"


@pytest.mark.slow
def test_fp16_forwards_fail_on_torch_2_0_1_in_the_kernels_it_lacks(old_torch_python: Path) -> None:
    report = cli(old_torch_python)
    check = check_of(report, ID)
    found = runs(check["facts"])
    for cls, (error, frame, innermost) in OLD_FP16.items():
        run = found[(cls, "cpu", "fp16")]
        assert (run["ok"], run["error_type"], run["error"], run["phase"]) == (False, "RuntimeError", error, "forward")
        assert run["frame"] == frame and run["frames"][-1] == innermost
        assert found[(cls, "cpu", "bf16")]["ok"] and found[(cls, "cpu", "fp32")]["ok"]
    findings = {f["subject"]["class"]: f for f in check["findings"]}
    assert set(findings) == CLASSES and {f["code"] for f in findings.values()} == {"fp16-fails"}
    clip = findings["CLIPTextModel"]
    assert clip["severity"] == "error"  # a CPU-only machine: its training runs on the CPU
    assert clip["title"] == "CLIPTextModel's forward fails in fp16 on the CPU: \"LayerNormKernelImpl\" not implemented for 'Half'"
    assert [r["id"] for r in clip["remedies"]] == ["precision-bf16", "precision-fp32", "use-gpu", "torch-upgrade"]
    assert check["summary"] == "transformers 4.46.3, diffusers 0.31.0 · cpu: fp32 4/4, fp16 0/4, bf16 4/4 models pass"


def _fake_package(root: Path, dist: str, module: str, version: str, files: Dict[str, str]) -> None:
    """An installed distribution (dist-info with METADATA) whose modules hold `files`."""
    for name, body in files.items():
        path = root / module / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    info = root / ("%s-%s.dist-info" % (module, version))
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (dist, version))
    (info / "RECORD").write_text("")


@pytest.mark.slow
def test_a_library_whose_import_segfaults_is_pinned_on_it_and_the_other_librarys_runs_are_kept(libs_python: Path, tmp_path: Path) -> None:
    _fake_package(tmp_path, "diffusers", "diffusers", "0.42.1", {"__init__.py": "import ctypes\nctypes.string_at(0)\n"})
    report = cli(libs_python, env={"PYTHONPATH": str(tmp_path)})
    check = check_of(report, ID)
    (crashed,) = [f for f in check["findings"] if f["code"] == "step-crashed"]
    assert crashed["title"] == "importing diffusers 0.42.1 crashed the interpreter (SIGSEGV)"
    assert crashed["subject"]["package"] == "diffusers" and crashed["severity"] == "error"
    assert any("diffusers/__init__.py" in line for line in crashed["evidence"])  # faulthandler's stack names the file
    facts = check["facts"]
    (lost,) = facts["lost_steps"]
    assert lost["what"] == "importing diffusers 0.42.1"
    assert imports(facts)["diffusers"]["error_type"] == "Crash"
    assert [(lib["name"], lib["imported"]) for lib in facts["libraries"]] == [("transformers", True), ("diffusers", False)]
    found = runs(facts)  # transformers' runs, measured again in the fresh worker, are all there
    assert {c for c, _, _ in found} == {"CLIPTextModel", "T5EncoderModel"} and all(r["ok"] for r in found.values())
    assert report["environment"]["worker_restarts"] == 1


# NVIDIA apex's FusedRMSNorm as far as a CPU input reaches it: its forward falls back to
# manual_rms_norm when the input is not on CUDA (apex/normalization/fused_layer_norm.py).
APEX_NORM = '''import torch


def manual_rms_norm(input, normalized_shape, weight, eps):
    dims = tuple(i for i in range(-1, -len(normalized_shape) - 1, -1))
    variance = input.to(torch.float32).pow(2).mean(dims, keepdim=True)
    input = input * torch.rsqrt(variance + eps)
    if weight is None:
        return input
    if weight.dtype in [torch.float16, torch.bfloat16]:
        input = input.to(weight.dtype)
    return weight * input


class FusedRMSNorm(torch.nn.Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(*self.normalized_shape)) if elementwise_affine else None

    def forward(self, input):
        if not input.is_cuda:
            return manual_rms_norm(input, self.normalized_shape, self.weight, self.eps)
        raise RuntimeError("this stand-in has no CUDA kernels")
'''


@pytest.mark.slow
def test_t5s_layer_norm_is_recorded_as_apex_fused_rms_norm_when_apex_normalization_imports(old_torch_python: Path, tmp_path: Path) -> None:
    _fake_package(tmp_path, "apex", "apex", "0.1", {
        "__init__.py": "",
        "normalization/__init__.py": "from .fused_layer_norm import FusedRMSNorm\n",
        "normalization/fused_layer_norm.py": APEX_NORM,
    })
    found = runs(facts_of(cli(old_torch_python, env={"PYTHONPATH": str(tmp_path)}), ID))
    t5 = [r for (cls, _, _), r in found.items() if cls == "T5EncoderModel"]
    # transformers 4.46.3 swapped T5LayerNorm for it at import; on the CPU apex's own fallback runs
    assert {r["norm_class"] for r in t5} == {"apex.normalization.fused_layer_norm.FusedRMSNorm"}
    assert found[("T5EncoderModel", "cpu", "fp32")]["ok"] and found[("T5EncoderModel", "cpu", "bf16")]["ok"]


@pytest.mark.slow
def test_seed_004s_autotrain_config_through_the_cli(old_torch_python: Path, tmp_path: Path) -> None:
    config = tmp_path / "train.yaml"
    config.write_text(SEED_004)
    proc = run_envdoctor("check", "--python", str(old_torch_python), "--only", ID, "--config", str(config), timeout=600)
    assert proc.returncode == 1, proc.stderr
    for cls, error in (("CLIPTextModel", '"LayerNormKernelImpl" not implemented for \'Half\''),
                       ("CLIPTextModelWithProjection", '"LayerNormKernelImpl" not implemented for \'Half\''),
                       ("UNet2DConditionModel", '"addmm_impl_cpu_" not implemented for \'Half\'')):
        assert "train.yaml:6 `mixed_precision: fp16` asks for fp16 on the CPU; %s's forward fails there: %s" % (cls, error) in proc.stdout


@pytest.mark.slow
def test_an_fp32_intent_on_the_cpu_passes_everything(libs_python: Path) -> None:
    intent = onetrainer("fp32", {"unet": "fp32", "text_encoder": "fp32", "text_encoder_2": "fp32", "vae": "fp32"}, ["unet"])
    report = with_intent(libs_python, intent)
    check = check_of(report, ID)
    assert check["status"] == "ok", check["findings"]
    found = runs(check["facts"])
    assert sorted(found) == sorted([("UNet2DConditionModel", "cpu", "fp32"), ("CLIPTextModel", "cpu", "fp32"),
                                    ("CLIPTextModelWithProjection", "cpu", "fp32"), ("AutoencoderKL", "cpu", "fp32")])
    assert all(r["ok"] for r in found.values())
    assert judge(check["facts"], dataclasses.replace(ENV, intent=intent)) == []


@pytest.mark.slow
def test_a_onetrainer_sdxl_intent_runs_each_part_the_way_the_trainer_does(libs_python: Path) -> None:
    intent = onetrainer("fp16", {"unet": "fp16", "text_encoder": "fp16", "text_encoder_2": "bf16", "vae": "fp32"}, ["unet"])
    check = check_of(with_intent(libs_python, intent), ID)
    assert check["status"] == "ok", check["findings"]
    found = {r["part"]: r for r in runs(check["facts"]).values()}
    assert (found["unet"]["mode"], found["unet"]["training"]) == ("fp16", True)  # trained: forward and backward
    assert (found["text_encoder"]["class"], found["text_encoder"]["mode"], found["text_encoder"]["training"]) == ("CLIPTextModel", "fp16", False)
    assert (found["text_encoder_2"]["class"], found["text_encoder_2"]["mode"]) == ("CLIPTextModelWithProjection", "bf16")
    vae = found["vae"]  # fp32 weights, train_dtype fp16: autocast, which computes its convolutions in fp16
    assert (vae["mode"], vae["weights"], vae["autocast"], vae["out_dtype"]) == ("autocast-fp16", "fp32", "fp16", "float16")
    assert found["unet"]["asked_by"] == [{"name": "weight_dtype", "part": "unet"}, {"name": "device", "part": None}]


# ---------------------------------------------------------------- rules, on recorded runs


def test_seed_004s_config_makes_each_failing_fp16_model_an_error_naming_its_line() -> None:
    report = load_fixture(OLD_AUTOTRAIN)
    env = env_of(report)
    assert env.intent is not None and env.intent.value("precision") == "fp16"
    findings = by_class(judge(facts_of(report, ID), env))
    assert set(findings) == SDXL  # the parts autotrain's DreamBooth casts to fp16
    clip = findings["CLIPTextModel"]
    assert clip.severity is Severity.ERROR and clip.code == "fp16-fails"
    assert clip.title == ("train.yaml:6 `mixed_precision: fp16` asks for fp16 on the CPU; CLIPTextModel's forward fails there: "
                          "\"LayerNormKernelImpl\" not implemented for 'Half'")
    assert clip.evidence[:5] == (
        "train.yaml:6 `mixed_precision: fp16` asks for fp16 (text_encoder weights)",
        "train.yaml: `device` absent, autotrain-advanced's default cuda if available: the training device",
        "CLIPTextModel (transformers 4.46.3), 5,632 parameters, fp16 weights on cpu, forward",  # frozen: forward only
        "RuntimeError: \"LayerNormKernelImpl\" not implemented for 'Half'",
        "raised in transformers/models/clip/modeling_clip.py: forward",
    )
    assert clip.evidence[-2:] == ("the same model in bf16: passes", "the same model in fp32: passes")  # measured after the failure
    assert clip.subject["config"] == {"file": "/tmp/envdoctor-test/train.yaml", "line": 6, "key": "params.mixed_precision",
                                      "tool": "autotrain", "default": False}
    assert (clip.subject["model"], clip.subject["part"], clip.subject["device"], clip.subject["mode"]) == ("clip", "text_encoder", "cpu", "fp16")
    remedies = {r.id: r for r in clip.remedies}
    assert list(remedies) == ["precision-bf16", "precision-fp32", "use-gpu", "torch-upgrade"]
    # what asked for the text encoder's fp16 is its weights, which autotrain casts by the same token:
    # editing that token changes the compute precision with them
    assert remedies["precision-bf16"].action == {"set": {"weight_dtype": "bf16"}, "when": {"device": "cpu", "weight_dtype": "fp16"}}
    assert remedies["precision-bf16"].summary == ("Use bf16 instead of fp16 (train.yaml:6 `mixed_precision: fp16` → bf16); "
                                                  "measured, CLIPTextModel's bf16 run passes on the CPU")
    assert remedies["precision-fp32"].action["set"] == {"weight_dtype": "fp32"}
    assert remedies["torch-upgrade"].commands == (
        "/home/me/venv/bin/python -m pip install --upgrade torch --index-url https://download.pytorch.org/whl/cpu",)
    unet = findings["UNet2DConditionModel"]
    assert unet.subject["training"] is True  # the part autotrain trains (LoRA): forward and backward
    assert unet.title.endswith("UNet2DConditionModel's forward fails there: \"addmm_impl_cpu_\" not implemented for 'Half'")


def test_a_launch_line_forcing_the_cpu_on_a_gpu_machine_is_named_and_the_gpu_offered(tmp_path: Path) -> None:
    report = load_fixture(OLD_AUTOTRAIN)
    facts = dict(facts_of(report, ID), accelerators=["cuda:0"])
    for run in runs(facts).values():  # what the probe records when the config names the device
        if not run["alternative_for"]:
            run["asked_by"] = run["asked_by"] + [{"name": "device", "part": None}]
    launch = tmp_path / "launch.sh"
    launch.write_text("accelerate launch --cpu train.py\n")
    intent = env_of(report).intent
    assert intent is not None
    env = dataclasses.replace(env_of(report), intent=merge([intent, read_configs([str(launch)])]))
    clip = by_class(judge(facts, env))["CLIPTextModel"]
    assert clip.severity is Severity.ERROR
    assert clip.title.startswith("train.yaml:6 `mixed_precision: fp16` and launch.sh:1 `--cpu")
    assert " ask for fp16 on the CPU; CLIPTextModel's forward fails there: " in clip.title
    remedies = {r.id: r for r in clip.remedies}
    assert "use-gpu" not in remedies
    assert remedies["device-cuda"].action == {"set": {"device": "cuda"}, "when": {"device": "cpu"}}
    assert remedies["torch-upgrade"].action == {"upgrade": ["torch"]}  # a GPU machine: not the CPU-only build


def test_without_a_config_fp16_failures_are_errors_on_a_cpu_only_machine_and_warnings_beside_a_gpu() -> None:
    report = load_fixture(OLD)
    facts = facts_of(report, ID)
    env = env_of(report)
    assert {f.severity for f in judge(facts, env)} == {Severity.ERROR}
    beside_gpu = judge(dict(facts, accelerators=["cuda:0"]), env)
    assert len(beside_gpu) == 4 and {f.severity for f in beside_gpu} == {Severity.WARNING}
    assert all(f.title.startswith(f.subject["class"] + "'s forward fails in fp16 on the CPU: ") for f in beside_gpu)


def test_the_torch_2_13_snapshot_has_nothing_to_report() -> None:
    report = load_fixture(NEW)
    assert judge(facts_of(report, ID), env_of(report)) == []
    assert CHECK.summarize(facts_of(report, ID)) == "transformers 5.23.0, diffusers 0.42.1 · cpu: fp32 4/4, fp16 4/4, bf16 4/4 models pass"


def test_t5_failing_inside_apex_fused_rms_norm_offers_uninstalling_apex_first() -> None:
    facts = handwritten("library-probes-a100-t5-through-apex-fp16.json")
    env = dataclasses.replace(ENV, torch="2.4.0+cu121")
    (finding,) = judge(facts, env)
    assert finding.severity is Severity.WARNING  # no config: fp16 on the GPU is not what was asked
    assert finding.title == "T5EncoderModel's forward fails in fp16 on cuda:0: expected scalar type Float but found Half"
    assert ("T5's layer norm is apex.normalization.fused_layer_norm.FusedRMSNorm: transformers 4.57.6 swaps it in for "
            "T5LayerNorm whenever apex.normalization imports") in finding.evidence
    uninstall, bf16 = finding.remedies
    assert uninstall.id == "uninstall-apex" and uninstall.commands == ("/home/me/venv/bin/python -m pip uninstall -y apex",)
    assert bf16.id == "precision-bf16" and "measured, T5EncoderModel's bf16 run passes on cuda:0" in bf16.summary


def test_an_apex_norm_that_is_not_where_the_run_fails_is_not_blamed() -> None:
    facts = handwritten("library-probes-a100-t5-through-apex-fp16.json")
    for op in facts["ops"]:
        if op.get("mode") == "fp16":
            op["frames"] = ["transformers/models/t5/modeling_t5.py: forward", "torch/nn/functional.py: dropout"]
    (finding,) = judge(facts, ENV)
    assert "uninstall-apex" not in {r.id for r in finding.remedies}


def test_a_run_that_crashed_the_worker_is_named_and_replaces_the_generic_step_finding() -> None:
    facts = facts_of(load_fixture(NEW), ID)
    run = runs(facts)[("UNet2DConditionModel", "cpu", "fp16")]
    for key in ("phase", "phases_s", "out_dtype", "finite", "grads_finite"):
        run.pop(key, None)
    run.update(ok=False, error="crashed the interpreter (SIGSEGV)", error_type="Crash", lost="crashed")
    stack = ("Fatal Python error: Segmentation fault\n"
             "File \"/home/me/venv/lib/python3.11/site-packages/torch/nn/functional.py\", line 2548 in group_norm")
    facts["lost_steps"] = [{"key": "14:" + run["what"], "what": run["what"], "state": "crashed",
                            "error": "crashed the interpreter (SIGSEGV)", "detail": stack}]
    (finding,) = judge(facts, ENV)
    assert finding.title == "UNet2DConditionModel's forward+backward crashed the interpreter (SIGSEGV) in fp16 on the CPU"
    assert finding.subject["lost_step"] == "14:running UNet2DConditionModel fp16 on cpu (forward+backward)"
    assert "Fatal Python error: Segmentation fault" in finding.evidence


def test_a_device_the_intent_asks_for_and_torch_cannot_see_is_left_to_torch_install() -> None:
    intent = onetrainer("bf16", {"unet": "bf16"}, ["unet"], device="cuda")
    facts = {"torch": "2.13.0+cpu", "accelerators": [], "libraries": [], "ops": [], "from_intent": True,
             "unavailable": [{"device": "cuda", "available": ["cpu"]}]}
    assert judge(facts, dataclasses.replace(ENV, intent=intent)) == []  # torch-install's config-device-missing says it once
    assert CHECK.summarize(facts) == "no runs: cuda asked, not seen"


def test_quick_skips_the_probe_before_importing_anything() -> None:
    facts = PROBE.probe(None, ProbeContext(options={"quick": True}))
    assert facts["skipped"] == "quick" and facts["ops"] == []
    assert judge(facts, ENV) == [] and CHECK.summarize(facts) == "skipped (--quick)"


def test_the_check_runs_in_the_libraries_worker_and_not_under_quick() -> None:
    assert (CHECK.group, CHECK.quick) == ("libraries", False)
    assert CHECK.order > max(c.check.order for c in load_checks(plugins=False)[0] if c.check.id == "extension-abi")


def test_a_recorded_run_names_no_machine_path_in_its_frames() -> None:
    facts = facts_of(load_fixture(OLD), ID)
    frames = [f for run in runs(facts).values() for f in [run.get("frame")] + list(run.get("frames") or ()) if f]
    assert frames and all(not f.startswith("/") and ": " in f for f in frames)



# ---------------------------------------------------------------- setups (pure)


def test_without_an_intent_the_common_setups_run_on_the_cpu_and_the_first_device_of_each_kind() -> None:
    plan = setups.plan(None, ["cpu", "cuda:0", "cuda:1", "mps"])
    assert not plan.from_intent and plan.unavailable == []
    assert sorted({s.device for s in plan.setups}) == ["cpu", "cuda:0", "mps"]
    cpu = [s.key for s in plan.setups if s.device == "cpu"]
    assert cpu[:3] == ["clip cpu fp32 train", "clip cpu fp16 train", "clip cpu bf16 train"]  # the control first
    assert len(cpu) == 12


def test_seed_004s_intent_casts_the_frozen_text_encoders_and_trains_the_fp16_unet_on_the_launchers_device() -> None:
    intent = env_of(load_fixture(OLD_AUTOTRAIN)).intent
    assert intent is not None
    summary = intent.summary()
    cpu = setups.plan(summary, ["cpu"]).setups
    assert [(s.model, s.part, s.mode, s.training) for s in cpu] == [
        ("unet", "unet", "fp16", True), ("clip", "text_encoder", "fp16", False), ("clip-projection", "text_encoder_2", "fp16", False)]
    assert cpu[0].asked_by == (("weight_dtype", "unet"),)  # the device was the launcher's choice, not the config's
    assert {s.device for s in setups.plan(summary, ["cpu", "cuda:0"]).setups} == {"cuda:0"}  # "auto": the accelerator


def test_an_intent_naming_no_part_runs_the_default_models_in_its_precision() -> None:
    summary = {"device": None, "precision": "bf16", "weights": {"model": "nf4"}, "trained": ["model"], "training": True}
    found = setups.plan(summary, ["cpu"]).setups
    assert [(s.model, s.mode, s.training) for s in found] == [(m, "bf16", True) for m in ("clip", "t5", "unet", "vae")]


def test_each_part_runs_as_its_weights_and_the_compute_precision_say() -> None:
    summary = onetrainer("bf16", {"unet": "fp8", "text_encoder": "fp32", "vae": "fp16"}, ["unet", "text_encoder"]).summary()
    found = {s.part: s for s in setups.plan(summary, ["cpu"]).setups}
    assert (found["unet"].mode, found["unet"].stored_as, found["unet"].training) == ("bf16", "fp8", True)  # fp8 storage, bf16 compute
    assert (found["text_encoder"].mode, found["text_encoder"].training) == ("autocast-bf16", True)
    assert (found["vae"].mode, found["vae"].training) == ("fp16", False)  # frozen: forward only
    assert found["vae"].asked_by == (("weight_dtype", "vae"), ("device", None))


def test_a_trained_part_without_a_weight_dtype_keeps_fp32_weights_under_autocast() -> None:
    intent = {"device": "cuda", "precision": "fp16", "weights": {}, "trained": ["unet", "text_encoder"], "training": True}
    found = {s.part: s.mode for s in setups.plan(intent, ["cpu", "cuda:0"]).setups}
    assert found == {"unet": "autocast-fp16", "text_encoder": "autocast-fp16"}


def test_a_failing_intent_run_is_tried_in_bf16_and_fp32_to_measure_the_remedies() -> None:
    failed = setups.Setup("clip", "cpu", "fp16", part="text_encoder", asked_by=(("precision", None),))
    assert [(s.key, s.alternative_for) for s in setups.alternatives(failed, [failed])] == [
        ("clip cpu bf16 train", "clip cpu fp16 train"), ("clip cpu fp32 train", "clip cpu fp16 train")]
    on_gpu = setups.Setup("unet", "cuda:0", "fp32", autocast="bf16")
    assert [s.mode for s in setups.alternatives(on_gpu, [])] == ["autocast-fp16", "fp32"]
    assert setups.alternatives(setups.Setup("vae", "cpu", "bf16"), []) == [setups.Setup("vae", "cpu", "fp32", alternative_for="vae cpu bf16 train")]


def test_an_asked_device_that_is_not_there_is_unavailable() -> None:
    plan = setups.plan({"device": "cuda:1", "precision": "fp16", "training": True}, ["cpu", "cuda:0"])
    assert plan.setups == [] and plan.unavailable == [{"device": "cuda:1", "available": ["cpu", "cuda:0"]}]


# ---------------------------------------------------------------- when the libraries are imported


def test_a_plain_check_imports_no_training_library_and_says_how_to_run_them(libs_python: Path) -> None:
    """No config asks for the libraries' models: a plain check skips them (their import costs more than torch's),
    dora-fp8 runs the plain-torch DoRA math and says peft was not imported; --libraries runs them without a config."""
    proc = run_envdoctor("check", "--json", "--no-config", "--python", str(libs_python), timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    skipped = check_of(report, ID)
    assert skipped["status"] == "skipped" and NOT_ASKED in skipped["summary"]
    dora = check_of(report, "dora-fp8")
    assert dora["facts"]["libraries"] is False and dora["facts"]["imports"] == [] and dora["facts"]["library"] == "torch"
    assert dora["summary"].startswith("plain-torch DoRA math (peft 0.21.2 not imported: no config asks for an adapter; "
                                      "--libraries runs it)")
    asked = json.loads(run_envdoctor("check", "--json", "--no-config", "--libraries", "--python", str(libs_python),
                                     "--skip", "library-probes", timeout=600).stdout)
    assert facts_of(asked, "dora-fp8")["library"] == "peft"


def test_the_libraries_run_where_a_config_an_option_or_the_user_asks_and_never_with_quick() -> None:
    checks = load_checks(plugins=False)[0]
    selected = [c for c in checks if c.check.id in ("cpu-half-kernels", "dora-fp8")]
    assert not runs_libraries(CheckRequest(), False, checks)
    assert runs_libraries(CheckRequest(), True, checks)  # a training config's intent
    assert runs_libraries(CheckRequest(libraries=True), False, checks)
    assert runs_libraries(CheckRequest(only=["dora-fp8"]), False, selected)  # named: the user asked for it
    assert not runs_libraries(CheckRequest(only=["cpu-half-kernels"]), False, selected[:1])
    assert not runs_libraries(CheckRequest(quick=True, libraries=True), True, checks)
