"""The "config" remedy kind: actions → edits in each tool's spelling, applied with a backup
recorded first, proven by re-reading, undone byte for byte.

Files are the real formats the reader tests use (shared text imported from them), with
CRLF, no final newline, comments, commented-out keys, quoted 'no', repeated keys in two
TOML tables and names that contain "fp16". For each edit: (a) the tool's own loader reads
exactly the intended values changed, (b) every byte outside the edited spans is as it was,
(c) undo restores the file's sha256.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import pytest
import yaml
from test_configs_json_toml import GUI_JSON, OLD_V9, SAVED_V11, SD_SCRIPTS
from test_configs_yaml_shell import ACCELERATE_JSON, ACCELERATE_YAML, AXOLOTL_LORA, BRIEF_LINE, SCRIPT, SDXL_DREAMBOOTH

from envdoctor.configs.detect import read_configs
from envdoctor.pipeline.fix.action import FixError, NotApplicable
from envdoctor.pipeline.fix.kinds import config as config_kind
from envdoctor.pipeline.fix.kinds.config import ConfigAction, condition_holds, prepare, select, undo
from envdoctor.target.intent import ConfigSource, Intent, Setting

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CPU_FP32 = {"set": {"precision": "fp32"}, "when": {"device": "cpu", "precision": "fp16"}}
CPU_FP32_WEIGHTS = {"set": {"precision": "fp32", "weight_dtype": "fp32"}, "when": {"device": "cpu", "precision": "fp16", "weight_dtype": "fp16"}}
DORA_OFF = {"set": {"dora": False}}
BASE_BF16 = {"set": {"weight_dtype": "bf16"}, "when": {"weight_dtype": "fp8"}, "parts": ["unet"]}
TO_CUDA = {"set": {"device": "cuda"}, "when": {"device": "cpu"}}
TO_CPU = {"set": {"device": "cpu", "precision": "fp32"}, "when": {"device": "cuda"}}
BF16 = {"set": {"precision": "bf16", "weight_dtype": "bf16"}, "when": {"device": "cuda:0", "precision": "fp16", "weight_dtype": "fp16"}}

SEED_003 = (  # OneTrainer: DoRA on a FLOAT_8 SDXL unet (Nerogar/OneTrainer issue #442), CRLF, no final newline
    "{\r\n"
    '    "__version": 8,\r\n'
    '    "training_method": "LORA",\r\n'
    '    "model_type": "STABLE_DIFFUSION_XL_10_BASE",\r\n'
    '    "train_dtype": "FLOAT_16",\r\n'
    '    "weight_dtype": "FLOAT_16",\r\n'
    '    "unet": {\r\n'
    '        "train": true,\r\n'
    '        "weight_dtype": "FLOAT_8"\r\n'
    "    },\r\n"
    '    "text_encoder": {\r\n'
    '        "train": false,\r\n'
    '        "weight_dtype": "FLOAT_8"\r\n'
    "    },\r\n"
    '    "vae": {\r\n'
    '        "model_name": "madebyollin/sdxl-vae-fp16-fix",\r\n'
    '        "weight_dtype": "FLOAT_32"\r\n'
    "    },\r\n"
    '    "peft_type": "LORA",\r\n'
    '    "lora_decompose": true\r\n'
    "}"
)
PRESET = (  # a OneTrainer preset: partial, no train_dtype (OneTrainer's default FLOAT_16), 2-space indent
    "{\n"
    '  "base_model_name": "stabilityai/stable-diffusion-xl-base-1.0",\n'
    '  "model_type": "STABLE_DIFFUSION_XL_10_BASE",\n'
    '  "training_method": "LORA",\n'
    '  "unet": {\n'
    '    "weight_dtype": "FLOAT_16"\n'
    "  }\n"
    "}\n"
)


class Step:
    """A stand-in for journal.JournalStep: a folder, a record, save() (which must come
    before the file changes: it notes the file's bytes then)."""

    def __init__(self, root: Path, watched: Sequence[str]) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="step-", dir=root))
        self.record: Dict[str, Any] = {}
        self.watched = list(watched)
        self.saves: List[Tuple[Dict[str, Any], List[str]]] = []

    def save(self) -> None:
        self.saves.append((json.loads(json.dumps(self.record)), [sha(Path(f).read_bytes()) for f in self.watched]))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def planned(files: Sequence[str], actions: Sequence[Mapping[str, Any]], bf16_gpu: bool = False) -> List[ConfigAction]:
    out = prepare(actions, read_configs(list(files)), bf16_gpu=bf16_gpu)
    for entry in out:
        assert isinstance(entry, ConfigAction), entry
    return out  # type: ignore[return-value]


