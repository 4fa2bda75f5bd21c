"""Sessions: `nox -s ci` is the test command (README, .ci/run): it runs `lint`, `tests` and
`minimums` at once, each in its own venv, and fails when any of them fails. `nox -s lint tests
minimums` runs the same three one after another."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nox
import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
from pip_sources import uv_environment  # tests/pip_sources.py, shared with the tests' own venvs

nox.options.sessions = ["ci"]
# uv makes the sessions' venvs and installs into them where nox finds it (.ci/run installs it beside nox: seconds where
# pip takes a minute for torch), from the sources pip is configured with here; else virtualenv and pip
nox.options.default_venv_backend = "uv|virtualenv"
for _name, _value in uv_environment().items():
    os.environ.setdefault(_name, _value)
SESSIONS = ("lint", "tests", "minimums")
nox.options.error_on_missing_interpreters = True

# The CPU wheel: any looser pin pulls the newest release with GBs of CUDA packages.
TORCH = "torch==2.13.0"
# Lower bounds our dependencies admit for what they depend on: typer 0.21.1 takes click>=8.0.0.
INDIRECT_MINIMUMS = ("click==8.0.0",)
# The end-to-end CLI tests (every option, bad input, each output format), the rules'
# version arithmetic on packaging, the config readers and edits on PyYAML / tomli, and
# the fix journal on platformdirs. What these dependencies do in them is the same in the
# heavier end-to-end suites (fix with pip and real venvs, explain's live probes, configs run
# through the probes) and in explain's text matching (no dependency at all), which the `tests`
# session runs beside this one on the same two cores: they are left to it.
CLI_TESTS = ("tests/test_bad_input.py", "tests/test_check_e2e.py", "tests/test_versions.py",
             "tests/test_configs_yaml_shell.py", "tests/test_configs_json_toml.py", "tests/test_configs_edit.py",
             "tests/test_fix_config_edit.py", "tests/test_fix_journal.py")


def lowest_requirements() -> list[str]:
    """`name==lower` for every `name>=lower` dependency in pyproject.toml (read, not copied)."""
    project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = []
    for requirement in project["dependencies"]:
        match = re.match(r"^\s*([A-Za-z0-9._-]+)\s*>=\s*([^,;\s]+)", requirement)
        if not match:
            raise ValueError("no lower bound in %r: every dependency must declare its true minimum" % requirement)
        pins.append("%s==%s" % match.groups())
    return pins


# pytest-xdist: one test process per core; loadgroup keeps the tests that change one shared venv
# (xdist_group) in one process. pytest 9 keeps a node's id where pytest-xdist 3.8 cannot tag it with
# its group (the groups would be ignored; tests/conftest.py stops such a run), hence pytest<9.
# The 25 slowest tests are printed at the end of every run.
PYTEST = ("pytest>=8,<9", "pytest-xdist>=3.6")
# One test process per core: with one more, the tests that contain hangs by a 3 s timeout starve (tried).
PARALLEL = ("-n", "auto", "--dist", "loadgroup", "--durations=25")


def _install(session: nox.Session, *args: str) -> None:
    """session.install without compiling what it installs (pip's --no-compile; uv compiles only when asked), and
    with pip in a venv uv made: the tests run `python -m pip` as users do."""
    session.install(*(("pip",) if session.venv_backend == "uv" else ("--no-compile",)), *args)


def _write_bytecode(session: nox.Session) -> None:
    """Packages install without compiling every module (all of torch costs half a minute of CPU);
    the processes of the session write the bytecode of what they import, once."""
    session.env["PYTHONDONTWRITEBYTECODE"] = ""  # empty: Python writes bytecode


@nox.session
def tests(session: nox.Session) -> None:
    """pytest on the real CPU torch (pinned), with envdoctor installed editable."""
    _write_bytecode(session)
    _install(session, TORCH, "numpy")
    # nbclient, nbformat and ipykernel: the notebook tests run real notebooks in a real kernel;
    # setuptools: the wheel test builds envdoctor's wheel without build isolation; uv: an
    # environment made by uv, as users make them
    _install(session, "-e", ".", *PYTEST, "setuptools>=77", "nbclient", "nbformat", "ipykernel", "uv", TORCH)
    session.run("pytest", *PARALLEL, *session.posargs)


@nox.session
def minimums(session: nox.Session) -> None:
    """The lowest version of every dependency pyproject.toml admits, and the CLI end to end on them."""
    pins = lowest_requirements() + list(INDIRECT_MINIMUMS)
    _write_bytecode(session)
    _install(session, TORCH, "numpy", *PYTEST, *pins)
    session.install("--no-deps", "-e", ".")
    check = "import importlib.metadata as m; wanted = %r; got = {n: m.version(n) for n in wanted}; " \
            "assert got == wanted, got; print('minimums:', got)" % {p.split("==")[0]: p.split("==")[1] for p in pins}
    session.run("python", "-c", check)
    # the slow ones build venvs with other libraries: the lowest bounds do not change them
    session.run("pytest", *PARALLEL, "-m", "not slow", *CLI_TESTS, *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy."""
    # ipython: envdoctor.render.notebook types its IPython.display calls
    session.install("ruff", "mypy", "typer", "rich", "packaging", "platformdirs", "nox", "pytest", "ipython")
    session.run("ruff", "check", ".")
    session.run("mypy")


def _free_disk() -> str:
    """The run takes GBs (the venvs, torch 2.0.1's CUDA libraries): on a disk that fills up, Python leaves
    truncated bytecode behind and tests fail far from the cause, so the log says what was free."""
    temp = shutil.disk_usage(tempfile.gettempdir()).free / 2**30
    here = shutil.disk_usage(".").free / 2**30
    return "disk free: %.1f GiB in %s, %.1f GiB here" % (temp, tempfile.gettempdir(), here)


@nox.session(venv_backend="none")
def ci(session: nox.Session) -> None:
    """lint, tests and minimums at once: they are independent, and while one installs packages or
    waits for a download the others use the cores. Each session's output is printed whole when it
    ends (the tests' with their 25 slowest), then the verdict of each."""
    logs = Path(tempfile.mkdtemp(prefix="envdoctor-ci-"))
    started = time.monotonic()
    session.log(_free_disk())
    running = {}
    for name in SESSIONS:
        log = open(logs / (name + ".log"), "wb")  # noqa: SIM115 - closed when the session ends, below
        running[name] = (subprocess.Popen([sys.executable, "-m", "nox", "-s", name], stdout=log, stderr=subprocess.STDOUT), log)
    failed = []
    for name, (proc, log) in running.items():
        code = proc.wait()
        log.close()
        session.log("---- nox -s %s (exit %d, done after %.0f s) ----" % (name, code, time.monotonic() - started))
        print((logs / (name + ".log")).read_text(encoding="utf-8", errors="replace"), flush=True)
        if code != 0:
            failed.append(name)
    session.log(_free_disk())
    for name in SESSIONS:
        session.log("%s: %s" % (name, "FAILED" if name in failed else "passed"))
    if failed:
        session.error("failed: %s" % ", ".join(failed))

