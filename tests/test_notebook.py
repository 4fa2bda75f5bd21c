"""envdoctor in a notebook: real notebooks executed by nbclient in a real ipykernel, the outputs
read as a notebook front end would show them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import ROOT, run_envdoctor

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

EXAMPLE = ROOT / "examples" / "colab_first_cell.ipynb"
PLATFORMS = ROOT / "tests" / "data" / "platforms"
SEED_004 = "task: dreambooth\nbase_model: stabilityai/stable-diffusion-xl-base-1.0\nproject_name: p\nbackend: local\nparams:\n  mixed_precision: fp16\n"


def execute(nb: Any, env: Optional[Dict[str, str]] = None, cwd: Optional[Path] = None, allow_errors: bool = False) -> Any:
    """Run every cell in a fresh kernel of this interpreter (the kernel inherits `env`)."""
    saved = dict(os.environ)
    os.environ.update(env or {})
    os.environ.pop("ENVDOCTOR_CHECKS_PATH", None)
    os.environ["ENVDOCTOR_STATE_DIR"] = os.environ.get("ENVDOCTOR_STATE_DIR") or str((cwd or ROOT) / "state")
    try:
        client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=allow_errors,
                                         resources={"metadata": {"path": str(cwd or ROOT)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return nb


def outputs(cell: Any, mime: str) -> List[str]:
    found = []
    for out in cell.get("outputs", ()):
        if out.get("output_type") == "stream" and mime == "stream":
            found.append(out.get("text", ""))
        data = out.get("data") or {}
        if mime in data:
            found.append(data[mime])
    return found


def code(nb: Any, source: str) -> None:
    nb.cells.append(nbformat.v4.new_code_cell(source))


def text_of(html: str) -> str:
    """What a person reads of the HTML."""
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", html, flags=re.S))))


def test_the_example_notebook_shows_the_report_and_leaves_torch_out_of_the_kernel(tmp_path: Path) -> None:
    nb = nbformat.read(str(EXAMPLE), as_version=4)
    code(nb, "import sys\nprint('torch' in sys.modules, 'torch.cuda' in sys.modules)")
    execute(nb, cwd=tmp_path)
    first = nb.cells[1]
    (html,) = outputs(first, "text/html")  # once: the report shown by check(), not again as the cell's value
    shown = text_of(html)
    assert "envdoctor 0.1.0" in shown and "a Jupyter notebook" in shown and "Doctor summary" in shown
    for check_id in ("torch-install", "cpu-half-kernels", "dtype-mismatch", "fp8", "apex", "cublas"):
        assert check_id in shown
    # the progress line was there while probing and is gone: updated to nothing
    plain = outputs(first, "text/plain")
    assert "" in plain and not any("probing" in p for p in plain)
    assert "envdoctor:" not in "".join(outputs(first, "text/html")[:-1])
    ok, errors = eval(outputs(nb.cells[3], "text/plain")[0])
    assert ok is True and errors == []
    assert outputs(nb.cells[-1], "stream") == ["False False\n"]


def test_a_report_renders_itself_again_as_a_later_cells_value(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    code(nb, "import envdoctor\nreport = envdoctor.check(only=['fp8'])")
    code(nb, "report")
    code(nb, "print(repr(report)); print(report.ok, len(report.findings), report.to_json()[:30].split()[0])")
    execute(nb, cwd=tmp_path)
    assert len(outputs(nb.cells[0], "text/html")) == 1 and len(outputs(nb.cells[1], "text/html")) == 1
    assert "float8" in text_of(outputs(nb.cells[1], "text/html")[0])
    assert "Doctor summary" in outputs(nb.cells[1], "text/plain")[0]  # the text fallback
    printed = outputs(nb.cells[2], "stream")[0]
    assert printed.startswith("<envdoctor Report: No issues found in 1 checks") and "True 1 {" in printed


def test_explain_with_no_argument_explains_the_cell_that_failed(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    code(nb, "x = 1")
    code(nb, "raise RuntimeError(\"\\\"LayerNormKernelImpl\\\" not implemented for 'Half'\")")
    code(nb, "import envdoctor\nexplained = envdoctor.explain(probe=False)")
    code(nb, "print([d.check for d in explained.diagnoses])")
    execute(nb, cwd=tmp_path, allow_errors=True)
    shown = text_of(outputs(nb.cells[2], "text/html")[0])
    assert "1. cpu-half-kernels" in shown and "LayerNormKernelImpl" in shown
    assert outputs(nb.cells[3], "stream") == ["['cpu-half-kernels']\n"]


def test_a_saved_notebook_with_a_failed_cell_is_read_as_its_traceback(tmp_path: Path) -> None:
    """`envdoctor explain run.ipynb`: the error output a real kernel saved (each traceback line a JSON string with its
    ANSI colours and newlines escaped) reads as the traceback it was, with its frames, not as escaped text."""
    nb = nbformat.v4.new_notebook()
    code(nb, "import torch\nw = torch.ones(4, 4, dtype=torch.float8_e4m3fn)")
    code(nb, "def forward(x):\n    return x + w\n\nforward(torch.ones(4, 4, dtype=torch.float16))")
    execute(nb, cwd=tmp_path, allow_errors=True)
    saved = tmp_path / "run.ipynb"
    nbformat.write(nb, str(saved))
    assert "\\u001b[" in saved.read_text()  # the colours, escaped, as the kernel sent them
    proc = run_envdoctor("explain", "--no-probe", "--json", str(saved))
    assert proc.returncode == 0, proc.stderr  # a cause was found
    first = json.loads(proc.stdout)["diagnoses"][0]
    assert (first["check"], first["code"]) == ("fp8", "float8-promotion")
    assert first["evidence"][0].endswith("RuntimeError: Promotion for Float8 Types is not supported, attempted to promote "
                                         "Half and Float8_e4m3fn")
    assert first["evidence"][1] == "raised in <cell 2>, in forward"  # the frames, read through the escapes
    assert "\\u001b" not in proc.stdout and "\x1b" not in proc.stdout


def test_environment_remedies_take_effect_in_the_kernel_and_undo_puts_them_back(tmp_path: Path) -> None:
    """The env kind inside a real kernel: the variables change in the kernel's own os.environ (the process
    that trains), beside the file a terminal would source; undo restores both."""
    nb = nbformat.v4.new_notebook()
    code(nb, "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = ''\nos.environ.pop('ACCELERATE_MIXED_PRECISION', None)\n"
             "from pathlib import Path\nfrom envdoctor.pipeline.fix.kinds import env as env_step\nfrom envdoctor.pipeline.fix.journal import Journal\n"
             "action = env_step.prepare({'unset_env': ['CUDA_VISIBLE_DEVICES'], 'set_env': {'ACCELERATE_MIXED_PRECISION': 'no'}},"
             " Path(%r))\nstep = Journal(Path(%r)).begin({'python': 'python'}).add_step(1, 'env', action.to_dict())\n"
             "action.apply(step)\naction.confirm()\n"
             "print(os.environ.get('CUDA_VISIBLE_DEVICES'), os.environ.get('ACCELERATE_MIXED_PRECISION'))"
             % (str(tmp_path / "env.sh"), str(tmp_path / "state")))
    code(nb, "env_step.undo(step)\nprint(repr(os.environ.get('CUDA_VISIBLE_DEVICES')), os.environ.get('ACCELERATE_MIXED_PRECISION'), "
             "Path(%r).exists())" % str(tmp_path / "env.sh"))
    execute(nb, cwd=tmp_path)
    assert outputs(nb.cells[0], "stream") == ["None no\n"]
    assert outputs(nb.cells[1], "stream") == ["'' None False\n"]


def _platform(name: str) -> Dict[str, str]:
    data = json.loads((PLATFORMS / ("%s.json" % name)).read_text(encoding="utf-8"))
    return {k: v for k, v in data["environ"].items() if isinstance(v, str)}


@pytest.mark.slow
def test_seed_004_in_a_colab_cpu_runtime_is_shown_fixed_and_passes(old_torch_python: Path, tmp_path: Path) -> None:
    """The seed-004 user: autotrain's fp16 on a Colab CPU runtime (recorded Colab variables), the torch
    2.0.1 of its time. The report names the menu step; fix(yes=True) edits the config; check passes."""
    config = tmp_path / "train.yaml"
    config.write_text(SEED_004, encoding="utf-8")
    target = (str(config), str(old_torch_python))
    nb = nbformat.v4.new_notebook()
    code(nb, "import envdoctor\nCONFIG, PYTHON = %r, %r\nreport = envdoctor.check(config=CONFIG, python=PYTHON)" % target)
    code(nb, "fixed = envdoctor.fix(yes=True, config=CONFIG, python=PYTHON)")
    code(nb, "again = envdoctor.check(config=CONFIG, python=PYTHON, show=False)\nprint(report.ok, fixed.ok, again.ok)")
    code(nb, "import sys\nprint('torch' in sys.modules)")
    execute(nb, env=_platform("colab-cpu"), cwd=tmp_path)
    report = text_of(outputs(nb.cells[0], "text/html")[0])
    assert "Colab (CPU runtime)" in report and "cpu-half-kernels" in report and "library-probes" in report
    assert "Runtime → Change runtime type → T4 GPU" in report
    assert "mixed_precision: fp16" in report  # where the config says it
    plan = text_of(outputs(nb.cells[1], "text/html")[0])
    assert "Fixed and verified" in plan
    assert config.read_text(encoding="utf-8") == SEED_004.replace("mixed_precision: fp16", "mixed_precision: null")
    assert outputs(nb.cells[2], "stream") == ["False True True\n"]
    assert outputs(nb.cells[3], "stream") == ["False\n"]


@pytest.mark.slow
def test_a_kernel_that_still_runs_a_replaced_package_is_told_to_restart(tmp_path: Path) -> None:
    """numpy imported by the kernel, then another numpy installed by pip into a folder earlier on
    the kernel's path (what `%pip install numpy==...` does to a running kernel): check() says restart."""
    newer = tmp_path / "site"
    newer.mkdir()
    nb = nbformat.v4.new_notebook()
    code(nb, "import numpy, sys, subprocess\nloaded = numpy.__version__\n"
             "subprocess.check_call([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--target', %r, "
             "'numpy==2.3.5' if loaded != '2.3.5' else 'numpy==2.3.4'])" % str(newer))
    code(nb, "import envdoctor\nreport = envdoctor.check(only=['torch-install'])")
    code(nb, "print(report.environment['kernel']['stale'][0]['distribution'], report.environment['kernel']['stale'][0]['loaded'] == loaded)")
    execute(nb, env={"PYTHONPATH": str(newer)}, cwd=tmp_path)
    shown = text_of(outputs(nb.cells[1], "text/html")[0])
    assert "Restart before training (Jupyter: Kernel → Restart Kernel…)" in shown
    assert re.search(r"numpy \S+ is loaded in this kernel, 2\.3\.[45] is installed", shown)
    assert outputs(nb.cells[2], "stream") == ["numpy True\n"]


