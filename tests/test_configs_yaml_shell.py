"""The YAML and launch-line readers: accelerate, autotrain-advanced, axolotl, launch lines.

Every file is written here from the fields the tools document (CONFIG-FORMATS.md), with
the pitfalls of real files: CRLF, no final newline, comments, commented-out keys,
quoted 'no', null, model names that contain "fp16". Each value read is checked at its
line and exact span (`text[start:end] == source`); each tool default is default=True.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional

import pytest
import yaml

from envdoctor.configs import accelerate, autotrain, axolotl, launch, parse_shell, parse_yaml
from envdoctor.configs.detect import read_config, read_configs
from envdoctor.configs.document import ConfigError, Node, line_column
from envdoctor.target.intent import Intent, Setting


def write(tmp_path: Path, name: str, text: str) -> str:
    """The file exactly as given: bytes, so CRLF and a missing final newline stay."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def one(intent: Intent, name: str, part: Optional[str] = None) -> Setting:
    found = intent.all(name, part) if part else [s for s in intent.all(name) if s.part is None]
    assert len(found) == 1, found
    return found[0]


def written(text: str, setting: Setting, source: str, line: int) -> None:
    """The setting sits in the file at `line`, and its span is exactly `source`."""
    assert setting.default is False
    assert setting.source == source
    assert setting.start is not None and setting.end is not None
    assert text[setting.start:setting.end] == source
    assert setting.line == line
    assert line_column(text, setting.start) == (setting.line, setting.column)


def tool_default(setting: Setting, key: str, raw: object) -> None:
    assert setting.default is True
    assert (setting.key, setting.raw) == (key, raw)
    assert setting.start is None and setting.source is None


def scalars(node: Node) -> List[Node]:
    if node.kind == "mapping":
        return [n for _, child in node.items() for n in scalars(child)]
    if node.kind == "sequence":
        return [n for child in node.value for n in scalars(child)]
    return [node]


# ---- YAML text

YAML_PITFALLS = (
    "\ufeff# written by hand\r\n"
    "name: 'no'   # quoted: a string\r\n"
    "flag: no\r\n"
    "empty:\r\n"
    "tilde: ~\r\n"
    "null_word: null\r\n"
    "text: \"très \\\"fp16\\\" ü\"\r\n"
    "flow: {a: 1, b: fp16}\r\n"
    "list:\r\n"
    "- x\r\n"
    "-   'y'\r\n"
    "base: &base {lr: 1e-4, bf16: true}\r\n"
    "merged:\r\n"
    "  <<: *base\r\n"
    "  lr: 2e-4\r\n"
    "block: |\r\n"
    "  line one\r\n"
    "\r\n"
    "name: last   # a repeated key: PyYAML keeps the last\r\n"
    "ending: end"
)


def test_yaml_values_are_safe_load_s_and_each_span_is_the_token_as_written() -> None:
    doc = parse_yaml.parse("f.yaml", YAML_PITFALLS)
    assert doc.syntax == "yaml"
    assert doc.root.plain() == yaml.safe_load(YAML_PITFALLS)
    tokens = {n.start: YAML_PITFALLS[n.start:n.end] for n in scalars(doc.root)}
    assert sorted(tokens.values()) == sorted([
        "last", "no", "", "~", "null", '"très \\"fp16\\" ü"', "1", "fp16", "x", "'y'",
        "1e-4", "true", "2e-4", "|\r\n  line one", "end"])
    root = doc.root.value
    assert root["flag"].value is False and root["empty"].value is None and root["null_word"].value is None
    assert root["name"].value == "last" and root["name"].line == 19  # the last of the repeated key
    assert (root["text"].line, root["text"].column) == (7, 7)
    assert doc.source(root["text"]) == '"très \\"fp16\\" ü"' and root["text"].value == 'très "fp16" ü'
    assert doc.source(root["empty"]) == "" and root["empty"].start == YAML_PITFALLS.index("empty:") + len("empty:")
    merged = doc.root.get("merged")
    assert merged is not None and merged.plain() == {"lr": "2e-4", "bf16": True}
    assert doc.source(merged.value["bf16"]) == "true" and merged.value["bf16"].line == 12  # the anchor's token
    assert root["ending"].end == len(YAML_PITFALLS)
    for node in scalars(doc.root):
        assert line_column(YAML_PITFALLS, node.start) == (node.line, node.column)
        assert node.key_start is None or node.key_line == line_column(YAML_PITFALLS, node.key_start)[0]


