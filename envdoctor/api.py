"""envdoctor as Python calls, for a notebook's first cell and for scripts: `check`, `fix`,
`explain`, each the CLI's command through the same flows (envdoctor.pipeline.flows). In a
notebook kernel the results show themselves as HTML (progress in the cell while probes run);
in a console, as text. torch is imported only by the probe worker, never in the calling process.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from envdoctor.pipeline import flows
from envdoctor.pipeline.children import wait_for_reaping
from envdoctor.pipeline.explain import Explanation
from envdoctor.render import notebook as cell
from envdoctor.render.html import lines_html
from envdoctor.render.lines import explanation_lines, outcome_lines, plan_lines
from envdoctor.render.progress import progress_display
from envdoctor.target.model import Report
from envdoctor.target.platform.where import in_kernel

Paths = Union[None, str, Sequence[str]]


def _configs(config: Paths) -> List[str]:
    if config is None:
        return []
    return [str(config)] if isinstance(config, str) or hasattr(config, "__fspath__") else [str(c) for c in config]


def _request(python: Optional[str], config: Paths, options: Dict[str, Any]) -> flows.CheckRequest:
    return flows.CheckRequest(python=python, configs=_configs(config), **options)


def _present(result: Any, text: Callable[[], None]) -> None:
    """In a kernel the result shows itself in the cell (once); elsewhere `text` prints it."""
    if in_kernel():
        cell.show(result, result._repr_mimebundle_)
    else:
        text()


def check(config: Paths = None, python: Optional[str] = None, show: bool = True, verbose: bool = False,
          **options: Any) -> Report:
    """`envdoctor check`: probe the stack (this interpreter, or `python`), with the training
    configs' intent (`config`); other options as CheckRequest's (only, skip, devices,
    timeout_s, quick, libraries, plugins, default_config)."""
    from envdoctor.render.terminal import render_terminal

    report = flows.check(_request(python, config, options), progress_display(show))
    if show:
        _present(report, lambda: render_terminal(report, verbose=verbose))
    wait_for_reaping()  # the workers were torn down while the report was judged and shown: gone when this returns
    return report


@dataclass
class FixResult:
    """What `fix` planned and, with yes=True, what it did; `notes` say what the kernel must do now."""

    plan: Dict[str, Any]
    outcome: Optional[Dict[str, Any]] = None
    notes: List[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing to fix, or everything applied and verified."""
        if self.outcome is not None:
            return self.outcome.get("status") == "verified"
        return not self.plan.get("steps") and not self.plan.get("unresolved")

    def lines(self) -> List[str]:
        out = plan_lines(self.plan)
        if self.outcome is not None:
            out += outcome_lines(self.outcome)
        elif self.plan.get("steps"):
            out.append("Nothing changed. Apply with `envdoctor.fix(yes=True)`; every step is journaled for `envdoctor undo`.")
        return out + ["", *self.notes] if self.notes else out

    def __repr__(self) -> str:
        return "<envdoctor FixResult: %s>" % ((self.outcome or {}).get("status") or "plan only")


def _lines_bundle(lines: List[str], title: str) -> Dict[str, str]:
    return {"text/html": lines_html(lines, title), "text/plain": "\n".join(lines)}


cell.displayable(FixResult, lambda result: _lines_bundle(result.lines(), "envdoctor fix"))
cell.displayable(Explanation, lambda explanation: _lines_bundle(explanation_lines(explanation.to_dict()), "envdoctor explain"))


def fix(yes: bool = False, config: Paths = None, python: Optional[str] = None, prefer: Sequence[str] = (),
        only: Sequence[str] = (), show: bool = True, **options: Any) -> FixResult:
    """`envdoctor fix`: plan the remedies for check's findings; with yes=True apply them, verify them
    and journal them for `envdoctor undo`. Environment variables are set in this process too."""
    done = flows.fix(_request(python, config, dict(options, only=list(only))), prefer=list(prefer),
                     on_plan=lambda plan: yes, progress=progress_display(show))
    result = FixResult(done.plan.to_dict(), done.outcome.to_dict() if done.outcome else None, done.notes)
    if show:
        _present(result, lambda: print("\n".join(result.lines())))
    wait_for_reaping()
    return result


def explain(text_or_exception: Union[str, BaseException, None] = None, probe: bool = True, python: Optional[str] = None,
            show: bool = True) -> Explanation:
    """`envdoctor explain`: a traceback or log text, an exception, or (nothing) the last exception
    this interpreter printed (a notebook's last failed cell)."""
    from envdoctor.pipeline.explain.reader import read_text

    explanation = flows.explain(read_text(_traceback_text(text_or_exception)), probe=probe, python=python)
    if show:
        _present(explanation, lambda: print("\n".join(explanation_lines(explanation.to_dict()))))
    wait_for_reaping()
    return explanation


def _traceback_text(value: Union[str, BaseException, None]) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        value = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        if value is None:
            raise ValueError("no exception to explain: nothing has failed in this interpreter yet; pass the text or the exception")
    return "".join(traceback.format_exception(type(value), value, value.__traceback__))
