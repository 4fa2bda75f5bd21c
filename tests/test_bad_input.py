"""Bad input: one clear line on stderr, exit code 2, never a traceback."""

from __future__ import annotations

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
