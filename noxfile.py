"""Sessions: `nox -s lint tests` is the test command (README, .ci/run)."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.error_on_missing_interpreters = True

# The CPU wheel: any looser pin pulls the newest release with GBs of CUDA packages.
TORCH = "torch==2.13.0"


@nox.session
def tests(session: nox.Session) -> None:
    """pytest on the real CPU torch (pinned), with envdoctor installed editable."""
    session.install(TORCH, "numpy")
    session.install("-e", ".", "pytest", "hatchling", TORCH)
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy."""
    session.install("ruff", "mypy", "typer", "rich", "packaging", "pip-api", "nox", "pytest")
    session.run("ruff", "check", ".")
    session.run("mypy")
