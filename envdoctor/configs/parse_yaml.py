"""YAML text -> Document, with the values yaml.safe_load gives and each value's exact span.

accelerate, autotrain-advanced and axolotl all read their files with PyYAML's
`yaml.safe_load` (CONFIG-FORMATS.md), so the same library decides the values here:
YAML 1.1 (bare `no`/`off`/`yes` are booleans, `'no'` quoted stays a string), the last
of a repeated key wins, `<<` merge keys and aliases as SafeLoader resolves them.
PyYAML's marks count characters of the text it was given, so `text[start:end]` is the
value's token as written, quotes included, with CRLF and non-ASCII text as they are.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Set

from envdoctor.configs.document import ConfigError, Document, Node, line_column


def parse(file: str, text: str) -> Document:
    """The first YAML document of `text` (a file of only comments is an error)."""
    import yaml  # here only: `envdoctor --help` never loads it

    try:
        loader = yaml.SafeLoader(text)  # checks every character first (ReaderError)
    except yaml.YAMLError as exc:
        raise _error(file, text, exc) from None
    try:
        if not loader.check_node():
            raise ConfigError(file, "holds no YAML document (only comments)")
        tree = _Builder(file, text, loader, yaml).node(loader.get_node())
    except yaml.YAMLError as exc:
        raise _error(file, text, exc) from None
    finally:
        loader.dispose()
    return Document(file=file, text=text, syntax="yaml", root=tree)


class _Builder:
    """PyYAML nodes -> Nodes; scalars are constructed by SafeLoader itself."""

    def __init__(self, file: str, text: str, loader: Any, yaml: Any) -> None:
        self.file, self.text, self.loader, self.yaml = file, text, loader, yaml
        self.done: Dict[int, Node] = {}  # an alias is the same PyYAML node: build it once
        self.open: Set[int] = set()

    def node(self, source: Any, key_start: Optional[int] = None, key_line: Optional[int] = None) -> Node:
        if id(source) in self.done:  # an alias: the anchored value, under this key
            return dataclasses.replace(self.done[id(source)], key_start=key_start, key_line=key_line)
        if id(source) in self.open:
            raise ConfigError(self.file, "a YAML alias refers to itself", source.start_mark.line + 1)
        self.open.add(id(source))
        start, end = source.start_mark.index, self._end(source)
        if isinstance(source, self.yaml.MappingNode):
            self.loader.flatten_mapping(source)  # `<<: *base` merges, as SafeConstructor does
            items: Dict[Any, Node] = {}  # a repeated key: the last value, in the first's place (as PyYAML)
            for key_node, value_node in source.value:
                key = self.loader.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise ConfigError(self.file, "a YAML mapping key that is itself a mapping or list",
                                      key_node.start_mark.line + 1, key_node.start_mark.column + 1) from None
                items[key] = self.node(value_node, key_node.start_mark.index, key_node.start_mark.line + 1)
            value: Any = items
            kind = "mapping"
        elif isinstance(source, self.yaml.SequenceNode):
            value, kind = [self.node(item) for item in source.value], "sequence"
        else:
            value, kind = self.loader.construct_object(source, deep=True), "scalar"
        self.open.discard(id(source))
        built = Node(value=value, kind=kind, start=start, end=end, line=source.start_mark.line + 1,
                     column=source.start_mark.column + 1, key_start=key_start, key_line=key_line)
        self.done[id(source)] = built
        return built

    def _end(self, source: Any) -> int:
        """Where the token ends. A block scalar (`|`, `>`) also owns the blank lines after
        it; the span stops at its last character so an edit keeps the line ends."""
        end = source.end_mark.index
        if getattr(source, "style", None) in ("|", ">"):
            while end > source.start_mark.index and self.text[end - 1] in " \t\r\n":
                end -= 1
        return end


def _error(file: str, text: str, exc: Exception) -> ConfigError:
    """One line: PyYAML's problem and where it is (its marks are 0-based)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None)
    if problem is None:  # ReaderError: a character YAML does not allow
        problem = getattr(exc, "reason", None) or str(exc).splitlines()[0]
        character = getattr(exc, "character", None)
        if isinstance(character, int):  # PyYAML gives its ord()
            problem = "%s (U+%04X)" % (problem, character)
    line = column = None
    position = getattr(exc, "position", None)  # ReaderError: a character offset
    if mark is not None:
        line, column = mark.line + 1, mark.column + 1
    elif isinstance(position, int):
        line, column = line_column(text, position)
    return ConfigError(file, "invalid YAML: %s" % " ".join(str(problem).split()), line, column)
