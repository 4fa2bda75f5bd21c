"""envdoctor: finds the dtype, device and build failures of a PyTorch stack
before the run, by running tiny operations on the real installed stack.

The first cell of a notebook (or any script):

    import envdoctor
    report = envdoctor.check()                   # shows the report (HTML in a notebook), returns it
    report.ok, report.findings, report.to_json()
    envdoctor.check(config="train.yaml")         # with what the training config asks for
    envdoctor.fix(yes=True)                      # apply, verify, journal for `envdoctor undo`
    envdoctor.explain()                          # the last exception of this notebook, explained

This module stays light and Python 3.8-compatible: the probe worker loads it
inside the target interpreter. The functions import their machinery when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from envdoctor.api import FixResult
    from envdoctor.pipeline.explain import Explanation
    from envdoctor.target.model import Report

from envdoctor.target.version import __version__ as __version__


def check(*args: Any, **kwargs: Any) -> Report:
    """`envdoctor check` as a call; see envdoctor.api.check. torch is imported only in the worker process."""
    from envdoctor import api

    return api.check(*args, **kwargs)


def fix(*args: Any, **kwargs: Any) -> FixResult:
    """`envdoctor fix` as a call (plan; yes=True applies); see envdoctor.api.fix."""
    from envdoctor import api

    return api.fix(*args, **kwargs)


def explain(*args: Any, **kwargs: Any) -> Explanation:
    """`envdoctor explain` as a call (text, an exception, or the last one raised); see envdoctor.api.explain."""
    from envdoctor import api

    return api.explain(*args, **kwargs)
