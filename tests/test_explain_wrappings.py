"""A traceback reads the same in every wrapping it arrives in: the corpus's own cases (tests/data/tracebacks), each
wrapped the way logs reach a user, keep their first diagnosis. The wrappings are those real threads show (the corpus
has each): a notebook's error output as JSON, text saved from a web page, colours, torchrun's rank prefixes, Windows
line ends, a reply's quote, a Markdown code block and its indent, a question before or after it, the same text pasted
twice, a logger's time and level before every line (LLaVA's `| ERROR | stderr |`, vLLM's `ERROR 07-07 02:26:35
[engine.py:448]`), docker compose's service column, journald's and GitHub Actions' columns (a message of one or two lines
behind a column is not among them: nothing tells a column from text there).

Only the cases no signature was written from are left out (the held-out sets: a failure here would print them). The
wrappings that hold any text and the collectors' columns each read a third of the cases, a third chosen by the case's
name and the wrapping's place: every case is read in a third of them (three or four of the ten, one or two of the
columns) and every wrapping on a third of the corpus, so the run grows by a third of what the corpus does."""

from __future__ import annotations

import html
import io
import json
import re
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Callable, Dict, List

import pytest
from test_explain import DEV, FIRST, explained, top
from tracebacks import Case

from envdoctor.pipeline.explain.reader import read_text
from envdoctor.pipeline.explain.tracebacks import raised_errors


def _each_line(prefix: str) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix + line for line in text.split("\n"))


# Wrappings read the same whatever the text: it need not hold a traceback.
ANYWHERE: Dict[str, Callable[[str], str]] = {
    "notebook output as one JSON string": json.dumps,
    "colours": lambda text: re.sub(r"^(\w+(?:Error|Exception))", "\x1b[0;31m\\1\x1b[0m", text, flags=re.M),
    "colours whose ESC was lost": lambda text: re.sub(r"^(\w+(?:Error|Exception))", "[0;31m\\1[0m", text, flags=re.M),
    "windows line ends": lambda text: text.replace("\n", "\r\n"),
    "a web page's escapes": html.escape,
    "a web page's no-break spaces": lambda text: text.replace(" ", "\xa0"),
    "a reply's quote": _each_line("> "),
    "a reply's quote in a quote": _each_line("> > "),
    "a Markdown code block": lambda text: "```python\n%s\n```\n" % text,
    "a question before it": lambda text: "I get this error when I run the script, what should I do?\n\n" + text,
    "pasted twice": lambda text: text + "\n" + text,
    "a question after it": lambda text: text + "\n\nAny idea how to fix this? I tried reinstalling but nothing changed. Thanks!\n",
}
# Wrappings whose margin is learned from a traceback's header or frames: read the same where the text holds one.
AROUND_A_TRACEBACK: Dict[str, Callable[[str], str]] = {
    "a notebook's traceback list": lambda text: '"traceback": [\n%s\n]' % ",\n".join(
        "  " + json.dumps(line) for line in text.split("\n")),
    "a rank's prefix": lambda text: text if _RANKED.search(text) else _each_line("[rank0]: ")(text),
    "a code block's indent": _each_line("    "),
}
# A log collector's column before every line: learned from the lines that carry it, three at least, or from a traceback
COLUMNS: Dict[str, Callable[[str], str]] = {
    "a logger's time and level": _each_line("2023-08-25 08:59:20 | ERROR | stderr | "),
    "vllm's logger": _each_line("ERROR 07-07 02:26:35 [engine.py:448] "),
    "docker compose's service": _each_line("app-1  | "),
    "journald": _each_line("Nov 27 10:00:00 gpu-box python[812]: "),
    "github actions' timestamps": _each_line("2024-05-01T12:00:00.1234567Z "),
}
_RANKED = re.compile(r"^\[(?:rank|default)\d+\]:", re.MULTILINE)  # a log of several ranks: not one rank's
_TRACEBACK = re.compile(r'Traceback \(most recent call last\)|File "[^"\n]+", line \d+')
READ: List[Case] = FIRST + DEV
WITH_A_TRACEBACK = [c for c in READ if _TRACEBACK.search(c.body)]
SEVERAL_LINES = [c for c in READ if _TRACEBACK.search(c.body) or sum(1 for ln in c.body.split("\n") if ln.strip()) >= 3]


SHARES = 3  # each case under a third of the wrappings that read a share (test time, not coverage of the wrappings)


def _share(group: List[Case], wrappings: Dict[str, Callable[[str], str]], wrapping: str) -> List[Case]:
    """The cases of the group this wrapping reads: those whose name's stable hash falls on the wrapping's place."""
    place = sorted(wrappings).index(wrapping) % SHARES
    return [c for c in group if zlib.crc32(c.name.encode("utf-8")) % SHARES == place]


def _read_otherwise(group: List[Case], wrap: Callable[[str], str]) -> List[str]:
    """The cases of the group whose first diagnosis the wrapping changes, each with both diagnoses."""
    return ["%s: %s -> %s" % (c.name, top(c.body), top(wrap(c.body))) for c in group if top(wrap(c.body)) != top(c.body)]


