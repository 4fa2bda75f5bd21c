"""A launch line: `accelerate launch [flags] train_*.py [script flags]`, torchrun, python, autotrain.

The diffusers example scripts (github.com/huggingface/diffusers `examples/*/train_*.py`)
pass their own `--mixed_precision` to `Accelerator(mixed_precision=...)`, which uses it
over the `ACCELERATE_MIXED_PRECISION` that `accelerate launch --mixed_precision` (or the
accelerate config) exports; so both are read, the launcher's first, and the script's
wins (Intent.effective: the later of one tool's settings).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from envdoctor.configs.autotrain import QUANTIZED
from envdoctor.configs.document import Document, Node
from envdoctor.configs.parse_shell import normal_flag
from envdoctor.configs.reading import (
    REMOVE,
    Change,
    Format,
    Unwritable,
    default,
    mapping_root,
    precision_spellings,
    precision_word,
    setting,
    setting_path,
    tool_word,
)
from envdoctor.target.intent import Setting

TOOL = "launch"
WHOSE = {"launcher_flags": "the launcher's flag", "script_flags": "the script's own flag"}
# accelerate launch switches that choose the distributed mode (commands/launch.py, accelerate @ 16cb6eb)
DISTRIBUTED = {"--multi_gpu": "multi_gpu", "--use_deepspeed": "deepspeed", "--use_fsdp": "fsdp",
               "--use_megatron_lm": "megatron_lm", "--tpu": "xla"}
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def recognise(doc: Document) -> int:
    root = mapping_root(doc)
    return 10 if doc.syntax == "shell" and root is not None and ("launcher" in root.value or "script" in root.value) else 0


def read(doc: Document) -> List[Setting]:
    root = mapping_root(doc)
    if root is None:
        return []
    found: List[Setting] = []
    for section in ("launcher_flags", "script_flags"):  # in this order: the script's flag wins
        found += _precision(doc, root, section)
    launcher = root.get("launcher")
    if not found and launcher is not None and launcher.value == "autotrain":
        # the CLI's --mixed-precision defaults to None, as the YAML's params.mixed_precision (configs/autotrain.py)
        found.append(default(doc, "precision", "fp32", None, TOOL, "--mixed-precision"))
    found += _device(doc, root)
    found += _distributed(doc, root)
    found += _adapter(doc, root)
    found += _autotrain_llm(doc, root)
    return found


def _flags(root: Node, section: str) -> Dict[str, Tuple[str, Node]]:
    """A section's flags by normalised name (`--mixed-precision` = `--mixed_precision`)."""
    node = root.get(section)
    return {normal_flag(flag): (flag, value) for flag, value in node.items()} if node is not None else {}


def _switch(node: Node) -> Optional[bool]:
    """`--fp16` alone, or `--fp16 True` (HF TrainingArguments style)."""
    if node.value is True:
        return True
    text = str(node.value).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else None


def _precision(doc: Document, root: Node, section: str) -> List[Setting]:
    flags = _flags(root, section)
    found: List[Setting] = []
    if "--mixed_precision" in flags:
        flag, node = flags["--mixed_precision"]
        word = precision_word(node.value) if node.value is not True else None
        if word:
            found.append(setting(doc, node, "precision", word, TOOL, flag, note=WHOSE[section]))
    for legacy in ("--fp16", "--bf16"):  # old accelerate `--fp16`, old autotrain, TrainingArguments
        if legacy in flags and _switch(flags[legacy][1]):
            flag, node = flags[legacy]
            found.append(setting(doc, node, "precision", legacy[2:], TOOL, flag, note=WHOSE[section]))
    return found


def _device(doc: Document, root: Node) -> List[Setting]:
    """`accelerate launch --cpu` (also ignores the default accelerate config), or a script's `--cpu`."""
    for section in ("launcher_flags", "script_flags"):
        flags = _flags(root, section)
        if "--cpu" in flags and _switch(flags["--cpu"][1]):
            flag, node = flags["--cpu"]
            return [setting(doc, node, "device", "cpu", TOOL, flag, note=WHOSE[section])]
    return [default(doc, "device", "auto", "cuda if available", TOOL, "--cpu")]


def _distributed(doc: Document, root: Node) -> List[Setting]:
    launcher = root.get("launcher")
    if launcher is None or launcher.value != "accelerate":
        return []
    flags = _flags(root, "launcher_flags")
    return [setting(doc, flags[f][1], "distributed", kind, TOOL, flags[f][0]) for f, kind in DISTRIBUTED.items()
            if f in flags and _switch(flags[f][1])]


