"""From a log's errors to diagnoses: every check's signatures, weighed. Pure.

A signature's message says which family an error can belong to; its frames and the
log's context say which one it does. `expected scalar type Float but found Half` is
`apex` when apex's fused norm raised it and `dtype-mismatch` from CLIP's layer norm;
`CUBLAS_STATUS_ALLOC_FAILED` is `device-memory` beside an out-of-memory hint and
`cublas` otherwise. So, for one error, a match whose frames or context are present
outranks a match that only shares the words, and a signature that needs frames or
context it does not find is no diagnosis, only a near miss shown when nothing else is
found. A wrong cause is worse than none: text that matches no signature gets none.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Pattern, Sequence, Tuple

from envdoctor.pipeline.explain.context import LogContext, read_context
from envdoctor.pipeline.explain.involved import Involved, involved
from envdoctor.pipeline.explain.needles import NeedleIndex, needles
from envdoctor.pipeline.explain.reader import ERROR_WORDS, LOOSE_CHARS, LogExcerpt, LogLine
from envdoctor.pipeline.explain.spelling import canonical
from envdoctor.pipeline.explain.tracebacks import RaisedError, raised_errors, traceback_line
from envdoctor.target.model import Check, Remedy, Signature

CONTEXT_BEFORE = 80  # lines before an error that count as its surroundings
CONTEXT_AFTER = 20
LOOSE_LINES = 1000  # the log's last kept lines read for messages without an exception type
_BASE = {"traceback": 0.6, "cpp": 0.6, "bare": 0.5, "line": 0.4}
_FRAMES_HIT = 0.2
_CONTEXT_HIT = 0.15
_FATAL = 0.05  # the last error of the log: the one that ended the run
_OUTRANKED = 0.25  # taken from a match another family explains more specifically


@dataclass
class Diagnosis:
    check: str
    code: str
    confidence: float
    cause: str
    error: RaisedError
    signature: Signature
    involved: Involved
    evidence: List[str] = field(default_factory=list)
    remedies: List[Remedy] = field(default_factory=list)
    confirmed: Optional[bool] = None  # set by confirm: None while not probed or not probe-able here
    confirmation: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return {
            "check": self.check,
            "code": self.code,
            "confidence": round(self.confidence, 2),
            "cause": self.cause,
            "evidence": list(self.evidence),
            "involved": self.involved.to_dict(),
            "line": self.error.line,
            "confirmed": self.confirmed,
            "confirmation": self.confirmation,
            "remedies": [r.to_dict() for r in self.remedies],
        }


@dataclass(frozen=True)
class NearMiss:
    check: str
    code: str
    why: str  # what the signature needed and the log did not show, in words
    needs: str = ""  # ... and as its pattern, for --json (a regex is no sentence for the terminal)

    def to_dict(self) -> Dict[str, str]:
        found = {"check": self.check, "code": self.code, "why": self.why}
        if self.needs:
            found["needs"] = self.needs
        return found


@dataclass
class Matching:
    diagnoses: List[Diagnosis]
    near: List[NearMiss]
    errors: List[RaisedError]
    context: LogContext
    supporting: List[str]  # checks whose probes can reproduce what was diagnosed


@dataclass
class _Hit:
    check: Check
    signature: Signature
    error: RaisedError
    score: float
    specificity: Tuple[int, int]  # (frames and context found, characters the message pattern matched)
    context_line: str = ""


@functools.cache  # every signature's patterns, kept for the run (more than re's own cache holds)
def _compiled(pattern: str) -> Pattern[str]:
    return re.compile(pattern)


def _any(patterns: Sequence[str], texts: Sequence[str]) -> bool:
    return any(_compiled(p).search(t) for p in patterns for t in texts)


def _first_match(patterns: Sequence[str], lines: Sequence[str]) -> str:
    """The first of the lines where one of the patterns matches ("" for none). A pattern that spells a line break
    (`\\n`) reads the lines as one text, and what it matched is returned."""
    within = [p for p in patterns if _one_line(p)]
    for line in lines:
        if _any(within, [line]):
            return line.strip()
    across = [p for p in patterns if not _one_line(p)]
    if across:
        joined = "\n".join(lines)
        for pattern in across:
            found = _compiled(pattern).search(joined)
            if found:
                return " ".join(found.group(0).split())
    return ""


def _one_line(pattern: str) -> bool:
    return "\\n" not in pattern


def _near(lines: Sequence[LogLine], errors: Sequence[RaisedError]) -> List[LogLine]:
    """The lines around the errors: what the run said just before it failed."""
    marks = sorted(e.line for e in errors)
    if not marks:
        return list(lines)
    return [ln for ln in lines if _within(marks, ln.number)]


def _within(marks: Sequence[int], number: int) -> bool:
    i = bisect.bisect_left(marks, number - CONTEXT_AFTER)
    return i < len(marks) and marks[i] <= number + CONTEXT_BEFORE


class _Surroundings:
    """The lines a signature's context is looked for in: the log's context lines and the lines
    around one error (its own rank's), gathered only when a signature asks."""

    def __init__(self, excerpt: LogExcerpt) -> None:
        self.lines = excerpt.lines
        self.numbers = [ln.number for ln in excerpt.lines]  # the reader keeps them in order
        self.context = [ln.text[:LOOSE_CHARS] for ln in excerpt.context]
        self.cache: Dict[int, List[str]] = {}

    def of(self, error: RaisedError) -> List[str]:
        if error.line not in self.cache:
            lo = bisect.bisect_left(self.numbers, error.line - CONTEXT_BEFORE)
            hi = bisect.bisect_right(self.numbers, error.line + CONTEXT_AFTER)
            near = [ln.text[:LOOSE_CHARS] for ln in self.lines[lo:hi] if ln.stream in ("", error.stream)]
            self.cache[error.line] = self.context + near
        return self.cache[error.line]


def _weigh(check: Check, sig: Signature, error: RaisedError, text: str, folded: str, surroundings: _Surroundings,
           near: List[NearMiss]) -> Optional[_Hit]:
    found = _compiled(sig.message).search(text)
    if not found:
        return None
    # A signature whose message matches no characters keys on its frames or context alone: without them it was not
    # near, and a supporting one names no cause of its own; neither is a near miss worth showing
    quiet = sig.supporting or not found.group(0)
    frames_hit = bool(sig.frames) and _any(sig.frames, error.paths)
    if sig.frames_required and not frames_hit:
        if not quiet:
            near.append(NearMiss(check.id, sig.code, "the message matches, but the traceback shows none of the frames this "
                                 "reading needs", " or ".join(sig.frames)))
        return None
    if sig.unless:
        ruled_out = _first_match(sig.unless, [text] + surroundings.of(error))
        if ruled_out:
            if not quiet:
                near.append(NearMiss(check.id, sig.code, "the message matches, but the log shows another cause: %s" % _first_line(ruled_out)))
            return None
    context_line = _first_match(sig.context, surroundings.of(error)) if sig.context else ""
    context_hit = bool(context_line)
    if sig.context_required and not context_hit:
        if not quiet:
            near.append(NearMiss(check.id, sig.code, "the message matches, but nothing near it in the log shows what this "
                                 "reading needs beside it", " or ".join(sig.context)))
        return None
    score = _BASE.get(error.shape, 0.5) + _FRAMES_HIT * frames_hit + _CONTEXT_HIT * context_hit
    return _Hit(check, sig, error, score, (int(frames_hit) + int(context_hit), len(found.group(0))), context_line)


# A Python or IPython prompt's answer on the line after the call it echoes (`>>> torch.cuda.is_available()` / `False`,
# `Out[3]: False`), or a script's call with the answer written under it as a comment (`print(torch.cuda.is_available())` /
# `# False`, `# -> False`, `# output: False`): read as one line, "call -> answer"
_ANSWER = re.compile(r"^\s*(?:Out\[\d+\]:\s*|#+\s*(?:(?:->|=>|(?i:output|outputs|prints|returns|result))\s*:?\s*)?)?"
                     r"(False|True|None)\s*$")
# ... where that line ends in a call, also inside a shell's quoted `python -c "...print(x())"`
_ASKED = re.compile(r"\)['\"]?\s*$")
# A program's advice printed after whatever failed ("If you encounter CUDA out of memory, try to set --tile with a smaller
# number.", Real-ESRGAN's except block): a condition, not a message, so never read as the error itself
_ADVICE = re.compile(r"^\s*(?:[^\n]{0,40}?\b(?:tip|hint|note|info|warning)\b\W{0,3})?if (you|your)\b", re.IGNORECASE)
# A test runner's reason for skipping a test ("SKIPPED [5] tests/test_amp.py:12: CUDA not available", `-v`'s
# "tests/test_amp.py::test_x SKIPPED (CUDA not available)", unittest's "test_x ... skipped 'no GPU'"): the condition the
# test checked, not an error the run met
_SKIP_REASON = re.compile(r"^\s*(SKIPPED|XFAIL) \[\d+\] \S+:\d+: |^\S+::\S+ (SKIPPED|XFAIL)\b|\.\.\. skipped ['\"]")
# An error a program caught and went on past, as it says so: stable-diffusion-webui's memory monitor at start-up ("Warning:
# caught exception 'Torch not compiled with CUDA enabled', memory monitor disabled", on every Mac; "'Found no NVIDIA
# driver on your system...'" under DirectML): the webui runs on, on the device it has
_HANDLED = re.compile(r"^\s*Warning: caught exception '.*', memory monitor disabled\s*$")
# A line that tells an error as past or ruled out ("Fixed \"expected scalar type Half but found Float\" on txt2vid.",
# "- fixed: ...", "Previously I had ...", "I first got `...` and fixed it by ...", "之前那个 NCCL 报错 ... 就好了"): history
# beside the log's real error, which no reading explained
_PAST = re.compile(r"^\W*(?:(?:fixed|resolved|solved|previously|earlier|before that|used to|(?:I |this |it )used to|"
                   r"(?:I |at )?first (?:got|had|saw)|it'?s not|it is not|not the|not a duplicate)\b|"
                   r"(?:更新\W{0,2})?(?:之前|以前|先前))", re.IGNORECASE)


def _line_errors(excerpt: LogExcerpt, errors: Sequence[RaisedError]) -> List[RaisedError]:
    """Lines that carry a signature's words without an exception type (a warning, a message
    pasted alone): read only when no raised error explains anything."""
    taken = {e.line for e in errors}
    lines = [ln for ln in excerpt.lines[-LOOSE_LINES:] if ln.number not in taken and ln.text.strip()]
    found: List[RaisedError] = []
    for ln in lines:
        text = ln.text.strip()[:LOOSE_CHARS]
        if _ADVICE.match(text) or _SKIP_REASON.search(text) or _HANDLED.match(text) or _PAST.match(text):
            continue
        answer = _ANSWER.match(text)
        if answer and found and _ASKED.search(found[-1].message) and found[-1].line == ln.number - 1:
            found[-1].message += " -> " + answer.group(1)
            continue
        found.append(RaisedError("", text, ln.number, [], ln.stream, "line"))
    return found


def match(excerpt: LogExcerpt, checks: Sequence[Check]) -> Matching:
    errors = raised_errors(excerpt.lines)
    context = read_context(list(excerpt.context) + _near(excerpt.lines, errors))
    near: List[NearMiss] = []
    hits, supporting = _hits(errors, excerpt, checks, near, _last_error(errors))
    if not hits:
        loose = _line_errors(excerpt, errors)
        hits, more = _hits(loose, excerpt, checks, near, _last_error([*errors, *loose]))
        supporting += more
    return Matching(_diagnoses(hits, context), _unique(near), errors, context, sorted(set(supporting)))


def _last_error(errors: Sequence[RaisedError]) -> int:
    """The line of the run's last error: a raised one, or a line read as a message with an error word in it (a question
    or a thanks the user wrote after the log is not what the run stopped on; nor a traceback's header or frame, whose
    error the paste cut off: what it raised is unknown, and a warning before it is all the log says)."""
    return max((e.line for e in errors if e.shape != "line" or (ERROR_WORDS.search(e.text) and not traceback_line(e.text))),
               default=-1)


_Indexed = Tuple[Tuple[Tuple[Check, Signature], ...], NeedleIndex]
_INDEXED: Dict[Tuple[int, ...], Tuple[Tuple[Check, ...], _Indexed]] = {}  # by the checks' ids, the checks kept beside them


def _indexed(checks: Sequence[Check]) -> _Indexed:
    """Every (check, signature) in order, with the index of their needles (needles.py), made once a run: every error asks
    of every signature. (Keyed by identity: a Check is unhashable.)"""
    key = tuple(id(check) for check in checks)
    kept = _INDEXED.get(key)
    if kept is None or any(a is not b for a, b in zip(kept[0], checks)):
        pairs = tuple((check, sig) for check in checks for sig in check.signatures)
        kept = _INDEXED[key] = (tuple(checks), (pairs, NeedleIndex.of([needles(sig.message) for _, sig in pairs])))
    return kept[1]


def _weighed(indexed: _Indexed, error: RaisedError, text: str, folded: str, surroundings: _Surroundings,
             near: List[NearMiss]) -> List[_Hit]:
    """Every signature's reading of one error's (canonical) text (none of its needles in the error: not compiled, not run)."""
    pairs, index = indexed
    return [hit for i in index.tried(text, folded)
            if (hit := _weigh(*pairs[i], error, text, folded, surroundings, near)) is not None]


# The line breaks of a wrapped message, with the indent the paste gave its continuation lines
_WRAP = re.compile(r"[ \t]*\n[ \t]*")


def _hits(errors: Sequence[RaisedError], excerpt: LogExcerpt, checks: Sequence[Check],
          near: List[NearMiss], last: int) -> Tuple[List[_Hit], List[str]]:
    hits: List[_Hit] = []
    supporting: List[str] = []
    surroundings = _Surroundings(excerpt)
    read: List[Tuple[RaisedError, List[_Hit]]] = []
    indexed = _indexed(checks)
    for error in errors:
        text = canonical(error.text)
        folded = text.lower()
        found = _weighed(indexed, error, text, folded, surroundings, near)
        if not found and "\n" in text:
            # A message the paste wrapped (an email's or an issue's line length, a commit message's 72 columns: "dtypes
            # match,\n  got BFloat16 for the destination"): read again as one line
            text = _WRAP.sub(" ", text)
            found = _weighed(indexed, error, text, text.lower(), surroundings, near)
        read.append((error, found))
    # What the run stopped on, for the readings of a warning it may go on after (Signature.last_only): its last raised or
    # worded error, or else, where the log has none after it, the last line a signature reads (not a question after it)
    stopped_on = max([last] + [e.line for e, found in read if any(not h.signature.supporting for h in found)])
    first = _first_rank_failure(read)
    for error, found in read:
        kept = [h for h in found if not h.signature.last_only or error.line == stopped_on]
        if first is not None and first.stream != error.stream and first.line < error.line:
            for h in kept:
                if h.signature.across_ranks:
                    near.append(NearMiss(h.check.id, h.signature.code, "another rank failed first, of its own error: %s"
                                         % _first_line(first.text)))
            kept = [h for h in kept if not h.signature.across_ranks]
        supporting.extend(h.check.id for h in kept if h.signature.supporting)
        own = [h for h in kept if not h.signature.supporting]
        # The family whose frames or context are present, or else whose pattern says more of the message, explains it.
        best = max((h.specificity for h in own), default=(0, 0))
        leaders = {h.check.id for h in own if h.specificity == best}
        for hit in own:
            if hit.check.id not in leaders:
                hit.score -= _OUTRANKED if hit.specificity[0] < best[0] else _OUTRANKED / 2
            if error.line == last:
                hit.score += _FATAL
        hits.extend(own)
    return hits, supporting


# What the job's own collectives say when a peer is gone (not a rank's own failure of its code)
_COLLECTIVE_WORDS = re.compile(r"NCCL|nccl|c10d|ProcessGroup|[Dd]istributed|rendezvous|[Ss]tore|[Tt]ime ?out|[Cc]onnection|"
                               r"[Bb]roken pipe|[Ss]ocket|[Ww]atchdog|barrier|SIGTERM|[Ss]ignal")


def _first_rank_failure(read: Sequence[Tuple[RaisedError, List[_Hit]]]) -> Optional[RaisedError]:
    """A multi-rank log's first Python error, where it is a rank's own (its code's KeyError, its out of memory), not the
    job's collectives failing: the ranks that fail after it in the collectives (a peer gone, a timeout) only follow it,
    so their words are no cause of their own (`Signature.across_ranks`); its own reading, if any, stands."""
    for error, found in read:  # (in the log's order, as raised_errors and the loose lines give them)
        if not error.stream or error.shape != "traceback":
            continue
        if any(h.signature.across_ranks for h in found) or _COLLECTIVE_WORDS.search(error.text):
            return None
        return error
    return None


def _diagnoses(hits: List[_Hit], context: LogContext) -> List[Diagnosis]:
    """One diagnosis per check: its best hit; but each reading another check's probe decides between
    (Signature.confirmed_by) stays, so that both readings of one message are offered."""
    best: Dict[Tuple[str, str], _Hit] = {}
    for hit in hits:
        key = (hit.check.id, hit.signature.code if hit.signature.confirmed_by else "")
        seen = best.get(key)
        if seen is None or (hit.score, hit.error.line) > (seen.score, seen.error.line):
            best[key] = hit
    ordered = sorted(best.values(), key=lambda h: (-h.score, -h.error.line))
    return [_diagnosis(h, context) for h in ordered]


def _diagnosis(hit: _Hit, context: LogContext) -> Diagnosis:
    error, sig = hit.error, hit.signature
    where = "line %d" % error.line + (" (%s)" % error.stream if error.stream else "")
    evidence = ["%s: %s" % (where, _first_line(error.text))]
    inner = [f for f in error.frames if sig.frames and _any(sig.frames, [f.path])] or error.frames[-1:]
    for frame in inner[-2:]:
        evidence.append("raised in %s%s" % (frame.path, ", in %s" % frame.function if frame.function else ""))
    if hit.context_line and hit.context_line != _first_line(error.text):
        evidence.append("beside: %s" % _first_line(hit.context_line))
    details = involved(error, context)
    return Diagnosis(hit.check.id, sig.code, min(0.95, round(hit.score, 2)), sig.cause, error, sig, details, evidence,
                     list(sig.remedies))


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= 300 else line[:297] + "..."


def _unique(near: List[NearMiss]) -> List[NearMiss]:
    seen: Dict[Tuple[str, str], NearMiss] = {}
    for miss in near:
        seen.setdefault((miss.check, miss.code), miss)
    return list(seen.values())