def test_quoted_no_stays_a_string_and_a_lone_scalar_or_first_document_is_what_is_read() -> None:
    doc = parse_yaml.parse("f.yaml", "mixed_precision: 'no'\n")
    assert doc.root.get("mixed_precision").value == "no"
    assert parse_yaml.parse("f.yaml", "a: 1\n---\na: 2\n").root.plain() == {"a": 1}
    assert parse_yaml.parse("f.yaml", "just words").root.kind == "scalar"


def test_a_tab_indent_is_one_error_line_with_its_place(tmp_path: Path) -> None:
    text = "task: dreambooth\nparams:\n\tmixed_precision: fp16\n"
    with pytest.raises(ConfigError) as caught:
        read_config(write(tmp_path, "bad.yml", text))
    error = caught.value
    assert (error.line, error.column) == (3, 1)
    assert str(error) == "%s:3:1: invalid YAML: found character '\\t' that cannot start any token" % error.file
    assert "\n" not in str(error)


@pytest.mark.parametrize(("text", "message"), [
    ("", "is empty"),
    ("  \r\n\n", "is empty"),
    ("\x00\x01binary\xff", "is a binary file, not a training config"),
])
def test_empty_and_binary_files_are_refused_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ConfigError, match=message):
        read_config(str(path))


def test_only_comments_or_a_bare_scalar_are_no_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="holds no YAML document"):
        parse_yaml.parse("c.yaml", "# mixed_precision: fp16\n")
    with pytest.raises(ConfigError, match="unknown layout"):
        read_config(write(tmp_path, "c.yaml", "fp16"))


def test_a_character_yaml_forbids_is_reported_at_its_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_yaml.parse("c.yaml", "a: 1\nb: \x07\n")
    assert (caught.value.line, caught.value.column) == (2, 4) and "U+0007" in caught.value.message


# ---- accelerate

# as `accelerate config` writes it (yaml.safe_dump: sorted keys, 'no' quoted), CRLF, no final newline
ACCELERATE_YAML = (
    "compute_environment: LOCAL_MACHINE\r\n"
    "debug: false\r\n"
    "deepspeed_config:\r\n"
    "  gradient_accumulation_steps: 1\r\n"
    "  offload_optimizer_device: cpu\r\n"
    "  offload_param_device: cpu\r\n"
    "  zero_stage: 2\r\n"
    "distributed_type: DEEPSPEED\r\n"
    "downcast_bf16: 'no'\r\n"
    "machine_rank: 0\r\n"
    "main_training_function: main\r\n"
    "# mixed_precision: bf16\r\n"
    "mixed_precision: fp16\r\n"
    "num_machines: 1\r\n"
    "num_processes: 1\r\n"
    "use_cpu: false"
)


def test_accelerate_yaml(tmp_path: Path) -> None:
    intent = read_config(write(tmp_path, "default_config.yaml", ACCELERATE_YAML))
    assert [(s.tool, s.label) for s in intent.sources] == [("accelerate", "accelerate config (YAML)")]
    precision = one(intent, "precision")
    assert (precision.value, precision.key, precision.raw) == ("fp16", "mixed_precision", "fp16")
    written(ACCELERATE_YAML, precision, "fp16", 13)
    device = one(intent, "device")  # offload_*_device: cpu is DeepSpeed's offload target, not the device
    assert (device.value, device.key) == ("auto", "use_cpu")
    written(ACCELERATE_YAML, device, "false", 16)
    distributed = one(intent, "distributed")
    assert distributed.value == "deepspeed"
    written(ACCELERATE_YAML, distributed, "DEEPSPEED", 8)


