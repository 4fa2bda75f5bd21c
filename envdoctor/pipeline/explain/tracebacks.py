"""The raised errors in a log excerpt: Python tracebacks (plain, chained, IPython's
coloured ones old and new, rich's box, pytest's reports), C++ `what():` aborts, and error lines printed without a
traceback. Each rank's lines are read on their own, so interleaved ranks do not mix.

Pure functions over the reader's LogLines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set

from envdoctor.pipeline.explain.reader import LogLine

MAX_MESSAGE_LINES = 12

# (rich's traceback opens a box: "╭──── Traceback (most recent call last) ────╮", the reader having cut it before the words)
_TB_START = re.compile(r"^\s*Traceback \(most recent call last\):?[\s─╮]*$")
_IPY_START = re.compile(r"^\s*(?P<type>[A-Za-z_][\w.]*)\s{2,}Traceback \(most recent call last\)\s*$")
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.*))?')
# IPython 8: `File /path/x.py:12, in f(a)`; VS Code renders the path as a link: `File [~/path/x.py:12](...)`.
_IPY_FRAME = re.compile(r"^\s*File \[?(?P<path>[^\s\"\[].*?):(?P<line>\d+)\]?\)?(?:\(\S*\))?(?:, in (?P<func>.*))?\s*$")
# (IPython 8 names the function a cell defined: `Cell In[2], line 2, in forward(x)`)
_IPY_CELL = re.compile(r"^\s*(?:Cell In ?\[(?P<cell>\d+)\], line (?P<line>\d+)(?:, in (?P<func>[\w<>.]+)(?:\(.*\))?)?|"
                       r"Input In \[(?P<cell2>\d+)\], in .*)\s*$")
# rich's frames inside the box: "│ /path/to/module.py:34 in forward │" (a long line wraps the function's name onto the next
# box line, or keeps only the path)
_RICH_FRAME = re.compile(r"^│ (?P<path>[^│\s][^│]*?\.py[xi]?):(?P<line>\d+)(?: in (?P<func>[\w<>.]*))?")
# pytest's report of a failure: each frame's location after its code ("tests/test_x.py:6: ", `--tb=short`'s
# "site-packages/torch/nn/functional.py:2515: in layer_norm"), the error on "E   " lines, and the raising frame's location
# last, with the error's type ("site-packages/apex/normalization/fused_layer_norm.py:69: RuntimeError")
_PYTEST_LOCATION = re.compile(r"^(?P<path>[^\s:][^:\n]*\.py):(?P<line>\d+):(?: in (?P<func>[\w<>.]+)| (?P<type>[\w.]+))?\s*$")
_PYTEST_ERROR = re.compile(r"^E {1,8}\S")
# a path's first part, alone on a box line: no space in it, from the root, a drive or home
_RICH_PATH_START = re.compile(r"^(/|[A-Za-z]:\\|~/)[^\s│]*$")
_IPY_OLD_FRAME = re.compile(r"^(?P<path>\S.*?\.py|<ipython-input-[\w-]+>) in (?P<func>[\w<>.]+)\(")
_TYPE = (r"(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure|Failed|Fault)|KeyboardInterrupt|StopIteration)"
         r"|c10::\w+|std::\w+")
_EXC_LINE = re.compile(r"^(?P<type>%s)(?::\s?(?P<msg>.*))?$" % _TYPE)
_BARE_EXC = re.compile(r"(?:^|[\s\]|:>-])(?P<type>%s): (?P<msg>\S.*)$" % _TYPE)
_CHAIN = re.compile(r"^\s*(The above exception was the direct cause of the following exception|"
                    r"During handling of the above exception, another exception occurred):?\s*$")
_CPP_THROW = re.compile(r"terminate called after throwing an instance of '(?P<type>[\w:]+)'")
_CPP_WHAT = re.compile(r"^\s*what\(\):\s+(?P<msg>.+)$")
# NCCL's own warnings, printed without a Python error when a run only hangs or a log holds no traceback:
# `host:pid:tid [0] NCCL WARN Bootstrap : no socket interface found`, `include/socket.h:344 WARN Socket creation failed`
# (the file's path bounded, and begun only where a path can begin: a run re-scanned from every start inside a long line
# of path characters costs 256 steps a character, 25 ms for one 4,000-character line)
_NCCL_WARN = re.compile(r"(?:\bNCCL WARN|(?<![\w/])[\w/]{1,256}\.(?:h|cc|cpp|cu):\d+ (?:NCCL )?WARN) (?P<msg>\S.*)$")
# A line that has none of these words is neither a header, a frame, an exception nor a chain marker.
_MAYBE = re.compile(r"Traceback|File|Cell|Input In| in |Error|Exception|Interrupt|Exit|Fail|Fault|StopIteration|::|exception|"
                    r"what\(\)|terminate|WARN ")
_NOT_MESSAGE = re.compile(r"^\s*$|^\[|^\s*[\]}],?\s*$|^\d{4}-\d\d-\d\d|^(INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|^\s*\d+%\||^-{10,}|^={10,}")


@dataclass(frozen=True)
class Frame:
    path: str  # with forward slashes, whatever the platform that wrote it
    line: Optional[int]
    function: str = ""


@dataclass
class RaisedError:
    type: str  # "RuntimeError", "torch.OutOfMemoryError", "c10::Error"
    message: str
    line: int  # the exception line's number in the log
    frames: List[Frame] = field(default_factory=list)  # outermost first
    stream: str = ""
    shape: str = "traceback"  # "traceback", "bare" (an error line with no traceback), "cpp"
    chained: bool = False  # raised while handling, or because of, the one before it

    @property
    def text(self) -> str:
        return ": ".join(part for part in (self.type, self.message) if part)

    @property
    def paths(self) -> List[str]:
        return [f.path for f in self.frames]


def frame_path(path: str) -> str:
    return path.strip().replace("\\", "/")


def _frame(line: str) -> Optional[Frame]:
    for pattern in (_PY_FRAME, _IPY_FRAME, _RICH_FRAME):
        m = pattern.match(line)
        if m:
            return Frame(frame_path(m.group("path")), int(m.group("line")), (m.group("func") or "").strip())
    m = _IPY_OLD_FRAME.match(line)
    if m:
        return Frame(frame_path(m.group("path")), None, m.group("func"))
    m = _IPY_CELL.match(line)
    if m:
        return Frame("<cell %s>" % (m.group("cell") or m.group("cell2")), int(m.group("line") or 0) or None,
                     m.group("func") or "<module>")
    return None


def traceback_line(text: str) -> bool:
    """A traceback's header or one of its frames: where a traceback is, not what was raised."""
    return bool(_TB_START.match(text)) or _frame(text) is not None


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def by_stream(lines: Sequence[LogLine]) -> Dict[str, List[LogLine]]:
    streams: Dict[str, List[LogLine]] = {}
    for line in lines:
        streams.setdefault(line.stream, []).append(line)
    return streams