def only_edited_spans(before: str, after: str, action: ConfigAction) -> None:
    """(b) every byte outside the edited spans is unchanged."""
    spans = [(e.start, e.end) for f in action.files for e in f.edits]
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag != "equal":
            assert any(start <= i1 and i2 <= end for start, end in spans), (tag, before[i1:i2], after)
    assert before.count("\r\n") <= after.count("\r\n") and before.endswith("\n") == after.endswith("\n")


def fix(tmp_path: Path, name: str, text: str, action: Mapping[str, Any], loader: Callable[[str], Any],
        changed: Callable[[Any], None], bf16_gpu: bool = False) -> str:
    """Plan, apply, confirm and undo one action on one file; `changed` edits the loaded
    original into what the loaded result must be. Returns the edited text."""
    path = write(tmp_path, name, text)
    original = Path(path).read_bytes()
    [step_action] = planned([path], [action], bf16_gpu)
    step = Step(tmp_path, [path])
    step_action.apply(step)  # type: ignore[arg-type]
    step_action.confirm()
    after = Path(path).read_bytes().decode("utf-8")
    expected = copy.deepcopy(loader(text))
    changed(expected)
    assert loader(after) == expected  # (a)
    only_edited_spans(text, after, step_action)  # (b)
    record, hashes_then = step.saves[0]
    assert hashes_then == [sha(original)]  # the record was saved before the file changed
    assert record["files"][0]["before"] == sha(original) and Path(record["files"][0]["backup"]).read_bytes() == original
    undo(step)  # type: ignore[arg-type]
    assert sha(Path(path).read_bytes()) == sha(original)  # (c)
    undo(step)  # type: ignore[arg-type]  # already as before: nothing to do
    return after


def at(path: Sequence[Any], value: Any) -> Callable[[Any], None]:
    def change(tree: Any) -> None:
        for key in path[:-1]:
            tree = tree[key]
        tree[path[-1]] = value
    return change


def each(*changes: Callable[[Any], None]) -> Callable[[Any], None]:
    def change(tree: Any) -> None:
        for one in changes:
            one(tree)
    return change


# ---------------------------------------------------------------- the seed cases

@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_seed_004_autotrain_sdxl_dreambooth_fp16_on_the_cpu_becomes_null(tmp_path: Path, line_end: str) -> None:
    text = SDXL_DREAMBOOTH.replace("\n", line_end)
    after = fix(tmp_path, "sdxl_colab.yml", text, CPU_FP32_WEIGHTS, yaml.safe_load, at(("params", "mixed_precision"), None))
    assert "  mixed_precision: null" + line_end in after  # never bare no (False), not none (accelerate refuses it)


def test_accelerate_fp16_becomes_quoted_no_and_the_commented_out_key_stays(tmp_path: Path) -> None:
    after = fix(tmp_path, "default_config.yaml", ACCELERATE_YAML, CPU_FP32, yaml.safe_load, at(("mixed_precision",), "no"))
    assert "# mixed_precision: bf16\r\nmixed_precision: 'no'\r\n" in after and "downcast_bf16: 'no'" in after
    after = fix(tmp_path, "json_config.yaml", ACCELERATE_JSON, CPU_FP32, json.loads, at(("mixed_precision",), "no"))
    assert '"mixed_precision": "no",' in after


