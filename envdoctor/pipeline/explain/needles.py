"""The literal text a signature's pattern cannot match without, read from the pattern itself.

Every run of `explain` tries each check's signatures on each error; compiling ~300 patterns is most of what a short
traceback costs. A pattern whose every top-level branch begins with a literal (`CUBLAS_STATUS_(...)`, `Found no NVIDIA
driver`) cannot match a text that holds none of those literals, so it need not be compiled or run there: `needles`
returns them, and `may_match` is the test. Patterns it cannot read that way (a branch starting with a class, a group,
an inline flag) get no needles and are always tried. Pure.
"""

from __future__ import annotations

import functools
from typing import Optional, Tuple

_MIN = 3  # a literal shorter than this rules out too little to be worth the look
_SPECIAL = set(".^$*+?{}[]|()\\")
_QUANTIFIERS = set("*+?{")
_ZERO_WIDTH = ("\\b", "\\A", "^")
# escapes that stand for one literal character
_LITERAL_ESCAPES = {"\\" + c: c for c in ".^$*+?{}[]|()\\/-'\"`:,=<>#&!~%@ _"}


def _branches(pattern: str) -> Optional[Tuple[str, ...]]:
    """The top-level branches of `pattern`, or None where it cannot be split with certainty."""
    branches, current, depth, i = [], "", 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            current += pattern[i:i + 2]
            i += 2
            continue
        if char == "[":  # a class: up to its closing bracket, which may come first or after a ^
            j = i + 1 + (pattern[i + 1:i + 2] == "^")
            j += pattern[j:j + 1] == "]"
            while j < len(pattern) and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            if j >= len(pattern):
                return None
            current += pattern[i:j + 1]
            i = j + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            branches.append(current)
            current, i = "", i + 1
            continue
        current += char
        i += 1
    return tuple(branches + [current]) if depth == 0 else None


def _leading_literal(branch: str) -> str:
    """The literal a branch starts with (zero-width anchors skipped), cut before a character a quantifier makes optional."""
    i = 0
    while True:
        anchor = next((a for a in _ZERO_WIDTH if branch.startswith(a, i)), None)
        if anchor is None:
            break
        i += len(anchor)
    literal = ""
    while i < len(branch):
        char = branch[i]
        if char == "\\":
            step = branch[i:i + 2]
            if step not in _LITERAL_ESCAPES:
                break
            piece, i = _LITERAL_ESCAPES[step], i + 2
        elif char in _SPECIAL:
            break
        else:
            piece, i = char, i + 1
        if i < len(branch) and branch[i] in _QUANTIFIERS:  # this character may be absent (or repeated): stop before it
            break
        literal += piece
    return literal


@functools.cache
def needles(pattern: str) -> Optional[Tuple[bool, Tuple[str, ...]]]:
    """(ignore case, literals): one of the literals is in any text the pattern matches; None: no such set is known."""
    ignore_case = pattern.startswith("(?i)")
    body = pattern[4:] if ignore_case else pattern
    if body.startswith("(?"):  # another global flag, or a lookaround spanning the pattern
        return None
    branches = _branches(body)
    if branches is None:
        return None
    found = []
    for branch in branches:
        literal = _leading_literal(branch)
        if len(literal) < _MIN or (ignore_case and not literal.isascii()):  # (re folds case as str.lower() does for ASCII)
            return None
        found.append(literal.lower() if ignore_case else literal)
    return ignore_case, tuple(found)


def may_match(pattern: str, text: str, folded: str) -> bool:
    """False only where `pattern` cannot match `text` (`folded`: the text lowercased, for patterns that ignore case)."""
    known = needles(pattern)
    if known is None:
        return True
    ignore_case, literals = known
    haystack = folded if ignore_case else text
    return any(literal in haystack for literal in literals)
