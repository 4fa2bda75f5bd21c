"""A parsed config file whose every value knows where it sits in the text.

JSON, YAML, TOML and launch lines are all parsed into the same Node tree, so the
format readers (OneTrainer, accelerate, kohya, ...) do not care about syntax.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from envdoctor.configs.lines import Lines

Key = Union[str, int]


class ConfigError(Exception):
    """A config that cannot be read: printed as one line naming the file (and line), exit 2."""

    def __init__(self, file: str, message: str, line: Optional[int] = None, column: Optional[int] = None) -> None:
        self.file, self.message, self.line, self.column = file, message, line, column
        where = file if line is None else "%s:%d" % (file, line) + ("" if column is None else ":%d" % column)
        super().__init__("%s: %s" % (where, message))


@dataclass
class Node:
    """A value and its span. Scalars carry their Python value; a mapping's value is a
    dict of key -> Node (insertion order, the last of a repeated key wins, as the tools'
    own loaders do); a sequence's value is a list of Nodes."""

    value: Any
    kind: str  # "scalar" | "mapping" | "sequence"
    start: int  # offset of the value's first character in Document.text
    end: int  # offset just after its last character
    line: int  # 1-based line of `start`
    column: int  # 1-based column of `start`
    key_start: Optional[int] = None  # where this value's key begins, when it has one
    key_line: Optional[int] = None

    def plain(self) -> Any:
        """The Python value, as json.load / yaml.safe_load would give it."""
        if self.kind == "mapping":
            return {k: v.plain() for k, v in self.value.items()}
        if self.kind == "sequence":
            return [v.plain() for v in self.value]
        return self.value

    def get(self, *path: Key) -> Optional[Node]:
        node: Optional[Node] = self
        for key in path:
            if node is None:
                return None
            if node.kind == "mapping" and isinstance(key, str):
                node = node.value.get(key)
            elif node.kind == "sequence" and isinstance(key, int) and -len(node.value) <= key < len(node.value):
                node = node.value[key]
            else:
                return None
        return node

    def items(self) -> Iterator[Tuple[str, Node]]:
        return iter(self.value.items()) if self.kind == "mapping" else iter(())


@dataclass
class Document:
    """One config file: its path as given, its text (line ends as they are), and its tree."""

    file: str
    text: str
    syntax: str  # "json", "yaml", "toml", "shell"
    root: Node
    # TOML: each (section path, key) -> Node, since sd-scripts flattens sections; others: empty
    flat: Dict[str, List[Tuple[Tuple[str, ...], Node]]] = field(default_factory=dict)

    def source(self, node: Node) -> str:
        return self.text[node.start:node.end]


def line_column(text: str, offset: int) -> Tuple[int, int]:
    """1-based line and column of one offset (a CRLF counts as one line end); a parser
    placing many nodes keeps one Lines index instead."""
    return Lines(text).line_column(offset)


def read_text(path: str) -> str:
    """A config file's text with its line ends untouched; a clear ConfigError otherwise."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(path, "no such file") from None
    except IsADirectoryError:
        raise ConfigError(path, "is a directory, not a config file") from None
    except OSError as exc:
        raise ConfigError(path, "cannot be read (%s)" % (exc.strerror or exc)) from None
    if len(data) > _MAX_BYTES:
        raise ConfigError(path, "is larger than %d MB: not a training config" % (_MAX_BYTES // 1_000_000))
    if not data.strip():
        raise ConfigError(path, "is empty")
    if b"\x00" in data[:8192]:
        raise ConfigError(path, "is a binary file, not a training config")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(path, "is not UTF-8 text (byte 0x%02x)" % data[exc.start], line=line) from None


_MAX_BYTES = 10_000_000
