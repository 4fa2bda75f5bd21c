"""configs/edit.py: values rendered in the style of the token they replace, keys inserted in
the file's own style, several edits applied at once (identical ones merged, overlapping ones
refused). Every result is loaded back with the tool's own loader (json, yaml.safe_load, tomllib)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
import yaml

from envdoctor.configs import parse_json, parse_shell, parse_toml, parse_yaml
from envdoctor.configs.edit import Edit, EditError, apply_edits, edits_for, expected_tree, render
from envdoctor.configs.reading import REMOVE, Change

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.mark.parametrize(("old", "value", "new"), [
    ("fp16", "no", "'no'"),  # bare no is False under yaml.safe_load
    ("fp16", "bf16", "bf16"),
    ("'fp16'", "bf16", "'bf16'"),
    ('"fp16"', "no", '"no"'),
    ("fp16", None, "null"),
    ("~", None, "~"),
    ("True", False, "False"),
    ("true", False, "false"),
    ("fp16", "null", "'null'"),
    ("x", "it's", "'it''s'"),
])
def test_yaml_values_keep_the_old_style_and_load_back_as_the_value(old: str, value: Any, new: str) -> None:
    assert render("yaml", old, value) == new
    assert yaml.safe_load("k: %s" % new) == {"k": value}


@pytest.mark.parametrize(("syntax", "old", "value", "new"), [
    ("toml", "'fp16'", "no", "'no'"),
    ("toml", '"fp16"', "no", '"no"'),
    ("toml", "true", False, "false"),
    ("json", '"FLOAT_16"', "FLOAT_32", '"FLOAT_32"'),
    ("json", "true", False, "false"),
    ("json", '"fp16"', None, "null"),
    ("shell", "fp16", "no", "no"),
    ("shell", '"fp16"', "no", '"no"'),
    ("shell", "'fp16'", "no", "'no'"),
    ("shell", "True", "False", "False"),
])
def test_other_syntaxes_keep_quotes_and_case(syntax: str, old: str, value: Any, new: str) -> None:
    assert render(syntax, old, value) == new


def test_toml_has_no_null() -> None:
    with pytest.raises(EditError, match="TOML has no null"):
        render("toml", '"fp16"', None)


def _edit(start: int, end: int, new: str, old: str) -> Edit:
    return Edit("f", start, end, new, old, "k", "")


def test_identical_edits_of_one_span_merge_and_overlapping_ones_are_refused() -> None:
    text = "a: fp16\nb: x\n"
    same = [_edit(3, 7, "bf16", "fp16"), _edit(3, 7, "bf16", "fp16")]
    assert apply_edits(text, same) == "a: bf16\nb: x\n"
    with pytest.raises(EditError, match="conflicting edits"):
        apply_edits(text, [_edit(3, 7, "bf16", "fp16"), _edit(3, 7, "'no'", "fp16")])
    with pytest.raises(EditError, match="conflicting edits"):
        apply_edits(text, [_edit(3, 7, "bf16", "fp16"), _edit(5, 5, "x", "")])
    with pytest.raises(EditError, match="no longer"):
        apply_edits(text, [_edit(3, 7, "bf16", "fp32")])
    # insertions at one place go in the order given
    assert apply_edits(text, [_edit(8, 8, "c: 1\n", ""), _edit(8, 8, "d: 2\n", "")]) == "a: fp16\nc: 1\nd: 2\nb: x\n"


@pytest.mark.parametrize("indent", [2, 4])
@pytest.mark.parametrize("eol", ["\n", "\r\n"])
@pytest.mark.parametrize("final", [True, False])
def test_a_json_member_is_added_after_the_last_with_the_files_indent_and_line_ends(indent: int, eol: str, final: bool) -> None:
    data = {"base_model_name": "madebyollin/sdxl-vae-fp16-fix", "unet": {"weight_dtype": "FLOAT_16"}}
    text = json.dumps(data, indent=indent).replace("\n", eol) + (eol if final else "")
    doc = parse_json.parse("p.json", text)
    edits = edits_for(doc, [Change(("train_dtype",), "FLOAT_32", "train_dtype"), Change(("unet", "train"), False, "unet.train")])
    after = apply_edits(text, edits)
    assert json.loads(after) == {**data, "train_dtype": "FLOAT_32", "unet": {"weight_dtype": "FLOAT_16", "train": False}}
    expected = json.dumps({**data, "unet": {"weight_dtype": "FLOAT_16", "train": False}, "train_dtype": "FLOAT_32"}, indent=indent)
    assert after == expected.replace("\n", eol) + (eol if final else "")  # exactly as json.dumps would lay it out
    one_line = '{"a": 1, "b": 2}'
    assert apply_edits(one_line, edits_for(parse_json.parse("o.json", one_line), [Change(("c",), True, "c")])) == '{"a": 1, "b": 2, "c": true}'


def test_yaml_lines_are_added_beside_their_siblings_and_an_empty_value_gets_its_space() -> None:
    text = "base_model: org/model-fp16\r\nparams:\r\n    lr: 1e-4   # a comment\r\n    nested:\r\n      a: 1\r\nfp16:\r\nlast: x"
    doc = parse_yaml.parse("a.yml", text)
    changes = [Change(("params", "mixed_precision"), "no", "params.mixed_precision"), Change(("bf16",), False, "bf16"),
               Change(("fp16",), True, "fp16")]
    after = apply_edits(text, edits_for(doc, changes))
    assert after == ("base_model: org/model-fp16\r\nparams:\r\n    lr: 1e-4   # a comment\r\n    mixed_precision: 'no'\r\n"
                     "    nested:\r\n      a: 1\r\nfp16: true\r\nlast: x\r\nbf16: false")
    assert yaml.safe_load(after) == expected_tree(doc.root.plain(), changes)


def test_toml_keys_go_into_their_table_with_its_indent_and_spacing_and_a_missing_table_is_added() -> None:
    text = "# kohya_ss\r\n[model]\r\n\tsave_precision='fp16'\r\n\r\n[advanced]\r\n\r\n[accelerate_launch]\r\nnum_processes = 1"
    doc = parse_toml.parse("config.toml", text)
    changes = [Change(("model", "full_bf16"), True, "model.full_bf16"), Change(("advanced", "fp8_base"), False, "advanced.fp8_base"),
               Change(("accelerate_launch", "mixed_precision"), "no", "accelerate_launch.mixed_precision"),
               Change(("new_table", "x"), "y", "new_table.x")]
    after = apply_edits(text, edits_for(doc, changes))
    assert after == ("# kohya_ss\r\n[model]\r\n\tsave_precision='fp16'\r\n\tfull_bf16=true\r\n\r\n[advanced]\r\nfp8_base = false\r\n\r\n"
                     "[accelerate_launch]\r\nnum_processes = 1\r\nmixed_precision = \"no\"\r\n\r\n[new_table]\r\nx = \"y\"")
    assert tomllib.loads(after) == expected_tree(doc.root.plain(), changes)
    flat = 'pretrained_model_name_or_path = "x"\n\n[section]\na = 1\n'
    added = apply_edits(flat, edits_for(parse_toml.parse("f.toml", flat), [Change(("mixed_precision",), "fp16", "mixed_precision")]))
    assert added == 'pretrained_model_name_or_path = "x"\nmixed_precision = "fp16"\n\n[section]\na = 1\n'


def test_a_launch_switch_is_removed_with_its_blank_or_added_after_the_launcher() -> None:
    text = "accelerate launch --cpu train.py \\\n  --use_dora \\\n  --rank 4"
    doc = parse_shell.parse("l.sh", text)
    off = apply_edits(text, edits_for(doc, [Change(("launcher_flags", "--cpu"), REMOVE, "--cpu"),
                                            Change(("script_flags", "--use_dora"), REMOVE, "--use_dora")]))
    assert off == "accelerate launch train.py \\\n \\\n  --rank 4"
    plain = "accelerate launch train.py --rank 4\n"
    on = apply_edits(plain, edits_for(parse_shell.parse("p.sh", plain), [Change(("launcher_flags", "--cpu"), True, "--cpu")]))
    assert on == "accelerate launch --cpu train.py --rank 4\n"
    assert parse_shell.parse("p.sh", on).root.get("launcher_flags", "--cpu").value is True