def test_accelerate_bf16_mirrors_double_quotes_and_use_cpu_goes_false(tmp_path: Path) -> None:
    text = 'compute_environment: LOCAL_MACHINE\ndistributed_type: "NO"\nmixed_precision: "fp16"\nuse_cpu: true\n'
    fix(tmp_path, "a.yaml", text, {"set": {"precision": "bf16"}, "when": {"precision": "fp16"}}, yaml.safe_load, at(("mixed_precision",), "bf16"))
    after = fix(tmp_path, "b.yaml", text, TO_CUDA, yaml.safe_load, at(("use_cpu",), False))
    assert after.endswith("use_cpu: false\n")


def test_seed_003_onetrainer_dora_off_and_the_trained_parts_base_in_bf16(tmp_path: Path) -> None:
    after = fix(tmp_path, "sdxl-dora.json", SEED_003, DORA_OFF, json.loads, at(("lora_decompose",), False))
    assert after.endswith('"lora_decompose": false\r\n}')
    # base-bf16 names the trained fp8 part: the frozen text encoder stays FLOAT_8, the top-level FLOAT_16 stays
    after = fix(tmp_path, "sdxl-bf16.json", SEED_003, BASE_BF16, json.loads, at(("unet", "weight_dtype"), "BFLOAT_16"))
    assert after.count('"FLOAT_8"') == 1
    # without "parts" every fp8 part is changed
    everything = dict(BASE_BF16)
    del everything["parts"]
    fix(tmp_path, "sdxl-all.json", SEED_003, everything, json.loads,
        each(at(("unet", "weight_dtype"), "BFLOAT_16"), at(("text_encoder", "weight_dtype"), "BFLOAT_16")))


def test_the_dora_fp8_rule_names_the_trained_part(tmp_path: Path) -> None:
    from envdoctor.checks.dora_fp8 import rules

    intent = read_configs([write(tmp_path, "sdxl-dora.json", SEED_003)])
    remedy = rules._base_bf16(rules.asked(intent).float8(), "DoRA")  # type: ignore[union-attr]
    assert remedy.action == {"set": {"weight_dtype": "bf16"}, "when": {"weight_dtype": "fp8"}, "parts": ["unet"]}


def test_a_onetrainer_preset_without_train_dtype_gets_the_key_inserted(tmp_path: Path) -> None:
    after = fix(tmp_path, "#sdxl LoRA.json", PRESET, CPU_FP32, json.loads, at(("train_dtype",), "FLOAT_32"))
    assert after == PRESET.replace('  }\n}\n', '  },\n  "train_dtype": "FLOAT_32"\n}\n')
    intent = read_configs([write(tmp_path, "check.json", after)])
    assert intent.value("precision") == "fp32" and not intent.effective("precision").default  # type: ignore[union-attr]


def test_onetrainer_device_to_cpu_and_fp32_in_a_4_space_crlf_file_without_final_newline(tmp_path: Path) -> None:
    text = SAVED_V11.replace("\n", "\r\n").replace('"train_dtype": "BFLOAT_16"', '"train_dtype": "FLOAT_16"')
    after = fix(tmp_path, "config.json", text, TO_CPU, json.loads, each(at(("train_device",), "cpu"), at(("train_dtype",), "FLOAT_32")))
    assert '"temp_device": "cpu"' in after and '"model_name": "madebyollin/sdxl-vae-fp16-fix"' in after
    old = OLD_V9  # the top-level weight_dtype the NONE parts inherit is one edit for both
    fix(tmp_path, "old.json", old, CPU_FP32_WEIGHTS, json.loads, each(at(("train_dtype",), "FLOAT_32"), at(("weight_dtype",), "FLOAT_32")))


