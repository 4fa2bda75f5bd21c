"""JSON → the Node tree, every value with its exact span.

json.loads gives values but no positions, so this is a small recursive-descent parser
with json.loads's semantics: the same documents are accepted, with the same values (a
repeated key: the last one wins, in the place of the first; NaN, Infinity and -Infinity
are accepted; strings are decoded by json.loads itself). A leading UTF-8 BOM is
skipped (json.loads refuses it; files saved by Windows editors start with one). Errors
are one short line with the line and column.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, NoReturn, Tuple

from envdoctor.configs.document import ConfigError, Document, Node
from envdoctor.configs.lines import Lines

_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's four whitespace characters, nothing else
# A string is scanned run by run: one character class repeated costs re nothing per character,
# where an alternation repeated keeps state for each (1 GB for a 9 MB string).
_PLAIN_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_ESCAPE = re.compile(r'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")  # ASCII digits, as json's C scanner
_CONSTANTS: Tuple[Tuple[str, Any], ...] = (
    ("true", True), ("false", False), ("null", None),
    ("NaN", float("nan")), ("Infinity", float("inf")), ("-Infinity", float("-inf")),
)
TRUNCATED = "unexpected end of file: the JSON is truncated"


def parse(file: str, text: str) -> Document:
    """The Document of a JSON text; ConfigError (with line and column) when it is not JSON."""
    parser = _Parser(file, text)
    start = 1 if text.startswith("\ufeff") else 0
    i = _skip(text, start)
    if i == len(text):
        raise ConfigError(file, "is empty")
    try:
        root, i = parser.value(i)
    except RecursionError:
        raise ConfigError(file, "is nested too deeply to be a training config") from None
    i = _skip(text, i)
    if i != len(text):
        parser.fail("unexpected text after the end of the JSON value", i)
    return Document(file=file, text=text, syntax="json", root=root)


class _Parser:
    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self.lines = Lines(text)

    def fail(self, message: str, at: int) -> NoReturn:
        if at >= len(self.text):
            message = TRUNCATED
        line, column = self.lines.line_column(min(at, len(self.text)))
        raise ConfigError(self.file, message, line, column)

    def node(self, value: Any, kind: str, start: int, end: int) -> Node:
        line, column = self.lines.line_column(start)
        return Node(value=value, kind=kind, start=start, end=end, line=line, column=column)

    def value(self, i: int) -> Tuple[Node, int]:
        """The value starting at `i` (no whitespace before it) and the offset after it."""
        text = self.text
        char = text[i:i + 1]
        if char == "{":
            return self.mapping(i)
        if char == "[":
            return self.sequence(i)
        if char == '"':
            string, end = self.string(i)
            return self.node(string, "scalar", i, end), end
        for word, constant in _CONSTANTS:
            if text.startswith(word, i):
                return self.node(constant, "scalar", i, i + len(word)), i + len(word)
        number = _NUMBER.match(text, i)
        if number:
            token = number.group()
            try:
                value: Any = float(token) if number.group(1) or number.group(2) else int(token)
            except ValueError:  # more digits than int() converts (Python 3.11+), as json.loads
                self.fail("a number with too many digits", i)
            return self.node(value, "scalar", i, number.end()), number.end()
        self.fail("expected a value (a string, number, object, array, true, false or null)", i)

    def string(self, i: int) -> Tuple[str, int]:
        """The string whose opening quote is at `i`, and the offset after its closing quote."""
        text = self.text
        j = i + 1
        escaped = False
        while True:
            j = _PLAIN_RUN.match(text, j).end()  # type: ignore[union-attr]  # `*` always matches
            char = text[j:j + 1]
            if char == '"':
                break
            if char == "\\":
                escape = _ESCAPE.match(text, j)
                if escape is None:
                    self.fail("invalid escape in a string", j)
                j, escaped = escape.end(), True
                continue
            self.fail("a string cannot contain a raw line break or control character", j)
        end = j + 1
        return (json.loads(text[i:end]) if escaped else text[i + 1:j]), end

    def mapping(self, start: int) -> Tuple[Node, int]:
        text = self.text
        items: Dict[str, Node] = {}
        i = _skip(text, start + 1)
        if text.startswith("}", i):
            return self.node(items, "mapping", start, i + 1), i + 1
        while True:
            if not text.startswith('"', i):
                self.fail("expected a key in double quotes", i)
            key_start = i
            key, i = self.string(i)
            i = _skip(text, i)
            if not text.startswith(":", i):
                self.fail("expected ':' after the key", i)
            i = _skip(text, i + 1)
            value, i = self.value(i)
            value.key_start, value.key_line = key_start, self.lines.line(key_start)
            items[key] = value
            i = _skip(text, i)
            if text.startswith(",", i):
                i = _skip(text, i + 1)
                if text.startswith("}", i):
                    self.fail("a comma before '}' (JSON allows no trailing comma)", i)
                continue
            if text.startswith("}", i):
                return self.node(items, "mapping", start, i + 1), i + 1
            self.fail("expected ',' or '}'", i)

    def sequence(self, start: int) -> Tuple[Node, int]:
        text = self.text
        items: List[Node] = []
        i = _skip(text, start + 1)
        if text.startswith("]", i):
            return self.node(items, "sequence", start, i + 1), i + 1
        while True:
            item, i = self.value(i)
            items.append(item)
            i = _skip(text, i)
            if text.startswith(",", i):
                i = _skip(text, i + 1)
                if text.startswith("]", i):
                    self.fail("a comma before ']' (JSON allows no trailing comma)", i)
                continue
            if text.startswith("]", i):
                return self.node(items, "sequence", start, i + 1), i + 1
            self.fail("expected ',' or ']'", i)


def _skip(text: str, i: int) -> int:
    """The offset of the first non-whitespace character at or after `i`."""
    match = _WHITESPACE.match(text, i)
    return match.end() if match else i
