"""The intent: what a training config asks of the stack, each value with where it came from.

A reader turns one config file into Settings; several files make one Intent. Rules read
`env.intent` (an Intent); probes are told `Intent.summary()` (plain JSON) through the
probe context. `envdoctor fix` edits exactly `text[start:end]` of a Setting's file.

Stdlib only, Python 3.8+: rules import it, and the worker may load the modules that do.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

# The setting names and envdoctor's vocabulary for their values (each reader translates
# its tool's spelling into these; `raw` keeps the tool's own value):
#   device        "cpu" | "cuda" | "cuda:N" | "mps" | "auto" (whatever the launcher finds)
#   precision     compute / mixed precision: "fp32" | "fp16" | "bf16" | "fp8" | "auto" (bf16 where supported)
#   weight_dtype  per model part (Setting.part): "fp32" | "fp16" | "bf16" | a QUANTIZED dtype
#   train         per model part: True when that part is trained (adapters go on it)
#   adapter       "lora" | "loha" | "lokr" | "oft" | "full"
#   dora          True when the adapter decomposes weights (DoRA, LyCORIS dora_wd, LoKr weight decompose)
#   distributed   accelerate's distributed_type, lower case ("no", "multi_gpu", "deepspeed", ...)
#   fp8_backend   the float8 training backend fp8 precision runs on: "te" | "msamp" | "ao" (accelerate's fp8_config)
NAMES = ("device", "precision", "weight_dtype", "train", "adapter", "dora", "distributed", "fp8_backend")
PART_NAMES = ("weight_dtype", "train")
DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "int4", "nf4", "w8a8", "gguf")
QUANTIZED = ("fp8", "int8", "int4", "nf4", "w8a8", "gguf")
HALF = ("fp16", "bf16")

# Which value wins when several files set the same thing. A launch line's flags override
# everything. A trainer's own value, even its default, overrides accelerate's config:
# OneTrainer never reads it and kohya passes its `mixed_precision` (default "no") to
# Accelerator explicitly (sd-scripts library/train_util.py L5494-5496 @48d368f). A
# launch line's and accelerate's defaults mean only that nothing was said.
def precedence(setting: Setting) -> int:
    if setting.default:
        return {"launch": 0, "accelerate": 1}.get(setting.tool, 3)
    return {"launch": 5, "accelerate": 2}.get(setting.tool, 4)


@dataclass(frozen=True)
class Setting:
    """One value of the intent and exactly where it is written.

    Offsets are into the file's text decoded as UTF-8 with line ends kept as they are
    (open(..., newline="")), so `text[start:end] == source` and a fix replaces just that.
    A tool default has no position: `default` is True and `key` names where it would go.
    """

    name: str  # one of NAMES
    value: Any  # envdoctor's vocabulary (above)
    tool: str  # "onetrainer", "autotrain", "kohya", "kohya_ss", "kohya_easy", "accelerate", "axolotl", "launch"
    file: str  # the path as the user gave it
    key: str  # the key path as the tool spells it: "params.mixed_precision", "unet.weight_dtype", "--mixed_precision"
    raw: Any = None  # the tool's own value: "FLOAT_16", "no", True
    line: Optional[int] = None  # 1-based
    column: Optional[int] = None  # 1-based
    start: Optional[int] = None
    end: Optional[int] = None
    source: Optional[str] = None  # text[start:end], quotes included: what a fix replaces
    default: bool = False
    part: Optional[str] = None  # the model part, for weight_dtype and train
    note: str = ""

    def where(self) -> str:
        """'train.yaml:12 `mixed_precision: fp16`', or for a default
        'train.json: `train_dtype` absent, OneTrainer's default FLOAT_16'."""
        name = os.path.basename(self.file) or self.file
        leaf = self.key.rsplit(".", 1)[-1] if not self.key.startswith("-") else self.key
        if self.default:
            return "%s: `%s` absent, %s default %s" % (name, leaf, whose(self.tool), _shown(self.raw))
        text = clipped(self.source) if self.source is not None else _shown(self.raw)
        place = "%s:%d" % (name, self.line) if self.line else name
        if self.key.startswith("-"):  # a launch flag: `--mixed_precision fp16`, or a switch alone: `--cpu`
            return "%s `%s`" % (place, leaf if text.lstrip("-").replace("-", "_") == leaf.lstrip("-").replace("-", "_") else leaf + " " + text)
        return "%s `%s: %s`" % (place, leaf, text)

    def to_dict(self) -> Dict[str, Any]:
        """As the report's JSON holds it: a huge value clipped (fix re-reads the file itself)."""
        return {k: _bounded(getattr(self, k)) if k in ("value", "raw", "source") else getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> Setting:
        fields: Dict[str, Any] = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**fields)


