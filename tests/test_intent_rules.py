"""The existing checks' rules with a training config's intent: what the config asks for
on the CPU becomes an error naming its line; what it does not ask for is a note."""

from __future__ import annotations

import dataclasses

from conftest import ENV, facts_of, load_fixture

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.intent import ConfigSource, Intent, Setting
from envdoctor.target.model import Severity, Target

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
OLD = load_fixture("cpu-torch-2.0.1.json")  # torch 2.0.1: no fp16 layer_norm, addmm, conv on the CPU
TEXT = "task: dreambooth\nparams:\n  mixed_precision: fp16\n"


def autotrain(precision: str, raw: str, device: str = "auto") -> Intent:
    """The seed-004 shape: autotrain DreamBooth, `mixed_precision` on line 3."""
    start = TEXT.index("fp16")
    settings = [
        Setting("precision", precision, "autotrain", "train.yaml", "params.mixed_precision", raw=raw, line=3, column=20,
                start=start, end=start + 4, source=raw),
        Setting("device", device, "autotrain", "train.yaml", "device", raw="cuda if available", default=True),
    ]
    return Intent((ConfigSource("train.yaml", "autotrain", "yaml", "autotrain-advanced dreambooth"),), tuple(settings))


def env_with(intent: Intent) -> Target:
    return dataclasses.replace(ENV, torch="2.0.1+cu117", intent=intent)


def cpu_half(env: Target, accelerators: tuple = ()) -> list:
    facts = dict(facts_of(OLD, "cpu-half-kernels"), accelerators=list(accelerators))
    return CHECKS["cpu-half-kernels"].judge(facts, env)


def test_fp16_on_the_cpu_asked_by_the_config_is_an_error_naming_its_line() -> None:
    finding = next(f for f in cpu_half(env_with(autotrain("fp16", "fp16"))) if f.code == "fp16-missing")
    assert finding.severity is Severity.ERROR
    assert finding.title.startswith("train.yaml:3 `mixed_precision: fp16` asks for fp16 on the CPU; this torch has no fp16 layer_norm")
    assert finding.evidence[0] == "train.yaml:3 `mixed_precision: fp16` asks for fp16 (compute)"
    assert finding.evidence[1] == "train.yaml: `device` absent, autotrain-advanced's default cuda if available: the training device"
    assert finding.subject["config"] == {"file": "train.yaml", "line": 3, "key": "params.mixed_precision", "tool": "autotrain", "default": False}
    assert "precision-fp32" in {r.id for r in finding.remedies}


def test_the_same_config_on_a_gpu_machine_trains_on_the_gpu_so_the_cpu_gap_is_a_note() -> None:
    findings = cpu_half(env_with(autotrain("fp16", "fp16")), accelerators=("cuda:0",))
    assert {f.severity for f in findings} == {Severity.INFO}
    assert not any("asks for" in f.title for f in findings)


def test_a_config_forcing_the_cpu_on_a_gpu_machine_still_asks_for_fp16_there() -> None:
    findings = cpu_half(env_with(autotrain("fp16", "fp16", device="cpu")), accelerators=("cuda:0",))
    assert findings[0].severity is Severity.ERROR and "asks for fp16 on the CPU" in findings[0].title


def test_an_fp32_config_on_the_cpu_turns_the_missing_half_kernels_into_notes() -> None:
    findings = cpu_half(env_with(autotrain("fp32", "'no'")))
    assert findings and {f.severity for f in findings} == {Severity.INFO}


def test_without_a_config_the_findings_are_what_they_were() -> None:
    assert cpu_half(dataclasses.replace(ENV, torch="2.0.1+cu117"))[0].severity is Severity.ERROR
    assert cpu_half(dataclasses.replace(ENV, torch="2.0.1+cu117"), accelerators=("cuda:0",))[0].severity is Severity.WARNING


def test_the_intent_round_trips_through_the_report_environment() -> None:
    intent = autotrain("fp16", "fp16")
    env = Target.from_report({"intent": intent.to_dict(), "torch": "2.13.0"})
    assert env.intent == intent
    assert env.to_dict()["intent"]["summary"]["precision"] == "fp16"


# ---- torch-install: the config's training device against the devices torch sees


def onetrainer_device(value: str) -> Intent:
    setting = Setting("device", value, "onetrainer", "cfg.json", "train_device", raw=value, line=7, column=21,
                      start=120, end=120 + len(value) + 2, source='"%s"' % value)
    precision = Setting("precision", "fp16", "onetrainer", "cfg.json", "train_dtype", raw="FLOAT_16", default=True)
    return Intent((ConfigSource("cfg.json", "onetrainer", "json", "OneTrainer preset"),), (setting, precision))


def torch_install(intent: Intent, devices: list) -> list:
    facts = dict(facts_of(load_fixture("cpu-torch-2.13.0.json"), "torch-install"), devices=[{"id": d} for d in devices])
    return [f for f in CHECKS["torch-install"].judge(facts, dataclasses.replace(ENV, intent=intent)) if f.code.startswith("config-")]


def test_a_config_forcing_cuda_on_a_machine_without_a_gpu_is_an_error_with_the_cpu_edit_of_the_device_alone() -> None:
    [finding] = torch_install(onetrainer_device("cuda"), ["cpu"])
    assert finding.severity is Severity.ERROR and finding.code == "config-device-missing"
    assert finding.title == 'cfg.json:7 `train_device: "cuda"` asks for cuda; this torch sees no GPU'
    edit = next(r for r in finding.remedies if r.id == "device-cpu")
    # the fp16 it asks for is not condemned here: fix checks the moved config again, and
    # cpu-half-kernels condemns it where the CPU's kernels are missing
    assert edit.action == {"set": {"device": "cpu"}, "when": {"device": "cuda"}}


