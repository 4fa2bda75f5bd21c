"""The literal text a signature's pattern cannot match without, read from the pattern itself.

Every run of `explain` tries each check's signatures on each error; compiling ~300 patterns is most of what a short
traceback costs. A pattern each of whose top-level branches holds a plain literal outside its groups
(`CUBLAS_STATUS_(...)`, `(CUDA|HIP) out of memory`) cannot match a text that holds none of those literals, so it need
not be compiled or run there: `needles` returns them, and `may_match` is the test. A branch that is one case-blind
group (`(?i:...)`, how a pattern mixes case-blind and exact parts) is read through: its own branches' literals, looked for
case-blind. Patterns it cannot read that way (a branch that is all groups and classes, a global flag other than (?i))
get no needles and are always tried. Pure.
"""

from __future__ import annotations

import functools
import re
from typing import Optional, Tuple

_MIN = 3  # a literal shorter than this rules out too little to be worth the look
_SPECIAL = set(".^$*+?{}[]|()\\")
_QUANTIFIERS = set("*+?{")
_GLOBAL_FLAGS = re.compile(r"^\(\?([aiLmsux]+)\)")
# escapes that stand for one literal character
_LITERAL_ESCAPES = {"\\" + c: c for c in ".^$*+?{}[]|()\\/-'\"`:,=<>#&!~%@ _"}


def _class_end(pattern: str, start: int) -> int:
    """Where the character class opening at `start` ends (past its `]`, which may come first or after a `^`); past the
    pattern's end where it never closes."""
    j = start + 1 + (pattern[start + 1:start + 2] == "^")
    j += pattern[j:j + 1] == "]"
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def branches(pattern: str) -> Optional[Tuple[str, ...]]:
    """The top-level branches of `pattern`, or None where it cannot be split with certainty."""
    found, current, depth, i = [], "", 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            current += pattern[i:i + 2]
            i += 2
            continue
        if char == "[":
            end = _class_end(pattern, i)
            if end > len(pattern):
                return None
            current += pattern[i:end]
            i = end
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            found.append(current)
            current, i = "", i + 1
            continue
        current += char
        i += 1
    return tuple(found + [current]) if depth == 0 else None


# A pattern as the tokens `_required_literal` reads: an escape, a character class (a `]` may come first, after an optional
# `^`), a counted quantifier ({m}, {m,}, {m,n}, {,n}; any other brace is text), a parenthesis, a special character, or a
# run of plain characters. One regex pass instead of a loop over characters: reading every signature's needles is most of
# what a short traceback costs otherwise.
_TOKEN = re.compile(r"\\.?|\[\^?\]?(?:\\.|[^\]\\])*\]?|\{(?:\d+(?:,\d*)?|,\d+)\}|[()]|[.^$*+?{}|]|[^\\\[\](){}.^$*+?|]+|\]")


def _required_literal(branch: str) -> str:
    """The longest literal a branch cannot match without: a run of plain characters outside any group or class (groups
    may be optional, their insides alternatives), cut before a character a quantifier makes optional or repeatable."""
    best, run, depth = "", "", 0
    tokens = _TOKEN.findall(branch)
    for k, token in enumerate(tokens):
        after = tokens[k + 1] if k + 1 < len(tokens) else ""
        quantified = after[:1] in _QUANTIFIERS
        first = token[0]
        if first == "\\":
            piece = _LITERAL_ESCAPES.get(token) if depth == 0 else None
        elif first in "([)":
            depth += (first == "(") - (first == ")")
            piece = None
        elif token in _SPECIAL or (first == "{" and len(token) > 1):  # a special character, a counted quantifier's bounds
            piece = None
        else:
            piece = token if depth == 0 else None
        if piece is None:
            best, run = max(best, run, key=len), ""
        elif quantified:  # the quantifier makes the last character optional or repeatable: the run ends before it
            best, run = max(best, run + piece[:-1], key=len), ""
        else:
            run += piece
    return max(best, run, key=len)


def _case_blind_inside(branch: str) -> Optional[str]:
    """What a branch that is one `(?i:...)` group holds, or None where the branch is anything else."""
    if not branch.startswith("(?i:"):
        return None
    depth, i = 0, 0
    while i < len(branch):
        char = branch[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(branch, i)
            continue
        depth += (char == "(") - (char == ")")
        if depth == 0:
            return branch[4:i] if i == len(branch) - 1 else None
        i += 1
    return None


def _literals(body: str, ignore_case: bool) -> Optional[Tuple[Tuple[str, bool], ...]]:
    """(literal, case-blind) for each branch of `body`, reading through case-blind groups; None where one has none."""
    parts = branches(body)
    if parts is None:
        return None
    found: Tuple[Tuple[str, bool], ...] = ()
    for branch in parts:
        inside = _case_blind_inside(branch)
        if inside is not None:
            more = _literals(inside, True)
            if more is None:
                return None
            found += more
            continue
        literal = _required_literal(branch)
        if len(literal) < _MIN:
            return None
        found += ((literal, ignore_case),)
    return found


@functools.cache
def needles(pattern: str) -> Optional[Tuple[bool, Tuple[str, ...]]]:
    """(ignore case, literals): one of the literals is in any text the pattern matches; None: no such set is known.
    Where some literals are case-blind, all are looked for case-blind (lowercased): never a miss, only a wider net."""
    flags = _GLOBAL_FLAGS.match(pattern)
    letters = flags.group(1) if flags else ""
    if "x" in letters:  # verbose: spaces are not literal
        return None
    found = _literals(pattern[flags.end():] if flags else pattern, "i" in letters)
    if found is None:
        return None
    ignore_case = any(blind for _, blind in found)
    if ignore_case and not all(literal.isascii() for literal, _ in found):  # (re folds case as str.lower() does for ASCII)
        return None
    return ignore_case, tuple(literal.lower() if ignore_case else literal for literal, _ in found)


def may_match(pattern: str, text: str, folded: str) -> bool:
    """False only where `pattern` cannot match `text` (`folded`: the text lowercased, for patterns that ignore case)."""
    return present(needles(pattern), text, folded)


def present(known: Optional[Tuple[bool, Tuple[str, ...]]], text: str, folded: str) -> bool:
    """may_match on a pattern's needles read already (the explain's matcher reads each signature's once a run)."""
    if known is None:
        return True
    ignore_case, literals = known
    haystack = folded if ignore_case else text
    return any(literal in haystack for literal in literals)
