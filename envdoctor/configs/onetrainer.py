"""OneTrainer's JSON configs → Settings.

Two kinds of file: saved configs (`python scripts/train.py --config-path FILE`), which
carry `"__version"` and every key, and presets (`training_presets/*.json`), which carry
only the keys that differ from TrainConfig's defaults, so a missing key means the
default. Facts below are read from github.com/Nerogar/OneTrainer at
23df3832e8f213d64c337e39f9365ba46e99fed0 (`OT/...` = that tree), unless another
commit is named.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from envdoctor.configs.document import Document, Node
from envdoctor.configs.reading import Change, Format, Unwritable, default, setting, setting_path, spellings, tool_word
from envdoctor.target.intent import Setting

TOOL = "onetrainer"

# DataType spellings (OT/modules/util/enum/DataType.py L6-21) → envdoctor's dtypes.
# FLOAT_8, INT_8, NFLOAT_4 and the W8A8 forms are what is_quantized() lists; TFLOAT_32
# is float32 with TF32 matmuls (torch_dtype() maps it to torch.float32).
DTYPES: Dict[str, str] = {
    "FLOAT_32": "fp32", "TFLOAT_32": "fp32", "FLOAT_16": "fp16", "BFLOAT_16": "bf16",
    "FLOAT_8": "fp8", "INT_8": "int8", "NFLOAT_4": "nf4",
    "FLOAT_W8A8": "w8a8", "INT_W8A8": "w8a8", "FLOAT_W8A8_COMPRESSED": "w8a8", "INT_W8A8_COMPRESSED": "w8a8",
    "GGUF": "gguf", "GGUF_A8_FLOAT": "gguf", "GGUF_A8_INT": "gguf",
}
NONE = "NONE"  # a part's "use the model's default weight_dtype" (before version 10)

# The model parts, in TrainConfig.weight_dtypes() order (OT/modules/util/config/TrainConfig.py L873-891).
PARTS = ("unet", "prior", "transformer", "unconditional_transformer", "text_encoder", "text_encoder_2",
         "text_encoder_3", "text_encoder_4", "vae", "effnet_encoder", "decoder", "decoder_text_encoder", "decoder_vqgan")
# The parts whose "train" flag OneTrainer reads (`config.<part>.train` in OT/modules); the
# others' flags (vae, decoder, ...) stay at their default and mean nothing.
TRAINABLE = ("unet", "prior", "transformer", "text_encoder", "text_encoder_2", "text_encoder_3", "text_encoder_4")
# Saved configs list every part, real or not; these are the parts each model type has
# (ModelType.model_parts(), OT/modules/util/enum/ModelType.py L286-317).
_SD = ("unet", "text_encoder", "vae")
_SD3 = ("transformer", "text_encoder", "text_encoder_2", "text_encoder_3", "vae")
_SDXL = ("unet", "text_encoder", "text_encoder_2", "vae")
_ONE_TE = ("transformer", "text_encoder", "vae")
_TWO_TE = ("transformer", "text_encoder", "text_encoder_2", "vae")
MODEL_PARTS: Dict[str, Tuple[str, ...]] = {
    "STABLE_DIFFUSION_15": _SD, "STABLE_DIFFUSION_15_INPAINTING": _SD, "STABLE_DIFFUSION_20": _SD,
    "STABLE_DIFFUSION_20_BASE": _SD, "STABLE_DIFFUSION_20_INPAINTING": _SD, "STABLE_DIFFUSION_20_DEPTH": _SD,
    "STABLE_DIFFUSION_21": _SD, "STABLE_DIFFUSION_21_BASE": _SD,
    "STABLE_DIFFUSION_3": _SD3, "STABLE_DIFFUSION_35": _SD3,
    "STABLE_DIFFUSION_XL_10_BASE": _SDXL, "STABLE_DIFFUSION_XL_10_BASE_INPAINTING": _SDXL,
    "WUERSTCHEN_2": ("prior", "text_encoder", "effnet_encoder", "decoder", "decoder_text_encoder", "decoder_vqgan"),
    "STABLE_CASCADE_1": ("prior", "text_encoder", "effnet_encoder", "decoder", "decoder_vqgan"),
    "PIXART_ALPHA": _ONE_TE, "PIXART_SIGMA": _ONE_TE, "FLUX_DEV_1": _TWO_TE, "FLUX_FILL_DEV_1": _TWO_TE,
    "FLUX_2": _ONE_TE, "ANIMA": _ONE_TE, "SANA": _ONE_TE, "HUNYUAN_VIDEO": _TWO_TE,
    "HI_DREAM_FULL": ("transformer", "text_encoder", "text_encoder_2", "text_encoder_3", "text_encoder_4", "vae"),
    "CHROMA_1": _ONE_TE, "QWEN": _ONE_TE, "KREA_2": _ONE_TE, "Z_IMAGE": _ONE_TE, "ERNIE": _ONE_TE,
    "IDEOGRAM_4": ("transformer", "text_encoder", "unconditional_transformer", "vae"),
}
TRAINING_METHODS = ("FINE_TUNE", "LORA", "EMBEDDING", "FINE_TUNE_VAE")  # OT/modules/util/enum/TrainingMethod.py
# PeftType (OT/modules/util/enum/ModelType.py L320-324) → envdoctor's adapters
PEFT_TYPES = {"LORA": "lora", "LOHA": "loha", "LOKR": "lokr", "OFT_2": "oft"}

# Since version 10 every part carries its own weight_dtype (default FLOAT_32,
# OT/.../TrainConfig.py L305). Before, a part's default was NONE, meaning the top-level
# "weight_dtype" (default FLOAT_32), which migration 9 (L808-826) copies into such parts:
# github.com/Nerogar/OneTrainer/blob/630714bb233c91c14d3862e0125c160e52701c01^/modules/util/config/TrainConfig.py
# L257 and L908 ("Simplify weight dtype settings", 630714bb).
PER_PART_VERSION = 10

# Keys only OneTrainer writes, to recognise a preset that has just a few of them.
_ENUM_KEYS = {"train_dtype": DTYPES, "fallback_train_dtype": DTYPES, "weight_dtype": DTYPES, "output_dtype": DTYPES,
              "lora_weight_dtype": DTYPES, "embedding_weight_dtype": DTYPES, "training_method": TRAINING_METHODS,
              "model_type": MODEL_PARTS, "peft_type": PEFT_TYPES}
_NAME_KEYS = ("base_model_name", "output_model_destination", "output_model_format", "train_device", "temp_device",
              "lora_rank", "lora_alpha", "lora_decompose", "layer_filter_preset", "timestep_distribution", "concept_file_name",
              "sample_definition_file_name", "latent_caching", "lokr_weight_decompose")


def recognise(doc: Document) -> int:
    """20 and more: a saved config; 10 and more: a preset whose values are OneTrainer's enum
    spellings (FLOAT_16, LORA, STABLE_DIFFUSION_XL_10_BASE); a little for key names alone."""
    root = doc.root
    if root.kind != "mapping":
        return 0
    typed = sum(1 for key, allowed in _ENUM_KEYS.items() if _text(root.get(key)) in allowed)
    typed += sum(1 for part in PARTS if _text(root.get(part, "weight_dtype")) in (*DTYPES, NONE))
    named = sum(1 for key in _NAME_KEYS if key in root.value)
    version = root.get("__version")
    if version is not None and isinstance(version.value, int) and not isinstance(version.value, bool) and typed + named:
        return 20 + typed + named
    if typed:
        return 10 + typed + named
    return min(named, 4) if named >= 2 else 0


def label(doc: Document) -> str:
    version = _version(doc)
    return "OneTrainer preset" if version is None else "OneTrainer config (__version %d)" % version


def read(doc: Document) -> List[Setting]:
    root = doc.root
    out: List[Setting] = []
    out += _precision(doc, root)
    out += _device(doc, root)
    for part in _parts(doc):
        out += _weight(doc, part)
    out += _trained(doc)
    out += _adapter(doc, root)
    return out


def _trained(doc: Document) -> List[Setting]:
    """Each trainable part's "train" flag; absent, its default True (OT/.../TrainConfig.py
    L1112-1175), for the parts of the model type (or those written, when it is not named)."""
    root = doc.root
    own = MODEL_PARTS.get(_text(root.get("model_type")) or "")
    parts = [p for p in TRAINABLE if (p in own if own is not None else getattr(root.get(p), "kind", None) == "mapping")]
    out: List[Setting] = []
    for part in parts:
        train, key = _part_value(root, part, "train")
        if train is None:
            out.append(default(doc, "train", True, True, TOOL, part + ".train", part=part))
        elif isinstance(train.value, bool):
            out.append(setting(doc, train, "train", train.value, TOOL, key, part=part))
    return out


def _precision(doc: Document, root: Node) -> List[Setting]:
    # train_dtype: default FLOAT_16 (OT/.../TrainConfig.py L1074), so a preset without it trains in fp16
    node = root.get("train_dtype")
    if node is None:
        return [default(doc, "precision", "fp16", "FLOAT_16", TOOL, "train_dtype")]
    dtype = _dtype(node)
    return [] if dtype is None else [setting(doc, node, "precision", dtype, TOOL, "train_dtype")]


def _device(doc: Document, root: Node) -> List[Setting]:
    # train_device: default accelerate's device type (OT/.../TrainConfig.py L1072,
    # modules/util/torch_util.py L13); temp_device is where offloaded weights wait, not the training device.
    node = root.get("train_device")
    if node is None:
        return [default(doc, "device", "auto", "cuda or cpu, whichever accelerate finds", TOOL, "train_device")]
    if isinstance(node.value, str) and node.value.strip():
        return [setting(doc, node, "device", node.value.strip().lower(), TOOL, "train_device")]
    return []


def _parts(doc: Document) -> List[str]:
    """The parts this file is about: those it writes (of its model type, when it names one);
    with an inherited top-level weight_dtype, every part of the model type."""
    root = doc.root
    own = MODEL_PARTS.get(_text(root.get("model_type")) or "")
    present = [p for p in PARTS if getattr(root.get(p), "kind", None) == "mapping" or root.get(p + "_weight_dtype") is not None]
    if own is None:
        return present
    inherited = _inherits(doc) and _dtype(root.get("weight_dtype")) is not None
    return [p for p in PARTS if p in own and (p in present or inherited)]


def _inherits(doc: Document) -> bool:
    """Whether a part's NONE (or absent) weight_dtype means the top-level one: before version 10, and in presets."""
    version = _version(doc)
    return version is None or version < PER_PART_VERSION


