"""The JSON and TOML readers: OneTrainer, kohya sd-scripts and the kohya_ss GUI.

Every file is written here from the fields CONFIG-FORMATS.md documents (with the
quirks of real files: CRLF, no final newline, 2- or 4-space JSON, tabs and comments in
TOML, a key in two TOML tables), and every value of the intent is checked with its
line and its exact span: `text[start:end] == source`, which is what `fix` replaces.
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any, List, Optional

import pytest

from envdoctor.configs import kohya, onetrainer, parse_json, parse_toml
from envdoctor.configs.detect import read_config, syntax_order
from envdoctor.configs.document import ConfigError, Document, Node
from envdoctor.target.intent import Intent, Setting

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))  # line ends exactly as given
    return str(path)


def text_of(setting: Setting) -> str:
    return Path(setting.file).read_bytes().decode("utf-8")


def one(intent: Intent, name: str, part: Optional[str] = None) -> Setting:
    found = intent.all(name, part)
    assert len(found) == 1, found
    return found[0]


def at(setting: Setting, line: int, source: str) -> Setting:
    """The setting is written on `line` and its span is exactly `source`."""
    text = text_of(setting)
    assert setting.start is not None and setting.end is not None and not setting.default
    assert text[setting.start:setting.end] == setting.source == source
    assert setting.line == line
    assert text.count("\n", 0, setting.start) + 1 == line
    assert setting.column == setting.start - (text.rfind("\n", 0, setting.start) + 1) + 1
    return setting


def is_default(setting: Setting, value: Any, raw: Any, key: str) -> None:
    assert setting.default and setting.start is None and setting.line is None
    assert (setting.value, setting.raw, setting.key) == (value, raw, key)


def same(a: Any, b: Any) -> bool:
    """Equal values, dict order included, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def scalars(node: Node) -> List[Node]:
    if node.kind == "mapping":
        return [s for child in node.value.values() for s in scalars(child)]
    if node.kind == "sequence":
        return [s for child in node.value for s in scalars(child)]
    return [node]