def test_kohya_sd_scripts_cpu_rule_turns_the_coupled_fp8_flag_off(tmp_path: Path) -> None:
    text = SD_SCRIPTS.replace("\n", "\r\n")
    action = {"set": {"precision": "fp32"}, "when": {"device": "cpu", "precision": "bf16"}}
    after = fix(tmp_path, "lora.toml", text, action, tomllib.loads, each(at(("mixed_precision",), "no"), at(("fp8_base",), False)))
    assert 'save_precision = "fp16"' in after and "sdxl-base-fp16.safetensors" in after
    fix(tmp_path, "dora.toml", text, DORA_OFF, tomllib.loads, at(("network_args", 1), "dora_wd=False"))


def test_kohya_tables_read_last_win_and_full_fp16_becomes_full_bf16_beside_it(tmp_path: Path) -> None:
    text = (
        "[model_arguments]\n"
        "\tpretrained_model_name_or_path = 'runwayml/stable-diffusion-v1-5'\n"
        "\tmixed_precision = 'fp16'\n"
        "\n"
        "[training_arguments]\n"
        "\tmixed_precision = 'fp16'   # the value sd-scripts uses: tables are merged in order\n"
        "\tfull_fp16 = true\n"
        "\n"
        "[network_arguments]\n"
        "\tnetwork_module = 'networks.lora'\n"
    )
    after = fix(tmp_path, "sectioned.toml", text, BF16, tomllib.loads,
                each(at(("training_arguments", "mixed_precision"), "bf16"), at(("training_arguments", "full_fp16"), False),
                     at(("training_arguments", "full_bf16"), True)))
    assert "\tmixed_precision = 'bf16'   # the value" in after and "\tfull_fp16 = false\n\tfull_bf16 = true\n" in after
    assert "[model_arguments]\n\tpretrained_model_name_or_path = 'runwayml/stable-diffusion-v1-5'\n\tmixed_precision = 'fp16'\n" in after


def test_kohya_ss_gui_json_and_config_toml(tmp_path: Path) -> None:
    text = json.dumps(GUI_JSON, indent=2)
    fix(tmp_path, "gui.json", text, DORA_OFF, json.loads, at(("dora_wd",), False))
    fix(tmp_path, "gui-cpu.json", text, CPU_FP32, json.loads, each(at(("mixed_precision",), "no"), at(("full_bf16",), False)))
    toml_text = "# GUI defaults\n[accelerate_launch]\nnum_processes = 1\n\n[advanced]\nfp8_base = true\n"
    after = fix(tmp_path, "config.toml", toml_text, CPU_FP32, tomllib.loads,
                each(at(("accelerate_launch", "mixed_precision"), "no"), at(("advanced", "fp8_base"), False)))
    assert after == '# GUI defaults\n[accelerate_launch]\nnum_processes = 1\nmixed_precision = "no"\n\n[advanced]\nfp8_base = false\n'


def test_axolotl_auto_on_the_cpu_is_fp16_so_bf16_false_is_written(tmp_path: Path) -> None:
    after = fix(tmp_path, "lora.yml", AXOLOTL_LORA, CPU_FP32, yaml.safe_load, at(("bf16",), False))
    assert "# fp16: true\nbf16: false\nfp16:\n" in after
    fix(tmp_path, "dora.yml", AXOLOTL_LORA, DORA_OFF, yaml.safe_load, at(("peft_use_dora",), False))
    # on a GPU with bf16, auto is bf16; fp16 instead fills the empty `fp16:` (null) after its colon
    to_fp16 = {"set": {"precision": "fp16"}, "when": {"precision": "bf16"}}
    after = fix(tmp_path, "fp16.yml", AXOLOTL_LORA, to_fp16, yaml.safe_load, each(at(("bf16",), False), at(("fp16",), True)), bf16_gpu=True)
    assert "bf16: false\nfp16: true\ntf32: false\n" in after
    absent = AXOLOTL_LORA.replace("bf16: auto\n", "").replace("fp16:\n", "fp16: true\n")
    fix(tmp_path, "absent.yml", absent, CPU_FP32, yaml.safe_load, each(at(("bf16",), False), at(("fp16",), False)))