def _adapter(doc: Document, root: Node) -> List[Setting]:
    """DoRA from the script's `--use_dora` (diffusers' *_lora scripts) or `--dora`; the
    diffusers LoRA scripts say so in their name (train_dreambooth_lora_sdxl.py)."""
    found: List[Setting] = []
    script = root.get("script")
    name = os.path.basename(str(script.value)).lower() if script is not None else ""
    if "lora" in name:
        found.append(default(doc, "adapter", "lora", script.value if script else None, TOOL, "script",
                             note="a LoRA training script, by its name"))
    flags = _flags(root, "script_flags")
    for flag in ("--use_dora", "--dora"):
        if flag in flags:
            written, node = flags[flag]
            on = _switch(node)
            if on is not None:
                found.append(setting(doc, node, "dora", on, TOOL, written))
    return found


def _autotrain_llm(doc: Document, root: Node) -> List[Setting]:
    """`autotrain llm ... --use-peft --quantization int4`: the CLI's names for the YAML's `params.peft` and
    `params.quantization` (autotrain-advanced cli/run_llm.py), read as the YAML is (configs/autotrain.py):
    with peft, the base loads in bitsandbytes nf4 (int4, the default) or 8-bit (int8)."""
    launcher, script = root.get("launcher"), root.get("script")
    if launcher is None or launcher.value != "autotrain" or script is None or script.value != "llm":
        return []
    flags = _flags(root, "script_flags")
    peft = flags.get("--use_peft") or flags.get("--peft")
    if peft is None or not _switch(peft[1]):
        return []
    found = [setting(doc, peft[1], "adapter", "lora", TOOL, peft[0])]
    written = flags.get("--quantization")
    if written is None:
        return found + [default(doc, "weight_dtype", "nf4", "int4", TOOL, "--quantization", part="model", note="bitsandbytes nf4")]
    dtype = QUANTIZED.get(str(written[1].value).strip().lower())
    if dtype:
        found.append(setting(doc, written[1], "weight_dtype", dtype, TOOL, written[0], part="model", note="bitsandbytes %s" % dtype))
    return found


def label(doc: Document) -> str:
    root = mapping_root(doc)
    launcher = root.get("launcher") if root is not None else None
    script = root.get("script") if root is not None else None
    what = "%s launch" % launcher.value if launcher is not None else "script"
    return "%s of %s" % (what, script.value) if script is not None else what


# -- writing: `--mixed_precision` takes accelerate's words (the diffusers scripts pass them to
# Accelerator); a switch (`--cpu`, `--fp16`, `--use_dora`) is taken out, or a written
# True becomes False in its own case; `accelerate launch --cpu` is added after the launcher.
WRITE_PRECISIONS = precision_spellings(("no", "fp16", "bf16", "fp8"))


def write(doc: Document, found: Setting, value: Any) -> List[Change]:
    path = setting_path(doc, found)
    node = doc.root.get(*path)
    flag = normal_flag(found.key) if found.key.startswith("-") else found.key
    if found.name == "precision" and flag == "--mixed_precision":
        return [Change(path, tool_word(WRITE_PRECISIONS, value, "--mixed_precision"), found.key)]
    if found.name == "precision" and flag in ("--fp16", "--bf16"):
        if value != "fp32":
            raise Unwritable("a launch line's %s switch can only be taken out: write --mixed_precision %s instead" % (found.key, value))
        return [_switch_off(path, node, found.key)]
    if found.name == "device" and isinstance(value, str):
        if value == "cpu":
            if found.default and doc.root.get("launcher") is not None and getattr(doc.root.get("launcher"), "value", None) == "accelerate":
                return [Change(("launcher_flags", "--cpu"), True, "--cpu")]
            if not found.default:
                return [Change(path, True if node is None or node.value is True else "True", found.key)]
            raise Unwritable("only `accelerate launch` has a --cpu switch to add")
        if value == "auto" or value.startswith("cuda"):
            return [] if found.default else [_switch_off(path, node, found.key)]
    if found.name == "dora" and value is False and not found.default:
        return [_switch_off(path, node, found.key)]
    raise Unwritable("envdoctor does not write the launch line's %s as %s" % (found.key, value))


def _switch_off(path: Tuple[Any, ...], node: Optional[Node], key: str) -> Change:
    """A bare switch is taken out; `--fp16 True` becomes `--fp16 False` (as written: False, false, 0)."""
    if node is None or node.value is True:
        return Change(path, REMOVE, key)
    said = str(node.value)
    return Change(path, "0" if said == "1" else "False" if said[:1].isupper() else "false", key)


FORMATS = (Format(tool=TOOL, syntaxes=("shell",), recognise=recognise, read=read, label=label, write=write),)
