"""autotrain-advanced's `autotrain --config FILE.yml`.

Source: github.com/huggingface/autotrain-advanced @ b5c98fbe3aab61101e9c8f7f6c64407cbb68e400;
DreamBooth (removed in cf810c4) at 2d787b2033414d06f1e9be2ea0caacad3097f5e8. The file
is read with yaml.safe_load (src/autotrain/parser.py L73): top-level `task`,
`base_model`, `project_name`, `backend`, and the sections `data:`, `params:`, `hub:`.
"""

from __future__ import annotations

from typing import Any, List, Optional

from envdoctor.configs.document import Document, Node
from envdoctor.configs.reading import (
    Change,
    Format,
    Unwritable,
    default,
    mapping_root,
    precision_spellings,
    precision_word,
    same_token,
    setting,
    setting_path,
    tool_word,
    value_at,
)
from envdoctor.target.intent import Setting

TOOL = "autotrain"
TOP_KEYS = ("task", "base_model", "project_name", "backend", "log", "data", "params", "hub")
# parser.py task_aliases (L106-111): the causal-LM trainer
LLM_TASKS = ("llm", "llm-sft", "llm-orpo", "llm-generic", "llm-dpo", "llm-reward")
DEVICE_DEFAULT = "cuda if available"  # no key: commands.py L22-25 launches `--cpu` without a GPU


def recognise(doc: Document) -> int:
    """`task` with the `params:` section or `project_name`: axolotl shares `base_model`,
    never these."""
    root = mapping_root(doc)
    if root is None or not isinstance(value_at(root, "task"), str):
        return 0
    params = root.get("params")
    if not ((params is not None and params.kind == "mapping") or "project_name" in root.value):
        return 0
    return 10 + sum(1 for key in TOP_KEYS if key in root.value)


def read(doc: Document) -> List[Setting]:
    root = mapping_root(doc)
    if root is None:
        return []
    task = str(value_at(root, "task")).strip().lower()
    params = root.get("params")
    params = params if params is not None and params.kind == "mapping" else None
    found = _precision(doc, params, task)
    found.append(default(doc, "device", "auto", DEVICE_DEFAULT, TOOL, "device"))
    if task == "dreambooth":
        found += _dreambooth(doc, root, params, found[0])
    elif task in LLM_TASKS:
        found += _llm(doc, params)
    return found


def _precision(doc: Document, params: Optional[Node], task: str) -> List[Setting]:
    """`params.mixed_precision: fp16|bf16|none`, Optional[str] default None
    (trainers/clm/params.py L94-96; trainers/dreambooth/params.py L127 at 2d787b2)."""
    node = params.get("mixed_precision") if params is not None else None
    key = "params.mixed_precision"
    if node is None:
        return [default(doc, "precision", "fp32", None, TOOL, key)]
    if node.value is None:
        return [setting(doc, node, "precision", "fp32", TOOL, key)]
    if node.value is False:
        return [setting(doc, node, "precision", "fp32", TOOL, key,
                        note="unquoted `no` is YAML false, which autotrain's Optional[str] field rejects; write null")]
    word = precision_word(node.value)
    if word is None:
        return []
    note = ""
    if task == "dreambooth" and str(node.value).strip().lower() in ("none", "no"):
        # the value goes straight to Accelerator(mixed_precision=...) (train_xl.py L326-332 at 2d787b2)
        note = "DreamBooth hands it to accelerate, which accepts only no/fp16/bf16/fp8: write null"
    return [setting(doc, node, "precision", word, TOOL, key, note=note)]