# The first configs (2023, before the per-part objects) wrote flat keys: `unet_weight_dtype`,
# `train_unet`, `text_encoder_weight_dtype`, `train_text_encoder` ... (OneTrainer
# modules/util/args/TrainArgs.py of that time; the presets still in the wild carry them).
def _part_value(root: Node, part: str, name: str) -> Tuple[Optional[Node], str]:
    """A part's `weight_dtype` / `train`: in its object, else under the flat legacy key."""
    node = root.get(part, name)
    if node is not None:
        return node, "%s.%s" % (part, name)
    flat = "%s_%s" % (part, name) if name == "weight_dtype" else "%s_%s" % (name, part)
    node = root.get(flat)
    return node, flat if node is not None else "%s.%s" % (part, name)  # absent: where it goes today


def _weight(doc: Document, part: str) -> List[Setting]:
    root = doc.root
    own, key = _part_value(root, part, "weight_dtype")
    dtype = _dtype(own)
    if own is not None and dtype is not None:
        return [setting(doc, own, "weight_dtype", dtype, TOOL, key, part=part)]
    if own is not None and _text(own) != NONE:
        return []  # not a DataType: OneTrainer would refuse the file; nothing to say about it
    top = root.get("weight_dtype")
    inherited = _dtype(top)
    if _inherits(doc) and top is not None and inherited is not None:
        note = "%s is %s: the top-level weight_dtype applies" % (key, "NONE" if own is not None else "absent")
        return [setting(doc, top, "weight_dtype", inherited, TOOL, "weight_dtype", part=part, note=note)]
    if own is not None:  # NONE with no top-level weight_dtype: that one's default, FLOAT_32
        return [setting(doc, own, "weight_dtype", "fp32", TOOL, key, part=part, note="NONE: the model default weight_dtype, FLOAT_32")]
    return [default(doc, "weight_dtype", "fp32", "FLOAT_32", TOOL, key, part=part)]


