"""Reading a log as it streams: decode, clean and keep only what can explain a failure.

A training log can be 100 MB of progress bars with one traceback at its end. The
scanner keeps, in bounded memory, the lines around anything that looks like an error
(windows), and the few context lines that say which torch, device and precision the
run used; everything else is counted and dropped. Whole chunks without an error word
are skipped at C speed (one regex search per chunk), so a 10 MB log costs a fraction
of a second.

Cleaning, so that a log reads as the traceback Python printed:
- ANSI colours (Jupyter, rich, coloured loggers) are removed;
- a carriage return ends a progress bar's redraw: only the last redraw is kept, and a
  traceback printed right after a bar (`100%|##| 10/10Traceback (most...`) starts its
  own line;
- torchrun's `[rank0]:` / `[default0]:` and mpirun's `[1,0]<stderr>:` prefixes become
  the line's stream, so interleaved ranks are read one rank at a time;
- a reply's quote marks (`> `) and Markdown's code fences are taken off, and so are a log
  collector's column on every line (docker compose's `app-1  | `, a logger's time and
  level, journald's) and the margin a traceback's own lines carry (an exception group's
  `| `), so its frames and exception line read as Python printed them;
- a notebook's error output, each line a JSON string, is unescaped, and so is text saved
  from a web page (`File &quot;x.py&quot;`, its `<br>` a line break);
- UTF-16 logs (a Windows PowerShell `>` redirect) and UTF-8 with a BOM are decoded.
"""

from __future__ import annotations

import codecs
import html
import json
import math
import re
from collections import deque
from dataclasses import dataclass, field
from typing import IO, Deque, Iterable, List, Optional, Tuple

CHUNK = 1 << 20
MAX_LINE = 4000  # characters kept of one line (a minified JSON line, a binary blob)
# Of a line read as a message without an exception type, or for what the run said (context), the first characters: a
# message people paste is short, and the rest of a 4,000-character line is data (base64, minified JSON) that every
# pattern would scan
LOOSE_CHARS = 1000
BEFORE = 80  # lines kept before the first error word of a window (what led to it: an OOM report, a launch line)
AFTER = 60  # lines kept after the last one
MAX_KEPT = 20000  # lines kept in all: the newest windows win (the fatal traceback is at the end)
MAX_CONTEXT = 200
HEAD = 1 << 20  # context lines are looked for in the log's first MiB (where runs print their setup) and in the windows

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# The same colours with their ESC lost on the way (a notebook's output copied from a browser: "[0;31mRuntimeError[0m: ..."):
# taken off where the text holds colour's reset, "[0m", which every coloured line ends with
_ANSI_WITHOUT_ESC = re.compile(r"\[(?:[0-9]{1,3}(?:;[0-9]{1,3})*)?m")
_TRACEBACK_MIDLINE = re.compile(r"(?<=[^\n])(?=Traceback \(most recent call last\))")
# One JSON string ending its line, alone or as a key's value (a notebook's "traceback" list, its "evalue")
_JSON_STRING = r'"((?:[^"\\]|\\.)*)",?\s*$'
_JSON_STRING_LINE = re.compile(r'^\s*(?:"[\w-]+"\s*:\s*)?' + _JSON_STRING)
# An item of a JSON list of strings on its own line: a notebook's "traceback" list, whose lines need not hold an escape;
# and a chunk that has one, with its comma (the list's last item has none)
_JSON_ITEM = re.compile(r'^\s*' + _JSON_STRING)
_JSON_LIST_ITEM = re.compile(r'^[ \t]*"(?:[^"\\\n]|\\.)*",[ \t]*$', re.MULTILINE)
_TRACEBACK = "Traceback (most recent call last)"
_FRAME_AT = re.compile(r'File "[^"\n]+", line \d+')
# An HTML page's escapes (`File &quot;x.py&quot;`, `&lt;module&gt;`, `&#39;Half&#39;`): text copied out of a page's source
_HTML_ENTITY = re.compile(r"&(?:#\d+|#[xX][0-9a-fA-F]+|[A-Za-z]+);")
# An HTML line break in text saved from a page or a forum's archive, one post a line ("エラーは <br> CUDA out of memory. Tried
# to allocate <br> ..."): a line break, as the page showed it
_HTML_BREAK = re.compile(r"[ \t]*<br[ \t]*/?>[ \t]?", re.IGNORECASE)
# The spaces a web page, a word processor or a chat app puts between words (no-break, narrow no-break, figure, CJK
# ideographic: "CUDA&nbsp;out of memory" once unescaped) read as a space, and the invisible ones it slips into them (zero-width
# space and joiners, word joiner, a byte-order mark) as nothing: the words are the ones the run printed
_WEB_SPACES = str.maketrans({"\xa0": " ", "\u2007": " ", "\u202f": " ", "\u3000": " ",
                             "\u200b": None, "\u200c": None, "\u200d": None, "\u2060": None, "\ufeff": None})
