"""What every format reader shares: the Format declaration and the Setting builders."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

from envdoctor.configs.document import Document, Key, Node
from envdoctor.configs.intent import Setting


@dataclass(frozen=True)
class Format:
    """One tool's config layout.

    `syntaxes`: the parsers whose trees it can read. `recognise(doc)` scores how surely
    the document is this tool's (0: not at all; 1-9: weak hints; 10 and more: keys only
    this tool writes); the best score wins. `read(doc)` returns its Settings, tool
    defaults included (default=True) where the tool has one that matters.
    `label(doc)` names the variant: "OneTrainer config (__version 9)".
    """

    tool: str
    syntaxes: Tuple[str, ...]
    recognise: Callable[[Document], int]
    read: Callable[[Document], List[Setting]]
    label: Callable[[Document], str]


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