def _adapter(doc: Document, root: Node) -> List[Setting]:
    # training_method default FINE_TUNE (OT/.../TrainConfig.py L1014); peft_type default LORA (L1229);
    # DoRA: lora_decompose (L1233) for LORA, lokr_weight_decompose (L1249) for LOKR
    # (OT/modules/module/LoRAModule.py L874-916: no weight decomposition for LOHA and OFT_2).
    method = root.get("training_method")
    if method is None:
        return [default(doc, "adapter", "full", "FINE_TUNE", TOOL, "training_method")]
    if _text(method) in ("FINE_TUNE", "FINE_TUNE_VAE"):
        return [setting(doc, method, "adapter", "full", TOOL, "training_method")]
    if _text(method) != "LORA":
        return []  # EMBEDDING trains new token embeddings only: no adapter on the model's weights
    peft = root.get("peft_type")
    peft_type = _text(peft)
    out: List[Setting] = []
    if peft is None:
        adapter = "lora"
        out.append(setting(doc, method, "adapter", adapter, TOOL, "training_method", note="peft_type absent: LORA"))
    elif peft_type is not None and peft_type in PEFT_TYPES:
        adapter = PEFT_TYPES[peft_type]
        out.append(setting(doc, peft, "adapter", adapter, TOOL, "peft_type"))
    else:
        return []
    dora_key = {"lora": "lora_decompose", "lokr": "lokr_weight_decompose"}.get(adapter)
    if dora_key is not None:
        dora = root.get(dora_key)
        if dora is None:
            out.append(default(doc, "dora", False, False, TOOL, dora_key))
        elif isinstance(dora.value, bool):
            out.append(setting(doc, dora, "dora", dora.value, TOOL, dora_key))
    return out