# A Markdown code fence alone on its line (```` ``` ````, ```` ```python ````, `~~~`): the page's, not the run's output
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[\w+-]*[ \t]*$", re.MULTILINE)
# A reply's quote marks (`> `, `> > `, `>` alone on a quoted blank line), never Python's `>>> ` prompt
_QUOTE_MARKS = re.compile(r"^(?:>(?: |$))+", re.MULTILINE)
# What may stand before "Traceback (most recent call last)" without being a margin: IPython's exception type
_IPYTHON_HEAD = re.compile(r"^\s*[A-Za-z_][\w.]*\s{2,}$")
_LAUNCHER = r"\[(?:rank|default)(\d+)\]:|\[(\d+),(\d+)\]<std(?:out|err)>:"
# (indented with the rest of a pasted code block; and two launchers' prefixes on one line, torchrun's --tee under
# accelerate or a job script: "[default0]:[rank0]: Traceback ...")
_PREFIX = re.compile(r"^[ \t]*(?:(?:%s) ?)+" % _LAUNCHER)
_LAUNCHER_WITHIN = re.compile(_LAUNCHER)
_PREFIX_STARTS = ("[", " ", "\t")  # what a line with a launcher's prefix starts with (the regex need not run on others)
# Words that open a window: every error line Python, torch, C++ aborts and loggers print carries one
# ("RuntimeError", "CUDA error", "terminate called ... 'c10::Error'", "WARNING[XFORMERS]"). They all
# start with a capital, so the regex engine skips the lowercase text of a progress bar at C speed.
ERROR_WORDS = re.compile(r"Traceback|File [\"/\\\w<~\[]|Error|ERROR|Exception|CUBLAS|CUDNN|CUDA error|NCCL|Warning|WARNING|"
                          r"FAILED|Failed|Promotion|No module named|Killed")
# Lines that say which stack, device and precision the run used.
_CONTEXT_WORDS = (
    r"torch|[Pp]y[Tt]orch|CUDA|cuda|[Dd]evice|GPU|gpu|NVIDIA|Tesla|GeForce|RTX|A100|H100|L4\b|T4\b|V100|"
    r"mixed.precision|fp16|bf16|fp8|float16|bfloat16|float8|[Hh]alf|precision|dtype|DoRA|dora|apex|Colab|colab|"
    r"memory|[Aa]llocat|Python \d|python3\.\d+|VRAM|显存"
)
# The words' first letters, looked at first: re tries forty alternatives at every position otherwise
# (0.18 s per MiB of progress bars; with the look-ahead 0.08 s).
_CONTEXT = re.compile(r"(?=[ACDGHLNPRTVabcdfghmpt显])(?:%s)" % _CONTEXT_WORDS)


class NotText(ValueError):
    """The input is not a log: binary data."""


@dataclass(frozen=True)
class LogLine:
    number: int  # 1-based, in the original text
    text: str
    stream: str = ""  # "rank0", "1,0": which process wrote it, when the launcher said


@dataclass
class LogExcerpt:
    """What the scanner kept of a log: windows around error words and context lines."""

    lines: List[LogLine] = field(default_factory=list)
    context: List[LogLine] = field(default_factory=list)
    total_lines: int = 0
    total_bytes: int = 0
    dropped_lines: int = 0  # window lines dropped to stay within MAX_KEPT
    has_text: bool = False  # any line with more than white space

    @property
    def empty(self) -> bool:
        return not self.has_text


