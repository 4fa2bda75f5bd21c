"""TOML → the Node tree, every value with its exact span.

tomllib (tomli before Python 3.11) decides what the file means and whether it is valid;
a scanner then walks the same text to find where each value is written (tables
`[a.b]` and `[[a]]`, dotted and quoted keys, strings that hold `#` or quotes,
multi-line strings and arrays with comments, inline tables, tabs, CRLF), and the values
are taken from tomllib's result, so `root.plain()` is exactly what tomllib returns.

`Document.flat` lists every `key = value` by its last key, with the table path it sits
in, in reading order: kohya sd-scripts merges the tables of its config file into one
namespace (library/train_util.py read_config_from_file), so a key counts wherever it is.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Dict, List, NoReturn, Optional, Set, Tuple

from envdoctor.configs.document import ConfigError, Document, Node
from envdoctor.configs.lines import Lines

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.9/3.10
    import tomli as tomllib

Flat = Dict[str, List[Tuple[Tuple[str, ...], Node]]]

_BETWEEN_STATEMENTS = re.compile(r"(?:[ \t\r\n]|#[^\n]*)*")  # blank lines and comments
_BETWEEN_ITEMS = _BETWEEN_STATEMENTS  # inside arrays: newlines and comments are allowed too
_BLANK = re.compile(r"[ \t]*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BASIC = re.compile(r'"(?:[^"\\\r\n]|\\.)*"')
_LITERAL = re.compile(r"'[^'\r\n]*'")
_MULTILINE_BASIC = re.compile(r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"{3,5}')  # up to two quotes may end the content
_MULTILINE_LITERAL = re.compile(r"'''(?:[^']|'(?!''))*'{3,5}")
_BARE_VALUE = re.compile(r"[^,\]}#\r\n]+")  # numbers, booleans, dates (which may hold one space)
_WHERE = re.compile(r" \(at line (\d+), column (\d+)\)$")
_AT_END = " (at end of document)"
# tomllib's (and older tomli's "Can not ...") messages for a key or table defined twice
_REDEFINED = ("cannot overwrite", "cannot declare", "cannot define", "cannot mutate", "cannot redefine", "duplicate")


def parse(file: str, text: str) -> Document:
    """The Document of a TOML text; ConfigError (with line and column) when it is not TOML."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _error(file, text, str(exc)) from None
    root = _Scanner(text).scan()
    if not _attach(root, data):
        raise ConfigError(file, "envdoctor could not place the values of this TOML file (a bug: please report it with the file)")
    return Document(file=file, text=text, syntax="toml", root=root, flat=_flatten(root))


def _error(file: str, text: str, message: str) -> ConfigError:
    """tomllib's "Cannot overwrite a value (at line 3, column 6)" → ConfigError with the line; a
    repeated key is named, on the line where it is repeated (tomllib points after its value)."""
    lines = Lines(text)
    where = _WHERE.search(message)
    at_end = message.endswith(_AT_END)
    if where:
        message = message[:where.start()]
        line, column = int(where.group(1)), int(where.group(2))
    else:
        message = message[:-len(_AT_END)] if at_end else message
        line, column = lines.line_column(len(text))
    if message.lower().replace("can not", "cannot").startswith(_REDEFINED):
        repeated = _Scanner(text).first_repeat()
        if repeated is not None:
            offset, said = repeated
            line, column = lines.line_column(offset)
            return ConfigError(file, said + " (TOML allows each key and table once)", line, column)
    message = message[:1].lower() + message[1:]
    if at_end:
        return ConfigError(file, "unexpected end of file: the TOML is truncated (%s)" % message, line, column)
    return ConfigError(file, "not valid TOML: " + message, line, column)


class _Repeated(Exception):
    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset, self.message = offset, message


