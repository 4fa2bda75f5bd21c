"""Edits of a config file's text at the spans its parser located: only the value's bytes
change, or one line (one JSON member) is added beside its siblings.

Syntax level only: which keys and values a tool wants is its reader module's `write`
(reading.Change); here a Change becomes an Edit of the text, rendered in the syntax and
the style of the token it replaces (YAML quoting kept, and added where a plain word would
load as another type: bare `no` is False under yaml.safe_load), and edits are applied
together. Line ends, a missing final newline, comments, key order and indentation stay.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.configs.document import Document, Key, Node
from envdoctor.configs.reading import REMOVE, Change


class EditError(ValueError):
    """An edit this text cannot take (a value the syntax cannot hold, edits that overlap,
    a place to insert that has no siblings to copy): one line."""


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] (== old) of `file` by `new`; start == end inserts."""

    file: str
    start: int
    end: int
    new: str
    old: str
    key: str  # the tool's key path: "params.mixed_precision", "unet.weight_dtype"
    sets: str  # what it sets, for people: "params.mixed_precision: null"

    def to_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def line_end(text: str) -> str:
    """The file's own line end (CRLF when it has any), for inserted lines."""
    return "\r\n" if "\r\n" in text else "\n"


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` with every edit made. Identical edits of one span count once (a precision and
    the weights it casts share a token); edits that overlap otherwise are refused. Several
    insertions at one place go in the order given."""
    unique: List[Edit] = []
    for edit in edits:
        if text[edit.start:edit.end] != edit.old:
            raise EditError("%s: %s is no longer %r at offset %d" % (edit.file, edit.key, edit.old, edit.start))
        if not any((e.start, e.end, e.new) == (edit.start, edit.end, edit.new) for e in unique):
            unique.append(edit)
    ordered = sorted(unique, key=lambda e: (e.start, e.end))  # stable: insertions at one place keep their order
    for before, after in zip(ordered, ordered[1:]):
        if after.start < before.end:
            raise EditError("%s: conflicting edits of %s (%r and %r)" % (before.file, before.key, before.new, after.new))
    out: List[str] = []
    at = 0
    for edit in ordered:
        out.append(text[at:edit.start])
        out.append(edit.new)
        at = edit.end
    out.append(text[at:])
    return "".join(out)


# ---------------------------------------------------------------- values

_YAML_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./+-]*")
_SHELL_PLAIN = re.compile(r"[A-Za-z0-9_./:@%+,=-]+")


def render(syntax: str, old: Optional[str], value: Any) -> str:
    """`value` as a token of `syntax`, in the style of the token it replaces (`old`; None
    for a new key): the same quotes, the same case of true/false."""
    old = (old or "").strip()
    if syntax == "json":
        return json.dumps(value, ensure_ascii=False)
    if syntax == "yaml":
        return _yaml(old, value)
    if syntax == "toml":
        return _toml(old, value)
    if syntax == "shell":
        return _shell(old, value)
    raise EditError("no writer for %s text" % syntax)


def _bool(old: str, value: bool) -> str:
    word = "true" if value else "false"
    if old in ("True", "False"):
        return word.capitalize()
    if old in ("TRUE", "FALSE"):
        return word.upper()
    return word


def _yaml(old: str, value: Any) -> str:
    if value is None:
        return "~" if old == "~" else "null"
    if isinstance(value, bool):
        return _bool(old, value)
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if old.startswith('"'):
        return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar
    if old.startswith("'") or not _plain_yaml(text):
        return "'%s'" % text.replace("'", "''")
    return text


def _plain_yaml(text: str) -> bool:
    """Whether `text` written bare loads back as this string (not `no` → False, not `null`)."""
    import yaml

    return bool(_YAML_PLAIN.fullmatch(text)) and yaml.safe_load(text) == text


def _toml(old: str, value: Any) -> str:
    if value is None:
        raise EditError("TOML has no null")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if old.startswith("'") and not old.startswith("'''") and "'" not in text and "\n" not in text:
        return "'%s'" % text
    return json.dumps(text, ensure_ascii=False)  # JSON's escapes are all TOML basic-string escapes


def _shell(old: str, value: Any) -> str:
    if isinstance(value, bool):
        return _bool(old, value) if old.lower() in ("true", "false") else ("true" if value else "false")
    if value is None:
        raise EditError("a launch line has no null")
    text = str(value)
    if old.startswith('"'):
        return '"%s"' % re.sub(r'(["\\$`])', r"\\\1", text)
    if old.startswith("'") or not _SHELL_PLAIN.fullmatch(text):
        return "'%s'" % text.replace("'", "'\\''")
    return text