def test_launch_lines_both_mixed_precision_flags_and_the_cpu_switch(tmp_path: Path) -> None:
    def reads(text: str) -> Dict[str, Any]:  # the launch line as the launcher and script receive it
        intent = read_configs([write(tmp_path, "again.sh", text)])
        return {"precision": [s.raw for s in intent.all("precision")], "device": intent.value("device")}

    after = fix(tmp_path, "launch.txt", BRIEF_LINE, CPU_FP32, reads, at(("precision",), ["no", "no"]))
    assert after == BRIEF_LINE.replace("--mixed_precision fp16", "--mixed_precision no").replace('="fp16"', '="no"')
    after = fix(tmp_path, "train.sh", SCRIPT, TO_CUDA, reads, at(("device",), "auto"))
    assert "CUDA_VISIBLE_DEVICES=0 accelerate launch train_dreambooth_lora_sdxl.py \\\r\n" in after


# ---------------------------------------------------------------- steps, refusals, undo

def test_two_steps_on_one_file_apply_in_order_and_undo_in_reverse_byte_for_byte(tmp_path: Path) -> None:
    path = write(tmp_path, "sdxl-dora.json", SEED_003)
    original = Path(path).read_bytes()
    first, second = planned([path], [DORA_OFF, BASE_BF16])
    assert second.files[0].before == first.files[0].after
    steps = []
    for index, step_action in enumerate((first, second)):
        root = tmp_path / str(index)
        root.mkdir()
        step = Step(root, [path])
        step_action.apply(step)  # type: ignore[arg-type]
        step_action.confirm()
        steps.append(step)
    data = json.loads(Path(path).read_text())
    assert (data["lora_decompose"], data["unet"]["weight_dtype"], data["text_encoder"]["weight_dtype"]) == (False, "BFLOAT_16", "FLOAT_8")
    undo(steps[1])  # type: ignore[arg-type]
    assert Path(path).read_bytes().decode() == first.files[0].after
    undo(steps[0])  # type: ignore[arg-type]
    assert Path(path).read_bytes() == original


def test_a_read_only_file_and_one_changed_since_the_plan_are_refused_untouched(tmp_path: Path) -> None:
    path = write(tmp_path, "default_config.yaml", ACCELERATE_YAML)
    [step_action] = planned([path], [CPU_FP32])
    os.chmod(path, stat.S_IRUSR)
    try:
        with pytest.raises(FixError, match="not writable"):
            step_action.apply(Step(tmp_path, [path]))  # type: ignore[arg-type]
        assert Path(path).read_bytes() == ACCELERATE_YAML.encode()
    finally:
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)
    Path(path).write_bytes(ACCELERATE_YAML.encode() + b"\r\n# edited by hand")
    step = Step(tmp_path, [path])
    with pytest.raises(FixError, match="changed since the plan"):
        step_action.apply(step)  # type: ignore[arg-type]
    assert Path(path).read_bytes().endswith(b"# edited by hand") and step.record == {}


def test_undo_refuses_a_file_the_user_changed_after_the_fix_and_names_the_backup(tmp_path: Path) -> None:
    path = write(tmp_path, "c.yml", SDXL_DREAMBOOTH)
    [step_action] = planned([path], [CPU_FP32])
    step = Step(tmp_path, [path])
    step_action.apply(step)  # type: ignore[arg-type]
    Path(path).write_text("task: dreambooth\n")
    with pytest.raises(FixError, match="changed after envdoctor fixed it.*%s" % step.record["files"][0]["backup"].replace("\\", "\\\\")):
        undo(step)  # type: ignore[arg-type]
    assert Path(path).read_text() == "task: dreambooth\n"