class _Scanner:
    """Finds the span of every value of a TOML text that tomllib has accepted."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = Lines(text)
        self.root = Node({}, "mapping", 0, len(text), 1, 1)
        self.table = self.root
        self.declared: Set[int] = set()  # id() of the tables a [header] has declared

    def scan(self) -> Node:
        text, i = self.text, 0
        while True:
            i = _skip(_BETWEEN_STATEMENTS, text, i)
            if i >= len(text):
                break
            if text.startswith("[[", i):
                i = self.header(i, array=True)
            elif text.startswith("[", i):
                i = self.header(i, array=False)
            else:
                value = self.key_value(i, self.table)
                self.table.end = max(self.table.end, value.end)
                i = value.end
        for child in self.root.value.values():
            _cover(child)
        return self.root

    def first_repeat(self) -> Optional[Tuple[int, str]]:
        """Where a key or table is first defined a second time, and what to say."""
        try:
            self.scan()
        except _Repeated as repeat:
            return repeat.offset, repeat.message
        except (IndexError, KeyError, ValueError, AttributeError, TypeError):  # the text is invalid TOML past that point
            return None
        return None

    def node(self, value: Any, kind: str, start: int, end: int, key_start: Optional[int] = None) -> Node:
        line, column = self.lines.line_column(start)
        key_line = None if key_start is None else self.lines.line(key_start)
        return Node(value, kind, start, end, line, column, key_start=key_start, key_line=key_line)

    # -- statements

    def header(self, start: int, array: bool) -> int:
        text = self.text
        opening = 2 if array else 1
        keys, key_offsets, i = self.key(start + opening)
        end = i + opening  # after "]" or "]]"
        table = self.root
        for depth, key in enumerate(keys):
            last = depth == len(keys) - 1
            child = table.value.get(key)
            if last and array:
                if child is None:
                    child = self.node([], "sequence", start, end, key_start=key_offsets[depth])
                    table.value[key] = child
                element = self.node({}, "mapping", start, end, key_start=key_offsets[depth])
                child.value.append(element)
                self.table = element
            elif last:
                if child is None:
                    child = self.node({}, "mapping", start, end, key_start=key_offsets[depth])
                    table.value[key] = child
                elif id(child) in self.declared or child.kind != "mapping":
                    raise _Repeated(start, "table `[%s]` is declared twice" % text[start + 1:i].strip())
                else:  # declared now, after a [a.b] below it made it implicitly
                    child.start, child.end, child.line, child.column = start, end, *self.lines.line_column(start)
                    child.key_start, child.key_line = key_offsets[depth], self.lines.line(key_offsets[depth])
                self.declared.add(id(child))
                self.table = child
            else:
                if child is None:
                    child = self.node({}, "mapping", start, end, key_start=key_offsets[depth])
                    table.value[key] = child
                elif child.kind == "scalar":
                    raise _Repeated(start, "table `[%s]` redefines a value" % text[start + opening:i].strip())
                table = child.value[-1] if child.kind == "sequence" else child
        return end

    def key_value(self, start: int, table: Node) -> Node:
        """`key = value` at `start`, put into `table`; returns the value's Node."""
        text = self.text
        keys, _, i = self.key(start)
        i = _skip(_BLANK, text, i + 1)  # text[i] is "="
        value = self.value(i)
        value.key_start, value.key_line = start, self.lines.line(start)
        for key in keys[:-1]:  # a dotted key makes the tables on its way
            child = table.value.get(key)
            if child is None:
                child = self.node({}, "mapping", start, value.end, key_start=start)
                table.value[key] = child
            elif child.kind != "mapping":
                raise _Repeated(start, "`%s` is set twice" % text[start:i].rstrip(" \t="))
            table = child
        if keys[-1] in table.value:
            raise _Repeated(start, "`%s` is set twice" % text[start:i].rstrip(" \t="))
        table.value[keys[-1]] = value
        return value

    def key(self, i: int) -> Tuple[List[str], List[int], int]:
        """A (dotted) key: its parts, where each part starts, and the offset after it."""
        text = self.text
        keys: List[str] = []
        offsets: List[int] = []
        while True:
            i = _skip(_BLANK, text, i)
            offsets.append(i)
            if text.startswith('"', i):
                end = _match(_BASIC, text, i)
                token = text[i:end]
                keys.append(token[1:-1] if "\\" not in token else tomllib.loads("k = " + token)["k"])
            elif text.startswith("'", i):
                end = _match(_LITERAL, text, i)
                keys.append(text[i + 1:end - 1])
            else:
                end = _match(_BARE_KEY, text, i)
                keys.append(text[i:end])
            i = _skip(_BLANK, text, end)
            if not text.startswith(".", i):
                return keys, offsets, i
            i += 1

    # -- values

    def value(self, start: int) -> Node:
        text = self.text
        if text.startswith('"""', start):
            return self.node(None, "scalar", start, _match(_MULTILINE_BASIC, text, start))
        if text.startswith("'''", start):
            return self.node(None, "scalar", start, _match(_MULTILINE_LITERAL, text, start))
        if text.startswith('"', start):
            return self.node(None, "scalar", start, _match(_BASIC, text, start))
        if text.startswith("'", start):
            return self.node(None, "scalar", start, _match(_LITERAL, text, start))
        if text.startswith("[", start):
            return self.array(start)
        if text.startswith("{", start):
            return self.inline_table(start)
        end = _match(_BARE_VALUE, text, start)
        return self.node(None, "scalar", start, start + len(text[start:end].rstrip(" \t")))

    def array(self, start: int) -> Node:
        text = self.text
        items: List[Node] = []
        i = _skip(_BETWEEN_ITEMS, text, start + 1)
        while not text.startswith("]", i):
            item = self.value(i)
            items.append(item)
            i = _skip(_BETWEEN_ITEMS, text, item.end)
            if text.startswith(",", i):
                i = _skip(_BETWEEN_ITEMS, text, i + 1)
        return self.node(items, "sequence", start, i + 1)

    def inline_table(self, start: int) -> Node:
        text = self.text
        table = self.node({}, "mapping", start, start)
        i = _skip(_BETWEEN_ITEMS, text, start + 1)  # TOML 1.1 allows newlines and comments here
        while not text.startswith("}", i):
            value = self.key_value(i, table)
            i = _skip(_BETWEEN_ITEMS, text, value.end)
            if text.startswith(",", i):
                i = _skip(_BETWEEN_ITEMS, text, i + 1)
        table.end = i + 1
        self.declared.add(id(table))  # an inline table is complete: no [header] may add to it
        return table


