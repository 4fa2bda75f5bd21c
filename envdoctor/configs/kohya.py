"""kohya's configs → Settings: sd-scripts' TOML, the kohya_ss GUI's saved JSON and its config.toml.

- sd-scripts `--config_file X.toml` (github.com/kohya-ss/sd-scripts at
  48d368fa557731ad0488c07304dfeba8c07910eb, `SS/...` below): the keys are the argparse
  option names, and the tables are only for the reader's eyes. read_config_from_file
  (SS/library/train_util.py L4748-4760) copies the top-level keys and then each table's
  keys into one namespace, in file order, so a key written in two tables counts as the
  one read last; a table inside a table is not opened. This reader takes that same
  value (Document.flat, the last entry at depth 0 or 1) and notes where it shadows another.
- kohya_ss GUI (github.com/bmaltais/kohya_ss at 45088f04af78e11cec5407ff4652ea3ed2c14422,
  `GUI/...`): its saved configs and presets are flat JSON with the same option names
  plus "LoRA_type" and "dora_wd"; its config.toml holds the GUI's defaults in tables
  ([accelerate_launch] mixed_precision, [advanced] fp8_base, ...).

- LoRA Easy Training Scripts (github.com/derrian-distro/LoRA_Easy_Training_Scripts, its UI's
  main_ui_files/MainUI.py saves `{group: {"args": {...}, "dataset_args": {...}}}`): the sd-scripts
  options sit in `[general_args.args]`, `[network_args.args]`, ... and its backend
  (github.com/derrian-distro/LoRA_Easy_Training_scripts_Backend utils/validation.py,
  validate_args) merges every group's args into one namespace, skipping empty values, turns the
  `network_args` table into sd-scripts' "key=value" strings, takes `algo` as lycoris.kohya and
  defaults network_module to networks.lora.

`save_precision` is only the dtype of the saved file, and model paths that say "fp16"
are names: neither is a setting.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from envdoctor.configs.document import Document, Key, Node
from envdoctor.configs.reading import (
    Change,
    Format,
    Unwritable,
    default,
    path_at,
    precision_spellings,
    precision_word,
    setting,
    setting_path,
    tool_word,
)
from envdoctor.target.intent import TOOL_LABELS, Setting, whose

SCRIPTS = "kohya"
GUI = "kohya_ss"
EASY = "kohya_easy"  # LoRA Easy Training Scripts: sd-scripts' options in its own tables

# A key's value and its key path as written ("training_arguments.mixed_precision"), or None.
Lookup = Callable[[str], Optional[Tuple[str, Node]]]

# mixed_precision: sd-scripts "no" | "fp16" | "bf16", default "no" (SS/library/train_util.py
# L3981-3986; passed to Accelerator explicitly, L5494-5496, so accelerate's config does not
# change it); the GUI's dropdown adds "fp8" (GUI/kohya_gui/class_accelerate_launch.py L21-26).
PRECISIONS = ("no", "fp16", "bf16", "fp8")  # kohya's own spellings; reading.precision_word translates them

# network_module → adapter. sd-scripts' own modules (SS/networks/): lora*, dylora, lora_fa are
# LoRA, oft* is OFT; the kohya_ss GUI also names networks.loha / networks.lokr
# (GUI/kohya_gui/lora_gui.py L1951, L1963).
_MODULE_PREFIXES = (("networks.lora", "lora"), ("networks.dylora", "lora"), ("networks.oft", "oft"),
                    ("networks.loha", "loha"), ("networks.lokr", "lokr"))
LYCORIS = "lycoris.kohya"
# LyCORIS `algo=` (github.com/KohakuBlueleaf/LyCORIS lycoris/kohya.py L47 at
# f49d30d670591ec8841d241d79aaa8449b30a715: default "lora", lower-cased); ia3 and glora
# have no name in envdoctor's vocabulary.
ALGOS = {"lora": "lora", "locon": "lora", "dylora": "lora", "loha": "loha", "lokr": "lokr",
         "diag-oft": "oft", "boft": "oft", "full": "full"}
# The adapters LyCORIS decomposes weights for (dora_wd; LyCORIS docs/Network-Args.md)
DECOMPOSABLE = ("lora", "loha", "lokr")


def _module_adapter(name: str) -> Optional[str]:
    """network_module → adapter, for sd-scripts' own modules and the GUI's."""
    return next((adapter for prefix, adapter in _MODULE_PREFIXES if name.startswith(prefix)), None)


def _str_bool(value: Any) -> bool:
    """How LyCORIS reads a network arg as a flag (str_bool, lycoris/utils/__init__.py L44-45): anything but "false"."""
    return str(value).lower() != "false"

# The GUI's "LoRA_type" choices (GUI/kohya_gui/lora_gui.py L2719-2744) → adapter; iA3 and GLoRA have none.
LORA_TYPES = {
    "Standard": "lora", "LoCon": "lora", "Kohya LoCon": "lora", "LyCORIS/LoCon": "lora", "Kohya DyLoRA": "lora",
    "LyCORIS/DyLoRA": "lora", "LoRA-FA": "lora", "Flux1": "lora", "Anima": "lora", "HunyuanImage-2.1": "lora",
    "Lumina": "lora", "Kohya LoHa": "loha", "LyCORIS/LoHa": "loha", "Kohya LoKr": "lokr", "LyCORIS/LoKr": "lokr",
    "Flux1 OFT": "oft", "LyCORIS/BOFT": "oft", "LyCORIS/Diag-OFT": "oft", "LyCORIS/Native Fine-Tuning": "full",
}
# The types whose network_args the GUI builds with dora_wd={dora_wd} (GUI/kohya_gui/lora_gui.py L1841-1852).
DORA_LORA_TYPES = ("LoCon", "LyCORIS/LoCon", "LyCORIS/LoHa", "LyCORIS/LoKr")

# Recognition. sd-scripts option names a training TOML is made of (not the dataset config's).
_SCRIPT_KEYS = frozenset((
    "pretrained_model_name_or_path", "network_module", "network_dim", "network_alpha", "network_args", "network_weights",
    "network_train_unet_only", "network_train_text_encoder_only", "output_dir", "output_name", "save_model_as",
    "save_precision", "save_every_n_epochs", "mixed_precision", "full_fp16", "full_bf16", "fp8_base", "fp8_base_unet",
    "train_data_dir", "dataset_config", "train_batch_size", "max_train_epochs", "max_train_steps", "optimizer_type",
    "optimizer_args", "lr_scheduler", "learning_rate", "unet_lr", "text_encoder_lr", "cache_latents", "xformers", "sdpa",
    "gradient_checkpointing", "gradient_accumulation_steps", "no_half_vae", "v2", "v_parameterization", "clip_skip",
    "logging_dir", "seed", "max_data_loader_n_workers", "persistent_data_loader_workers", "min_snr_gamma", "noise_offset",
))
_SCRIPT_ONLY = ("pretrained_model_name_or_path", "network_module")
# Keys only the GUI's JSON has (its widget names; sd-scripts has no such options).
_GUI_KEYS = frozenset((
    "LoRA_type", "LyCORIS_preset", "model_list", "additional_parameters", "lr_warmup", "epoch", "max_resolution",
    "stop_text_encoder_training", "sdxl", "sdxl_no_half_vae", "flux1_checkbox", "sd3_checkbox", "train_on_input",
    "dora_wd", "num_cpu_threads_per_process", "extra_accelerate_launch_args", "save_as_bool", "use_cp",
))
# config.toml's tables (GUI/config example.toml).
_GUI_TABLES = ("accelerate_launch", "advanced", "basic", "folders", "configuration", "dataset_preparation", "wd14_caption")


# -- sd-scripts TOML

def recognise_scripts(doc: Document) -> int:
    if doc.root.kind != "mapping" or _gui_tables(doc) >= 2 or doc.root.get("accelerate_launch") is not None:
        return 0
    keys = [k for k in _SCRIPT_KEYS if _flat(doc, k) is not None]
    if any(k in keys for k in _SCRIPT_ONLY) or len(keys) >= 3:
        return 10 + len(keys)
    return 5 if len(keys) == 2 else 0


def read_scripts(doc: Document) -> List[Setting]:
    def lookup(key: str) -> Optional[Tuple[str, Node]]:
        return _flat(doc, key)

    out = _precision(doc, SCRIPTS, lookup, "mixed_precision", default_raw="no")
    out += _weights(doc, SCRIPTS, lookup)
    out += _trained(doc, lookup)
    out += _network(doc, lookup)
    return out


def _flat(doc: Document, key: str) -> Optional[Tuple[str, Node]]:
    """The value sd-scripts reads for `key` (the last one in file order at depth 0 or 1), with
    its key path ("training_arguments.mixed_precision")."""
    found = [(path, node) for path, node in doc.flat.get(key, ()) if len(path) <= 1]
    if not found:
        return None
    path, node = found[-1]
    return ".".join(path + (key,)), node


def _shadowed(doc: Document, key: str) -> str:
    """A note naming the earlier places of a key written in several tables."""
    found = [(path, node) for path, node in doc.flat.get(key, ()) if len(path) <= 1]
    if len(found) < 2:
        return ""
    places = ", ".join("%s line %d" % ("[%s]" % path[0] if path else "top level", node.line) for path, node in found[:-1])
    return "also set at %s; sd-scripts reads the tables in order, so the last one counts" % places


def _trained(doc: Document, lookup: Lookup, tool: str = SCRIPTS) -> List[Setting]:
    # network_train_unet_only / network_train_text_encoder_only (SS/train_network.py L1809-1815)
    out: List[Setting] = []
    for key, trained, frozen in (("network_train_unet_only", "unet", "text_encoder"), ("network_train_text_encoder_only", "text_encoder", "unet")):
        found = _on(lookup, key)
        if found is not None:
            out.append(setting(doc, found[1], "train", True, tool, found[0], part=trained))
            out.append(setting(doc, found[1], "train", False, tool, found[0], part=frozen))
    return out


def _network(doc: Document, lookup: Lookup) -> List[Setting]:
    """adapter from network_module (and LyCORIS' algo=), dora from a `dora_wd=` string in
    network_args, the span being that string inside the array."""
    module = lookup("network_module")
    if module is None or not isinstance(module[1].value, str):
        return []  # no network: fine_tune.py / train_db.py, a full fine-tune; nothing this file says
    args = _network_args(lookup)
    name = module[1].value.strip()
    out: List[Setting] = []
    if name == LYCORIS:
        algo = args.get("algo")
        adapter = "lora" if algo is None else ALGOS.get(algo[2].strip('"').lower(), "")
        if algo is None:
            out.append(setting(doc, module[1], "adapter", adapter, SCRIPTS, module[0], note="no algo= in network_args: LyCORIS' default lora"))
        elif adapter:
            out.append(setting(doc, algo[1], "adapter", adapter, SCRIPTS, algo[0]))
        if adapter not in DECOMPOSABLE:
            return out
        # sd-scripts splits each "key=value" once and passes the strings on (SS/train_network.py L664-668)
        dora = args.get("dora_wd")
        if dora is not None:
            out.append(setting(doc, dora[1], "dora", _str_bool(dora[2]), SCRIPTS, dora[0]))
        else:
            out.append(default(doc, "dora", False, "False", SCRIPTS, "network_args.dora_wd"))
        return out
    adapter_name = _module_adapter(name)
    if adapter_name is not None:
        out.append(setting(doc, module[1], "adapter", adapter_name, SCRIPTS, module[0]))
    return out


def _network_args(lookup: Lookup) -> Dict[str, Tuple[str, Node, str]]:
    """network_args' "key=value" strings: key → (key path, the string's Node, value); the last wins."""
    found = lookup("network_args")
    if found is None or found[1].kind != "sequence":
        return {}
    out: Dict[str, Tuple[str, Node, str]] = {}
    for item in found[1].value:
        if isinstance(item.value, str) and "=" in item.value:
            key, value = item.value.split("=", 1)
            out[key] = (found[0], item, value)
    return out


# -- what sd-scripts and the GUI share

def _precision(doc: Document, tool: str, lookup: Lookup, key: str, default_raw: Optional[str]) -> List[Setting]:
    found = lookup(key.rsplit(".", 1)[-1])
    if found is None:
        if default_raw is None:
            return []
        return [default(doc, "precision", precision_word(default_raw), default_raw, tool, key)]
    raw = found[1].value
    if not isinstance(raw, str) or raw.strip().lower() not in PRECISIONS:
        return []
    return [setting(doc, found[1], "precision", precision_word(raw), tool, found[0], note=_note(doc, tool, key))]


def _weights(doc: Document, tool: str, lookup: Lookup) -> List[Setting]:
    """The base model's weights: fp8 with fp8_base (U-Net and, without fp8_base_unet, the text
    encoders) or fp8_base_unet (SS/train_network.py L829-839); otherwise the whole U-Net in
    fp16 / bf16 with full_fp16 / full_bf16 (L814-825)."""
    out: List[Setting] = []
    unet = [(_on(lookup, "fp8_base_unet") or _on(lookup, "fp8_base"), "fp8"), (_on(lookup, "full_fp16"), "fp16"), (_on(lookup, "full_bf16"), "bf16")]
    for found, dtype in unet:
        if found is not None:
            out.append(setting(doc, found[1], "weight_dtype", dtype, tool, found[0], part="unet", note=_note(doc, tool, found[0])))
            break
    fp8_text = _on(lookup, "fp8_base")
    if fp8_text is not None and _on(lookup, "fp8_base_unet") is None:
        out.append(setting(doc, fp8_text[1], "weight_dtype", "fp8", tool, fp8_text[0], part="text_encoder", note=_note(doc, tool, fp8_text[0])))
    return out


def _on(lookup: Lookup, key: str) -> Optional[Tuple[str, Node]]:
    """A flag that is on, as sd-scripts tests it (`if args.fp8_base:`: Python truth)."""
    found = lookup(key)
    return found if found is not None and found[1].kind == "scalar" and bool(found[1].value) else None


def _note(doc: Document, tool: str, key: str) -> str:
    return _shadowed(doc, key.rsplit(".", 1)[-1]) if tool == SCRIPTS and doc.syntax == "toml" else ""


# -- kohya_ss GUI: saved JSON

def recognise_gui_json(doc: Document) -> int:
    root = doc.root
    if root.kind != "mapping":
        return 0
    if isinstance(getattr(root.get("LoRA_type"), "value", None), str):
        return 20
    gui = sum(1 for key in _GUI_KEYS if key in root.value)
    scripts = sum(1 for key in _SCRIPT_KEYS if key in root.value)
    if gui >= 2 and scripts >= 2:
        return 10 + gui + min(scripts, 5)
    # sd-scripts' own option names as JSON (a notebook's parameter file): the GUI opens these by name too
    return 5 + min(scripts, 5) if scripts >= 4 and any(key in root.value for key in _SCRIPT_ONLY) else 0


def read_gui_json(doc: Document) -> List[Setting]:
    root = doc.root

    def lookup(key: str) -> Optional[Tuple[str, Node]]:
        node = root.get(key)
        return None if node is None else (key, node)

    # mixed_precision absent: the GUI keeps whatever its form holds (config.toml's value), not a file default
    out = _precision(doc, GUI, lookup, "mixed_precision", default_raw=None)
    out += _weights(doc, GUI, lookup)
    lora_type = root.get("LoRA_type")
    kind = lora_type.value if lora_type is not None and isinstance(lora_type.value, str) else None
    if lora_type is not None and kind in LORA_TYPES:
        out.append(setting(doc, lora_type, "adapter", LORA_TYPES[kind], GUI, "LoRA_type"))
    if kind in DORA_LORA_TYPES:
        dora = root.get("dora_wd")
        if dora is None:
            out.append(default(doc, "dora", False, False, GUI, "dora_wd"))  # the checkbox's default (GUI/kohya_gui/lora_gui.py L2870-2871)
        elif isinstance(dora.value, bool):
            out.append(setting(doc, dora, "dora", dora.value, GUI, "dora_wd"))
    return out


def label_gui_json(doc: Document) -> str:
    lora_type = doc.root.get("LoRA_type")
    if lora_type is not None and isinstance(lora_type.value, str):
        return "kohya_ss GUI config (LoRA_type %s)" % lora_type.value
    if not any(key in doc.root.value for key in _GUI_KEYS):
        return "kohya sd-scripts options as JSON"
    return "kohya_ss GUI config"


# -- LoRA Easy Training Scripts: the sd-scripts options in `[<group>_args.args]` tables

def _easy_groups(doc: Document) -> List[str]:
    """The groups whose `args` table holds sd-scripts options (general_args, network_args, ...)."""
    return [name for name, node in doc.root.value.items()
            if name.endswith("_args") and node.kind == "mapping" and getattr(node.get("args"), "kind", None) == "mapping"]


def recognise_easy(doc: Document) -> int:
    if doc.root.kind != "mapping":
        return 0
    groups = _easy_groups(doc)
    return 30 + len(groups) if len(groups) >= 2 and "general_args" in groups else 0


def _easy_lookup(doc: Document) -> Lookup:
    def lookup(key: str) -> Optional[Tuple[str, Node]]:
        found = [("%s.args.%s" % (group, key), node) for group in _easy_groups(doc)
                 for node in (doc.root.get(group, "args", key),) if node is not None]
        return found[-1] if found else None  # the backend merges the groups in order
    return lookup


def read_easy(doc: Document) -> List[Setting]:
    lookup = _easy_lookup(doc)
    out = _precision(doc, EASY, lookup, "mixed_precision", default_raw="no")
    out += _weights(doc, EASY, lookup)
    out += _trained(doc, lookup, EASY)
    found = lookup("network_args")
    args = found[1] if found is not None and found[1].kind == "mapping" else None
    algo = args.get("algo") if args is not None else None
    module = lookup("network_module")
    if found is None or args is None or algo is None:  # networks.lora (the backend's default), or the module written
        name = module[1].value.strip() if module is not None and isinstance(module[1].value, str) else "networks.lora"
        adapter_name = _module_adapter(name)
        if adapter_name is not None:
            out.append(setting(doc, module[1], "adapter", adapter_name, EASY, module[0]) if module is not None
                       else default(doc, "adapter", adapter_name, name, EASY, "network_args.args.network_module"))
        return out
    adapter = ALGOS.get(str(algo.value).strip().lower(), "")
    if adapter:
        out.append(setting(doc, algo, "adapter", adapter, EASY, "%s.algo" % found[0]))
    if adapter in DECOMPOSABLE:
        dora = args.get("dora_wd")  # passed on as "dora_wd=<value>"
        if dora is not None:
            out.append(setting(doc, dora, "dora", _str_bool(dora.value), EASY, "%s.dora_wd" % found[0]))
        else:
            out.append(default(doc, "dora", False, "False", EASY, "network_args.args.network_args.dora_wd"))
    return out


def write_easy(doc: Document, found: Setting, value: Any) -> List[Change]:
    if found.name == "dora" and isinstance(value, bool) and not found.default:
        return [Change(setting_path(doc, found), value, found.key)]  # a value in the network_args table
    return _write(doc, EASY, _easy_lookup(doc), found, value)


# -- kohya_ss GUI: config.toml

def recognise_gui_toml(doc: Document) -> int:
    if doc.root.kind != "mapping":
        return 0
    tables = _gui_tables(doc)
    if getattr(doc.root.get("accelerate_launch"), "kind", None) == "mapping":
        return 20 + tables
    return 10 + tables if tables >= 2 else 0


def read_gui_toml(doc: Document) -> List[Setting]:
    root = doc.root
    table = {"mixed_precision": "accelerate_launch"}  # the others are in [advanced]

    def lookup(key: str) -> Optional[Tuple[str, Node]]:
        section = table.get(key, "advanced")
        node = root.get(section, key)
        return None if node is None else ("%s.%s" % (section, key), node)

    # absent: the dropdown's default "fp16" (GUI/kohya_gui/class_accelerate_launch.py L24)
    out = _precision(doc, GUI, lookup, "accelerate_launch.mixed_precision", default_raw="fp16")
    out += _weights(doc, GUI, lookup)
    return out


def _gui_tables(doc: Document) -> int:
    return sum(1 for name in _GUI_TABLES if getattr(doc.root.get(name), "kind", None) == "mapping")


# -- writing (CONFIG-FORMATS.md "kohya", Edits). mixed_precision in kohya's own words; the
# flags it couples (asserts in SS/train_network.py L813-834: full_fp16 needs "fp16",
# full_bf16 needs "bf16", fp8_base needs a mixed precision) follow it.
WRITE_PRECISIONS = {SCRIPTS: precision_spellings(("no", "fp16", "bf16")), GUI: precision_spellings(PRECISIONS),
                    EASY: precision_spellings(("no", "fp16", "bf16"))}
FULL = {"fp16": "full_fp16", "bf16": "full_bf16"}  # the whole U-Net in that dtype
FP8_FLAGS = ("fp8_base", "fp8_base_unet")


def write_scripts(doc: Document, found: Setting, value: Any) -> List[Change]:
    return _write(doc, SCRIPTS, lambda key: _flat(doc, key), found, value)


def write_gui_json(doc: Document, found: Setting, value: Any) -> List[Change]:
    root = doc.root

    def lookup(key: str) -> Optional[Tuple[str, Node]]:
        node = root.get(key)
        return None if node is None else (key, node)

    return _write(doc, GUI, lookup, found, value)


def write_gui_toml(doc: Document, found: Setting, value: Any) -> List[Change]:
    root = doc.root

    def lookup(key: str) -> Optional[Tuple[str, Node]]:
        section = "accelerate_launch" if key == "mixed_precision" else "advanced"
        node = root.get(section, key)
        return None if node is None else ("%s.%s" % (section, key), node)

    return _write(doc, GUI, lookup, found, value)


def _write(doc: Document, tool: str, lookup: Lookup, found: Setting, value: Any) -> List[Change]:
    path = setting_path(doc, found)
    if found.name == "precision":
        word = tool_word(WRITE_PRECISIONS[tool], value, "%s mixed_precision" % whose(tool))
        changes = [Change(path, word, found.key)]
        off = [*FULL.values(), *FP8_FLAGS] if value == "fp32" else [flag for dtype, flag in FULL.items() if dtype != value]
        changes += _flags_off(doc, lookup, off)
        if value in FULL:  # the U-Net that was held whole in the other half dtype is held in this one
            changes += [_flag_on(doc, lookup, FULL[value], next_to=flag) for flag in FULL.values() if flag != FULL[value] and _on(lookup, flag)]
        return changes
    if found.name == "weight_dtype" and value in ("fp32", "fp16", "bf16"):
        # fp8_base / full_fp16 / full_bf16 off; the U-Net whole in bf16 (fp16) only where the
        # mixed precision allows it (otherwise it stays in fp32 under autocast)
        flag = found.key.rsplit(".", 1)[-1]
        changes = [Change(path, False, found.key)] if flag != FULL.get(value) else []
        mixed = lookup("mixed_precision")
        if value in FULL and mixed is not None and precision_word(mixed[1].value) == value and flag != FULL[value]:
            changes.append(_flag_on(doc, lookup, FULL[value], next_to=flag))
        return changes
    if found.name == "dora" and isinstance(value, bool):
        if tool == GUI:
            return [Change(path, value, found.key)]
        if not found.default:  # the "dora_wd=True" string inside network_args; LyCORIS reads it with str_bool
            return [Change(path, "dora_wd=%s" % value, found.key)]
    if found.name == "device":
        raise Unwritable("%s has no device key: accelerate's config and `--cpu` decide" % TOOL_LABELS[tool])
    raise Unwritable("envdoctor does not write %s %s as %s" % (whose(tool), found.key, value))


def _flags_off(doc: Document, lookup: Lookup, flags: List[str]) -> List[Change]:
    changes = []
    for flag in flags:
        found = _on(lookup, flag)
        if found is not None:
            changes.append(Change(_node_path(doc, found[1], found[0]), False, found[0]))
    return changes


def _flag_on(doc: Document, lookup: Lookup, flag: str, next_to: str) -> Change:
    """`flag = true`: where it is written, else beside `next_to` (in its table)."""
    found = lookup(flag)
    if found is not None:
        return Change(_node_path(doc, found[1], found[0]), True, found[0])
    sibling = lookup(next_to)
    table: Tuple[Key, ...] = _node_path(doc, sibling[1], sibling[0])[:-1] if sibling is not None else ()
    return Change(table + (flag,), True, ".".join(map(str, table + (flag,))))


def _node_path(doc: Document, node: Node, key: str) -> Tuple[Key, ...]:
    return path_at(doc.root, node.start, node.end) or tuple(key.split("."))


FORMATS: Tuple[Format, ...] = (
    Format(tool=SCRIPTS, syntaxes=("toml",), recognise=recognise_scripts, read=read_scripts, label=lambda doc: "kohya sd-scripts config",
           write=write_scripts),
    Format(tool=GUI, syntaxes=("json",), recognise=recognise_gui_json, read=read_gui_json, label=label_gui_json, write=write_gui_json),
    Format(tool=GUI, syntaxes=("toml",), recognise=recognise_gui_toml, read=read_gui_toml, label=lambda doc: "kohya_ss GUI config.toml",
           write=write_gui_toml),
    Format(tool=EASY, syntaxes=("toml",), recognise=recognise_easy, read=read_easy,
           label=lambda doc: "LoRA Easy Training Scripts config (kohya sd-scripts)", write=write_easy),
)
