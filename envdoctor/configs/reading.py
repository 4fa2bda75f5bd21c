"""What every format reader shares: the Format declaration and the Setting builders."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

from envdoctor.configs.document import Document, Node
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
