"""What every format reader shares: the Format declaration and the Setting builders."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from envdoctor.configs.document import Document, Key, Node
from envdoctor.target.intent import Setting


class Unwritable(ValueError):
    """The tool has no way to say this value (autotrain has no device key, sd-scripts no fp8
    mixed precision): the message says why, in one line."""


# Change.value for a key that goes away (a launch line's `--cpu` switch)
REMOVE = object()


@dataclass(frozen=True)
class Change:
    """One raw value in the tool's own spelling at a path of the document tree: the value
    there is replaced, or (absent) the key is added to its parent mapping, or (REMOVE) it is
    taken out. `key` is the tool's key path, for people."""

    path: Tuple[Key, ...]
    value: Any  # what the tool's own loader must read there afterwards: "FLOAT_32", False, None, "no"
    key: str

    def shown(self) -> str:
        return "(removed)" if self.value is REMOVE else _shown_raw(self.value)


def _shown_raw(value: Any) -> str:
    return {True: "true", False: "false", None: "null"}.get(value, str(value)) if isinstance(value, (bool, type(None))) else str(value)


# A tool's writer: (document, one of its settings, envdoctor's new value) -> the raw changes
# that make the tool read that value (several keys where the tool couples them).
Writer = Callable[[Document, Setting, Any], List[Change]]


@dataclass(frozen=True)
class Format:
    """One tool's config layout.

    `syntaxes`: the parsers whose trees it can read. `recognise(doc)` scores how surely
    the document is this tool's (0: not at all; 1-9: weak hints; 10 and more: keys only
    this tool writes); the best score wins. `read(doc)` returns its Settings, tool
    defaults included (default=True) where the tool has one that matters.
    `label(doc)` names the variant: "OneTrainer config (__version 9)".
    `write(doc, setting, value)` spells a new value of one of its settings as Changes in
    the tool's own keys and values; Unwritable where the tool cannot say it.
    """

    tool: str
    syntaxes: Tuple[str, ...]
    recognise: Callable[[Document], int]
    read: Callable[[Document], List[Setting]]
    label: Callable[[Document], str]
    write: Optional[Writer] = None


def setting(doc: Document, node: Node, name: str, value: Any, tool: str, key: str, part: Optional[str] = None, note: str = "") -> Setting:
    """A value written in the file, with its exact span."""
    return Setting(name=name, value=value, tool=tool, file=doc.file, key=key, raw=node.plain(), line=node.line,
                   column=node.column, start=node.start, end=node.end, source=doc.source(node), part=part, note=note)


def default(doc: Document, name: str, value: Any, raw: Any, tool: str, key: str, part: Optional[str] = None, note: str = "") -> Setting:
    """A tool default: the key is absent from the file, the tool uses `raw`."""
    return Setting(name=name, value=value, tool=tool, file=doc.file, key=key, raw=raw, default=True, part=part, note=note)


# The tools' spellings of a compute precision -> envdoctor's words (intent.py). accelerate
# and the diffusers scripts say "no" for fp32 (accelerate PrecisionType), autotrain says
# "none", kohya "no"; "auto" is axolotl's bf16-where-supported.
_PRECISION_WORDS = {"no": "fp32", "none": "fp32", "fp32": "fp32", "float32": "fp32", "fp16": "fp16", "float16": "fp16",
                    "bf16": "bf16", "bfloat16": "bf16", "fp8": "fp8", "auto": "auto"}


def precision_word(raw: Any) -> Optional[str]:
    """"fp16", "fp32", ... for a tool's precision string; None for anything else (a bool, a typo)."""
    return _PRECISION_WORDS.get(raw.strip().lower()) if isinstance(raw, str) else None


def mapping_root(doc: Document) -> Optional[Node]:
    """The document's top-level mapping, or None (a YAML scalar or a list is no tool's config)."""
    return doc.root if doc.root.kind == "mapping" else None


def value_at(node: Optional[Node], *path: Key) -> Any:
    """The plain value at `path` under `node`, None when any step is missing."""
    found = node.get(*path) if node is not None else None
    return found.plain() if found is not None else None


def same_token(written: Setting, name: str, value: Any, part: Optional[str] = None, note: str = "") -> Setting:
    """Another setting that the same written token decides (a precision that also casts
    weights): same file, key and span, so a fix of one is a fix of both."""
    return dataclasses.replace(written, name=name, value=value, part=part, note=note)


def tool_word(words: Dict[str, str], value: Any, what: str) -> str:
    """The tool's spelling of one of envdoctor's words, from the tool's own table; Unwritable
    for a word the tool has none for."""
    if isinstance(value, str) and value in words:
        return words[value]
    raise Unwritable("%s has no value for %s" % (what, value))


def precision_spellings(words: Tuple[str, ...]) -> Dict[str, str]:
    """envdoctor's precision word -> a tool's own spelling, for the spellings it accepts
    (kohya's "no", "fp16", ...), translated by precision_word's one table."""
    return {word: raw for raw, word in ((raw, precision_word(raw)) for raw in words) if word is not None}


def spellings(reading: Dict[str, str], preferred: Tuple[str, ...] = ()) -> Dict[str, str]:
    """A reader's table (tool spelling -> envdoctor's word) turned round for writing: each
    word's first spelling, or the one in `preferred` (FLOAT_32, not TFLOAT_32)."""
    out: Dict[str, str] = {}
    for raw, word in reading.items():
        if word not in out or raw in preferred:
            out[word] = raw
    return out


def setting_path(doc: Document, setting: Setting) -> Tuple[Key, ...]:
    """Where a setting's value is in the tree: the written value's path, or for a tool
    default the path its dotted key names ("params.mixed_precision")."""
    if not setting.default and setting.start is not None and setting.end is not None:
        found = path_at(doc.root, setting.start, setting.end)
        if found is not None:
            return found
    return tuple(setting.key.split("."))


def path_at(root: Node, start: int, end: int) -> Optional[Tuple[Key, ...]]:
    """The tree path of the scalar spanning text[start:end] (the first, for a YAML alias)."""
    stack: List[Tuple[Tuple[Key, ...], Node]] = [((), root)]
    while stack:
        path, node = stack.pop(0)
        if node.kind == "scalar" and (node.start, node.end) == (start, end):
            return path
        if node.kind == "mapping":
            stack += [(path + (k,), child) for k, child in node.value.items()]
        elif node.kind == "sequence":
            stack += [(path + (i,), child) for i, child in enumerate(node.value)]
    return None