def _skip(pattern: re.Pattern[str], text: str, i: int) -> int:
    match = pattern.match(text, i)
    return match.end() if match else i


def _match(pattern: re.Pattern[str], text: str, i: int) -> int:
    """The end of `pattern` at `i`, which tomllib's acceptance of the text guarantees."""
    match = pattern.match(text, i)
    if match is None:
        _unexpected(text, i)
    return match.end()


def _unexpected(text: str, i: int) -> NoReturn:
    raise ValueError("TOML scanner: unexpected text at offset %d: %r" % (i, text[i:i + 20]))


def _cover(node: Node) -> int:
    """Stretch a table over what was written into it later ([a] ... [a.b] ... a.c = 1)."""
    if node.kind != "scalar":
        children = node.value.values() if node.kind == "mapping" else node.value
        node.end = max([node.end] + [_cover(child) for child in children])
    return node.end


def _attach(node: Node, value: Any) -> bool:
    """Give each scalar Node tomllib's value; False when the trees disagree in shape."""
    if node.kind == "mapping":
        if not isinstance(value, dict) or list(value) != list(node.value):
            return False
        return all(_attach(child, value[key]) for key, child in node.value.items())
    if node.kind == "sequence":
        if not isinstance(value, list) or len(value) != len(node.value):
            return False
        return all(_attach(child, item) for child, item in zip(node.value, value))
    if isinstance(value, (dict, list)):
        return False
    node.value = value
    return True


def _flatten(root: Node) -> Flat:
    """Every non-table value by its last key, with its table path, in reading order."""
    flat: Flat = {}

    def walk(table: Node, path: Tuple[str, ...]) -> None:
        for key, child in table.value.items():
            if child.kind == "mapping":
                walk(child, path + (key,))
            else:
                flat.setdefault(key, []).append((path, child))

    walk(root, ())
    return flat