TOOL_LABELS = {
    "onetrainer": "OneTrainer",
    "autotrain": "autotrain-advanced",
    "kohya": "kohya sd-scripts",
    "kohya_ss": "kohya_ss",
    "kohya_easy": "LoRA Easy Training Scripts",
    "accelerate": "accelerate",
    "axolotl": "axolotl",
    "launch": "the launch line",
}


def whose(tool: str) -> str:
    """"OneTrainer's", "LoRA Easy Training Scripts'": the tool's label as a possessive."""
    label = TOOL_LABELS.get(tool, tool)
    return label + ("'" if label.endswith("s") else "'s")


# The most of a value any message shows: a setting is a word or a path, and a 9 MB value
# (a mistake, or not a config at all) must not become a 9 MB line of output.
SHOWN_CHARS = 120


_CLIPPED = re.compile(r"… \(\d+ more characters\)$")


def clipped(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text`, or its first `limit` characters and how many more there are (once: a value the
    report already clipped keeps its count)."""
    if len(text) <= limit or _CLIPPED.search(text):
        return text
    return "%s… (%d more characters)" % (text[:limit], len(text) - limit)


def _bounded(value: Any) -> Any:
    return clipped(value) if isinstance(value, str) else value


def _shown(raw: Any) -> str:
    if raw is True:
        return "true"
    if raw is False:
        return "false"
    if raw is None:
        return "null"
    return clipped(str(raw))


# What an "auto" precision becomes where no bf16 GPU is found, per tool: axolotl falls back
# to fp16 whenever `fp16` is unset, on the CPU too (src/axolotl/utils/config/__init__.py
# resolve_dtype L156-167 @067b021); for the others "auto" is fp32 there.
AUTO_WITHOUT_BF16 = {"axolotl": "fp16"}


def resolve_auto(setting: Setting, bf16_gpu: bool) -> str:
    if bf16_gpu:
        return "bf16"
    return AUTO_WITHOUT_BF16.get(setting.tool, "fp32")


@dataclass(frozen=True)
class ConfigSource:
    """One file read: which tool's format it was recognised as."""

    file: str
    tool: str
    syntax: str  # "json", "yaml", "toml", "shell"
    label: str = ""  # "OneTrainer config (__version 9)", "OneTrainer preset"
    # the text read when it is not the file's (the file as a plan would leave it); never shown
    text: Optional[str] = field(default=None, repr=False, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "text"}


@dataclass(frozen=True)
class Intent:
    sources: Tuple[ConfigSource, ...] = ()
    settings: Tuple[Setting, ...] = ()

    def all(self, name: str, part: Optional[str] = None) -> List[Setting]:
        return [s for s in self.settings if s.name == name and (part is None or s.part == part)]

    def effective(self, name: str, part: Optional[str] = None) -> Optional[Setting]:
        """The value that wins (precedence(), then the later file)."""
        found = self.all(name, part)
        if not found:
            return None
        return max(enumerate(found), key=lambda item: (precedence(item[1]), item[0]))[1]

    def value(self, name: str, part: Optional[str] = None) -> Any:
        setting = self.effective(name, part)
        return setting.value if setting else None

    def parts(self) -> List[str]:
        seen: List[str] = []
        for s in self.settings:
            if s.part and s.part not in seen:
                seen.append(s.part)
        return seen

    def weights(self) -> Dict[str, Setting]:
        """The weight dtype of each model part."""
        out = {}
        for part in self.parts():
            setting = self.effective("weight_dtype", part)
            if setting is not None:
                out[part] = setting
        return out

    def trained_parts(self) -> Optional[List[str]]:
        """Parts that get adapters or gradients; None when the config does not say."""
        flags = {p: self.value("train", p) for p in self.parts() if self.effective("train", p) is not None}
        return [p for p, on in flags.items() if on] if flags else None

    def asks(self, name: str, *values: Any) -> List[Setting]:
        """The effective settings of `name` (every part for per-part names) whose value is one of `values`."""
        found = [self.effective(name, p) for p in self.parts()] if name in PART_NAMES else [self.effective(name)]
        return [s for s in found if s is not None and s.value in values]

    def runs_on(self, accelerators: Sequence[str] = ()) -> str:
        """The training device: "cpu", "cuda", "cuda:1", "mps"; "auto" (or unsaid) is what
        accelerate picks: the first accelerator found, else the CPU."""
        device = self.value("device")
        if device in (None, "auto"):
            return accelerators[0].split(":")[0] if accelerators else "cpu"
        return str(device)

    def asks_dtype(self, dtype: str, bf16_gpu: Optional[bool] = None) -> List[Setting]:
        """The effective settings that make the run compute in `dtype` ("fp16"): the
        compute precision, and the weights of any model part. With `bf16_gpu` known, an
        "auto" precision counts as what it resolves to there (resolve_auto)."""
        found = self.asks("precision", dtype) + self.asks("weight_dtype", dtype)
        if bf16_gpu is not None:
            found += [s for s in self.asks("precision", "auto") if resolve_auto(s, bf16_gpu) == dtype]
        return found

    def summary(self) -> Dict[str, Any]:
        """What the probes are told: plain values, no positions."""
        precision = self.effective("precision")
        return {
            "device": self.value("device"),
            "precision": self.value("precision"),
            # what an "auto" precision becomes where no bf16 GPU is found (resolve_auto)
            "auto_without_bf16": resolve_auto(precision, False) if precision is not None and precision.value == "auto" else None,
            "weights": {p: s.value for p, s in self.weights().items()},
            "trained": self.trained_parts(),
            "adapter": self.value("adapter"),
            "dora": self.value("dora"),
            "distributed": self.value("distributed"),
            "training": True,
        }

    def to_dict(self) -> Dict[str, Any]:
        return {
            "sources": [s.to_dict() for s in self.sources],
            "summary": {k: _bounded(v) for k, v in self.summary().items()},
            "settings": [s.to_dict() for s in self.settings],
        }

    @classmethod
    def from_dict(cls, data: Optional[Dict[str, Any]]) -> Optional[Intent]:
        if not data:
            return None
        return cls(
            sources=tuple(ConfigSource(**s) for s in data.get("sources") or ()),
            settings=tuple(Setting.from_dict(s) for s in data.get("settings") or ()),
        )


def merge(intents: Sequence[Intent]) -> Intent:
    return Intent(
        sources=tuple(s for i in intents for s in i.sources),
        settings=tuple(s for i in intents for s in i.settings),
    )


def dtype_names(asked: Sequence[Setting]) -> List[str]:
    """The names a precision edit changes: those of the settings that asked for the dtype
    (fp16 weights go to fp32, a bf16 precision beside them stays), "precision" when none did."""
    return [n for n in ("precision", "weight_dtype") if any(s.name == n for s in asked)] or ["precision"]


def config_evidence(intent: Optional[Intent], asked: Sequence[Setting]) -> Tuple[str, ...]:
    """Evidence lines naming where the config asks: one line per written token (a precision
    that also casts the weights is one token, one line), then the training device."""
    tokens: Dict[Tuple[Any, ...], List[Setting]] = {}
    for s in asked:
        tokens.setdefault((s.file, s.start, s.key) if not s.default else (s.file, s.key, s.part), []).append(s)
    lines = []
    for same in tokens.values():
        what = ", ".join("%s weights" % s.part if s.part else "compute" for s in same)
        lines.append("%s asks for %s (%s)" % (same[0].where(), same[0].value, what))
    device = intent.effective("device") if intent is not None else None
    if asked and device is not None:
        lines.append("%s: the training device" % device.where())
    return tuple(lines)


def config_subject(asked: Sequence[Setting]) -> Dict[str, Any]:
    """A finding's subject["config"]: the first setting that asked, as fix will locate it."""
    if not asked:
        return {}
    first = asked[0]
    return {"config": {"file": first.file, "line": first.line, "key": first.key, "tool": first.tool, "default": first.default}}
