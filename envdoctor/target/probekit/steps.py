"""Guarded steps: a probe announces each risky step before it starts it.

A step is anything that can kill or hang the interpreter: importing a compiled
package, a GPU operation, a call into an extension. The worker streams a `step`
event before it and a `step_end` event after it, so when the worker dies or stops
answering the runner knows exactly which step did it ("importing flash_attn 2.7.4
crashed the interpreter (SIGSEGV)"). The runner then starts a fresh worker and runs
the check again with that step marked *lost*: entering a lost step raises
StepLost at once, which the probe records like any other failure, and everything
after it is still measured.

Keys are '<ordinal>:<what>' within one check run: probes are deterministic, so the
same step gets the same key in the next worker. Steps do not nest: inside a step,
inner steps (a run_op inside an extension call) are part of the outer one.

Stdlib only, Python 3.8+. Outside the worker (a probe called from a test) a step
announces nothing and is never lost.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, Optional

Emit = Callable[..., None]  # Channel.emit(event, **payload)


class StepLost(Exception):
    """This step crashed or hung an earlier worker; it is not run again."""

    def __init__(self, what: str, state: str, error: str) -> None:
        self.what = what
        self.state = state  # "crashed" | "timeout"
        self.error = error  # "crashed the interpreter (SIGSEGV)", "did not return within 15 s"
        super().__init__(error)

    @property
    def error_type(self) -> str:
        return "Crash" if self.state == "crashed" else "Timeout"


class _Run:
    """The check being probed in this worker: where step events go, which steps are lost."""

    def __init__(self, check_id: str, emit: Optional[Emit], lost: Dict[str, Dict[str, Any]]) -> None:
        self.check_id = check_id
        self.emit = emit
        self.lost = lost
        self.count = 0
        self.depth = 0


_current: Optional[_Run] = None


def begin_check(check_id: str, emit: Optional[Emit], lost: Optional[Dict[str, Dict[str, Any]]] = None) -> None:
    """The worker starts probing `check_id`; `lost` maps step keys to {state, error}."""
    global _current
    _current = _Run(check_id, emit, dict(lost or {}))


def end_check() -> None:
    global _current
    _current = None


@contextlib.contextmanager
def step(what: str, **subject: Any) -> Iterator[None]:
    """Announce `what` ("importing flash_attn 2.7.4", "running gemm float16 on cuda:0")
    around the body. `subject` ({"package": ..., "version": ...} or {"device": ..., "op": ...})
    travels with the event so that the finding can name it. Raises StepLost instead of
    running a step that crashed or hung an earlier worker."""
    run = _current
    if run is None or run.depth > 0:
        yield
        return
    run.count += 1
    key = "%d:%s" % (run.count, what)
    lost = run.lost.get(key)
    if lost is not None:
        raise StepLost(what, str(lost.get("state") or "crashed"), str(lost.get("error") or "was lost"))
    if run.emit is not None:
        run.emit("step", id=run.check_id, key=key, what=what, subject=subject)
    run.depth += 1
    try:
        yield
    finally:
        run.depth -= 1
        if run.emit is not None:
            run.emit("step_end", id=run.check_id, key=key)