def test_the_report_html_is_one_self_contained_block(live_report: Dict[str, Any]) -> None:
    from envdoctor.render.html import render_html
    from envdoctor.target.model import report_from_dict

    report = report_from_dict(live_report)
    html = render_html(report)
    assert "<script" not in html and html.count('<div class="envdoctor">') == 1
    for result in report.checks:
        assert ">%s<" % result.id in html
    assert html.count("<details>") == sum(1 for f in report.findings if f.severity.value in ("error", "warning") and f.evidence)


def test_html_escapes_what_it_shows() -> None:
    from envdoctor.render.html import render_html
    from envdoctor.target.model import CheckResult, Finding, Remedy, Report, Severity, Status

    finding = Finding("x-check", "bad", Severity.ERROR, "<b>boom</b> & more", ["<script>alert(1)</script>"],
                      (Remedy("do <this>", commands=("echo '<hi>'",)),))
    html = render_html(Report({"envdoctor": "0"}, [CheckResult("x-check", "X <check>", Status.ERROR, findings=[finding])]))
    assert "<script>alert" not in html and "&lt;script&gt;" in html and "&lt;b&gt;boom&lt;/b&gt; &amp; more" in html
    assert '<pre class="ed-cmd">echo &#x27;&lt;hi&gt;&#x27;</pre>' in html


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")), reason="no headless Chromium here")
def test_the_report_renders_as_a_picture_in_a_real_browser(live_report: Dict[str, Any], tmp_path: Path) -> None:
    """Look at it as a person would: headless Chromium draws the report the way a notebook page would."""
    from envdoctor.render.html import render_html
    from envdoctor.target.model import report_from_dict

    page = tmp_path / "report.html"
    page.write_text('<html><head><meta charset="utf-8"></head><body>%s</body></html>' % render_html(report_from_dict(live_report)),
                    encoding="utf-8")
    picture = tmp_path / "report.png"
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    subprocess.run([str(browser), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1100,900",
                    "--screenshot=%s" % picture, page.as_uri()], capture_output=True, timeout=120, check=False)
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 10_000
