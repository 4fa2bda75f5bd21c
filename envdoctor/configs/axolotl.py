"""axolotl's YAML config (`axolotl train CONFIG.yml`, `accelerate launch -m axolotl.cli.train CONFIG.yml`).

Source: github.com/axolotl-ai-cloud/axolotl @ 067b021c8b87a9e5e380b9173c704cf7340e30f5.
Precision keys: src/axolotl/utils/schemas/config.py L559-598; adapter and quantized
base: utils/schemas/peft.py L31-40, L89; how they combine: utils/config/__init__.py
resolve_dtype (L156-196) and utils/trainer.py L685-692.
"""

from __future__ import annotations

from typing import Any, List, Optional

from envdoctor.configs.document import Document, Node
from envdoctor.configs.reading import Change, Format, Unwritable, default, mapping_root, setting, setting_path
from envdoctor.target.intent import Setting
from envdoctor.target.probekit.text import TORCH_DTYPE

TOOL = "axolotl"
# keys only axolotl configs carry next to `base_model` (autotrain has `task`/`params` instead)
KEYS = ("datasets", "sequence_len", "micro_batch_size", "gradient_accumulation_steps", "num_epochs", "adapter", "lora_r",
        "lora_alpha", "lora_target_modules", "lora_target_linear", "load_in_8bit", "load_in_4bit", "sample_packing",
        "val_set_size", "output_dir", "learning_rate", "lr_scheduler", "optimizer", "flash_attention", "special_tokens",
        "wandb_project", "base_model_config", "model_type", "tokenizer_type", "bf16", "fp16", "tf32")
AUTO_NOTE = "bf16 where the GPU has it, else fp16 (resolve_dtype: fp16 when `fp16` is unset), on the CPU too"


def recognise(doc: Document) -> int:
    root = mapping_root(doc)
    if root is None or "base_model" not in root.value or "task" in root.value:
        return 0
    hits = sum(1 for key in KEYS if key in root.value)
    return 10 + hits if hits else 0


def read(doc: Document) -> List[Setting]:
    root = mapping_root(doc)
    if root is None:
        return []
    precision = _precision(doc, root)
    found = [precision, default(doc, "device", "auto", "cuda if available", TOOL, "device")]
    found += _weights(doc, root)
    found += _adapter(doc, root)
    return found


def _on(root: Node, key: str) -> Optional[Node]:
    node = root.get(key)
    return node if node is not None and node.value is True else None


def _precision(doc: Document, root: Node) -> Setting:
    """What axolotl hands accelerate (trainer.py L685-692): fp8, else bf16 (true, or auto
    on a bf16 GPU), else fp16, else fp32. `bf16` defaults to "auto" (config.py L559-564)."""
    fp8, bf16, fp16 = _on(root, "fp8"), root.get("bf16"), _on(root, "fp16")
    if fp8 is not None:
        return setting(doc, fp8, "precision", "fp8", TOOL, "fp8", note="TorchAO float8 training")
    if bf16 is not None and (bf16.value is True or bf16.value == "full"):
        return setting(doc, bf16, "precision", "bf16", TOOL, "bf16")
    if fp16 is not None:
        return setting(doc, fp16, "precision", "fp16", TOOL, "fp16")
    if bf16 is not None and bf16.value == "auto":
        return setting(doc, bf16, "precision", "auto", TOOL, "bf16", note=AUTO_NOTE)
    if bf16 is not None and bf16.value is False:
        return setting(doc, bf16, "precision", "fp32", TOOL, "bf16")
    return default(doc, "precision", "auto", "auto", TOOL, "bf16", note=AUTO_NOTE)


def _weights(doc: Document, root: Node) -> List[Setting]:
    """The dtype the base model is loaded in (resolve_dtype L191-196): bf16 for `bf16`
    or `bfloat16`, else fp16 for `fp16` or `float16` (no AMP); then a bitsandbytes base:
    `load_in_8bit` (LoRA) or `load_in_4bit` (QLoRA, nf4: loaders/model.py L712-719, L740-742)."""
    found: List[Setting] = []
    bf16 = root.get("bf16")
    loaded = [(bf16 if bf16 is not None and (bf16.value is True or bf16.value == "full") else None, "bf16", "bf16"),
              (_on(root, "bfloat16"), "bfloat16", "bf16"), (_on(root, "fp16"), "fp16", "fp16"), (_on(root, "float16"), "float16", "fp16")]
    for node, key, dtype in loaded:
        if node is not None:
            note = "axolotl loads the model in %s" % dtype
            if key == "float16" and (bf16 is None or bf16.value == "auto"):
                note += " (bf16 instead where `bf16: auto` finds a bf16 GPU)"
            found.append(setting(doc, node, "weight_dtype", dtype, TOOL, key, part="model", note=note))
            break
    for key, dtype in (("load_in_8bit", "int8"), ("load_in_4bit", "nf4")):
        node = _on(root, key)
        if node is not None:
            found.append(setting(doc, node, "weight_dtype", dtype, TOOL, key, part="model", note="bitsandbytes %s base" % dtype))
    return found