def test_the_mode_is_kept_and_the_plan_shows_a_diff_with_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "train.yml", SDXL_DREAMBOOTH)
    os.chmod("train.yml", 0o640)
    [step_action] = planned(["train.yml"], [CPU_FP32])
    assert step_action.lines()[:2] == ["--- train.yml", "+++ train.yml"]
    assert "-  mixed_precision: fp16" in step_action.lines() and "+  mixed_precision: null" in step_action.lines()
    plan = step_action.to_dict()
    assert plan["kind"] == "config" and plan["files"][0]["edits"][0]["line"] == 16
    json.dumps(plan)
    step_action.apply(Step(tmp_path, ["train.yml"]))  # type: ignore[arg-type]
    assert stat.S_IMODE(os.stat("train.yml").st_mode) == 0o640


def test_confirm_refuses_a_file_not_as_the_step_wrote_it(tmp_path: Path) -> None:
    path = write(tmp_path, "c.yml", SDXL_DREAMBOOTH)
    [step_action] = planned([path], [CPU_FP32])
    step_action.apply(Step(tmp_path, [path]))  # type: ignore[arg-type]
    Path(path).write_text(SDXL_DREAMBOOTH)
    with pytest.raises(FixError, match="not as this step wrote it"):
        step_action.confirm()


@pytest.mark.parametrize(("files", "action", "why"), [
    ([("c.yml", SDXL_DREAMBOOTH)], TO_CPU, "no config file given asks for device cuda"),
    ([("c.yml", SDXL_DREAMBOOTH)], {"set": {"dora": True}}, "autotrain has no DoRA key"),
    ([("c.json", SEED_003)], {"set": {"weight_dtype": "consistent"}}, "cannot set weight_dtype to 'consistent'"),
    ([("c.json", SEED_003)], {"set": {}, "reduce": ["batch_size"]}, "does not lower batch_size"),
    ([("c.json", SAVED_V11)], CPU_FP32, "the config's device is .*train_device: \"cuda\"`, not cpu"),
    ([("c.json", SEED_003)], {"set": {"dora": False}, "when": {"precision": "bf16"}}, "the config's precision is"),
    ([("c.json", OLD_V9)], {"set": {"weight_dtype": "fp32"}, "when": {"weight_dtype": "fp16"}, "parts": ["unet"]},
     "also sets text_encoder's weight_dtype"),
    ([("c.yml", AXOLOTL_LORA)], {"set": {"precision": "fp32"}, "when": {"precision": "fp32"}}, "no config file given asks"),
])
def test_actions_that_do_not_apply_say_why(tmp_path: Path, files: List[Tuple[str, str]], action: Dict[str, Any], why: str) -> None:
    [result] = prepare([action], read_configs([write(tmp_path, n, t) for n, t in files]))
    assert isinstance(result, NotApplicable) and not isinstance(result, ConfigAction)
    assert __import__("re").search(why, str(result)), str(result)
    assert prepare([action], None)[0].args == (config_kind.NO_CONFIG,)


# ---------------------------------------------------------------- resolution, pure

def _setting(name: str, value: Any, file: str = "a", start: Optional[int] = 0, default: bool = False, part: Optional[str] = None,
             tool: str = "onetrainer") -> Setting:
    return Setting(name=name, value=value, tool=tool, file=file, key=name, start=None if default else start,
                   end=None if default else (start or 0) + 1, default=default, part=part)