@pytest.mark.parametrize(("line", "value", "source", "note"), [
    ("mixed_precision: 'no'", "fp32", "'no'", ""),
    ('mixed_precision: "bf16"', "bf16", '"bf16"', ""),
    ("mixed_precision: fp8", "fp8", "fp8", ""),
    ("mixed_precision: null", "fp32", "null", "null: accelerate launches with 'no'"),
    ("mixed_precision: no", "fp32", "no", accelerate.BARE_NO),
    ("fp16: true", "fp16", "true", "an accelerate config older than `mixed_precision`"),
])
def test_accelerate_precision_spellings(tmp_path: Path, line: str, value: str, source: str, note: str) -> None:
    text = "compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\n%s\nuse_cpu: true\n" % line
    intent = read_config(write(tmp_path, "c.yaml", text))
    precision = one(intent, "precision")
    assert (precision.value, precision.note) == (value, note)
    written(text, precision, source, 3)
    written(text, one(intent, "device"), "true", 4)
    assert one(intent, "device").value == "cpu" and one(intent, "distributed").value == "no"


def test_accelerate_defaults_when_keys_are_absent(tmp_path: Path) -> None:
    text = "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n# use_cpu: true\n"
    intent = read_config(write(tmp_path, "c.yaml", text))
    tool_default(one(intent, "precision"), "mixed_precision", "no")
    assert one(intent, "precision").value == "fp32"
    tool_default(one(intent, "device"), "use_cpu", False)
    assert one(intent, "device").value == "auto" and one(intent, "distributed").value == "multi_gpu"


# `accelerate config default` writes JSON text (indent 2, sorted keys) into default_config.yaml
ACCELERATE_JSON = json.dumps({"compute_environment": "LOCAL_MACHINE", "debug": False, "distributed_type": "NO",
                              "enable_cpu_affinity": False, "machine_rank": 0, "main_training_function": "main",
                              "mixed_precision": "fp16", "num_machines": 1, "num_processes": 1, "rdzv_backend": "static",
                              "same_network": True, "tpu_use_cluster": False, "tpu_use_sudo": False, "use_cpu": True},
                             indent=2, sort_keys=True) + "\n"


def test_accelerate_json_text_in_default_config_yaml(tmp_path: Path) -> None:
    # the YAML parser reads JSON text too (as accelerate's yaml.safe_load does); JSON's own
    # parser must give the same tree, so the reader declares both syntaxes
    assert accelerate.FORMATS[0].syntaxes == ("yaml", "json")
    doc = parse_yaml.parse("default_config.yaml", ACCELERATE_JSON)
    assert accelerate.recognise(doc) >= 10 and accelerate.label(doc) == "accelerate config (JSON text)"
    intent = read_config(write(tmp_path, "default_config.yaml", ACCELERATE_JSON))
    assert intent.sources[0].tool == "accelerate" and intent.sources[0].label == "accelerate config (JSON text)"
    line = ACCELERATE_JSON[:ACCELERATE_JSON.index('"fp16"')].count("\n") + 1
    written(ACCELERATE_JSON, one(intent, "precision"), '"fp16"', line)
    written(ACCELERATE_JSON, one(intent, "device"), "true", ACCELERATE_JSON.count("\n") - 1)
    assert one(intent, "device").value == "cpu"


def test_kohya_gui_style_keys_without_distributed_type_are_not_accelerate() -> None:
    doc = parse_yaml.parse("c.yaml", "mixed_precision: fp16\nnum_processes: 1\ngpu_ids: '0'\n")
    assert accelerate.recognise(doc) == 0


def test_the_default_accelerate_config_is_found_where_accelerate_looks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hf_home, xdg, home = tmp_path / "hf", tmp_path / "xdg", tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    assert accelerate.default_config_path({}) is None  # nothing written yet
    in_home = write(home, ".cache/huggingface/accelerate/default_config.yaml", ACCELERATE_YAML)
    assert accelerate.default_config_path({}) == in_home
    in_xdg = write(xdg, "huggingface/accelerate/default_config.yaml", ACCELERATE_JSON)
    assert accelerate.default_config_path({"XDG_CACHE_HOME": str(xdg)}) == in_xdg
    assert accelerate.default_config_path({"XDG_CACHE_HOME": str(xdg), "HF_HOME": str(hf_home)}) is None  # HF_HOME wins, even empty
    in_hf = write(hf_home, "accelerate/default_config.yaml", ACCELERATE_YAML)
    assert accelerate.default_config_path({"XDG_CACHE_HOME": str(xdg), "HF_HOME": str(hf_home)}) == in_hf
    assert accelerate.default_config_path({"HF_HOME": "~/.cache/huggingface"}) == in_home  # `~` expanded as accelerate does
    monkeypatch.setenv("HF_HOME", str(hf_home))
    assert accelerate.default_config_path() == in_hf  # os.environ by default
    named = write(tmp_path, "launch/my_accelerate.yaml", ACCELERATE_YAML)
    assert accelerate.default_config_path({"ACCELERATE_CONFIG_FILE": named, "HF_HOME": str(hf_home)}) == named
    assert accelerate.default_config_path({"ACCELERATE_CONFIG_FILE": str(tmp_path / "missing.yaml")}) is None
    assert read_config(accelerate.default_config_path({"XDG_CACHE_HOME": str(xdg)}) or "").value("device") == "cpu"