def _adapter(doc: Document, root: Node) -> List[Setting]:
    """`adapter: lora|qlora` (QLoRA is LoRA on the 4-bit base it requires, peft.py L222-223);
    none means full fine-tuning. `peft_use_dora` (peft.py L89) turns on DoRA."""
    found: List[Setting] = []
    node = root.get("adapter")
    if node is None or node.value is None:
        found.append(default(doc, "adapter", "full", None, TOOL, "adapter") if node is None else setting(doc, node, "adapter", "full", TOOL, "adapter"))
    elif isinstance(node.value, str):
        kind = node.value.strip().lower()
        found.append(setting(doc, node, "adapter", "lora" if kind in ("lora", "qlora") else kind, TOOL, "adapter",
                             note="QLoRA: LoRA on a 4-bit base" if kind == "qlora" else ""))
    dora = root.get("peft_use_dora")
    if dora is not None:
        found.append(setting(doc, dora, "dora", dora.value is True, TOOL, "peft_use_dora"))
    else:
        found.append(default(doc, "dora", False, None, TOOL, "peft_use_dora"))
    return found


def label(doc: Document) -> str:
    return "axolotl config"


# -- writing (CONFIG-FORMATS.md "axolotl", Edits): precision is a set of booleans. fp32 is
# `bf16: false` (written, since an absent bf16 is "auto", which trains in fp16 without a bf16
# GPU) with fp16 and fp8 off; bf16 is `bf16: true` with fp16 off; fp16 the reverse.
FULL_DTYPES = {short: TORCH_DTYPE[short] for short in ("bf16", "fp16")}  # the keys bfloat16: / float16: load the whole model so (no AMP)


def write(doc: Document, found: Setting, value: Any) -> List[Change]:
    root = doc.root
    if found.name == "precision" or (found.name == "weight_dtype" and found.key in ("bf16", "fp16")):
        return _precision_changes(root, value)
    if found.name == "weight_dtype" and found.key in FULL_DTYPES.values() and value in ("fp32", "bf16", "fp16"):
        changes = [Change((key,), False, key) for key in FULL_DTYPES.values() if _on(root, key) and key != FULL_DTYPES.get(value)]
        if value in FULL_DTYPES:
            changes.append(Change((FULL_DTYPES[value],), True, FULL_DTYPES[value]))
        return changes
    if found.name == "weight_dtype" and found.key in ("load_in_8bit", "load_in_4bit") and value in ("fp32", "bf16", "fp16"):
        # no bitsandbytes base: the model loads in the precision's dtype; QLoRA needs the
        # 4-bit base (schemas/peft.py L222-223), so it becomes plain LoRA
        changes = [Change((found.key,), False, found.key)]
        adapter = root.get("adapter")
        if adapter is not None and isinstance(adapter.value, str) and adapter.value.strip().lower() == "qlora":
            changes.append(Change(("adapter",), "lora", "adapter"))
        return changes
    if found.name == "dora" and isinstance(value, bool):
        return [Change(setting_path(doc, found), value, "peft_use_dora")]
    if found.name == "device":
        raise Unwritable("axolotl has no training-device key (device_map is for loading)")
    raise Unwritable("envdoctor does not write axolotl's %s as %s" % (found.key, value))


def _precision_changes(root: Node, value: Any) -> List[Change]:
    if value not in ("fp32", "bf16", "fp16"):
        raise Unwritable("envdoctor writes axolotl's precision as fp32, bf16 or fp16, not %s" % value)
    changes = [Change(("fp8",), False, "fp8")] if _on(root, "fp8") else []
    changes.append(Change(("bf16",), value == "bf16", "bf16"))
    if value == "fp16":
        changes.append(Change(("fp16",), True, "fp16"))
    elif _on(root, "fp16"):
        changes.append(Change(("fp16",), False, "fp16"))
    return changes


FORMATS = (Format(tool=TOOL, syntaxes=("yaml",), recognise=recognise, read=read, label=label, write=write),)
