"""Bad input: one clear line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest
from conftest import run_envdoctor


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["check", "--python", "/nonexistent/python"], "no such interpreter: /nonexistent/python"),
        (["check", "--python", "/bin/false"], "/bin/false is not a working Python interpreter (exit status 1)"),
        (["check", "--python", "/bin/echo"], "/bin/echo is not a working Python interpreter"),
        (["check", "--only", "no-such-check"], "unknown check id 'no-such-check'"),
        (["check", "--skip", "torch-install,nope"], "unknown check id 'nope'"),
        (["check", "--timeout", "-1"], "--timeout must be a positive number of seconds"),
        (["check", "--timeout", "0"], "--timeout must be a positive number of seconds"),
        (["check", "--timeout", "soon"], "Invalid value for '--timeout'"),
        (["check", "--timeout", "inf"], "--timeout must be a positive number of seconds, at most 86400 (a day), not inf"),
        (["check", "--timeout", "nan"], "--timeout must be a positive number of seconds, at most 86400 (a day), not nan"),
        (["explain", "--timeout", "1e300", "/nonexistent/train.log"], "--timeout must be a positive number of seconds, at most 86400 (a day), not 1e+300"),
        (["run", "--timeout", "-5", "--", "true"], "--timeout must be a positive number of seconds"),
        (["check", "--device", "tpu"], "unknown device 'tpu'"),
        (["check", "--json", "--markdown"], "--json and --markdown cannot be combined"),
        (["check", "--quick", "--libraries"], "--quick and --libraries cannot be combined"),
        (["check", "--no-such-option"], "No such option"),  # click 8.4 words it "No such option '--x'."
        (["no-such-command"], "No such command 'no-such-command'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list, expected: str) -> None:
    proc = run_envdoctor(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert expected in proc.stderr
    assert proc.stderr.startswith("envdoctor: error: "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_interpreter_that_is_not_python(tmp_path: Path) -> None:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 'I am not Python'\nexit 3\n")
    script.chmod(0o755)
    proc = run_envdoctor("check", "--python", str(script))
    assert proc.returncode == 2
    assert "is not a working Python interpreter (exit status 3" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_not_executable(tmp_path: Path) -> None:
    plain = tmp_path / "python"
    plain.write_text("")
    proc = run_envdoctor("check", "--python", str(plain))
    assert proc.returncode == 2
    assert "not executable" in proc.stderr


def test_venv_folder_without_python(tmp_path: Path) -> None:
    proc = run_envdoctor("check", "--python", str(tmp_path))
    assert proc.returncode == 2
    assert "no Python interpreter in" in proc.stderr


def test_no_arguments_prints_help() -> None:
    proc = run_envdoctor()
    assert proc.returncode == 0
    assert "Usage: envdoctor" in proc.stdout


def test_a_9_mb_config_keeps_memory_and_output_bounded(tmp_path: Path) -> None:
    """A OneTrainer config whose device value is 9 MB (a pasted blob): read in a bounded amount of
    memory, and every output says a clipped value, never a 9 MB line."""
    config = tmp_path / "huge.json"
    config.write_text(json.dumps({"__version": 9, "train_device": "X" * 9_000_000, "train_dtype": "FLOAT_16",
                                  "concepts": [{"name": "y" * 100_000}]}), encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    text = run_envdoctor("check", "--config", str(config), "--only", "torch-install")
    data = run_envdoctor("check", "--json", "--config", str(config), "--only", "torch-install")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert "Traceback" not in text.stderr + data.stderr
    assert len(text.stdout) < 5_000 and "(8999880 more characters)" in text.stdout
    assert len(data.stdout) < 100_000 and json.loads(data.stdout)["environment"]["intent"]["summary"]["device"].lower().startswith("xxx")
    assert peak_kib < 700 * 1024 or peak_kib == before  # the JSON parser once took 1.1 GB for this file