def test_select_edits_written_values_in_every_file_and_a_default_only_where_it_is_in_effect() -> None:
    a = _setting("precision", "fp16", file="a.yaml", tool="accelerate")
    b = _setting("precision", "fp16", file="b.json")
    intent = Intent(sources=(ConfigSource("a.yaml", "accelerate", "yaml"), ConfigSource("b.json", "onetrainer", "json")), settings=(a, b))
    assert [s for s, _ in select(intent, {"precision": "fp32"}, {"precision": "fp16"}, None, False)] == [a, b]
    shadowed = _setting("precision", "fp16", default=True, tool="accelerate")
    intent = Intent(settings=(shadowed, _setting("precision", "bf16", file="b.json")))
    assert select(intent, {"precision": "fp32"}, {"precision": "fp16"}, None, False) == []  # the default is not in effect
    auto = _setting("precision", "auto", default=True, tool="axolotl")
    assert select(Intent(settings=(auto,)), {"precision": "fp32"}, {"precision": "fp16"}, None, False) == [(auto, "fp32")]
    assert select(Intent(settings=(auto,)), {"precision": "fp32"}, {"precision": "fp16"}, None, True) == []  # bf16 there
    weights = (_setting("weight_dtype", "fp8", part="unet"), _setting("weight_dtype", "fp8", start=5, part="text_encoder"))
    assert [s.part for s, _ in select(Intent(settings=weights), {"weight_dtype": "bf16"}, {"weight_dtype": "fp8"}, ["unet"], False)] == ["unet"]


def test_conditions_read_the_effective_value_and_a_cuda_index_matches_cuda() -> None:
    intent = Intent(settings=(_setting("device", "cuda"), _setting("precision", "auto", tool="axolotl")))
    assert condition_holds(intent, "device", "cuda:0", False)
    assert not condition_holds(intent, "device", "cpu", False)
    assert condition_holds(intent, "precision", "fp16", False) and condition_holds(intent, "precision", "bf16", True)
    assert condition_holds(Intent(settings=(_setting("device", "auto", default=True),)), "device", "cpu", False)


def test_every_file_that_asks_is_edited_in_one_step_and_undone_together(tmp_path: Path) -> None:
    config = write(tmp_path, "default_config.yaml", ACCELERATE_YAML)
    line = write(tmp_path, "launch.sh", "accelerate launch train_text_to_image.py --mixed_precision=\"fp16\"\n")
    originals = [Path(config).read_bytes(), Path(line).read_bytes()]
    [step_action] = planned([config, line], [CPU_FP32])
    assert [f.file for f in step_action.files] == [config, line]
    step = Step(tmp_path, [config, line])
    step_action.apply(step)  # type: ignore[arg-type]
    step_action.confirm()
    assert yaml.safe_load(Path(config).read_text())["mixed_precision"] == "no"
    assert Path(line).read_text() == "accelerate launch train_text_to_image.py --mixed_precision=\"no\"\n"
    assert len(step.record["files"]) == 2 and step.saves[0][1] == [sha(b) for b in originals]
    undo(step)  # type: ignore[arg-type]
    assert [Path(config).read_bytes(), Path(line).read_bytes()] == originals


def test_a_symlinked_config_is_edited_at_its_target_and_stays_a_link(tmp_path: Path) -> None:
    real = Path(write(tmp_path, "configs-train.yml", SDXL_DREAMBOOTH))
    link = tmp_path / "train.yml"
    link.symlink_to(real.name)
    [step_action] = planned([str(link)], [CPU_FP32])
    step = Step(tmp_path, [str(link)])
    step_action.apply(step)  # type: ignore[arg-type]
    step_action.confirm()
    assert link.is_symlink() and os.readlink(link) == real.name
    assert "mixed_precision: null" in real.read_text(encoding="utf-8")
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".envdoctor-tmp")]  # no temporary file left
    undo(step)  # type: ignore[arg-type]
    assert link.is_symlink() and real.read_text(encoding="utf-8") == SDXL_DREAMBOOTH