@pytest.mark.parametrize("wrapping", sorted(ANYWHERE))
def test_every_case_reads_the_same_in_a_wrapping_that_never_depends_on_the_text(wrapping: str) -> None:
    share = _share(READ, ANYWHERE, wrapping)
    assert len(share) >= len(READ) // 4
    assert _read_otherwise(share, ANYWHERE[wrapping]) == []


@pytest.mark.parametrize("wrapping", sorted(AROUND_A_TRACEBACK))
def test_every_traceback_reads_the_same_inside_a_margin(wrapping: str) -> None:
    assert len(WITH_A_TRACEBACK) >= 400
    assert _read_otherwise(WITH_A_TRACEBACK, AROUND_A_TRACEBACK[wrapping]) == []


@pytest.mark.parametrize("wrapping", sorted(COLUMNS))
def test_every_log_of_several_lines_reads_the_same_behind_a_collectors_column(wrapping: str) -> None:
    assert len(SEVERAL_LINES) >= 1400
    assert _read_otherwise(_share(SEVERAL_LINES, COLUMNS, wrapping), COLUMNS[wrapping]) == []


def test_a_column_holds_a_digit_and_nine_in_ten_lines_carry_it() -> None:
    """Words every line starts with are the log's own (no digit, or an error's own words); a column most lines lack is no
    column."""
    assert [ln.text for ln in read_text("Using device: cpu\nUsing device: cuda\nUsing device: mps\n").lines] == [
        "Using device: cpu", "Using device: cuda", "Using device: mps"]
    steps = "".join("step %d loss 0.1 Warning: grad norm %d\n" % (i, i) for i in range(5))
    assert [ln.text for ln in read_text(steps).lines] == steps.split("\n")[:-1]
    mixed = "app-1  | a\napp-1  | b\nsome text\nmore text\nthe end\n"
    assert [ln.text for ln in read_text(mixed).lines] == mixed.split("\n")[:-1]
    carried = "app-1  | Illegal instruction (core dumped)\napp-1  | \napp-1 exited with code 132\napp-1  | x\n" \
              "app-1  | y\napp-1  | z\napp-1  | w\napp-1  | v\napp-1  | u\napp-1  | t\napp-1  | s\n"
    assert [ln.text for ln in read_text(carried).lines][:3] == ["Illegal instruction (core dumped)", "", "app-1 exited with code 132"]


def _errors(text: str) -> List[tuple]:
    return [(e.type, e.message, e.stream, e.paths) for e in raised_errors(read_text(text).lines)]


PLAIN = ('Traceback (most recent call last):\n  File "/x/site-packages/apex/normalization/fused_layer_norm.py", line 69, in '
         'forward\n    return fused(x)\nRuntimeError: expected scalar type Float but found Half')
PLAIN_ERRORS = [("RuntimeError", "expected scalar type Float but found Half", "",
                 ["/x/site-packages/apex/normalization/fused_layer_norm.py"])]


def test_a_margin_is_what_the_header_and_the_line_after_it_share() -> None:
    stamped = "\n".join("2023-08-25 08:59:%02d | ERROR | stderr | %s" % (i, line) for i, line in enumerate(PLAIN.split("\n")))
    assert _errors(stamped) == PLAIN_ERRORS  # the seconds move on: digits aside, the margin is the same
    grouped = "  + Exception Group Traceback (most recent call last):\n" + _each_line("    | ")(PLAIN)
    assert _errors(grouped)[-1] == PLAIN_ERRORS[0]  # an exception group's `| ` column
    # a paste that begins at its frames learns the margin from the first frame
    frames_only = _each_line("app-1  | ")(PLAIN.split("\n", 1)[1])
    assert _errors(frames_only) == PLAIN_ERRORS
    assert [d.check for d in explained(frames_only).diagnoses][:1] == ["apex"]


def test_text_before_a_header_is_no_margin_unless_the_next_line_carries_it() -> None:
    # a message that quotes a traceback: its type stays on the later line that starts the same way
    quoted = "RuntimeError: Traceback (most recent call last):\n" + PLAIN
    assert _errors(quoted)[-1] == PLAIN_ERRORS[0]
    bar = "Steps:   0% 0/15000 [00:03<?, ?it/s, lr=0.0001] " + PLAIN
    assert _errors(bar) == PLAIN_ERRORS
    ipython = "RuntimeError                              Traceback (most recent call last)\nCell In[3], line 5\n----> 5 f()\n" \
              "RuntimeError: boom"
    assert _errors(ipython)[0][:2] == ("RuntimeError", "boom")


def test_a_rank_prefix_after_a_loggers_margin_still_names_the_stream() -> None:
    ranked = _each_line("2024-05-01 12:00:00 [rank1]: ")(PLAIN)
    assert _errors(ranked) == [PLAIN_ERRORS[0][:2] + ("rank1",) + PLAIN_ERRORS[0][3:]]