def raised_errors(lines: Sequence[LogLine]) -> List[RaisedError]:
    """Every error in the excerpt, in the order of the log."""
    found: List[RaisedError] = []
    after_gap = {b.number for a, b in zip(lines, lines[1:]) if b.number != a.number + 1}
    for stream, own in by_stream(lines).items():
        found.extend(_Parser(stream, after_gap).parse(own))
    found.sort(key=lambda e: e.line)
    return found


class _Parser:
    def __init__(self, stream: str, after_gap: Set[int]) -> None:
        self.stream = stream
        self.after_gap = after_gap
        self.errors: List[RaisedError] = []
        self.frames: Optional[List[Frame]] = None  # inside a traceback: its frames so far
        self.ipython_type = ""
        self.chained = False
        self.message_of: Optional[RaisedError] = None  # the error whose message lines may continue
        self.cpp_type = ""
        # How deep the last frame sat: the exception line is less indented than its frames (at the margin, where a code
        # block's indent or a paste's lost space moved every line), or at the line's start as IPython prints it
        self.frame_indent = 0
        self.rich_path = ""  # the parts so far of a path rich's box wrapped onto several lines
        self.pytest_frames: List[Frame] = []  # pytest's frame locations before the error it shows on "E" lines

    def parse(self, lines: Sequence[LogLine]) -> List[RaisedError]:
        for entry in lines:
            if entry.number in self.after_gap:  # the reader dropped lines before it: nothing carries over
                self.frames, self.message_of, self.pytest_frames = None, None, []
            self._line(entry.number, entry.text)
        if self.frames:
            # A traceback cut before its exception line (a truncated paste, a log cut short): its frames
            # belong to the error quoted without any (an issue's title, the line printed before it).
            bare = [e for e in self.errors if not e.frames]
            if bare:
                bare[-1].frames = list(self.frames)
        return self.errors

    def _line(self, number: int, text: str) -> None:
        if self.frames is None and ".py:" in text and self._pytest_location(text):
            return
        if text.startswith("│ ") and self.frames is not None:
            text = self._rich_line(text)
            if not text:
                return
        if self.message_of is None and not _MAYBE.search(text):
            return
        if _CHAIN.match(text):
            self.chained, self.message_of = True, None
            return
        start = _IPY_START.match(text)
        if _TB_START.match(text) or start:
            self.frames, self.message_of = [], None
            self.ipython_type = start.group("type") if start else ""
            return
        frame = _frame(text)
        if frame is not None:
            if self.frames is None:  # frames whose header the reader dropped, or a log that lost it
                self.frames = []
            self.frame_indent = _indent(text)
            self.frames.append(frame)
            self.message_of = None
            return
        if self.message_of is not None and self._continues(text):
            return
        if self.frames is not None and text.strip() and _indent(text) < max(1, self.frame_indent) \
                and not text.lstrip().startswith("---"):
            m = _EXC_LINE.match(text.strip())
            if m:
                self._add(m.group("type"), m.group("msg") or "", number, self.frames, "traceback")
                self.frames, self.ipython_type = None, ""
                return
        self._loose(number, text)

    def _pytest_location(self, text: str) -> bool:
        """pytest's location of a frame: kept for the error its "E" lines will show; the raising frame's, which names the
        error's type after the error was shown, joins that error's frames."""
        m = _PYTEST_LOCATION.match(text)
        if m is None:
            return False
        frame = Frame(frame_path(m.group("path")), int(m.group("line")), m.group("func") or "")
        last = self.errors[-1] if self.errors else None
        if m.group("type") and last is not None and last.type.rsplit(".", 1)[-1] == m.group("type").rsplit(".", 1)[-1]:
            last.frames.append(frame)
            last.shape = "traceback"
        else:
            self.pytest_frames.append(frame)
        return True

    def _rich_line(self, text: str) -> str:
        """A line inside rich's traceback box, with a path the box wrapped joined back: "│ /site-packages/apex/
        normalization/fused_ │", then "│ layer_norm.py:2 in forward │" read as one frame (a long path takes more lines).
        "" for a path's part before its end."""
        inner = text[2:].rstrip(" │")
        if self.rich_path:
            joined = "│ " + self.rich_path + text[2:]
            if _RICH_FRAME.match(joined):
                self.rich_path = ""
                return joined
            if inner and " " not in inner and len(self.rich_path) < 1000:  # the path goes on
                self.rich_path += inner
                return ""
            self.rich_path = ""
        if _RICH_PATH_START.match(inner) and not _RICH_FRAME.match(text):
            self.rich_path = inner
            return ""
        return text

    def _continues(self, text: str) -> bool:
        error = self.message_of
        assert error is not None
        if _NOT_MESSAGE.match(text) or _EXC_LINE.match(text.strip()) or error.message.count("\n") >= MAX_MESSAGE_LINES:
            self.message_of = None
            return False
        error.message = (error.message + "\n" + text.strip()).strip()
        return True

    def _loose(self, number: int, text: str) -> None:
        throw = _CPP_THROW.search(text)
        if throw:
            self.cpp_type = throw.group("type")
            return
        what = _CPP_WHAT.match(text)
        if what and self.cpp_type:
            self._add(self.cpp_type, what.group("msg"), number, [], "cpp")
            self.cpp_type = ""
            return
        m = _BARE_EXC.search(text)
        if m and self.frames is None:
            if _PYTEST_ERROR.match(text) and self.pytest_frames:  # pytest's error, after the frames it listed
                self._add(m.group("type"), m.group("msg"), number, self.pytest_frames, "traceback")
                self.pytest_frames = []
            else:
                self._add(m.group("type"), m.group("msg"), number, [], "bare")
            return
        warn = _NCCL_WARN.search(text)
        if warn and self.frames is None:
            self._add("NCCL WARN", warn.group("msg"), number, [], "bare")

    def _add(self, type_: str, message: str, number: int, frames: List[Frame], shape: str) -> None:
        error = RaisedError(type_, message.strip(), number, list(frames), self.stream, shape, self.chained)
        self.errors.append(error)
        self.message_of = error
        self.chained = False
