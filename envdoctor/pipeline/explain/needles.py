"""The literal text a signature's pattern cannot match without, read from the pattern itself.

Every run of `explain` tries each check's signatures on each error; compiling ~300 patterns is most of what a short
traceback costs. A pattern each of whose top-level branches holds a plain literal outside its groups
(`CUBLAS_STATUS_(...)`, `(CUDA|HIP) out of memory`) cannot match a text that holds none of those literals, so it need
not be compiled or run there: `needles` returns them, a `NeedleIndex` of every signature's says which to try on a text,
and `may_match` is that test for one pattern. A branch without a plain literal is read through a group every match of it
passes: one no quantifier makes optional (`(black|green) image`), a case-blind one (`(?i:...)`, how a pattern mixes
case-blind and exact parts: its literals are looked for case-blind), a lookahead (`^(?=.*?(fp8|float8))...`). Patterns it
cannot read that way (a branch of negative looks, classes and optional groups only, a global flag other than (?i), a
case-blind literal outside ASCII) get no needles and are always tried. Pure.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

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
    found, start, depth = [], 0, 0
    for token in _SPLIT.finditer(pattern):
        char = token.group()[0]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            found.append(pattern[start:token.start()])
            start = token.end()
        elif char == "[" and token.group(1) is None:  # a class that never closes
            return None
    return tuple(found + [pattern[start:]]) if depth == 0 else None


# A pattern as the tokens `_required_literal` reads: an escape, a character class (a `]` may come first, after an optional
# `^`), a counted quantifier ({m}, {m,}, {m,n}, {,n}; any other brace is text), a parenthesis, a special character, or a
# run of plain characters. One regex pass instead of a loop over characters: reading every signature's needles is most of
# what a short traceback costs otherwise.
_TOKEN = re.compile(r"\\.?|\[\^?\]?(?:\\.|[^\]\\])*\]?|\{(?:\d+(?:,\d*)?|,\d+)\}|[()]|[.^$*+?{}|]|[^\\\[\](){}.^$*+?|]+|\]")
# The same reading for `branches`, which needs only escapes, classes (group 1: the `]` that closes one), parentheses and
# bars
_SPLIT = re.compile(r"\\.?|\[\^?\]?(?:\\.|[^\]\\])*(\])?|[()|]|[^\\\[()|]+")


def _required_literal(branch: str) -> str:
    """The longest literal a branch cannot match without: a run of plain characters outside any group or class (groups
    may be optional, their insides alternatives), cut before a character a quantifier makes optional or repeatable."""
    best, run, depth = "", "", 0
    tokens = _TOKEN.findall(branch)
    last = len(tokens) - 1
    for k, token in enumerate(tokens):
        first = token[0]
        if first == "\\":
            piece = _LITERAL_ESCAPES.get(token) if depth == 0 else None
        elif first == "(" or first == ")":
            depth += 1 if first == "(" else -1
            piece = None
        elif first == "[" or token in _SPECIAL or (first == "{" and len(token) > 1):  # a class, a special character, bounds
            piece = None
        else:
            piece = token if depth == 0 else None
        if piece is None:
            if len(run) > len(best):
                best = run
            run = ""
        elif k < last and tokens[k + 1][0] in _QUANTIFIERS:  # the quantifier makes the last character optional or repeatable
            run += piece[:-1]
            if len(run) > len(best):
                best = run
            run = ""
        else:
            run += piece
    return run if len(run) > len(best) else best


def _step(pattern: str, i: int) -> int:
    """Past the atom at `i`: an escape, a character class, or one character."""
    if pattern[i] == "\\":
        return i + 2
    return _class_end(pattern, i) if pattern[i] == "[" else i + 1


def _group_end(pattern: str, start: int) -> Optional[int]:
    """Where the group opening at `start` closes (its `)`), or None where it never does."""
    depth, i = 0, start
    while i < len(pattern):
        if pattern[i] in "()":
            depth += 1 if pattern[i] == "(" else -1
            if depth == 0:
                return i
        i = _step(pattern, i)
    return None


# How a group's head says what it holds: its text (capturing, `(?:`, `(?P<name>`), the same case-blind (`(?i:`), or what
# follows the match's position (`(?=`, a lookahead). Any other head (a negative or backward look, flags, a reference to
# another group) asserts nothing that must be in the text.
_GROUP_HEAD = re.compile(r"\((?:\?:|\?P<\w+>|\?=|(\?i:)|(?!\?))")


def _required_groups(branch: str) -> List[Tuple[str, bool]]:
    """(inside, case-blind) for each group at the branch's top level that every match of it passes through: not made
    optional by a quantifier (`?`, `*`, `{0,n}`); a lookahead's inside must be in the text as much as a group's."""
    found: List[Tuple[str, bool]] = []
    i = 0
    while i < len(branch):
        if branch[i] != "(":
            i = _step(branch, i)
            continue
        end = _group_end(branch, i)
        if end is None:
            return found
        head = _GROUP_HEAD.match(branch, i)
        after = branch[end + 1:end + 3]
        if head and after[:1] not in ("?", "*") and after not in ("{0", "{,"):
            found.append((branch[head.end():end], head.group(1) is not None))
        i = end + 1
    return found


def _branch_needles(branch: str, ignore_case: bool) -> Optional[Tuple[Tuple[str, bool], ...]]:
    """(literal, case-blind) one of which every match of the branch holds: its longest plain literal, or else the
    literals of the required group whose shortest literal is longest (`(?=.*?(fp8|float8))`, `(black|green) image`)."""
    literal = _required_literal(branch)
    if len(literal) >= _MIN:
        return ((literal, ignore_case),)
    best: Optional[Tuple[Tuple[str, bool], ...]] = None
    for inside, blind in _required_groups(branch):
        found = _literals(inside, ignore_case or blind)
        if found is not None and (best is None or min(len(lit) for lit, _ in found) > min(len(lit) for lit, _ in best)):
            best = found
    return best


def _literals(body: str, ignore_case: bool) -> Optional[Tuple[Tuple[str, bool], ...]]:
    """(literal, case-blind) for each branch of `body`, reading through the groups it must pass; None where one has none."""
    parts = branches(body)
    if parts is None:
        return None
    found: Tuple[Tuple[str, bool], ...] = ()
    for branch in parts:
        more = _branch_needles(branch, ignore_case)
        if more is None:
            return None
        found += more
    return found


Needles = Optional[Tuple[bool, Tuple[str, ...]]]  # what `needles` returns


@functools.cache
def needles(pattern: str) -> Needles:
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


# The index keys each literal by its first characters, as many as every literal has at least: a text that holds the
# literal holds them, as one of its own runs of that many characters
_KEY = _MIN


@dataclass(frozen=True)
class NeedleIndex:
    """Many patterns' needles by literal: each literal is looked for once in a text, not once for every pattern that
    holds it, and only where the text holds its first three characters (every error of a log asks about every signature:
    looking per signature was most of what `explain` cost)."""

    always: Tuple[int, ...]  # the patterns with no needles: tried on every text
    # literal -> the patterns it may let match, by the literal's first characters: looked for as written, and lowercased
    # in the lowercased text
    exact: Dict[str, Tuple[Tuple[str, Tuple[int, ...]], ...]]
    blind: Dict[str, Tuple[Tuple[str, Tuple[int, ...]], ...]]

    @classmethod
    def of(cls, known: Sequence[Needles]) -> NeedleIndex:
        exact: Dict[str, Dict[str, List[int]]] = {}
        blind: Dict[str, Dict[str, List[int]]] = {}
        for position, found in enumerate(known):
            if found is not None:
                for literal in found[1]:
                    table = blind if found[0] else exact
                    table.setdefault(literal[:_KEY], {}).setdefault(literal, []).append(position)

        def frozen(table: Dict[str, Dict[str, List[int]]]) -> Dict[str, Tuple[Tuple[str, Tuple[int, ...]], ...]]:
            return {key: tuple((literal, tuple(at)) for literal, at in group.items()) for key, group in table.items()}
        return cls(tuple(i for i, found in enumerate(known) if found is None), frozen(exact), frozen(blind))

    def tried(self, text: str, folded: str) -> List[int]:
        """The positions, in order, of the patterns that may match `text` (`folded`: the text lowercased)."""
        found = set(self.always)
        for table, haystack in ((self.exact, text), (self.blind, folded)):
            for key in table.keys() & {haystack[i:i + _KEY] for i in range(len(haystack) - _KEY + 1)}:
                for literal, positions in table[key]:
                    if literal in haystack:
                        found.update(positions)
        return sorted(found)


def may_match(pattern: str, text: str, folded: str) -> bool:
    """False only where `pattern` cannot match `text` (`folded`: the text lowercased, for patterns that ignore case)."""
    return bool(NeedleIndex.of([needles(pattern)]).tried(text, folded))
