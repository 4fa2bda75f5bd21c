"""`envdoctor check` end to end, as a subprocess, on this machine's real CPU torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check_of, make_venv, run_envdoctor, run_json

from envdoctor.target.model import SCHEMA

BUILTIN_CPU = ["torch-install", "cpu-half-kernels", "dtype-mismatch", "fp8"]


def test_json_report_shape(live_report: dict) -> None:
    assert live_report["schema"] == SCHEMA
    env = live_report["environment"]
    assert env["torch"].startswith("2.13.0")
    assert env["python"] == "%d.%d.%d" % sys.version_info[:3]
    assert env["devices"] == ["cpu"]
    ids = [c["id"] for c in live_report["checks"]]
    assert ids[: len(BUILTIN_CPU)] == BUILTIN_CPU  # declared order, foundations first
    for check in live_report["checks"]:
        assert set(check) >= {"id", "title", "status", "facts", "findings", "summary"}
        assert check["status"] in {"ok", "warning", "error", "crashed", "timeout", "skipped"}
    summary = live_report["summary"]
    assert summary["exit_code"] == 0
    assert summary["checks"] == len(ids)


def test_every_micro_op_fact_has_the_contract_keys(live_report: dict) -> None:
    for check in live_report["checks"]:
        for op in check["facts"].get("ops", []):
            assert {"op", "device", "dtype", "ok", "error", "max_rel_err"} <= set(op), (check["id"], op)
            assert op["ok"] == (op["error"] is None)


def test_fp8_promotion_message_is_captured_live(live_report: dict) -> None:
    ops = check_of(live_report, "fp8")["facts"]["ops"]
    add = next(o for o in ops if o["op"] == "add" and o["dtype"] == "float8_e4m3fn" and o["other_dtype"] == "float16")
    assert add["ok"] is False
    assert add["error"] == "Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and Half"


def test_linear_fp32_x_fp16_is_rejected_live(live_report: dict) -> None:
    ops = check_of(live_report, "dtype-mismatch")["facts"]["ops"]
    linear = next(o for o in ops if o["op"] == "linear" and o["dtype"] == "float32" and o["weight_dtype"] == "float16")
    assert linear["ok"] is False
    assert linear["error"] == "expected m1 and m2 to have the same dtype, but got: float != c10::Half"
    assert linear["device"] == "cpu"


def test_cpu_half_kernels_run_and_match_fp32_live(live_report: dict) -> None:
    check = check_of(live_report, "cpu-half-kernels")
    assert check["status"] == "ok"
    layer_norm = next(o for o in check["facts"]["ops"] if o["op"] == "layer_norm" and o["dtype"] == "float16")
    assert layer_norm["ok"] and 0 <= layer_norm["max_rel_err"] < 1e-2


def test_only_skip_and_device_select() -> None:
    only = run_json("--only", "fp8")
    assert [c["id"] for c in only["checks"]] == ["fp8"]
    skipped = run_json("--skip", "dtype-mismatch,fp8", "--only", ",".join(BUILTIN_CPU))
    assert [c["id"] for c in skipped["checks"]] == ["torch-install", "cpu-half-kernels"]
    cpu = run_json("--device", "cpu", "--only", "dtype-mismatch")
    assert check_of(cpu, "dtype-mismatch")["facts"]["devices"] == ["cpu"]


def test_requested_device_that_is_absent_is_an_error() -> None:
    proc = run_envdoctor("check", "--json", "--device", "cuda:0", "--only", "torch-install,dtype-mismatch")
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    finding = check_of(report, "torch-install")["findings"][0]
    assert finding["code"] == "device-missing"
    assert finding["title"] == "the requested device cuda:0 is not visible to torch"
    assert check_of(report, "dtype-mismatch")["facts"]["devices"] == []


def test_terminal_report() -> None:
    proc = run_envdoctor("check", "--only", ",".join(BUILTIN_CPU))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("envdoctor ") and "torch 2.13.0" in lines[0]
    assert any(line.startswith("[✓] float8 (fp8)") for line in lines)
    assert "• float8 does not promote" in proc.stdout
    assert lines[-1] == "Doctor summary: No issues found in 4 checks (2 notes, -v for details)."
    assert proc.stderr == ""  # no progress display without a terminal


def test_verbose_terminal_report_shows_facts() -> None:
    proc = run_envdoctor("check", "-v", "--only", "fp8")
    assert "Promotion for Float8 Types is not supported" in proc.stdout
    assert "_scaled_mm" in proc.stdout
    assert '"dtypes": [' in proc.stdout


def test_markdown_report() -> None:
    proc = run_envdoctor("check", "--markdown", "--only", ",".join(BUILTIN_CPU))
    assert proc.returncode == 0
    md = proc.stdout
    assert md.startswith("## envdoctor report\n")
    assert "| ✓ | `fp8` | ok |" in md
    assert "<details><summary>Environment</summary>" in md
    assert "- `fp8` · float8 does not promote" in md


def test_torch_import_that_segfaults_is_contained(tmp_path: Path) -> None:
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("import ctypes\nctypes.string_at(0)\n")
    proc = run_envdoctor("check", "--json", env={"PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    install = check_of(report, "torch-install")
    assert install["findings"][0]["code"] == "torch-import-crashed"
    assert install["findings"][0]["evidence"][0] == "crashed while importing torch: SIGSEGV"
    assert check_of(report, "fp8")["status"] == "skipped"
    assert report["environment"]["worker_restarts"] == 1  # one worker: no training libraries here, so no second one


@pytest.mark.slow
def test_other_interpreter_without_envdoctor(torch_python: Path) -> None:
    """The worker runs in a venv that has torch but neither envdoctor nor its
    dependencies nor numpy: only envdoctor's own files reach that interpreter."""
    venv = torch_python.parent.parent
    probe = subprocess.run([str(torch_python), "-c", "import typer"], capture_output=True)
    assert probe.returncode != 0  # typer really is absent there
    proc = run_envdoctor("check", "--json", "--python", str(venv))
    report = json.loads(proc.stdout)
    assert report["environment"]["prefix"] == str(venv)
    install = check_of(report, "torch-install")
    assert install["facts"]["packages"]["numpy"] is None  # this env's packages, not ours
    assert [f["code"] for f in install["findings"]] == ["numpy-missing"]
    assert check_of(report, "fp8")["status"] == "ok"
    assert proc.returncode == 0