def _encoding(head: bytes) -> Tuple[str, int]:
    """The encoding of a log that starts with `head`, and its BOM's length: the BOM's, else UTF-16 without one, a Windows
    code page, or UTF-8."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if head.startswith(bom):
            return name, len(bom)
    return _utf16_without_bom(head) or _code_page(head) or "utf-8", 0


def _decodes(sample: bytes, name: str) -> Optional[str]:
    """The sample as text in that encoding, a character its end cut in two left out; None where it is not."""
    try:
        return codecs.getincrementaldecoder(name)(errors="strict").decode(sample, final=False)
    except UnicodeDecodeError:
        return None


def _code_page(head: bytes) -> Optional[str]:
    """The Windows code page a log is in where it is not UTF-8: a Chinese or Japanese Windows console writes a redirected
    program's output in it (Python's own, `python train.py > log.txt`, in the console's code page): "cp932" where its
    reading holds kana, else "gb18030" (GBK's superset) where the bytes are GBK. The ASCII (the error's type, the paths,
    torch's words) reads the same in either; only the OS's own words need the right one. Not for a UTF-8 log with a
    stray byte or a few (a path in another code page): those read as U+FFFD, the rest as it is."""
    sample = head[:8192]
    if b"\x00" in sample or sample.decode("utf-8", errors="replace").count("\ufffd") <= 8:  # (NULs: no text's)
        return None
    japanese = _decodes(sample, "cp932")
    if japanese is not None and any("\u3041" <= c <= "\u30fa" for c in japanese):
        return "cp932"
    return "gb18030" if _decodes(sample, "gb18030") is not None else None


def _utf16_without_bom(head: bytes) -> Optional[str]:
    """"utf-16-le" or "utf-16-be" for text in UTF-16 that came without its BOM (a Windows tool's or .NET's log): where
    every other byte of the sample is NUL and the bytes between them are not, as ASCII and most Latin text is written."""
    sample = head[:8192]
    if len(sample) < 16:
        return None
    even, odd = sample[0::2], sample[1::2]
    for zeros, text, name in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if zeros.count(0) >= 0.9 * len(zeros) and text.count(0) == 0:
            return name
    return None


def looks_binary(head: bytes) -> bool:
    """For a head read as UTF-8 (no other encoding fits it): NUL bytes, or mostly bytes that are no UTF-8."""
    sample = head[:8192]
    if b"\x00" in sample:
        return True
    text = sample.decode("utf-8", errors="replace")
    return text.count("\ufffd") > max(8, len(text) // 10)


# Where a log collector's column can end on a line: "| " (docker compose, loggers), "] ", ": ", " - ", a timestamp's "Z "
_COLUMN_END = re.compile(r"(?:[|\]:Z]|\s-)[ \t]")
COLUMN_SAMPLE = 200  # the chunk's first lines, of which nine in ten must carry a column
_DIGIT = re.compile(r"\d")
# Words that make a line's start its content, not a collector's column ("step 12 loss 0.1 Warning: "): Python's and
# torch's own spellings, and a training log's metrics (`{'loss': nan, 'grad_norm': nan, ...` repeated on every line is the
# log, not its margin); a logger's level in capitals (ERROR, WARNING) is a column's
_CONTENT = re.compile(r"Traceback|Error|Exception|Warning|Fail|Killed|CUDA|NCCL|CUBLAS|CUDNN|File |(?i:(?<![a-z])(loss|nan|inf)(?![a-z]))")


class Margins:
    """What a log puts before the text a program printed, taken off as the log is read.

    The column a log collector writes before every line (docker compose's `app-1  | `, a logger's
    `2023-08-25 08:59:20 | ERROR | `, GitHub Actions' `2024-05-01T12:00:00.1234567Z `, journald's
    `Nov 27 10:00:00 host python[812]: `): the longest start of a chunk's first line, ended as a column
    ends, holding a digit (a time, a service's index) and none of an error's own words, that nine in
    ten of its first lines carry, digits aside; a chunk too short to tell keeps the column before it.

    The margin a traceback's lines carry where the rest of the log has none or another (a logger's
    time and level on a traceback it printed, an exception group's `| `): what stands before
    `Traceback (most recent call last)`, or before a frame's two spaces (`app-1  |   File "x.py", line
    3`: a paste that begins at its frames). It is taken off that line and every line after it that
    starts with it, digits aside, until the next header or frame's own margin, or none, replaces it.
    The line after must carry it too, or it was text, not a margin (`RuntimeError: Traceback (most
    recent call last):`).

    A launcher's rank prefix is neither: it names the line's stream."""

    def __init__(self) -> None:
        self.column: Optional[re.Pattern[str]] = None
        self.traceback: Optional[re.Pattern[str]] = None

    def strip(self, text: str) -> str:
        self.column = _column(text, self.column)
        if self.column is not None:
            text = self.column.sub("", text)
        if self.traceback is None and _TRACEBACK not in text and ('"' not in text or 'File "' not in text):
            return text
        lines = text.split("\n")
        for i, line in enumerate(lines):
            before = _before_traceback(line)
            if before is not None:
                shape = _margin_shape(before)
                self.traceback = shape if shape is not None and i + 1 < len(lines) and shape.match(lines[i + 1]) else None
            if self.traceback is not None:
                m = self.traceback.match(line)
                if m:
                    lines[i] = line[m.end():]
        return "\n".join(lines)


def _column(text: str, before: Optional[re.Pattern[str]]) -> Optional[re.Pattern[str]]:
    """The chunk's column (Margins), or the one before it where the chunk has too few lines to tell."""
    sample = [line for line in text.split("\n", COLUMN_SAMPLE * 2)[:COLUMN_SAMPLE * 2] if line.strip()][:COLUMN_SAMPLE]
    if len(sample) < 3:
        return before
    if before is not None and _carries(before, sample):  # the column goes on (a log's lines keep their logger's shape)
        return before
    for at, first in enumerate(sample[:3]):  # (a question or a title the user wrote before the log)
        rest = sample[at:]
        if len(rest) < 3:
            break
        launcher = _LAUNCHER_WITHIN.search(first, 0, 120)
        for end in sorted((m.end() for m in _COLUMN_END.finditer(first, 0, launcher.start() if launcher else 120)), reverse=True):
            start = first[:end]
            if _DIGIT.search(start) and not _CONTENT.search(start):
                shape = _digits_aside(start)
                if _carries(shape, rest):
                    return re.compile("^" + shape.pattern, re.MULTILINE)
    return None


def _carries(shape: re.Pattern[str], lines: List[str]) -> bool:
    """Nine in ten of the lines start with the shape (counted only until a tenth has not)."""
    allowed = len(lines) - math.ceil(0.9 * len(lines))
    for line in lines:
        if not shape.match(line):
            allowed -= 1
            if allowed < 0:
                return False
    return True


def _digits_aside(start: str) -> re.Pattern[str]:
    """The start of a line as a pattern whose numbers may differ (a timestamp moves on, a pid changes)."""
    return re.compile(re.sub(r"\d+", r"\\d+", re.escape(start)))


def _before_traceback(line: str) -> Optional[str]:
    """What stands before a traceback's header, or before a frame's own indent; None on other lines."""
    at = line.find(_TRACEBACK)
    if at >= 0:
        return line[:at]
    frame = _FRAME_AT.search(line) if 'File "' in line else None
    if frame and line.endswith("  ", 0, frame.start()):
        return line[:frame.start() - 2]
    return None


def _margin_shape(before: str) -> Optional[re.Pattern[str]]:
    before = before[before.rfind("\r") + 1:]  # a progress bar redrawn before the traceback is no margin
    launcher = _LAUNCHER_WITHIN.search(before)
    if launcher:
        before = before[:launcher.start()]
    if not before.strip() or _IPYTHON_HEAD.match(before):  # an indent is the parser's to read: frames sit deeper
        return None
    return _digits_aside(before)


def clean_lines(text: str, margins: Margins) -> List[str]:
    """A chunk of log text as the lines a person reading the terminal saw (`margins`: those the
    log's earlier chunks left open, learned further here)."""
    # (one character looked for first: memchr's speed, where a two-character needle costs 0.6 ms a MiB of progress bars)
    if ("\\" in text and ("\\u001b" in text or "\\n" in text)) or ('"' in text and '",' in text and _JSON_LIST_ITEM.search(text)):
        text = "\n".join(_json_unescaped(text.split("\n")))
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "[0m" in text:
        text = _ANSI_WITHOUT_ESC.sub("", text)
    for _ in range(3):  # (a page's source escaped again, as a page quoting it shows it: "&amp;quot;")
        if "&" not in text or not _HTML_ENTITY.search(text):
            break
        text = html.unescape(text)
    if "<" in text and ("<br" in text or "<BR" in text):
        text = _HTML_BREAK.sub("\n", text)
    if ">" in text and (text.startswith(">") or "\n>" in text):
        text = _QUOTE_MARKS.sub("", text)
    if ("`" in text or "~" in text) and ("```" in text or "~~~" in text):
        text = _FENCE.sub("", text)
    text = margins.strip(text)
    if _TRACEBACK in text:
        text = _TRACEBACK_MIDLINE.sub("\n", text)
    lines = text.split("\n")
    if "\r" in text:
        # what a redrawn line (progress bars) last showed: the text after its last carriage return, a CRLF's own left out
        lines = [line.rstrip("\r") for line in lines]
        lines = [line[line.rfind("\r") + 1:] for line in lines]
    return lines


def _json_unescaped(lines: List[str]) -> List[str]:
    """A notebook's error output (an .ipynb, or pasted from one) keeps each traceback line as a JSON string, its
    colours and newlines escaped (`"\\u001b[0;31mRuntimeError\\u001b[0m: ...\\n"`): such a line becomes the text it
    holds; so does an item of a list of strings that holds no escape (`"Traceback (most recent call last):",`, and
    the list's last item after it). Other lines stay as they are: a quoted line alone, or a key's plain value
    (`"mixed_precision": "fp16",`), is the log's own text."""
    out: List[str] = []
    in_list = False  # the line before was a list's item: this one may be its last, without a comma
    for line in lines:
        m = _json_line(line, in_list)
        in_list = False
        if m:
            try:
                out.extend(json.loads('"%s"' % m.group(1)).split("\n"))
                in_list = line.rstrip().endswith(",")
                continue
            except ValueError:
                pass
        out.append(line)
    return out


def _json_line(line: str, in_list: bool) -> Optional[re.Match[str]]:
    """The line as one JSON string: one that holds an escape, or a list's item (a comma after it, or an item before)."""
    if "\\" in line:
        return _JSON_STRING_LINE.match(line)
    if in_list or line.rstrip().endswith(","):
        return _JSON_ITEM.match(line)
    return None


def _clipped(text: str) -> str:
    """A line longer than MAX_LINE keeps its head and its tail: what a glued line (progress bars, a log pasted without its
    newlines) ends with is most often the error the run stopped on."""
    if len(text) <= MAX_LINE:
        return text
    return text[:MAX_LINE // 2] + " ... " + text[-(MAX_LINE // 2):]


def split_prefix(text: str) -> Tuple[str, str]:
    """(stream, text without the launcher's prefix)."""
    if text[:1] not in _PREFIX_STARTS:
        return "", text
    m = _PREFIX.match(text)
    if not m:
        return "", text
    stream = "rank%s" % m.group(1) if m.group(1) is not None else "%s,%s" % (m.group(2), m.group(3))
    return stream, text[m.end():]


class LogScanner:
    """Feed bytes as they come (`feed`), then `close()` for the excerpt.

    `strict`: refuse binary input (NotText) instead of reading it as text; `envdoctor run`
    is not strict, a child may print anything."""

    def __init__(self, strict: bool = True) -> None:
        self.strict = strict
        self._decoder: Optional[codecs.IncrementalDecoder] = None
        self._head = b""
        self._pending = ""  # text after the last newline, waiting for its end
        # (the lines as read, made LogLines only if a window keeps them: most are dropped unseen)
        self._before: Deque[Tuple[int, str]] = deque(maxlen=BEFORE)
        self._kept: Deque[LogLine] = deque(maxlen=MAX_KEPT)
        self._context: Deque[LogLine] = deque(maxlen=MAX_CONTEXT)
        self._keep_until = 0  # line number through which lines are kept
        self._line = 0
        self._bytes = 0
        self._kept_count = 0
        self._context_bytes = 0
        self._has_text = False
        # The first context lines (the version banner, "Using device: cpu") matter most; the deque keeps the newest.
        self._first_context: List[LogLine] = []
        self._margins = Margins()

    def feed(self, data: bytes) -> None:
        if not data:
            return
        self._bytes += len(data)
        if self._decoder is None:  # the first 8 KiB decide the encoding (and whether this is text at all)
            self._head += data
            if len(self._head) >= 8192:
                self._start()
            return
        self._text(self._decoder.decode(data))

    def _start(self) -> None:
        head, self._head = self._head, b""
        encoding, skip = _encoding(head)
        if self.strict and encoding == "utf-8" and looks_binary(head):
            raise NotText("the input is binary data, not a log or a traceback")
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._text(self._decoder.decode(head[skip:]))

    def _text(self, text: str) -> None:
        text = self._pending + text
        cut = text.rfind("\n")
        if cut < 0:
            if len(text) > MAX_LINE * 4:  # one endless line: judge what there is, drop the rest of it
                self._lines(text[:MAX_LINE])
                self._pending = ""
            else:
                self._pending = text
            return
        self._pending = text[cut + 1:]
        self._lines(text[:cut])

    def _lines(self, text: str) -> None:
        lines = clean_lines(text, self._margins)
        text = "\n".join(lines)
        self._has_text = self._has_text or bool(text.strip())
        first = self._line + 1
        self._line += len(lines)
        if self._context_bytes < HEAD:
            self._context_bytes += len(text)
            for i in _hit_lines(_CONTEXT, text):
                self._note_context(self._log_line(first + i, lines[i]))
        done = 0
        for i in _hit_lines(ERROR_WORDS, text):
            self._pass(lines, first, done, i)
            if self._keep_until < first + i:  # a new window: the lines that led to it first
                self._keep(self._log_line(number, text) for number, text in self._before)
                self._before.clear()
            self._keep((self._log_line(first + i, lines[i]),))
            self._keep_until = first + i + AFTER
            done = i + 1
        self._pass(lines, first, done, len(lines))

    def _pass(self, lines: List[str], first: int, start: int, end: int) -> None:
        """Lines start..end-1 hold no error word: kept while a window is open, else remembered as
        the lines before the next one (the last BEFORE of them)."""
        open_end = min(end, max(start, self._keep_until - first + 1))
        self._keep(self._log_line(first + i, lines[i]) for i in range(start, open_end))
        for i in range(max(open_end, end - BEFORE), end):
            self._before.append((first + i, lines[i]))

    def _log_line(self, number: int, text: str) -> LogLine:
        text = _clipped(text)
        if not text.isascii():  # (on the lines kept only: a scan of every chunk costs 36 ms a 10 MB log of progress bars)
            text = text.translate(_WEB_SPACES)
        stream, rest = split_prefix(text)
        return LogLine(number, rest, stream)

    def _keep(self, lines: Iterable[LogLine]) -> None:
        for line in lines:
            self._kept.append(line)
            self._kept_count += 1

    def _note_context(self, line: LogLine) -> None:
        if len(self._first_context) < MAX_CONTEXT // 2:
            self._first_context.append(line)
        else:
            self._context.append(line)

    def close(self) -> LogExcerpt:
        if self._decoder is None:
            if not self._head:
                return LogExcerpt(total_bytes=self._bytes)
            self._start()
        assert self._decoder is not None
        tail = self._pending + self._decoder.decode(b"", final=True)
        self._pending = ""
        if tail:
            self._lines(tail)
        # The log's last lines are kept even without an error word: where a run ends is where it failed
        # (a message pasted alone, a launcher's last words).
        last = self._kept[-1].number if self._kept else 0
        self._keep(self._log_line(number, text) for number, text in self._before if number > last)
        return LogExcerpt(
            lines=list(self._kept),
            context=self._first_context + list(self._context),
            total_lines=self._line,
            total_bytes=self._bytes,
            dropped_lines=self._kept_count - len(self._kept),
            has_text=self._has_text,
        )


def _hit_lines(pattern: re.Pattern[str], text: str) -> List[int]:
    """Indexes of the lines of `text` where the pattern matches, one regex scan in all."""
    found: List[int] = []
    index, counted, pos = 0, 0, 0
    while True:
        m = pattern.search(text, pos)
        if m is None:
            return found
        index += text.count("\n", counted, m.start())
        found.append(index)
        counted = pos = text.find("\n", m.start())
        if pos < 0:
            return found
        pos += 1


def read_stream(stream: IO[bytes], strict: bool = True) -> LogExcerpt:
    """Scan a binary stream (a file, stdin's buffer) chunk by chunk."""
    scanner = LogScanner(strict=strict)
    while True:
        data = stream.read(CHUNK)
        if not data:
            break
        scanner.feed(data)
    return scanner.close()


def read_text(text: str) -> LogExcerpt:
    """Scan text already in memory (tests, a notebook cell's captured traceback)."""
    scanner = LogScanner(strict=False)
    scanner.feed(text.encode("utf-8"))
    return scanner.close()