_ACCELERATE_SAYS = """
import json, sys
from accelerate.commands.config import config_args
from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
from accelerate.utils import write_basic_config
kind, where = sys.argv[1], sys.argv[2]
if kind == "json":
    write_basic_config(mixed_precision="fp16", save_location=where)
else:
    ClusterConfig(compute_environment="LOCAL_MACHINE", distributed_type="NO", mixed_precision="no", use_cpu=True,
                  debug=False, num_processes=1).to_yaml_file(where)
loaded = load_config_from_file(where)
print(json.dumps({"default": config_args.default_config_file, "mixed_precision": loaded.mixed_precision, "use_cpu": loaded.use_cpu}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["json", "yaml"])
def test_files_written_by_accelerate_itself_read_as_accelerate_reads_them(libs_python: Path, tmp_path: Path, kind: str) -> None:
    """accelerate 1.15 writes the file (`accelerate config default` JSON, `accelerate config`
    YAML) under HF_HOME and loads it back; envdoctor finds the same file and reads the same values."""
    environ = {"HF_HOME": str(tmp_path / "hf"), "HOME": str(tmp_path / "home"), "PATH": os.environ.get("PATH", "")}
    target = tmp_path / "hf" / "accelerate" / "default_config.yaml"
    target.parent.mkdir(parents=True)
    out = subprocess.run([str(libs_python), "-c", _ACCELERATE_SAYS, kind, str(target)], capture_output=True, text=True,
                         env=environ, timeout=300)
    assert out.returncode == 0, out.stderr
    says = json.loads(out.stdout.strip().splitlines()[-1])
    assert accelerate.default_config_path(environ) == says["default"] == str(target)
    intent = read_config(says["default"])
    expected = {"fp16": "fp16", "no": "fp32"}[says["mixed_precision"]]
    assert (intent.value("precision"), intent.value("device")) == (expected, "cpu" if says["use_cpu"] else "auto")
    text = target.read_text(encoding="utf-8")
    assert text.lstrip().startswith("{") == (kind == "json")
    precision = one(intent, "precision")
    assert text[precision.start:precision.end] == precision.source


# ---- autotrain-advanced

# Seed 004: the SDXL DreamBooth Colab config (configs/dreambooth/sdxl_colab.yml in
# autotrain-advanced's repository, no final newline) with mixed_precision: fp16, run on a CPU.
SDXL_DREAMBOOTH = (
    "task: dreambooth\n"
    "base_model: stabilityai/stable-diffusion-xl-base-1.0\n"
    "project_name: autotrain-sdxl-finetuned\n"
    "backend: local\n"
    "\n"
    "data:\n"
    "  path: data/ # store all images in this folder\n"
    "  prompt: photo of sks person # prompt for the model\n"
    "\n"
    "params:\n"
    "  resolution: 1024\n"
    "  batch_size: 1\n"
    "  num_steps: 500\n"
    "  lr: 1e-4\n"
    "  gradient_accumulation: 4\n"
    "  mixed_precision: fp16\n"
    "  train_text_encoder: false\n"
    "  xformers: false\n"
    "  use_8bit_adam: false\n"
    "  xl: true\n"
    "\n"
    "hub:\n"
    "  username: ${HF_USERNAME}\n"
    "  token: ${HF_TOKEN}\n"
    "  push_to_hub: true"
)


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_seed_004_sdxl_dreambooth_asks_for_fp16_weights_and_compute(tmp_path: Path, line_end: str) -> None:
    text = SDXL_DREAMBOOTH.replace("\n", line_end)
    intent = read_config(write(tmp_path, "sdxl_colab.yml", text))
    assert [(s.tool, s.label) for s in intent.sources] == [("autotrain", "autotrain-advanced dreambooth")]
    precision = one(intent, "precision")
    assert (precision.value, precision.key) == ("fp16", "params.mixed_precision")
    written(text, precision, "fp16", 16)
    # train_xl.py casts the frozen UNet and both text encoders to fp16; the SDXL VAE stays fp32
    assert sorted(intent.weights()) == ["text_encoder", "text_encoder_2", "unet"]
    for part, setting in intent.weights().items():
        assert setting.value == "fp16" and (setting.start, setting.end) == (precision.start, precision.end), part
        written(text, setting, "fp16", 16)
    tool_default(one(intent, "device"), "device", "cuda if available")
    assert intent.runs_on([]) == "cpu" and [s.name for s in intent.asks_dtype("fp16")][:1] == ["precision"]
    assert intent.trained_parts() == ["unet"]
    written(text, one(intent, "train", "text_encoder"), "false", 17)
    tool_default(one(intent, "adapter"), "adapter", "LoRA")
    tool_default(one(intent, "dora"), "use_dora", False)
    assert one(intent, "dora").value is False


def test_sd15_dreambooth_casts_the_vae_too_and_none_is_flagged_for_accelerate(tmp_path: Path) -> None:
    text = "task: dreambooth\nbase_model: runwayml/stable-diffusion-v1-5\nproject_name: p\nparams:\n  mixed_precision: bf16\n  train_text_encoder: true\n"
    intent = read_config(write(tmp_path, "sd15.yml", text))
    assert sorted(intent.weights()) == ["text_encoder", "unet", "vae"]
    assert {s.value for s in intent.weights().values()} == {"bf16"}
    assert intent.trained_parts() == ["unet", "text_encoder"]
    none = read_config(write(tmp_path, "none.yml", text.replace("bf16", "none")))
    assert one(none, "precision").value == "fp32" and "accepts only no/fp16/bf16/fp8" in one(none, "precision").note
    assert none.weights() == {}


@pytest.mark.parametrize(("value", "source", "expected"), [("null", "null", "fp32"), ("", "", "fp32"), ("'bf16'", "'bf16'", "bf16")])
def test_autotrain_precision_values(tmp_path: Path, value: str, source: str, expected: str) -> None:
    text = "task: llm-sft\nbase_model: gpt2\nproject_name: p\nparams:\n  mixed_precision:%s\n  peft: false\n" % (" " + value if value else "")
    intent = read_config(write(tmp_path, "c.yml", text))
    precision = one(intent, "precision")
    assert precision.value == expected
    written(text, precision, source, 5)
    written(text, one(intent, "adapter"), "false", 6)
    assert one(intent, "adapter").value == "full" and intent.weights() == {}


def test_autotrain_llm_qlora_and_names_that_contain_fp16(tmp_path: Path) -> None:
    text = ("task: llm-dpo\r\n"
            "base_model: someone/llama-fp16-merged  # a name, not a setting\r\n"
            "project_name: autotrain-fp16-test\r\n"
            "params:\r\n"
            "  # mixed_precision: bf16\r\n"
            "  peft: true\r\n"
            "  quantization: int4\r\n"
            "  mixed_precision: fp16\r\n"
            "hub:\r\n"
            "  mixed_precision: bf16\r\n")  # a stray copy in another section is not the setting
    intent = read_config(write(tmp_path, "llm.yml", text))
    written(text, one(intent, "precision"), "fp16", 8)
    weight = one(intent, "weight_dtype", "model")
    assert weight.value == "nf4" and weight.raw == "int4"
    written(text, weight, "int4", 7)
    assert one(intent, "adapter").value == "lora"
    written(text, one(intent, "adapter"), "true", 6)
    quantized_by_default = read_config(write(tmp_path, "d.yml", text.replace("  quantization: int4\r\n", "")))
    tool_default(one(quantized_by_default, "weight_dtype", "model"), "params.quantization", "int4")
    absent = read_config(write(tmp_path, "e.yml", "task: llm\nbase_model: gpt2\nproject_name: p\nparams:\n  lr: 1e-4\n"))
    tool_default(one(absent, "precision"), "params.mixed_precision", None)
    tool_default(one(absent, "adapter"), "params.peft", False)


# ---- axolotl

AXOLOTL_LORA = (
    "base_model: NousResearch/Llama-2-7b-hf\n"
    "model_type: LlamaForCausalLM\n"
    "load_in_8bit: true\n"
    "load_in_4bit: false\n"
    "datasets:\n"
    "  - path: mhenrichsen/alpaca_2k_test\n"
    "    type: alpaca\n"
    "sequence_len: 4096\n"
    "adapter: lora\n"
    "lora_r: 32\n"
    "peft_use_dora: true\n"
    "micro_batch_size: 2\n"
    "# fp16: true\n"
    "bf16: auto\n"
    "fp16:\n"
    "tf32: false\n"
)


def test_axolotl_lora_on_an_8bit_base_with_dora(tmp_path: Path) -> None:
    intent = read_config(write(tmp_path, "lora.yml", AXOLOTL_LORA))
    assert [(s.tool, s.label) for s in intent.sources] == [("axolotl", "axolotl config")]
    precision = one(intent, "precision")
    assert (precision.value, precision.key) == ("auto", "bf16") and precision.note == axolotl.AUTO_NOTE
    written(AXOLOTL_LORA, precision, "auto", 14)
    weight = one(intent, "weight_dtype", "model")
    assert weight.value == "int8"
    written(AXOLOTL_LORA, weight, "true", 3)
    assert one(intent, "adapter").value == "lora" and one(intent, "dora").value is True
    written(AXOLOTL_LORA, one(intent, "dora"), "true", 11)
    tool_default(one(intent, "device"), "device", "cuda if available")


def test_axolotl_qlora_is_lora_on_nf4_and_bf16_loads_the_model_in_bf16(tmp_path: Path) -> None:
    text = AXOLOTL_LORA.replace("load_in_8bit: true", "load_in_8bit: false").replace("load_in_4bit: false", "load_in_4bit: true")
    text = text.replace("adapter: lora", "adapter: qlora").replace("bf16: auto", "bf16: true").replace("peft_use_dora: true\n", "")
    intent = read_config(write(tmp_path, "qlora.yml", text))
    written(text, one(intent, "precision"), "true", 13)
    assert one(intent, "precision").value == "bf16"
    loaded, quantized = intent.all("weight_dtype", "model")
    assert (loaded.value, quantized.value) == ("bf16", "nf4") and intent.weights()["model"] is quantized
    written(text, quantized, "true", 4)
    assert one(intent, "adapter").value == "lora" and one(intent, "adapter").raw == "qlora"
    tool_default(one(intent, "dora"), "peft_use_dora", None)


@pytest.mark.parametrize(("lines", "precision", "weight"), [
    ("fp16: true\n", ("fp16", "fp16", "true"), ("fp16", "fp16", "true")),
    ("bf16: false\nfp16: false\n", ("fp32", "bf16", "false"), None),
    ("float16: true\n", None, ("fp16", "float16", "true")),
    ("bfloat16: true\nbf16: false\n", ("fp32", "bf16", "false"), ("bf16", "bfloat16", "true")),
    ("fp8: true\nbf16: true\n", ("fp8", "fp8", "true"), ("bf16", "bf16", "true")),
])
def test_axolotl_precision_keys(tmp_path: Path, lines: str, precision: Optional[tuple], weight: Optional[tuple]) -> None:
    text = "base_model: org/model-fp16\nsequence_len: 2048\n" + lines
    intent = read_config(write(tmp_path, "a.yml", text))
    got = one(intent, "precision")
    if precision is None:
        tool_default(got, "bf16", "auto")
    else:
        assert (got.value, got.key) == precision[:2]
        written(text, got, precision[2], text[:text.index(precision[1] + ":")].count("\n") + 1)
    if weight is None:
        assert intent.weights() == {}
    else:
        model = intent.weights()["model"]
        assert (model.value, model.key) == weight[:2]
        written(text, model, weight[2], text[:text.index(weight[1] + ":")].count("\n") + 1)
    tool_default(one(intent, "adapter"), "adapter", None)


# ---- launch lines

BRIEF_LINE = ("accelerate launch --mixed_precision fp16 --num_processes 1 train_dreambooth_lora_sdxl.py "
              "--mixed_precision=\"fp16\" --pretrained_model_name_or_path=madebyollin/sdxl-vae-fp16-fix --rank 4")


def test_the_scripts_own_mixed_precision_wins_over_the_launchers(tmp_path: Path) -> None:
    intent = read_config(write(tmp_path, "launch.txt", BRIEF_LINE))
    assert [(s.tool, s.syntax, s.label) for s in intent.sources] == [("launch", "shell", "accelerate launch of train_dreambooth_lora_sdxl.py")]
    launcher, script = intent.all("precision")
    assert (launcher.value, launcher.key, launcher.note) == ("fp16", "--mixed_precision", "the launcher's flag")
    written(BRIEF_LINE, launcher, "fp16", 1)
    assert launcher.start == BRIEF_LINE.index("fp16")
    assert (script.value, script.raw, script.note) == ("fp16", "fp16", "the script's own flag")
    written(BRIEF_LINE, script, '"fp16"', 1)
    assert intent.effective("precision") is script
    assert intent.weights() == {} and len(intent.all("precision")) == 2  # the VAE's name is no setting
    tool_default(one(intent, "adapter"), "script", "train_dreambooth_lora_sdxl.py")
    tool_default(one(intent, "device"), "--cpu", "cuda if available")


SCRIPT = (
    "#!/bin/bash\r\n"
    "export MODEL_NAME=\"stabilityai/stable-diffusion-xl-base-1.0\"\r\n"
    "export VAE=madebyollin/sdxl-vae-fp16-fix\r\n"
    "cd examples/dreambooth && pip install -r requirements.txt\r\n"
    "# accelerate launch --mixed_precision bf16 old.py\r\n"
    "\r\n"
    "CUDA_VISIBLE_DEVICES=0 accelerate launch --cpu train_dreambooth_lora_sdxl.py \\\r\n"
    "  --pretrained_model_name_or_path=$MODEL_NAME  \\\r\n"
    "  --instance_prompt='a photo of sks dog' \\\r\n"
    "  --mixed_precision 'no' \\\r\n"
    "  --use_dora \\\r\n"
    "  --seed -1 # the last line\r\n"
    "python infer.py --mixed_precision fp16"
)


def test_a_script_with_exports_comments_and_continuations(tmp_path: Path) -> None:
    intent = read_config(write(tmp_path, "train.sh", SCRIPT))
    precision = one(intent, "precision")
    assert (precision.value, precision.raw) == ("fp32", "no")
    written(SCRIPT, precision, "'no'", 10)
    device = one(intent, "device")
    assert device.value == "cpu" and device.note == "the launcher's flag"
    written(SCRIPT, device, "--cpu", 7)
    dora = one(intent, "dora")
    assert dora.value is True
    written(SCRIPT, dora, "--use_dora", 11)
    doc = parse_shell.parse("train.sh", SCRIPT)
    flags = doc.root.get("script_flags")
    assert flags is not None and flags.value["--seed"].value == "-1" and doc.source(flags.value["--seed"]) == "-1"
    assert flags.value["--instance_prompt"].value == "a photo of sks dog"
    assert doc.source(flags.value["--instance_prompt"]) == "'a photo of sks dog'"


def test_axolotl_through_accelerate_and_a_notebook_cell() -> None:
    doc = parse_shell.parse("cell.txt", "!accelerate launch -m axolotl.cli.train examples/lora.yml --deepspeed ds.json")
    root = doc.root
    assert root.get("launcher").value == "accelerate"
    assert root.get("script").value == "axolotl.cli.train"
    assert [n.value for n in root.get("arguments").value] == ["examples/lora.yml"]
    assert root.get("launcher_flags").value["-m"].value is True


@pytest.mark.parametrize(("line", "launcher", "precision", "source"), [
    ("torchrun --nproc-per-node=2 run_clm.py --bf16 True --output_dir out", "torchrun", "bf16", "True"),
    ("python3 -u train.py --fp16", "python", "fp16", "--fp16"),
    ("python -m accelerate.commands.launch --mixed-precision=bf16 train.py", "accelerate", "bf16", "bf16"),
    ("autotrain dreambooth --model stabilityai/stable-diffusion-xl-base-1.0 --mixed-precision none", "autotrain", "fp32", "none"),
])
def test_other_launchers(tmp_path: Path, line: str, launcher: str, precision: str, source: str) -> None:
    intent = read_config(write(tmp_path, "run.sh", line + "\n"))
    assert parse_shell.parse("run.sh", line).root.get("launcher").value == launcher
    written(line, one(intent, "precision"), source, 1)
    assert one(intent, "precision").value == precision


def test_a_launch_line_overrides_the_accelerate_config(tmp_path: Path) -> None:
    config = write(tmp_path, "default_config.yaml", ACCELERATE_YAML)
    line = write(tmp_path, "launch.sh", "accelerate launch train_text_to_image.py --mixed_precision=\"no\"\n")
    intent = read_configs([config, line])
    assert [s.tool for s in intent.sources] == ["accelerate", "launch"]
    assert intent.value("precision") == "fp32" and intent.effective("precision").file == line
    assert intent.value("distributed") == "deepspeed"


WORDS = ("accelerate launch --config_file 'my config.yaml' train.py \\\n"
         "  --a=\"x \\\"y\\\" \\$HOME\" --b 'it'\\''s' c\\ d \"\" \\\n"
         "  --e=f\\\n"
         "g # comment 'unbalanced\n")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash to compare with")
def test_words_are_split_as_bash_splits_them() -> None:
    said = subprocess.run(["bash", "-c", "set -- " + WORDS + "printf '%s\\0' \"$@\""],
                          capture_output=True, text=True, check=True).stdout.split("\0")[:-1]
    words = [w for command in parse_shell.split_commands("w.sh", WORDS) for w in command]
    assert [w.value for w in words] == said
    assert said[-1] == "--e=fg"


@pytest.mark.parametrize(("text", "message", "line"), [
    ("accelerate launch train.py --prompt \"a dog\n", "a quote that is never closed", 1),
    ("echo hi\npip install diffusers\n", "no launch command found", None),
    ("accelerate config\n", "no launch command found", None),
])
def test_shell_text_that_is_no_launch_line(text: str, message: str, line: Optional[int]) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        parse_shell.parse("x.sh", text)
    assert caught.value.line == line


def test_every_reader_ignores_the_others_files() -> None:
    docs = {"accelerate": parse_yaml.parse("a", ACCELERATE_YAML), "autotrain": parse_yaml.parse("b", SDXL_DREAMBOOTH),
            "axolotl": parse_yaml.parse("c", AXOLOTL_LORA), "launch": parse_shell.parse("d", BRIEF_LINE)}
    readers = {"accelerate": accelerate, "autotrain": autotrain, "axolotl": axolotl, "launch": launch}
    for name, doc in docs.items():
        scores = {other: module.recognise(doc) for other, module in readers.items() if doc.syntax in module.FORMATS[0].syntaxes}
        assert max(scores, key=lambda k: scores[k]) == name and scores[name] >= 10, (name, scores)
        assert all(score == 0 for other, score in scores.items() if other != name), (name, scores)


def test_an_autotrain_cli_line_behind_nohup_reads_peft_and_its_4bit_base() -> None:
    """A real entrypoint (Snowflake-Labs' autotrain guide, in the config corpus): `nohup autotrain llm ...
    --use-peft --quantization int4 ... &`, with no --mixed-precision (autotrain's default: none)."""
    path = Path(__file__).resolve().parent / "data" / "configs" / "autotrain" / "snowflake-spcs-autotrain-llm-int4.sh"
    intent = read_config(str(path))
    assert {(s.name, s.value, s.key, s.part, s.default) for s in intent.settings if s.name != "device"} == {
        ("adapter", "lora", "--use-peft", None, False), ("weight_dtype", "nf4", "--quantization", "model", False),
        ("precision", "fp32", "--mixed-precision", None, True)}
    text = path.read_text(encoding="utf-8")
    found = next(s for s in intent.settings if s.name == "weight_dtype")
    assert text[found.start:found.end] == "int4"