def test_python_api_returns_a_report() -> None:
    from envdoctor.pipeline.check.engine import run_check
    from envdoctor.pipeline.check.request import CheckRequest
    report = run_check(CheckRequest(only=["fp8"]))
    assert [c.id for c in report.checks] == ["fp8"]
    assert report.ok and report.exit_code == 0
    assert report.findings[0].code == "float8-promotion"


def test_help_and_version_do_not_import_torch_or_rich() -> None:
    for args in (["--version"], ["--help"], ["check", "--help"]):
        # (typer before 0.17 imported rich's tables with `import typer`, and up to 0.21.0 for shown defaults: typer>=0.21.1)
        code = (
            "import sys\n"
            "from envdoctor.cli import main\n"
            "rc = main(%r)\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy') or m.startswith('rich.table'))\n"
            "assert not heavy, heavy\n"
            "sys.exit(rc)\n" % (args,)
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    version = run_envdoctor("--version")
    assert version.stdout.strip().startswith("envdoctor 0.")


def test_the_command_line_imports_no_pydantic() -> None:
    """typer 0.29+ coerces option values through pydantic (0.3 s to import); the CLI's plain options
    (strings, numbers, lists of strings, flags) do not pay for it, and bad values still get one line."""
    for args in (["check", "--list", "--only", "fp8", "--timeout", "5"], ["--help"], ["explain", "--no-probe", "--timeout", "1", os.devnull],
                 ["undo", "--list", "--json"]):
        code = ("import sys\nfrom envdoctor.cli import main\nrc = main(%r)\n"
                "assert 'pydantic' not in sys.modules, sorted(m for m in sys.modules if 'pydantic' in m)[:3]\nsys.exit(0)\n" % (args,))
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert proc.returncode == 0, (args, proc.stderr)
    bad = run_envdoctor("check", "--timeout", "abc")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert bad.stderr.startswith("envdoctor: error: Invalid value for '--timeout': 'abc' is not a valid")  # number (ours) / float (click)


def test_package_level_check_api(capsys: pytest.CaptureFixture) -> None:
    import envdoctor

    report = envdoctor.check(only=["torch-install", "fp8"])
    out = capsys.readouterr().out
    assert "[✓] float8 (fp8)" in out
    assert report.ok
    assert report.to_dict()["schema"] == SCHEMA
    quiet = envdoctor.check(show=False, only=["fp8"])
    assert capsys.readouterr().out == ""
    assert [c.id for c in quiet.checks] == ["fp8"]


def test_the_parent_loads_the_checks_without_what_only_their_probes_use(tmp_path: Path) -> None:
    """The parent imports every check for its declaration and never runs a probe: the standard library the probes
    capture and measure with (logging, tempfile, socket, ctypes: about 20 ms) is imported where a probe runs."""
    log = tmp_path / "log.txt"
    log.write_text("RuntimeError: \"addmm_impl_cpu_\" not implemented for 'Half'\n", encoding="utf-8")
    code = ("import sys\nfrom envdoctor.cli import main\nrc = main(['explain', '--no-probe', %r])\n"
            "from envdoctor.pipeline.check.registry import load_checks\n"
            "print('checks loaded:', len(load_checks(plugins=False)[0]))\n"
            "print('probe side:', sorted(m for m in ('logging', 'tempfile', 'socket', 'ctypes') if m in sys.modules))\n"
            "sys.exit(rc)\n" % str(log))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "1. cpu-half-kernels (fp16-missing" in proc.stdout
    assert "checks loaded: 14" in proc.stdout
    assert proc.stdout.rstrip().endswith("probe side: []"), proc.stdout[-200:]


@pytest.mark.parametrize("fmt", ["--json", "--markdown", "-v"])
def test_a_console_that_cannot_encode_unicode_gets_output_not_a_traceback(fmt: str) -> None:
    """A cp1252/latin-1 console: "→" and "✓" must not raise UnicodeEncodeError."""
    proc = run_envdoctor("check", fmt, env={"PYTHONIOENCODING": "latin-1"}, encoding="latin-1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    if fmt == "--json":
        report = json.loads(proc.stdout)
        assert report["schema"] == SCHEMA


def test_only_a_check_that_needs_no_torch_still_says_that_torch_is_missing(tmp_path: Path) -> None:
    """`--only apex` against an interpreter without torch: not "No issues found", exit 0, but torch-install's
    error beside the apex check (torch-install runs in every check run; it is shown when it finds an error)."""
    python = make_venv(tmp_path / "venv", with_pip=False)
    proc = run_envdoctor("check", "--json", "--only", "apex", "--python", str(python))
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert [c["id"] for c in report["checks"]] == ["torch-install", "apex"]
    assert check_of(report, "torch-install")["findings"][0]["code"] == "torch-missing"
    healthy = run_json("--only", "fp8")  # a torch that imports: only what was asked for
    assert [c["id"] for c in healthy["checks"]] == ["fp8"]


def test_accelerates_own_multi_gpu_template_on_a_machine_without_a_gpu_is_named_with_its_line() -> None:
    """accelerate's MULTI_GPU template (tests/data/configs, INDEX.json has its address) on this CPU-only machine."""
    config = Path(__file__).resolve().parent / "data" / "configs" / "accelerate" / "tmpl-multi-gpu.yaml"
    proc = run_envdoctor("check", "--json", "--config", str(config), "--only", "torch-install")
    assert proc.returncode == 1, proc.stderr
    finding = next(f for f in check_of(json.loads(proc.stdout), "torch-install")["findings"] if f["code"] == "config-distributed-no-gpu")
    assert finding["title"].startswith("tmpl-multi-gpu.yaml:2 `distributed_type: \"MULTI_GPU\"` launches one process per GPU")
    assert finding["subject"]["config"]["line"] == 2


def test_what_a_user_site_install_shadows_outside_a_venv_is_named_and_pythonnousersite_hides_it(tmp_path: Path) -> None:
    """The interpreter this test venv was made from (no venv: its user site comes before its site-packages),
    with a `pip install --user`-style copy of pip itself in a user site of its own (PYTHONUSERBASE)."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    user = {"PYTHONUSERBASE": str(tmp_path / "user")}
    where = subprocess.run([str(base), "-c", "import site; print(site.getusersitepackages())"], capture_output=True, text=True,
                           env=dict(os.environ, **user), check=True).stdout.strip()
    theirs = subprocess.run([str(base), "-m", "pip", "--version"], capture_output=True, text=True, check=False).stdout.split()
    if len(theirs) < 2:
        pytest.skip("the base interpreter has no pip to shadow")
    other = "23.0" if theirs[1] != "23.0" else "22.3"
    uv = pytest.importorskip("uv", reason="uv is not installed here").find_uv_bin()
    subprocess.run([uv, "pip", "install", "-q", "--no-deps", "--target", where, "pip==%s" % other], check=True, capture_output=True)
    args = ("check", "--json", "--python", str(base), "--no-config", "--only", "torch-install")
    report = json.loads(run_envdoctor(*args, env=user).stdout)
    [finding] = [f for f in check_of(report, "torch-install")["findings"] if f["code"] == "user-site-shadows"]
    assert finding["title"] == "1 package in your user site shadows this environment's own: pip %s over %s" % (other, theirs[1])
    assert finding["remedies"][0]["action"] == {"set_env": {"PYTHONNOUSERSITE": "1"}}
    hidden = json.loads(run_envdoctor(*args, env=dict(user, PYTHONNOUSERSITE="1")).stdout)
    assert "user-site-shadows" not in [f["code"] for f in check_of(hidden, "torch-install")["findings"]]