def _text(node: Optional[Node]) -> Optional[str]:
    return node.value if node is not None and isinstance(node.value, str) else None


def _dtype(node: Optional[Node]) -> Optional[str]:
    """envdoctor's dtype for a DataType spelling; None for NONE, absent or anything else."""
    text = _text(node)
    return None if text is None else DTYPES.get(text)


def _version(doc: Document) -> Optional[int]:
    node = doc.root.get("__version")
    if node is None or not isinstance(node.value, int) or isinstance(node.value, bool):
        return None
    return node.value


# -- writing (CONFIG-FORMATS.md "OneTrainer", Edits): envdoctor's dtypes in DataType
# spelling (FLOAT_32, not TFLOAT_32: the first of DTYPES), train_device a plain string.
WRITE_DTYPES = spellings(DTYPES)


def write(doc: Document, found: Setting, value: Any) -> List[Change]:
    path = setting_path(doc, found)
    if found.name == "precision":
        return [Change(path, tool_word(WRITE_DTYPES, value, "OneTrainer's train_dtype"), "train_dtype")]
    if found.name == "weight_dtype":
        if found.default and getattr(doc.root.get(*path[:-1]), "kind", None) != "mapping":
            raise Unwritable("this OneTrainer file has no %s object to give a weight_dtype" % found.part)
        return [Change(path, tool_word(WRITE_DTYPES, value, "OneTrainer's weight_dtype"), found.key)]
    if found.name == "device" and isinstance(value, str) and (value in ("cpu", "cuda", "mps") or value.startswith("cuda:")):
        return [Change(path, value, "train_device")]
    if found.name == "dora" and isinstance(value, bool):
        return [Change(path, value, found.key)]
    raise Unwritable("envdoctor does not write OneTrainer's %s as %s" % (found.key, value))


FORMATS: Tuple[Format, ...] = (Format(tool=TOOL, syntaxes=("json",), recognise=recognise, read=read, label=label, write=write),)
