"""Rendering, on reports recorded from real runs: what a person reads."""

from __future__ import annotations

import io
import json

from conftest import load_fixture

from envdoctor.render.as_json import render_json
from envdoctor.render.markdown import render_markdown
from envdoctor.render.terminal import render_terminal
from envdoctor.render.vocabulary import summary_line
from envdoctor.target.model import SCHEMA, report_from_dict

OLD = report_from_dict(load_fixture("cpu-torch-2.0.1.json"))


class _Latin1(io.StringIO):
    encoding = "latin-1"


def _terminal(verbose: bool = False, stream: io.StringIO | None = None) -> str:
    out = stream or io.StringIO()
    render_terminal(OLD, stream=out, verbose=verbose)
    return out.getvalue()


def test_error_finding_shows_evidence_remedies_and_commands() -> None:
    text = _terminal()
    lines = text.splitlines()
    assert lines[0].startswith("envdoctor 0.1.0 · ") and "torch 2.0.1+cu117" in lines[0]
    assert "[✗] half-precision kernels on CPU (cpu-half-kernels)  fp16 0/9 ops; bf16 9/9 ops" in text
    assert "    ✗ fp16 on CPU: 9 of 9 operations fail (layer_norm, linear" in text
    assert "        layer_norm fp16 cpu: \"LayerNormKernelImpl\" not implemented for 'Half'" in lines
    assert "        … 3 more (-v shows all)" in lines
    assert any(line.startswith("      → Train in fp32 on the CPU") for line in lines)
    assert any(line.startswith("          $ ") and line.endswith("install --upgrade torch --index-url https://download.pytorch.org/whl/cpu")
               for line in lines)
    assert "    • no float8 dtypes in this torch (2.0.1+cu117)" in lines  # a note: title only
    assert lines[-1] == "Doctor summary: 1 error in 9 checks."


def test_verbose_shows_every_evidence_line_and_the_ops_table() -> None:
    text = _terminal(verbose=True)
    assert "… 3 more" not in text
    assert "\"softmax_lastdim_kernel_impl\" not implemented for 'Half'" in text
    assert "input fp32 × weight fp16" in text  # dtype-mismatch ops table, mix column
    assert "expected scalar type Float but found Half" in text


def test_terminal_falls_back_to_ascii_when_the_stream_cannot_encode() -> None:
    verbose = _terminal(verbose=True, stream=_Latin1())
    assert "input fp32 x weight fp16" in verbose
    verbose.encode("latin-1")  # everything it wrote is encodable there
    text = _terminal(stream=_Latin1())
    assert "[X] half-precision kernels on CPU" in text
    assert "[OK] torch installation" in text
    assert "-> Train in fp32" in text
    assert "✓" not in text and "✗" not in text and "→" not in text


def test_markdown_for_a_bug_report() -> None:
    md = render_markdown(OLD)
    assert "| ✗ | `cpu-half-kernels` | error | fp16 0/9 ops; bf16 9/9 ops, max rel err 9.9e-03 |" in md
    assert "#### ✗ `cpu-half-kernels` · fp16 on CPU: 9 of 9 operations fail" in md
    assert "```text\nlayer_norm fp16 cpu: \"LayerNormKernelImpl\" not implemented for 'Half'" in md
    assert "- `fp8` · no float8 dtypes in this torch (2.0.1+cu117)" in md
    assert "**1 error in 9 checks.**" in md


def test_json_round_trip_is_lossless() -> None:
    data = json.loads(render_json(OLD))
    assert data["schema"] == SCHEMA
    assert report_from_dict(data).to_dict() == OLD.to_dict()
    assert data["summary"] == {"checks": 9, "status": {"ok": 8, "warning": 0, "error": 1, "crashed": 0, "timeout": 0, "skipped": 0},
                               "findings": {"info": 5, "warning": 0, "error": 1}, "exit_code": 1}


def test_summary_line_counts() -> None:
    assert summary_line(OLD) == "1 error in 9 checks."
    healthy = report_from_dict(load_fixture("cpu-torch-2.13.0.json"))
    assert summary_line(healthy) == "No issues found in 9 checks (5 notes, -v for details)."