def _dreambooth(doc: Document, root: Node, params: Optional[Node], precision: Setting) -> List[Setting]:
    """DreamBooth trains LoRA adapters on the UNet (and the text encoders with
    `train_text_encoder`) and casts the frozen weights to the mixed precision:
    SDXL keeps the VAE in float32 (train_xl.py L477-490), SD 1.x casts it too
    (train.py L478-488). SDXL is `params.xl: true` or an SDXL base model id
    (__main__.py L28-29, utils.py XL_MODELS L24-29). `use_dora` is hard-coded False
    (__main__.py L119). All at 2d787b2."""
    xl = value_at(params, "xl") is True or "xl" in str(value_at(root, "base_model")).lower()
    encoders = ("text_encoder", "text_encoder_2") if xl else ("text_encoder",)
    cast = ("unet",) + encoders if xl else ("unet", "vae") + encoders
    found: List[Setting] = []
    if precision.value in ("fp16", "bf16") and not precision.default:
        for part in cast:
            found.append(same_token(precision, "weight_dtype", precision.value, part, "DreamBooth casts the frozen %s to %s" % (part, precision.value)))
    found.append(default(doc, "adapter", "lora", "LoRA", TOOL, "adapter", note="autotrain DreamBooth always trains LoRA"))
    found.append(default(doc, "dora", False, False, TOOL, "use_dora", note="hard-coded in autotrain DreamBooth"))
    found.append(default(doc, "train", True, True, TOOL, "unet", part="unet"))
    node = params.get("train_text_encoder") if params is not None else None
    for part in encoders:
        if node is None:
            found.append(default(doc, "train", False, False, TOOL, "params.train_text_encoder", part=part))
        else:
            found.append(setting(doc, node, "train", node.value is True, TOOL, "params.train_text_encoder", part=part))
    return found


# `quantization` → the bitsandbytes base it loads (trainers/clm/utils.py L930-941); the default with peft is int4
QUANTIZED = {"int4": "nf4", "int8": "int8"}


def _llm(doc: Document, params: Optional[Node]) -> List[Setting]:
    """`params.peft` (default False) puts LoRA on the base; only then is `quantization`
    (default "int4") applied: int4 loads bitsandbytes nf4, int8 loads 8-bit
    (trainers/clm/params.py L112-115; trainers/clm/utils.py L930-941)."""
    peft = params.get("peft") if params is not None else None
    found: List[Setting] = []
    if peft is None:
        found.append(default(doc, "adapter", "full", False, TOOL, "params.peft"))
        return found
    found.append(setting(doc, peft, "adapter", "lora" if peft.value is True else "full", TOOL, "params.peft"))
    if peft.value is not True:
        return found
    node = params.get("quantization") if params is not None else None
    key = "params.quantization"
    if node is None:
        found.append(default(doc, "weight_dtype", "nf4", "int4", TOOL, key, part="model", note="bitsandbytes nf4"))
    elif isinstance(node.value, str) and node.value.strip().lower() in QUANTIZED:
        dtype = QUANTIZED[node.value.strip().lower()]
        found.append(setting(doc, node, "weight_dtype", dtype, TOOL, key, part="model", note="bitsandbytes %s" % dtype))
    return found


def label(doc: Document) -> str:
    root = mapping_root(doc)
    return "autotrain-advanced %s" % value_at(root, "task")


# -- writing (CONFIG-FORMATS.md "autotrain-advanced", Edits): fp32 is null, safe for every
# task (DreamBooth hands `none` to accelerate, which refuses it; a bare `no` is YAML false).
WRITE_PRECISIONS = dict(precision_spellings(("fp16", "bf16")), fp32=None)


def write(doc: Document, found: Setting, value: Any) -> List[Change]:
    # DreamBooth's weight parts are the precision's own token (same_token): the same change
    if found.name == "precision" or (found.name == "weight_dtype" and found.key == "params.mixed_precision"):
        if value not in WRITE_PRECISIONS:
            tool_word({}, value, "autotrain's mixed_precision")
        return [Change(setting_path(doc, found), WRITE_PRECISIONS[value], "params.mixed_precision")]
    if found.name == "weight_dtype" and found.key == "params.quantization" and value in ("fp32", "fp16", "bf16"):
        # null: no BitsAndBytesConfig (trainers/clm/utils.py makes one for int4 / int8 only); the base then loads in
        # the dtype of the mixed precision
        return [Change(setting_path(doc, found), None, "params.quantization")]
    if found.name == "device":
        raise Unwritable("autotrain has no device key: it trains on the GPU whenever torch.cuda.is_available()")
    if found.name == "dora":
        raise Unwritable("autotrain has no DoRA key (DreamBooth hard-codes use_dora = False)")
    raise Unwritable("envdoctor does not change autotrain's %s (set it by hand)" % found.key)


FORMATS = (Format(tool=TOOL, syntaxes=("yaml",), recognise=recognise, read=read, label=label, write=write),)
