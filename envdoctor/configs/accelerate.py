"""🤗 accelerate's config file (`accelerate config` / `accelerate config default`).

Source: github.com/huggingface/accelerate @ 16cb6eb80dd9aa8b4df1a63ef57863e455d53b83.
`accelerate config` writes YAML; `accelerate config default` (write_basic_config,
commands/config/default.py L37-138) writes JSON text into the same `default_config.yaml`;
both are loaded with yaml.safe_load (commands/config/config_args.py L66, L152), so the
YAML 1.1 pitfalls apply: a bare `no` is False, which accelerate rejects.
"""

from __future__ import annotations

import os
from typing import Any, List, Mapping, Optional

from envdoctor.configs.document import Document, Node
from envdoctor.configs.reading import (
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

TOOL = "accelerate"
# BaseConfig / ClusterConfig fields a default_config.yaml carries (config_args.py L76-81, L179-217)
KEYS = ("compute_environment", "distributed_type", "mixed_precision", "use_cpu", "debug", "num_processes", "machine_rank",
        "num_machines", "gpu_ids", "main_training_function", "downcast_bf16", "rdzv_backend", "same_network",
        "main_process_ip", "main_process_port", "tpu_env", "tpu_use_cluster", "tpu_use_sudo", "enable_cpu_affinity",
        "deepspeed_config", "fsdp_config", "fp8_config", "megatron_lm_config", "dynamo_config", "parallelism_config",
        "mpirun_config")
BARE_NO = "unquoted `no` is YAML false, which accelerate cannot read (`'bool' object has no attribute 'lower'`); write 'no'"
# envdoctor's own override: accelerate itself reads no such variable (only `--config_file`)
OVERRIDE_VARIABLE = "ACCELERATE_CONFIG_FILE"


def recognise(doc: Document) -> int:
    """`distributed_type` is required by accelerate's loader (process_config, config_args.py
    L109-110) and `compute_environment` is written by every accelerate version; kohya_ss
    GUI files share `mixed_precision`/`num_processes` but never these two."""
    root = mapping_root(doc)
    if root is None or not ("distributed_type" in root.value or "compute_environment" in root.value):
        return 0
    return 10 + sum(1 for key in KEYS if key in root.value)


def read(doc: Document) -> List[Setting]:
    root = mapping_root(doc)
    if root is None:
        return []
    return _precision(doc, root) + _device(doc, root) + _distributed(doc, root) + _fp8_backend(doc, root)


def _precision(doc: Document, root: Node) -> List[Setting]:
    """`mixed_precision: 'no'|fp16|bf16|fp8` (PrecisionType, utils/dataclasses.py L773-786);
    null or absent is "no" at launch (commands/launch.py L1281-1283); files older than
    `mixed_precision` say `fp16: true` (process_config, config_args.py L113-116). A bare
    `no` (False) reaches `args.mixed_precision.lower()` (utils/launch.py L169)."""
    node = root.get("mixed_precision")
    if node is not None:
        if node.value is None:
            return [setting(doc, node, "precision", "fp32", TOOL, "mixed_precision", note="null: accelerate launches with 'no'")]
        if node.value is False:
            return [setting(doc, node, "precision", "fp32", TOOL, "mixed_precision", note=BARE_NO)]
        word = precision_word(node.value)
        return [setting(doc, node, "precision", word, TOOL, "mixed_precision")] if word else []
    legacy = root.get("fp16")
    if legacy is not None and isinstance(legacy.value, bool):
        return [setting(doc, legacy, "precision", "fp16" if legacy.value else "fp32", TOOL, "fp16",
                        note="an accelerate config older than `mixed_precision`")]
    return [default(doc, "precision", "fp32", "no", TOOL, "mixed_precision")]


def _device(doc: Document, root: Node) -> List[Setting]:
    node = root.get("use_cpu")
    if node is None:  # process_config's default (config_args.py L120-121)
        return [default(doc, "device", "auto", False, TOOL, "use_cpu")]
    return [setting(doc, node, "device", "cpu" if node.value is True else "auto", TOOL, "use_cpu")]


def _distributed(doc: Document, root: Node) -> List[Setting]:
    """`distributed_type` (DistributedType, utils/dataclasses.py L625-638), lower case."""
    node = root.get("distributed_type")
    if node is None:
        return []
    if node.value is False:  # a bare NO: False matches no DistributedType, so it runs as NO
        return [setting(doc, node, "distributed", "no", TOOL, "distributed_type", note="unquoted NO is YAML false; accelerate runs it as 'NO'")]
    if not isinstance(node.value, str):
        return []
    return [setting(doc, node, "distributed", node.value.lower(), TOOL, "distributed_type")]


def _fp8_backend(doc: Document, root: Node) -> List[Setting]:
    """`fp8_config: {backend: TE|MSAMP|AO}` (accelerate's FP8 recipe kwargs; docs "Low precision
    training methods"): which library fp8 mixed precision runs on, lower case."""
    node = root.get("fp8_config", "backend")
    if node is None or not isinstance(node.value, str) or not node.value.strip():
        return []
    return [setting(doc, node, "fp8_backend", node.value.strip().lower(), TOOL, "fp8_config.backend")]


def label(doc: Document) -> str:
    written = "JSON text" if doc.text.lstrip("\ufeff \t\r\n").startswith("{") else "YAML"
    return "accelerate config (%s)" % written


def default_config_path(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The accelerate config `accelerate launch` reads when given no `--config_file`,
    if that file exists: $HF_HOME/accelerate/default_config.yaml, else
    $XDG_CACHE_HOME/huggingface/accelerate/..., else ~/.cache/huggingface/accelerate/...
    (config_args.py L29-40, `~` expanded as accelerate does). An ACCELERATE_CONFIG_FILE
    variable, when set, names the file instead: that is envdoctor's own override for
    pointing at the config a launcher passes with --config_file; accelerate ignores it."""
    environ = os.environ if environ is None else environ
    override = environ.get(OVERRIDE_VARIABLE)
    if override:
        path = os.path.expanduser(override)
    else:
        home = environ.get("HF_HOME", os.path.join(environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface"))
        path = os.path.join(os.path.expanduser(home), "accelerate", "default_config.yaml")
    return path if os.path.isfile(path) else None


# -- writing (CONFIG-FORMATS.md "accelerate", Edits): PrecisionType's words; "no" is quoted
# in YAML by the renderer (edit.render), since a bare no loads as False.
WRITE_PRECISIONS = precision_spellings(("no", "fp16", "bf16", "fp8"))


def write(doc: Document, found: Setting, value: Any) -> List[Change]:
    path = setting_path(doc, found)
    if found.name == "precision" and found.key == "fp16":  # a legacy `fp16: true|false`
        if value in ("fp16", "fp32"):
            return [Change(path, value == "fp16", "fp16")]
        raise Unwritable("this accelerate config predates `mixed_precision`: its `fp16` key says only fp16 or not")
    if found.name == "precision":
        return [Change(path, tool_word(WRITE_PRECISIONS, value, "accelerate's mixed_precision"), "mixed_precision")]
    if found.name == "device" and isinstance(value, str) and (value in ("cpu", "auto", "cuda") or value.startswith("cuda:")):
        return [Change(path, value == "cpu", "use_cpu")]
    raise Unwritable("envdoctor does not change accelerate's %s (report only)" % found.key)


FORMATS = (Format(tool=TOOL, syntaxes=("yaml", "json"), recognise=recognise, read=read, label=label, write=write),)