def test_a_notebooks_traceback_list_is_unescaped_and_a_configs_plain_values_are_not() -> None:
    listed = '"traceback": [\n' + ",\n".join("  " + json.dumps(line) for line in PLAIN.split("\n")) + "\n]"
    assert _errors(listed) == PLAIN_ERRORS
    config = '{\n  "mixed_precision": "fp16",\n  "model": "x"\n}'
    assert [ln.text for ln in read_text(config).lines] == config.split("\n")


def test_a_notebooks_colours_copied_without_their_esc_are_taken_off() -> None:
    """Colab's output copied from the browser keeps the colour codes' text and loses their ESC byte."""
    text = ("[0;31m---------------------------------------------------------------------------[0m\n"
            "[0;31mRuntimeError[0m                              Traceback (most recent call last)\n"
            "Cell [0;32mIn[3], line 1[0m\n[0;32m----> 1[0m model[38;5;241m.[39mhalf()(x)\n"
            "[0;31mRuntimeError[0m: \"addmm_impl_cpu_\" not implemented for 'Half'\n")
    (error,) = raised_errors(read_text(text).lines)
    assert (error.type, error.message) == ("RuntimeError", "\"addmm_impl_cpu_\" not implemented for 'Half'")
    assert top(text) == "cpu-half-kernels"
    assert [ln.text for ln in read_text("elapsed [5m 12s]\n").lines] == ["elapsed [5m 12s]"]  # no colour's reset: text


def test_a_web_pages_escapes_are_undone_as_the_log_is_read() -> None:
    page = "RuntimeError: &quot;addmm_impl_cpu_&quot; not implemented for &#39;Half&#39;&nbsp;"
    # (&nbsp; a space, as the run printed it: the page's no-break space is the page's)
    assert [ln.text for ln in read_text(page).lines] == ["RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half' "]
    assert top(page) == "cpu-half-kernels"


def test_quote_marks_are_taken_off_and_pythons_prompt_is_not() -> None:
    lines = [ln.text for ln in read_text("> a\n>\n> > b\n>>> import torch\n").lines]
    assert lines == ["a", "", "b", ">>> import torch"]


def test_the_runs_last_words_are_its_last_error_not_the_users_question_after_them() -> None:
    """A log whose last words are NCCL's stalled there (distributed's last_only reading); a question the user wrote after
    the log has no error word and does not end the run, a later error does."""
    nccl = "node05:44741:44741 [0] NCCL INFO Could not enable P2P between dev 1(=1c000) and dev 0(=1b000)\n"
    assert top(nccl) == "distributed"
    assert top(nccl + "\nAny idea how to fix this? Thanks!\n") == "distributed"
    assert top(nccl + "FileNotFoundError: [Errno 2] No such file or directory: 'data/train.json'\n") != "distributed"


@pytest.mark.parametrize("width", [120, 80, 60])
def test_richs_traceback_box_reads_as_pythons_traceback(tmp_path: Path, width: int) -> None:
    """rich (typer's, accelerate's and the image UIs' tracebacks) draws the frames in a box, a long path wrapped onto two
    of its lines at a narrow width: printed here by the real rich, the frames and the error read as Python's own."""
    from rich.console import Console
    from rich.traceback import Traceback

    module = tmp_path / "site-packages" / "apex" / "normalization" / "fused_layer_norm.py"
    module.parent.mkdir(parents=True)
    module.write_text('def forward(x):\n    raise RuntimeError("expected scalar type Float but found Half")\n')
    space: dict = {}
    exec(compile(module.read_text(), str(module), "exec"), space)
    try:
        space["forward"](None)
    except RuntimeError:
        out = io.StringIO()
        Console(file=out, width=width, color_system=None).print(Traceback())
    text = out.getvalue()
    assert "╭" in text and "│" in text
    (error,) = raised_errors(read_text(text).lines)
    assert (error.type, error.message) == ("RuntimeError", "expected scalar type Float but found Half")
    assert error.paths[-1] == module.as_posix()
    assert top(text) == "apex"


@pytest.mark.parametrize("style", ["long", "short"])
def test_pytests_failure_report_reads_as_pythons_traceback(tmp_path: Path, style: str) -> None:
    """pytest reports a failure with each frame's location after its code, the error on "E" lines and the raising
    frame's location last (`--tb=long`), or the locations first (`--tb=short`): printed here by the real pytest, the
    frames and the error read as Python's own."""
    module = tmp_path / "site-packages" / "apex" / "normalization" / "fused_layer_norm.py"
    module.parent.mkdir(parents=True)
    module.write_text('def forward(x):\n    raise RuntimeError("expected scalar type Float but found Half")\n')
    (tmp_path / "test_model.py").write_text(
        "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('fln', %r)\n"
        "fln = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(fln)\n\n"
        "def test_forward():\n    fln.forward(1)\n" % str(module))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=%s" % style, "test_model.py"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "E   " in run.stdout
    errors = raised_errors(read_text(run.stdout).lines)
    reported = [e for e in errors if e.frames]
    assert reported and reported[0].message == "expected scalar type Float but found Half"
    assert reported[0].paths[-1].endswith("site-packages/apex/normalization/fused_layer_norm.py")
    assert top(run.stdout) == "apex"