# ---------------------------------------------------------------- changes → edits

def edits_for(doc: Document, changes: Sequence[Change], sets: str = "") -> List[Edit]:
    """The edits that make `doc` say `changes`; a change that is already true needs none."""
    out: List[Edit] = []
    for change in changes:
        node = doc.root.get(*change.path)
        what = sets or "%s: %s" % (change.key, change.shown())
        if change.value is REMOVE:
            if node is not None:
                out.append(_removal(doc, node, change, what))
            continue
        if node is not None:
            if node.kind != "scalar":
                raise EditError("%s: %s is a %s, not a value" % (doc.file, change.key, node.kind))
            if type(node.value) is type(change.value) and node.value == change.value:
                continue
            old = doc.source(node)
            new = render(doc.syntax, old, change.value)
            if old == "" and doc.syntax == "yaml":  # `key:` (null): the span is empty, right after the colon
                new = " " + new
            out.append(Edit(doc.file, node.start, node.end, new, old, change.key, what))
            continue
        out.append(_insertion(doc, change, what))
    return out


def expected_tree(before: Any, changes: Sequence[Change]) -> Any:
    """The plain tree `before` with `changes` made: what the tool's own loader must read
    from the edited text, nothing more and nothing less."""
    tree = copy.deepcopy(before)
    for change in changes:
        parent = tree
        for key in change.path[:-1]:
            if isinstance(parent, dict) and key not in parent:
                parent[key] = {}  # a TOML table added with its key
            parent = parent[key]
        leaf = change.path[-1]
        if change.value is REMOVE:
            if isinstance(parent, dict):
                parent.pop(leaf, None)
        else:
            parent[leaf] = change.value
    return tree


def _removal(doc: Document, node: Node, change: Change, what: str) -> Edit:
    """A launch line's switch taken out with the blanks after it (or before it, at a line's end)."""
    if doc.syntax != "shell" or node.key_start is None:
        raise EditError("%s: %s cannot be removed from %s text" % (doc.file, change.key, doc.syntax))
    text = doc.text
    start, end = node.key_start, node.end
    while end < len(text) and text[end] in " \t":
        end += 1
    if end == len(text) or text[end] in "\r\n\\;&|#":  # nothing after it on its line: take the blanks before instead
        end = node.end
        while start > 0 and text[start - 1] in " \t":
            start -= 1
    return Edit(doc.file, start, end, "", text[start:end], change.key, what)


def _insertion(doc: Document, change: Change, what: str) -> Edit:
    parent_path, name = change.path[:-1], change.path[-1]
    parent = doc.root.get(*parent_path)
    if not isinstance(name, str):
        raise EditError("%s: no item %s to set in %s" % (doc.file, name, change.key))
    text = doc.text
    if doc.syntax == "toml" and parent is None and len(parent_path) == 1:
        return _new_table(doc, str(parent_path[0]), name, change, what)
    if parent is None or parent.kind != "mapping":
        raise EditError("%s: %s cannot be added: no %s to add it to" % (doc.file, change.key, ".".join(map(str, parent_path)) or "mapping"))
    if doc.syntax == "json":
        at, new = _json_member(text, parent, name, render("json", None, change.value))
    elif doc.syntax == "yaml":
        at, new = _line(doc, parent, parent_path, "%s: %s" % (name, render("yaml", None, change.value)), None)
    elif doc.syntax == "toml":
        at, new = _line(doc, parent, parent_path, "%s%%s%s" % (_toml_key(name), render("toml", None, change.value)), "=")
    elif doc.syntax == "shell":
        at, new = _shell_switch(doc, parent_path, name, change)
    else:
        raise EditError("no writer for %s text" % doc.syntax)
    return Edit(doc.file, at, at, new, "", change.key, what)


_JSON_KEY = re.compile(r'"(?:[^"\\]|\\.)*"')


def _json_member(text: str, parent: Node, name: str, value: str) -> Tuple[int, str]:
    """`"name": value` after the object's last member, on its own line with the members'
    indent (or inline, in a one-line object), with the file's line end and colon spacing."""
    members = [n for n in parent.value.values() if n.key_start is not None]
    key = json.dumps(name, ensure_ascii=False)
    if not members:
        return parent.start + 1, "%s: %s" % (key, value)
    last = max(members, key=lambda n: n.end)
    assert last.key_start is not None
    key_end = _JSON_KEY.match(text, last.key_start)
    colon = text[key_end.end():last.start] if key_end else ": "
    line_start = text.rfind("\n", 0, last.key_start) + 1
    indent = text[line_start:last.key_start]
    if indent.strip() or line_start <= parent.start:  # members written on the object's own line
        return last.end, ", %s%s%s" % (key, colon, value)
    return last.end, ",%s%s%s%s%s" % (line_end(text), indent, key, colon, value)


