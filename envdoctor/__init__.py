"""envdoctor: finds the dtype, device and build failures of a PyTorch stack
before the run, by running tiny operations on the real installed stack.

    import envdoctor
    report = envdoctor.check()          # prints the report, returns a Report
    report.ok, report.findings, report.to_dict()

This module stays light and Python 3.8-compatible: the probe worker loads it
inside the target interpreter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from envdoctor.model import Report

__version__ = "0.1.0"


def check(show: bool = True, verbose: bool = False, **options: Any) -> Report:
    """Run `envdoctor check` in this process's interpreter (or `python=...`).

    Options are those of `envdoctor.engine.CheckRequest`: python, only, skip,
    devices, timeout_s, plugins. torch is imported only in the worker process.
    """
    from envdoctor.engine import CheckRequest, run_check

    report = run_check(CheckRequest(**options))
    if show:
        from envdoctor.report import render_terminal

        render_terminal(report, verbose=verbose)
    return report