def test_hard_links_mode_and_owner_are_kept(tmp_path: Path) -> None:
    path = Path(write(tmp_path, "train.yml", SDXL_DREAMBOOTH))
    other = tmp_path / "train-copy.yml"
    os.link(path, other)
    os.chmod(path, 0o664)
    owner = (1234, 1234) if os.getuid() == 0 else (os.getuid(), os.getgid())  # root hands it to another user first
    os.chown(path, *owner)
    [step_action] = planned([str(path)], [CPU_FP32])
    step = Step(tmp_path, [str(path)])
    step_action.apply(step)  # type: ignore[arg-type]
    step_action.confirm()
    info = os.stat(path)
    assert os.path.samefile(path, other) and info.st_nlink == 2  # still one file under both names
    assert "mixed_precision: null" in other.read_text(encoding="utf-8")
    assert stat.S_IMODE(info.st_mode) == 0o664 and (info.st_uid, info.st_gid) == owner
    undo(step)  # type: ignore[arg-type]
    assert other.read_text(encoding="utf-8") == SDXL_DREAMBOOTH and os.path.samefile(path, other)


def test_a_rewritten_file_keeps_its_owner_when_root_fixes_it(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("only root can give a file to another user to begin with")
    path = Path(write(tmp_path, "train.yml", SDXL_DREAMBOOTH))
    os.chown(path, 4321, 4321)
    [step_action] = planned([str(path)], [CPU_FP32])
    step_action.apply(Step(tmp_path, [str(path)]))  # type: ignore[arg-type]
    assert (os.stat(path).st_uid, os.stat(path).st_gid) == (4321, 4321)  # replaced by a new file, the same owner


# LoRA Easy Training Scripts' own test.toml (github.com/derrian-distro/LoRA_Easy_Training_Scripts
# @ b77c7e59f8c6, in the config corpus): sd-scripts options in [<group>_args.args] tables
EASY = (Path(__file__).resolve().parent / "data" / "configs" / "kohya" / "derrian-nested-args-fp16.toml").read_text(encoding="utf-8")


def test_lora_easy_training_scripts_tables_are_read_and_edited_where_they_are(tmp_path: Path) -> None:
    intent = read_configs([write(tmp_path, "easy.toml", EASY)])
    assert [(s.tool, s.name, s.value, s.key) for s in intent.settings if not s.default] == [
        ("kohya_easy", "precision", "fp16", "general_args.args.mixed_precision")]
    assert intent.value("adapter") == "lora"  # the backend's networks.lora when no module or algo is written
    after = fix(tmp_path, "cpu.toml", EASY, CPU_FP32, tomllib.loads, at(("general_args", "args", "mixed_precision"), "no"))
    assert '[saving_args.args]\noutput_dir = ""\nsave_precision = "fp16"\n' in after
    # the UI saves a LyCORIS network's options as a table; the backend passes "dora_wd=True" on to LyCORIS
    dora = EASY + '\n[network_args.args.network_args]\nalgo = "locon"\ndora_wd = true\n'
    intent = read_configs([write(tmp_path, "dora.toml", dora)])
    assert (intent.value("adapter"), intent.value("dora")) == ("lora", True)
    fix(tmp_path, "dora.toml", dora, DORA_OFF, tomllib.loads, at(("network_args", "args", "network_args", "dora_wd"), False))


def test_autotrain_quantization_int4_becomes_null_where_bitsandbytes_cannot_load(tmp_path: Path) -> None:
    """A user's autotrain LLM config (NewPlus/TrainPractice, in the config corpus): `peft: true`, `quantization:
    int4`. Without bitsandbytes the base loads unquantized in the mixed precision's dtype: `quantization: null`."""
    text = (Path(__file__).resolve().parent / "data" / "configs" / "autotrain" / "trainpractice-sft-ko-int4-bf16.yaml").read_text(
        encoding="utf-8")
    action = {"set": {"weight_dtype": "bf16"}, "when": {"weight_dtype": "nf4"}}
    after = fix(tmp_path, "sft.yaml", text, action, yaml.safe_load, at(("params", "quantization"), None))
    assert "  quantization: null\n" in after and "  peft: true\n" in after
    assert read_configs([write(tmp_path, "after.yaml", after)]).asks("weight_dtype", "nf4") == []