# -- the JSON parser


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 4 and roll < 0.2:
        return {rng.choice(["a", "b", "é", 'q"uote', "new\nline", "a"]): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 4 and roll < 0.35:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice([0, -1, 1.5, -2e-3, 1e300, 12345678901234567890, "x", "FLOAT_16", "é\u2028😀", "back\\slash",
                       "\t", True, False, None, float("nan"), float("inf"), float("-inf")])


def test_the_json_parser_accepts_what_json_loads_accepts_with_the_same_values_and_spans() -> None:
    rng = random.Random(13)
    alphabet = list('{}[],:"\\ \t\r\n0123456789-+.eEtruefalsnNIfyu\x00\ufeff')
    accepted = rejected = 0
    for _ in range(4000):
        text = json.dumps(_random_value(rng), indent=rng.choice([None, 2, 4, "\t"]), ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.1:
            text = text.replace("\n", "\r\n")
        if rng.random() < 0.5:  # break it a little: JSON or not, both must agree
            chars = list(text)
            for _ in range(rng.randint(1, 3)):
                pos = rng.randint(0, len(chars))
                roll = rng.random()
                if roll < 0.4 and chars:
                    del chars[min(pos, len(chars) - 1)]
                elif roll < 0.8:
                    chars.insert(pos, rng.choice(alphabet))
                else:
                    chars = chars[:pos]
            text = "".join(chars)
        try:
            want = json.loads(text[1:] if text.startswith("\ufeff") else text)
        except ValueError:
            want = ConfigError
        try:
            doc = parse_json.parse("f.json", text)
        except ConfigError as exc:
            assert want is ConfigError, (text, exc)
            assert exc.line is not None or exc.message == "is empty"
            rejected += 1
            continue
        assert want is not ConfigError, text
        assert same(doc.root.plain(), want), text
        for node in scalars(doc.root):  # each value's span is that value's JSON text
            assert same(json.loads(text[node.start:node.end]), node.value)
        accepted += 1
    assert accepted > 1000 and rejected > 1000


def test_json_spans_lines_and_keys_with_crlf_a_bom_and_no_final_newline() -> None:
    text = '\ufeff{\r\n  "a": 1,\r\n  "b": {"c": [true, "x,y"]},\r\n  "a": "last"\r\n}'
    doc = parse_json.parse("f.json", text)
    assert doc.root.plain() == {"a": "last", "b": {"c": [True, "x,y"]}}
    assert list(doc.root.value) == ["a", "b"]  # a repeated key keeps its first place, as json.loads
    last = doc.root.get("a")
    assert last is not None and (last.line, last.column, doc.source(last)) == (4, 8, '"last"')
    assert last.key_start == text.index('"a": "last"') and last.key_line == 4
    item = doc.root.get("b", "c", 1)
    assert item is not None and (item.line, item.column, doc.source(item)) == (3, 21, '"x,y"')
    assert doc.source(doc.root) == text[1:]


@pytest.mark.parametrize(("text", "message", "line", "column"), [
    ('{\n    "train_dtype": "FLOAT_16",\n    "unet": {\n        "weight_dtype": "FLO', "unexpected end of file: the JSON is truncated", 4, 29),
    ('{\n  "a": 1,\n  "b": 2\n', "unexpected end of file: the JSON is truncated", 4, 1),
    ('{\n  "a": 1\n  "b": 2\n}', "expected ',' or '}'", 3, 3),
    ('[1, 2 3]', "expected ',' or ']'", 1, 7),
    ('{"a": 1,\n}', "a comma before '}' (JSON allows no trailing comma)", 2, 1),
    ("{'a': 1}", "expected a key in double quotes", 1, 2),
    ('{"a" 1}', "expected ':' after the key", 1, 6),
    ('{"a": tru}', "expected a value (a string, number, object, array, true, false or null)", 1, 7),
    ('{"a": "two\nlines"}', "a string cannot contain a raw line break or control character", 1, 11),
    ('{"a": "\\q"}', "invalid escape in a string", 1, 8),
    ('{"a": 1} {"b": 2}', "unexpected text after the end of the JSON value", 1, 10),
])
def test_json_syntax_errors_are_one_short_line_with_line_and_column(text: str, message: str, line: int, column: int) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_json.parse("train.json", text)
    assert (caught.value.message, caught.value.line, caught.value.column) == (message, line, column)
    assert str(caught.value) == "train.json:%d:%d: %s" % (line, column, message)


def test_a_200_kb_json_file_parses_whole_with_every_value_where_it_stands() -> None:
    """Its speed is not asserted here (a loaded CI machine is not a stopwatch): the 9 MB config of
    tests/test_bad_input.py bounds memory and output, and benchmarks/ measures start-up."""
    parts = {"part_%d" % i: {"weight_dtype": "FLOAT_16", "train": i % 2 == 0, "learning_rate": 1e-4, "layers": [1, 2, "x"]}
             for i in range(1400)}
    text = json.dumps(parts, indent=4)
    assert len(text) > 200_000
    doc = parse_json.parse("big.json", text)
    assert doc.root.plain() == parts


# -- the TOML parser

SECTIONED = (
    "# sd-scripts config, written by hand\n"
    "[model_arguments]\n"
    'pretrained_model_name_or_path = "C:\\\\models\\\\sdxl-fp16.safetensors" # fp16 is in the name\n'
    "'quoted.key' = 'a # inside a string'\n"
    "\tv2 = false\n"
    "mixed_precision = \"fp16\"\n"
    "\n"
    "[training_arguments]\n"
    'mixed_precision = "bf16"   # the one sd-scripts uses\n'
    "network_args = [ \"algo=lokr\",\n"
    '\t"dora_wd=True", # a comment in an array\n'
    "  'conv_dim=4' ,\n"
    "]\n"
    'note = """two\n"lines" ""\\""""\n'
    "when = 1979-05-27 07:32:00Z\n"
    "inline = { x = 1, y.z = [1, 2] }\n"
    "[[runs]]\n"
    "n = 1\n"
    "[[runs]]\n"
    "n = 2"
)


@pytest.mark.parametrize("line_end", ["\n", "\r\n"])
def test_toml_spans_match_tomllib_values_with_comments_tabs_strings_and_arrays(line_end: str) -> None:
    text = SECTIONED.replace("\n", line_end)
    doc = parse_toml.parse("c.toml", text)
    assert same(doc.root.plain(), tomllib.loads(text))
    for node in scalars(doc.root):  # each span is that value's TOML text
        assert same(tomllib.loads("v = " + doc.source(node))["v"], node.value)
    element = doc.root.get("training_arguments", "network_args", 1)
    assert element is not None and (doc.source(element), element.line, element.column) == ('"dora_wd=True"', 11, 2)
    v2 = doc.root.get("model_arguments", "v2")
    assert v2 is not None and (doc.source(v2), v2.line, v2.column, v2.key_line) == ("false", 5, 7, 5)
    quoted = doc.root.get("model_arguments", "quoted.key")
    assert quoted is not None and doc.source(quoted) == "'a # inside a string'"
    note = doc.root.get("training_arguments", "note")
    assert note is not None and doc.source(note) == '"""two%s"lines" ""\\""""' % line_end
    runs = doc.root.get("runs")
    assert runs is not None and [doc.source(run.value["n"]) for run in runs.value] == ["1", "2"]
    # sd-scripts reads every table into one namespace: the flat view, in reading order
    assert [(path, node.value) for path, node in doc.flat["mixed_precision"]] == [
        (("model_arguments",), "fp16"), (("training_arguments",), "bf16")]
    assert [path for path, _ in doc.flat["z"]] == [("training_arguments", "inline", "y")]


@pytest.mark.parametrize("text", [
    'a = "quote \\" # not a comment" # a comment\n',
    "a = '''\nliteral ''with'' quotes'''''\nb = 1\n",
    "a . b = 1\n\"a\" . 'c' = 2\n",
    "n = [1_000, 0xff, 0o7, 0b1, +inf, -inf, nan, -0.0, 5e+22]\n",
    "d = [1979-05-27, 07:32:00, 1979-05-27T00:32:00.999999-07:00]\n",
    "t = [ { x = 1 }, { y = [ 'a', ], z = {} } ]\n",
    "empty = []\nnested = [ [ ], [ [ 1 ] ], ]\n",
    "s = \"\"\"\\\n   folded \\\n   line\"\"\"\n",
    '"" = 1\n"\\u00e9t\\u00e9" = "summer"\n',
    "[a]\n[a.b]\nc = 1\n[[a.d]]\ne = 1\n[a.d.f]\ng = 2\n[[a.d]]\ne = 2\n",
    "x = 1\t# tab before the comment\n\t\n[t]\t# a table and a comment\n\ty = 'z'",
])
def test_toml_constructs_place_every_value_where_tomllib_reads_it(text: str) -> None:
    for variant in (text, text.replace("\n", "\r\n")):
        doc = parse_toml.parse("c.toml", variant)
        assert same(doc.root.plain(), tomllib.loads(variant))
        for node in scalars(doc.root):
            assert same(tomllib.loads("v = " + doc.source(node))["v"], node.value), doc.source(node)


def test_toml_tables_and_dotted_keys_get_the_same_tree_and_order_as_tomllib() -> None:
    text = "a.b.c = 1\n[x.y]\nq = 1\n[x]\nr = 2\n[t]\ns = { u = 'v' }\n[t.w]\nk = [[1, 2], [3]]\n"
    doc = parse_toml.parse("c.toml", text)
    assert same(doc.root.plain(), tomllib.loads(text))
    x = doc.root.get("x")
    assert x is not None and x.line == 4 and x.key_line == 4  # declared on line 4, after [x.y] made it
    assert [(path, n.value) for path, n in doc.flat["q"]] == [(("x", "y"), 1)]


@pytest.mark.parametrize(("text", "message", "line"), [
    ('mixed_precision = "fp16"\nlearning_rate = 1e-4\nmixed_precision = "bf16"\n', "`mixed_precision` is set twice", 3),
    ("network_args = [\n  'a=1',\n]\nnetwork_args = [\n  'b=2',\n]", "`network_args` is set twice", 4),  # tomllib points at line 6
    ("[model]\nv2 = true\n\n[train]\nx = 1\n[model]\nv2 = false\n", "table `[model]` is declared twice", 6),
    ("a.b = 1\na.b = 2", "`a.b` is set twice", 2),  # tomllib: "at end of document"
])
def test_a_toml_key_set_twice_names_the_line_that_repeats_it(text: str, message: str, line: int) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_toml.parse("c.toml", text)
    assert caught.value.message == message + " (TOML allows each key and table once)"
    assert caught.value.line == line and caught.value.column == 1


def test_invalid_toml_is_one_line_with_the_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_toml.parse("c.toml", 'a = 1\nnetwork_args = [\n  "x",\n')
    assert caught.value.message == "unexpected end of file: the TOML is truncated (invalid value)"
    assert caught.value.line == 4
    with pytest.raises(ConfigError) as caught:
        parse_toml.parse("c.toml", "a = 1\nb = 1 2\n")
    assert caught.value.message.startswith("not valid TOML: ") and caught.value.line == 2


# -- OneTrainer

SAVED_V11 = """{
    "__version": 11,
    "training_method": "LORA",
    "model_type": "STABLE_DIFFUSION_XL_10_BASE",
    "base_model_name": "stabilityai/stable-diffusion-xl-base-1.0",
    "train_device": "cuda",
    "temp_device": "cpu",
    "train_dtype": "BFLOAT_16",
    "fallback_train_dtype": "BFLOAT_16",
    "output_dtype": "FLOAT_16",
    "unet": {
        "model_name": "",
        "train": true,
        "weight_dtype": "FLOAT_16"
    },
    "prior": {
        "train": true,
        "weight_dtype": "FLOAT_32"
    },
    "text_encoder": {
        "train": false,
        "weight_dtype": "FLOAT_16"
    },
    "text_encoder_2": {
        "train": false,
        "weight_dtype": "FLOAT_16"
    },
    "vae": {
        "model_name": "madebyollin/sdxl-vae-fp16-fix",
        "train": true,
        "weight_dtype": "FLOAT_32"
    },
    "peft_type": "LORA",
    "lora_rank": 16,
    "lora_decompose": false,
    "lora_weight_dtype": "FLOAT_32"
}"""


def test_a_saved_onetrainer_config_reads_every_setting_at_its_line(tmp_path: Path) -> None:
    # the 4-space layout OneTrainer writes, CRLF line ends, no final newline
    intent = read_config(write(tmp_path, "config.json", SAVED_V11.replace("\n", "\r\n")))
    assert [(s.tool, s.syntax, s.label) for s in intent.sources] == [("onetrainer", "json", "OneTrainer config (__version 11)")]
    at(one(intent, "precision"), 8, '"BFLOAT_16"')
    assert one(intent, "precision").value == "bf16" and one(intent, "precision").raw == "BFLOAT_16"
    device = at(one(intent, "device"), 6, '"cuda"')  # never temp_device
    assert (device.value, device.key) == ("cuda", "train_device")
    unet = at(one(intent, "weight_dtype", "unet"), 14, '"FLOAT_16"')
    assert (unet.value, unet.key) == ("fp16", "unet.weight_dtype")
    at(one(intent, "weight_dtype", "text_encoder_2"), 26, '"FLOAT_16"')
    at(one(intent, "weight_dtype", "vae"), 31, '"FLOAT_32"')
    # SDXL has no prior: a saved config lists every part, the reader only the model's
    assert intent.parts() == ["unet", "text_encoder", "text_encoder_2", "vae"]
    assert intent.trained_parts() == ["unet"]  # vae's "train" is never read by OneTrainer
    at(one(intent, "train", "text_encoder"), 21, "false")
    at(one(intent, "adapter"), 33, '"LORA"')
    dora = at(one(intent, "dora"), 35, "false")
    assert dora.value is False and dora.key == "lora_decompose"
    # names that contain "fp16", output_dtype and lora_weight_dtype are not settings
    assert not [s for s in intent.settings if "fp16-fix" in (s.source or "") or s.key in ("output_dtype", "lora_weight_dtype")]


def test_a_preset_without_train_dtype_trains_in_onetrainers_default_fp16(tmp_path: Path) -> None:
    preset = (
        "{\n"
        '  "base_model_name": "stabilityai/stable-diffusion-xl-base-1.0",\n'
        '  "model_type": "STABLE_DIFFUSION_XL_10_BASE",\n'
        '  "training_method": "LORA",\n'
        '  "unet": {\n'
        '    "weight_dtype": "FLOAT_16"\n'
        "  },\n"
        '  "text_encoder": {\n'
        '    "train": false,\n'
        '    "weight_dtype": "FLOAT_16"\n'
        "  }\n"
        "}\n"
    )  # 2 spaces, as third-party UIs write
    intent = read_config(write(tmp_path, "#sdxl LoRA.json", preset))
    assert intent.sources[0].label == "OneTrainer preset"
    is_default(one(intent, "precision"), "fp16", "FLOAT_16", "train_dtype")
    assert one(intent, "precision").where() == "#sdxl LoRA.json: `train_dtype` absent, OneTrainer's default FLOAT_16"
    is_default(one(intent, "device"), "auto", "cuda or cpu, whichever accelerate finds", "train_device")
    at(one(intent, "weight_dtype", "unet"), 6, '"FLOAT_16"')
    at(one(intent, "weight_dtype", "text_encoder"), 10, '"FLOAT_16"')
    assert intent.weights().keys() == {"unet", "text_encoder"}  # defaults only for the parts written
    is_default(one(intent, "train", "unet"), True, True, "unet.train")  # a part trains unless told not to
    is_default(one(intent, "train", "text_encoder_2"), True, True, "text_encoder_2.train")
    assert intent.trained_parts() == ["unet", "text_encoder_2"]
    adapter = at(one(intent, "adapter"), 4, '"LORA"')
    assert adapter.value == "lora" and adapter.note == "peft_type absent: LORA"
    is_default(one(intent, "dora"), False, False, "lora_decompose")


OLD_V9 = """{
    "__version": 9,
    "training_method": "FINE_TUNE",
    "model_type": "STABLE_DIFFUSION_15",
    "train_dtype": "FLOAT_16",
    "weight_dtype": "FLOAT_16",
    "unet": {
        "train": true,
        "weight_dtype": "NONE"
    },
    "text_encoder": {
        "train": true,
        "weight_dtype": "NONE"
    },
    "vae": {
        "weight_dtype": "FLOAT_32"
    },
    "lora_decompose": true
}
"""


def test_an_old_config_top_level_weight_dtype_is_what_its_none_parts_use(tmp_path: Path) -> None:
    intent = read_config(write(tmp_path, "old.json", OLD_V9))
    assert intent.sources[0].label == "OneTrainer config (__version 9)"
    for part in ("unet", "text_encoder"):
        inherited = at(one(intent, "weight_dtype", part), 6, '"FLOAT_16"')  # the top-level span: one edit fixes both
        assert (inherited.value, inherited.key) == ("fp16", "weight_dtype")
        assert inherited.note == "%s.weight_dtype is NONE: the top-level weight_dtype applies" % part
    at(one(intent, "weight_dtype", "vae"), 16, '"FLOAT_32"')
    at(one(intent, "adapter"), 3, '"FINE_TUNE"')
    assert one(intent, "adapter").value == "full"
    assert intent.all("dora") == []  # lora_decompose means nothing to a fine-tune


def test_none_parts_without_a_top_level_weight_dtype_and_a_version_10_config_ignoring_it(tmp_path: Path) -> None:
    text = OLD_V9.replace('    "weight_dtype": "FLOAT_16",\n', "")
    unet = one(read_config(write(tmp_path, "none.json", text)), "weight_dtype", "unet")
    assert (unet.value, unet.source, unet.line) == ("fp32", '"NONE"', 8)  # the old top-level default, FLOAT_32
    newer = OLD_V9.replace('"__version": 9', '"__version": 10').replace('"NONE"', '"BFLOAT_16"', 1)
    newer = newer.replace('        "train": true,\n        "weight_dtype": "NONE"\n', '        "train": true\n')
    intent = read_config(write(tmp_path, "v10.json", newer))
    at(one(intent, "weight_dtype", "unet"), 9, '"BFLOAT_16"')
    is_default(one(intent, "weight_dtype", "text_encoder"), "fp32", "FLOAT_32", "text_encoder.weight_dtype")


def test_seed_003_fp8_base_with_dora_is_read_from_the_onetrainer_config(tmp_path: Path) -> None:
    text = (
        "{\n"
        '    "__version": 8,\n'
        '    "training_method": "LORA",\n'
        '    "model_type": "STABLE_DIFFUSION_XL_10_BASE",\n'
        '    "train_dtype": "FLOAT_16",\n'
        '    "weight_dtype": "FLOAT_16",\n'
        '    "unet": {\n'
        '        "train": true,\n'
        '        "weight_dtype": "FLOAT_8"\n'
        "    },\n"
        '    "text_encoder": {\n'
        '        "train": false,\n'
        '        "weight_dtype": "NONE"\n'
        "    },\n"
        '    "text_encoder_2": {\n'
        '        "train": false,\n'
        '        "weight_dtype": "NONE"\n'
        "    },\n"
        '    "peft_type": "LORA",\n'
        '    "lora_decompose": true\n'
        "}"
    )
    intent = read_config(write(tmp_path, "sdxl-dora.json", text))
    fp8 = at(one(intent, "weight_dtype", "unet"), 9, '"FLOAT_8"')
    assert fp8.value == "fp8" and fp8.key == "unet.weight_dtype"
    dora = at(one(intent, "dora"), 20, "true")
    assert dora.value is True and dora.key == "lora_decompose"
    at(one(intent, "adapter"), 19, '"LORA"')
    assert intent.trained_parts() == ["unet"]
    assert intent.asks("weight_dtype", "fp8") == [fp8]
    summary = intent.summary()
    # before version 10, a part the file leaves out (here the VAE) also takes the top-level weight_dtype
    assert one(intent, "weight_dtype", "vae").note == "vae.weight_dtype is absent: the top-level weight_dtype applies"
    weights = {"unet": "fp8", "text_encoder": "fp16", "text_encoder_2": "fp16", "vae": "fp16"}
    assert (summary["precision"], summary["weights"], summary["dora"]) == ("fp16", weights, True)


def test_lokr_weight_decompose_is_dora_and_other_data_types_map_to_envdoctors(tmp_path: Path) -> None:
    text = json.dumps({"training_method": "LORA", "peft_type": "LOKR", "lokr_weight_decompose": True, "lora_decompose": False,
                       "train_device": "cuda:1", "train_dtype": "TFLOAT_32",
                       "transformer": {"weight_dtype": "INT_W8A8_COMPRESSED"}, "text_encoder": {"weight_dtype": "GGUF_A8_INT"},
                       "vae": {"weight_dtype": "NFLOAT_4"}}, indent=4)
    intent = read_config(write(tmp_path, "lokr.json", text))
    assert one(intent, "adapter").value == "lokr"
    dora = one(intent, "dora")
    assert dora.value is True and dora.key == "lokr_weight_decompose" and dora.source == "true"
    assert (one(intent, "device").value, one(intent, "precision").value) == ("cuda:1", "fp32")
    assert {p: s.value for p, s in intent.weights().items()} == {"transformer": "w8a8", "text_encoder": "gguf", "vae": "nf4"}


# -- kohya sd-scripts

SD_SCRIPTS = (
    "# kohya sd-scripts: train_network.py --config_file lora.toml\n"
    'pretrained_model_name_or_path = "/models/sdxl-base-fp16.safetensors"  # "fp16" here is a file name\n'
    'output_dir = "/out"\n'
    'network_module = "lycoris.kohya"\n'
    "network_dim = 16\n"
    "network_args = [\n"
    '    "algo=lokr",\n'
    '    "dora_wd=True",  # LyCORIS DoRA\n'
    "]\n"
    'mixed_precision = "bf16"\n'
    'save_precision = "fp16"\n'
    "fp8_base = true\n"
    "network_train_unet_only = true"
)


def test_sd_scripts_toml_dora_is_the_string_inside_network_args(tmp_path: Path) -> None:
    intent = read_config(write(tmp_path, "lora.toml", SD_SCRIPTS.replace("\n", "\r\n")))
    assert [(s.tool, s.syntax, s.label) for s in intent.sources] == [("kohya", "toml", "kohya sd-scripts config")]
    dora = at(one(intent, "dora"), 8, '"dora_wd=True"')
    assert dora.value is True and dora.key == "network_args"
    adapter = at(one(intent, "adapter"), 7, '"algo=lokr"')
    assert adapter.value == "lokr"
    precision = at(one(intent, "precision"), 10, '"bf16"')
    assert (precision.value, precision.key) == ("bf16", "mixed_precision")
    unet = at(one(intent, "weight_dtype", "unet"), 12, "true")
    assert (unet.value, unet.key) == ("fp8", "fp8_base")
    assert one(intent, "weight_dtype", "text_encoder").value == "fp8"  # fp8_base without fp8_base_unet: both
    assert intent.trained_parts() == ["unet"]
    # save_precision and the model's file name are not settings
    assert not [s for s in intent.settings if s.key == "save_precision" or "safetensors" in (s.source or "")]


def test_sd_scripts_flattens_tables_so_the_last_mixed_precision_read_wins(tmp_path: Path) -> None:
    text = (
        "[model_arguments]\n"
        "\tpretrained_model_name_or_path = 'runwayml/stable-diffusion-v1-5'\n"
        "\tmixed_precision = 'fp16'\n"
        "\n"
        "[training_arguments]\n"
        "\tmixed_precision = 'no'   # the value sd-scripts uses: tables are merged in order\n"
        "\tfull_fp16 = true\n"
        "\n"
        "[network_arguments]\n"
        "\tnetwork_module = 'networks.lora'\n"
        "\tnetwork_args = [ 'dora_wd=True' ]\n"
    )
    intent = read_config(write(tmp_path, "sectioned.toml", text))  # starts with "[": TOML, not JSON, by its extension
    precision = at(one(intent, "precision"), 6, "'no'")
    assert (precision.value, precision.key) == ("fp32", "training_arguments.mixed_precision")
    assert precision.note == "also set at [model_arguments] line 3; sd-scripts reads the tables in order, so the last one counts"
    full = at(one(intent, "weight_dtype", "unet"), 7, "true")
    assert (full.value, full.key) == ("fp16", "training_arguments.full_fp16")
    at(one(intent, "adapter"), 10, "'networks.lora'")
    assert intent.all("dora") == []  # sd-scripts' own networks.lora has no weight decomposition


def test_sd_scripts_defaults_to_no_mixed_precision_and_lycoris_to_lora_without_dora(tmp_path: Path) -> None:
    text = 'pretrained_model_name_or_path = "x"\nnetwork_module = "lycoris.kohya"\nnetwork_args = ["conv_dim=4", "dora_wd=false"]\n'
    intent = read_config(write(tmp_path, "plain.toml", text))
    is_default(one(intent, "precision"), "fp32", "no", "mixed_precision")
    adapter = at(one(intent, "adapter"), 2, '"lycoris.kohya"')
    assert adapter.value == "lora" and "default lora" in adapter.note
    dora = at(one(intent, "dora"), 3, '"dora_wd=false"')
    assert dora.value is False
    intent = read_config(write(tmp_path, "nodora.toml", text.replace(', "dora_wd=false"', "")))
    is_default(one(intent, "dora"), False, "False", "network_args.dora_wd")


# -- kohya_ss GUI

GUI_JSON = {
    "LoRA_type": "LyCORIS/LoCon",
    "LyCORIS_preset": "full",
    "pretrained_model_name_or_path": "stabilityai/stable-diffusion-xl-base-1.0",
    "vae": "madebyollin/sdxl-vae-fp16-fix",
    "sdxl": True,
    "epoch": 10,
    "mixed_precision": "fp16",
    "save_precision": "fp16",
    "fp8_base": False,
    "full_bf16": True,
    "dora_wd": True,
    "network_dim": 32,
}


def test_kohya_ss_gui_json_reads_lora_type_dora_wd_and_precision(tmp_path: Path) -> None:
    text = json.dumps(GUI_JSON, indent=2)  # no final newline, as the GUI saves
    intent = read_config(write(tmp_path, "gui.json", text))
    assert [(s.tool, s.label) for s in intent.sources] == [("kohya_ss", "kohya_ss GUI config (LoRA_type LyCORIS/LoCon)")]
    at(one(intent, "precision"), 8, '"fp16"')
    dora = at(one(intent, "dora"), 12, "true")
    assert dora.key == "dora_wd" and dora.value is True
    adapter = at(one(intent, "adapter"), 2, '"LyCORIS/LoCon"')
    assert adapter.value == "lora"
    bf16 = at(one(intent, "weight_dtype", "unet"), 11, "true")
    assert (bf16.value, bf16.key) == ("bf16", "full_bf16")
    assert not [s for s in intent.settings if s.key in ("save_precision", "vae")]
    # the GUI passes dora_wd only for LoCon, LoHa and LoKr
    standard = read_config(write(tmp_path, "standard.json", json.dumps(dict(GUI_JSON, LoRA_type="Standard"), indent=4)))
    assert one(standard, "adapter").value == "lora" and standard.all("dora") == []


def test_kohya_ss_gui_config_toml_reads_its_accelerate_and_advanced_tables(tmp_path: Path) -> None:
    text = (
        "# Copy this file and name it config.toml\n"
        "[model]\n"
        'save_precision = "bf16"                    # Save model precision (fp16, bf16, float)\n'
        "\n"
        "[accelerate_launch]\n"
        'mixed_precision = "bf16"          # Mixed precision (fp16, bf16, fp8)\n'
        "num_processes = 1\n"
        "\n"
        "[advanced]\n"
        "fp8_base = false\n"
        "fp8_base_unet = true                      # FP8 base training (experimental)\n"
        "full_fp16 = false\n"
    )
    intent = read_config(write(tmp_path, "config.toml", text))
    assert [(s.tool, s.label) for s in intent.sources] == [("kohya_ss", "kohya_ss GUI config.toml")]
    precision = at(one(intent, "precision"), 6, '"bf16"')
    assert precision.key == "accelerate_launch.mixed_precision"
    fp8 = at(one(intent, "weight_dtype", "unet"), 11, "true")
    assert (fp8.value, fp8.key) == ("fp8", "advanced.fp8_base_unet")
    assert intent.all("weight_dtype", "text_encoder") == []
    absent = read_config(write(tmp_path, "bare.toml", text.replace('mixed_precision = "bf16"', "gpu_ids = ''")))
    is_default(one(absent, "precision"), "fp16", "fp16", "accelerate_launch.mixed_precision")


# -- which tool a file is

ACCELERATE_JSON = json.dumps({"compute_environment": "LOCAL_MACHINE", "debug": False, "distributed_type": "NO", "downcast_bf16": False,
                              "machine_rank": 0, "main_training_function": "main", "mixed_precision": "no", "num_machines": 1,
                              "num_processes": 1, "rdzv_backend": "static", "same_network": False, "use_cpu": False}, indent=2, sort_keys=True)


def _json_doc(value: Any) -> Document:
    return parse_json.parse("x.json", json.dumps(value, indent=4))


def test_recognition_keeps_onetrainer_kohya_ss_and_accelerate_json_apart() -> None:
    ot = onetrainer.recognise
    gui = next(f.recognise for f in kohya.FORMATS if f.syntaxes == ("json",))
    assert ot(_json_doc({"train_dtype": "BFLOAT_16"})) >= 10  # a preset with one OneTrainer key
    assert ot(_json_doc({"unet": {"weight_dtype": "FLOAT_8"}, "lora_decompose": True})) >= 10
    assert ot(parse_json.parse("c.json", SAVED_V11)) >= 20
    assert (ot(_json_doc(GUI_JSON)), gui(_json_doc(GUI_JSON))) == (0, 20)
    accelerate = parse_json.parse("default_config.yaml", ACCELERATE_JSON)  # `accelerate config default` writes JSON
    assert (ot(accelerate), gui(accelerate)) == (0, 0)
    assert gui(parse_json.parse("c.json", SAVED_V11)) == 0
    dataset = parse_toml.parse("d.toml", "[general]\nenable_bucket = true\ncaption_extension = '.txt'\n\n[[datasets]]\nresolution = 1024\n"
                                         "batch_size = 4\n  [[datasets.subsets]]\n  image_dir = '/img'\n  num_repeats = 10\n")
    assert all(f.recognise(dataset) == 0 for f in kohya.FORMATS)  # sd-scripts' dataset config is not a training config


def test_a_toml_file_that_starts_with_a_table_is_tried_as_toml_first() -> None:
    assert syntax_order("lora.toml", "[model_arguments]\nv2 = false\n")[0] == "toml"
    assert syntax_order("lora", "\r\n[[datasets]] # a comment\r\nx = 1\r\n")[0] == "toml"
    assert syntax_order("preset.json", "[1, 2]")[0] == "json"
    assert syntax_order("default_config.yaml", ACCELERATE_JSON)[0] == "json"


# -- bad input: one line naming the file (and the line)


def test_a_truncated_json_config_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "config.json", SAVED_V11[:SAVED_V11.index('"weight_dtype": "FLOAT_16"') + 20])
    with pytest.raises(ConfigError) as caught:
        read_config(path)
    assert caught.value.message == "unexpected end of file: the JSON is truncated"
    assert caught.value.line == 14 and str(caught.value).startswith(path + ":14:")


@pytest.mark.parametrize("name", ["lora.toml", "lora.txt"])
def test_a_toml_config_with_a_duplicate_key_names_the_repeated_line(tmp_path: Path, name: str) -> None:
    text = "[training_arguments]\nmixed_precision = 'fp16'\nlearning_rate = 1e-4\nmixed_precision = 'bf16'\n"
    with pytest.raises(ConfigError) as caught:
        read_config(write(tmp_path, name, text))
    assert caught.value.line == 4 and "`mixed_precision` is set twice" in caught.value.message


def test_empty_binary_and_unknown_files_are_one_clear_error(tmp_path: Path) -> None:
    cases = {
        "empty.json": (b"  \r\n", "is empty"),
        "model.safetensors": (b"\x89\x00\x00\x00{}\x00binary", "is a binary file, not a training config"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ConfigError) as caught:
            read_config(str(tmp_path / name))
        assert caught.value.message == message and caught.value.line is None
    package = write(tmp_path, "package.json", json.dumps({"name": "web", "version": "1.0.0", "scripts": {"build": "tsc"},
                                                          "devDependencies": {"typescript": "^5"}}, indent=2))
    with pytest.raises(ConfigError) as caught:
        read_config(package)
    assert caught.value.message.startswith("unknown layout")
    assert "\n" not in str(caught.value)



def test_a_first_generation_onetrainer_preset_with_flat_part_keys(tmp_path: Path) -> None:
    """The shape of OneTrainer's own `training_presets/#sdxl 1.0 LoRA.json` (github.com/Nerogar/OneTrainer
    @0650480): flat `<part>_weight_dtype` and `train_<part>` keys, before the per-part objects."""
    text = ('{\n    "training_method": "LORA",\n    "model_type": "STABLE_DIFFUSION_XL_10_BASE",\n'
            '    "weight_dtype": "FLOAT_16",\n    "text_encoder_weight_dtype": "NONE",\n    "unet_weight_dtype": "NONE",\n'
            '    "vae_weight_dtype": "FLOAT_32",\n    "train_text_encoder": false,\n    "train_unet": true,\n'
            '    "train_device": "cuda",\n    "temp_device": "cpu",\n    "train_dtype": "FLOAT_16"\n}')
    path = tmp_path / "#sdxl 1.0 LoRA.json"
    path.write_text(text)
    intent = read_config(str(path))
    vae = intent.effective("weight_dtype", "vae")
    assert (vae.value, vae.key, vae.line, text[vae.start:vae.end]) == ("fp32", "vae_weight_dtype", 7, '"FLOAT_32"')
    unet = intent.effective("weight_dtype", "unet")  # NONE: the top-level FLOAT_16 applies
    assert (unet.value, unet.key, unet.line) == ("fp16", "weight_dtype", 4)
    text_encoder = intent.effective("train", "text_encoder")
    assert (text_encoder.value, text_encoder.key, text_encoder.line) == (False, "train_text_encoder", 8)
    assert intent.value("train", "unet") is True and intent.value("device") == "cuda"