def test_a_missing_second_gpu_is_named() -> None:
    [finding] = torch_install(onetrainer_device("cuda:1"), ["cpu", "cuda:0"])
    assert finding.title.endswith("asks for cuda:1; this torch sees cuda:0")


def test_a_config_forcing_the_cpu_beside_a_gpu_is_a_warning_with_the_cuda_edit() -> None:
    [finding] = torch_install(onetrainer_device("cpu"), ["cpu", "cuda:0"])
    assert finding.severity is Severity.WARNING and finding.remedies[0].action["set"] == {"device": "cuda"}


def test_a_device_the_machine_has_is_no_finding() -> None:
    assert torch_install(onetrainer_device("cuda"), ["cpu", "cuda:0"]) == []
    assert torch_install(onetrainer_device("cpu"), ["cpu"]) == []


# ---- which file wins: real files of three tools read together


def test_precedence_launch_flags_then_the_trainers_own_value_even_a_default_then_accelerate(tmp_path) -> None:
    from envdoctor.configs.detect import read_configs

    kohya = tmp_path / "lora.toml"
    kohya.write_text('pretrained_model_name_or_path = "sdxl.safetensors"\nnetwork_module = "networks.lora"\n'
                     'train_data_dir = "img"\noutput_dir = "out"\nlearning_rate = 1e-4\n')
    accelerate = tmp_path / "default_config.yaml"
    accelerate.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nmixed_precision: fp16\nuse_cpu: true\n")
    launch = tmp_path / "run.sh"
    launch.write_text("accelerate launch sdxl_train_network.py --config_file lora.toml\n")
    intent = read_configs([str(accelerate), str(kohya), str(launch)])
    # sd-scripts hands its own mixed_precision (default "no") to Accelerator: accelerate's fp16 loses
    precision = intent.effective("precision")
    assert (precision.tool, precision.value, precision.default) == ("kohya", "fp32", True)
    # kohya has no device key: accelerate's use_cpu decides; the launch line said nothing
    assert intent.effective("device").tool == "accelerate" and intent.value("device") == "cpu"
    launch.write_text("accelerate launch --mixed_precision bf16 sdxl_train_network.py --config_file lora.toml\n")
    assert intent_value(read_configs([str(accelerate), str(kohya), str(launch)]), "precision") == ("launch", "bf16")


def intent_value(intent: Intent, name: str) -> tuple:
    setting = intent.effective(name)
    return (setting.tool, setting.value)


def test_launch_flags_are_shown_as_written(tmp_path) -> None:
    from envdoctor.configs.detect import read_config

    line = tmp_path / "run.sh"
    line.write_text('accelerate launch --cpu train_text_to_image.py --mixed_precision="fp16"\n')
    intent = read_config(str(line))
    assert intent.effective("device").where() == "run.sh:1 `--cpu`"
    assert intent.effective("precision").where() == 'run.sh:1 `--mixed_precision "fp16"`'


def test_axolotls_bf16_auto_falls_back_to_fp16_on_the_cpu(tmp_path) -> None:
    from envdoctor.configs.detect import read_config

    config = tmp_path / "qlora.yml"
    config.write_text("base_model: NousResearch/Llama-2-7b-hf\nadapter: lora\nsequence_len: 512\nmicro_batch_size: 1\n"
                      "datasets:\n  - path: mhenrichsen/alpaca_2k_test\n    type: alpaca\n")
    intent = read_config(str(config))
    assert intent.value("precision") == "auto" and intent.effective("precision").default
    env = dataclasses.replace(ENV, torch="2.0.1+cu117", intent=intent)
    finding = cpu_half(env)[0]
    assert finding.severity is Severity.ERROR
    assert finding.title.startswith("qlora.yml: `bf16` absent, axolotl's default auto asks for fp16 on the CPU")
    # on a GPU machine the same config trains on the GPU: the CPU gap is a note
    assert {f.severity for f in cpu_half(env, accelerators=("cuda:0",))} == {Severity.INFO}


def test_library_probes_compute_in_what_auto_falls_back_to() -> None:
    from envdoctor.checks.library_probes.setups import compute_precision

    assert compute_precision("auto", "cpu", "fp16") == "fp16"  # axolotl on the CPU
    assert compute_precision("auto", "cpu", "fp32") is None
    assert compute_precision("auto", "cuda:0", "fp16") == "bf16"


def accelerate_distributed(value: str) -> Intent:
    setting = Setting("distributed", value, "accelerate", "default_config.yaml", "distributed_type", raw=value.upper(), line=3,
                      column=19, start=40, end=40 + len(value), source=value.upper())
    return Intent((ConfigSource("default_config.yaml", "accelerate", "yaml", "accelerate config (YAML)"),), (setting,))


def test_a_config_launching_one_process_per_gpu_without_a_gpu_is_an_error_reported_not_rewritten() -> None:
    for kind in ("multi_gpu", "deepspeed", "fsdp"):
        [finding] = torch_install(accelerate_distributed(kind), ["cpu"])
        assert finding.severity is Severity.ERROR and finding.code == "config-distributed-no-gpu"
        assert finding.title.endswith("launches one process per GPU; this torch sees no GPU"), finding.title
        assert {r.kind for r in finding.remedies} == {"manual"}  # accelerate config's to write
    assert torch_install(accelerate_distributed("multi_gpu"), ["cpu", "cuda:0"]) == []
    assert torch_install(accelerate_distributed("multi_cpu"), ["cpu"]) == []
    assert torch_install(accelerate_distributed("no"), ["cpu"]) == []
