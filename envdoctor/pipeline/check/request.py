"""What a check run is asked: the interpreter, the checks, the devices, the time limits, the
configs; validated before anything starts. Bad input is a UsageError: one line, exit code 2."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

if TYPE_CHECKING:
    from envdoctor.pipeline.check.registry import LoadedCheck

_DEVICE_RE = re.compile(r"^(cpu|mps|xpu|cuda(:\d+)?)$")


class UsageError(Exception):
    """Bad input from the user (an option, a config, an interpreter): printed as one line, exit code 2."""


@dataclass
class CheckRequest:
    python: Optional[str] = None  # None: this interpreter
    only: Sequence[str] = ()
    skip: Sequence[str] = ()
    devices: Optional[Sequence[str]] = None
    timeout_s: Optional[float] = None  # None: each check's default budget
    plugins: bool = True
    options: Dict[str, Any] = field(default_factory=dict)
    configs: Sequence[str] = ()  # training configs (--config); none: accelerate's default config, if any
    default_config: bool = True  # False (--no-config): not even accelerate's default config
    quick: bool = False  # --quick: skip the checks that import the training libraries
    libraries: bool = False  # --libraries: run the training libraries' own models without a config asking for them
    environ: Dict[str, Optional[str]] = field(default_factory=dict)  # variables set (None: unset) for the workers: fix's verification
    config_texts: Dict[str, str] = field(default_factory=dict)  # config -> its text as a plan leaves it, read instead of the file
    # The devices to probe when `devices` names none, those of them that exist (a rank's own: cpu and
    # cuda:LOCAL_RANK); unlike `devices`, one that does not exist here is no finding.
    probe_devices: Optional[Sequence[str]] = None


# The longest --timeout: a day. Waits take it in seconds, and the clocks they use overflow on `inf` or 1e300.
MAX_TIMEOUT_S = 86400.0


def validate_request(request: CheckRequest) -> None:
    if request.timeout_s is not None and not 0 < request.timeout_s <= MAX_TIMEOUT_S:
        raise UsageError("--timeout must be a positive number of seconds, at most %d (a day), not %g" % (MAX_TIMEOUT_S, request.timeout_s))
    if request.quick and request.libraries:  # --quick skips exactly what --libraries asks to run
        raise UsageError("--quick and --libraries cannot be combined")
    for spec in request.devices or ():
        if not _DEVICE_RE.match(spec):
            raise UsageError("unknown device %r (use cpu, cuda, cuda:N, mps or xpu)" % spec)


# What a plain `check` says of the checks that import the training libraries when nothing asks for them.
NOT_ASKED = "no training config asks for it (--config FILE, or --libraries, runs the libraries' own models)"


def runs_libraries(request: CheckRequest, has_intent: bool, selected: Sequence[LoadedCheck]) -> bool:
    """Whether this run imports transformers, diffusers and peft to run their own models: where a training
    config says what the run asks of them, where the user named such a check (--only) or asked (--libraries);
    never with --quick. Their import costs more than torch's own (peft after torch: 13.4 s beside 6.3 s,
    measured with -X importtime on a 2-core machine), which a plain `check` does not pay: its torch-level
    checks probe the same dtypes and devices."""
    if request.quick:
        return False
    named = any(c.check.id in request.only for c in selected if c.check.imports_libraries)
    return has_intent or request.libraries or named


def select(checks: List[LoadedCheck], only: Sequence[str], skip: Sequence[str]) -> List[LoadedCheck]:
    known = {c.check.id for c in checks}
    unknown = [i for i in [*only, *skip] if i not in known]
    if unknown:
        raise UsageError("unknown check id %s (known: %s)" % (", ".join(repr(u) for u in unknown), ", ".join(sorted(known))))
    chosen = [c for c in checks if not only or c.check.id in only]
    return [c for c in chosen if c.check.id not in skip]