_TOML_BARE = re.compile(r"[A-Za-z0-9_-]+")
_TOML_SEPARATOR = re.compile(r"(?:[A-Za-z0-9_.-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')([ \t]*=[ \t]*)")


def _toml_key(name: str) -> str:
    return name if _TOML_BARE.fullmatch(name) else json.dumps(name)


def _line(doc: Document, parent: Node, parent_path: Tuple[Key, ...], entry: str, separator: Optional[str]) -> Tuple[int, str]:
    """A `key: value` (YAML) or `key = value` (TOML) line added to a block mapping or table:
    after the last sibling written on one line, with its indent (and TOML `=` spacing); without
    such a sibling, before the first key (YAML), or after the table's header (TOML)."""
    text = doc.text
    eol = line_end(text)
    siblings = [n for n in parent.value.values() if n.key_start is not None and n.kind == "scalar" and "\n" not in text[n.key_start:n.end]]
    if doc.syntax == "yaml" and text[parent.start:parent.start + 1] in ("{", "["):
        raise EditError("%s: cannot add a key to a flow mapping ({...})" % doc.file)
    if siblings:
        anchor = max(siblings, key=lambda n: n.end)
        assert anchor.key_start is not None
        indent = _indent(doc, anchor.key_start)
        if separator is not None:
            spacing = _TOML_SEPARATOR.match(text, anchor.key_start)
            entry = entry % (spacing.group(1) if spacing else " = ")
        newline = text.find("\n", anchor.end)
        if newline < 0:
            return len(text), eol + indent + entry
        return newline + 1, indent + entry + eol
    if separator is not None:
        entry = entry % " = "
    if doc.syntax == "yaml":
        keys = [n.key_start for n in parent.value.values() if n.key_start is not None]
        if not keys:
            raise EditError("%s: no sibling key to write %s beside" % (doc.file, entry))
        first = min(keys)
        indent = _indent(doc, first)
        return first - len(indent), indent + entry + eol
    # TOML: top-level keys go before the first table; a table's first key right after its header
    if not parent_path:
        header = re.search(r"^[ \t]*\[", text, re.MULTILINE)
        return (header.start(), entry + eol) if header else (len(text), ("" if not text or text.endswith("\n") else eol) + entry)
    pattern = r"^[ \t]*\[[ \t]*%s[ \t]*\][^\n]*" % r"[ \t]*\.[ \t]*".join(re.escape(_toml_key(str(k))) for k in parent_path)
    header = re.search(pattern, text, re.MULTILINE)
    if header is None:
        raise EditError("%s: cannot find the [%s] table" % (doc.file, ".".join(map(str, parent_path))))
    if header.end() == len(text):
        return len(text), eol + entry
    return header.end() + 1, entry + eol


def _indent(doc: Document, key_start: int) -> str:
    line_start = doc.text.rfind("\n", 0, key_start) + 1
    indent = doc.text[line_start:key_start]
    if indent.strip():
        raise EditError("%s: the sibling key on line %d does not start its line" % (doc.file, doc.text.count("\n", 0, key_start) + 1))
    return indent


def _new_table(doc: Document, table: str, name: str, change: Change, what: str) -> Edit:
    """A TOML table the file lacks, added at its end with the key."""
    text, eol = doc.text, line_end(doc.text)
    final = text.endswith("\n")
    new = "%s%s[%s]%s%s = %s%s" % ("" if final else eol, eol, _toml_key(table), eol, _toml_key(name),
                                   render("toml", None, change.value), eol if final else "")
    return Edit(doc.file, len(text), len(text), new, "", change.key, what)


def _shell_switch(doc: Document, parent_path: Tuple[Key, ...], name: str, change: Change) -> Tuple[int, str]:
    """A launcher switch (`accelerate launch --cpu`) added right after the launcher's words."""
    launcher = doc.root.get("launcher")
    if parent_path != ("launcher_flags",) or change.value is not True or launcher is None:
        raise EditError("%s: only a launcher switch can be added to a launch line, not %s" % (doc.file, change.key))
    return launcher.end, " " + name
