"""The probe worker: runs inside the *target* interpreter, imports torch once,
runs each check's probe and streams the outcomes to the parent as JSON lines.

Stdlib only and Python 3.8+: the target environment may have nothing but torch.
Protocol (one JSON object per line on the original stdout):
  worker → parent: hello, system (collected while torch imports), torch, then per check: start, (step, step_end)*, result | error; then done
  parent → worker: one job line {"checks": [...], "ctx": {...}, "torch_import": {...}?,
                                 "lost_steps": {check id: {step key: {"state", "error"}}}?}
A `step` names the risky thing about to run (probekit.steps): when the worker dies or
hangs inside it, the runner pins the failure on it and runs the check again, past it.
"""

from __future__ import annotations

import faulthandler
import importlib
import importlib.util
import io
import json
import math
import os
import platform
import sys
import threading
import time
import traceback
import warnings
from types import ModuleType
from typing import Any, Dict, List, Optional, TextIO, Tuple

from envdoctor.target.model import Check, ProbeContext
from envdoctor.target.probekit import steps
from envdoctor.target.probekit.distributions import installed_version
from envdoctor.target.probekit.text import exception_text, warning_texts
from envdoctor.target.redact import Redactor

PROTOCOL = 1
_MAX_WARNINGS = 20


def _protocol_stream() -> TextIO:
    """Keep the real stdout for the protocol; send fd 1 to stderr so that prints
    from torch, extensions or probes cannot corrupt it."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    return io.TextIOWrapper(os.fdopen(fd, "wb", buffering=0), encoding="utf-8", line_buffering=True)


def _sanitize(value: Any) -> Any:
    """Make probe output strict JSON: NaN/inf as strings, unknown objects as str()."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_sanitize(v) for v in value]
    return str(value)


class Channel:
    def __init__(self, stream: TextIO, redactor: Redactor) -> None:
        self._stream = stream
        self._redactor = redactor
        self._lock = threading.Lock()  # the system-facts thread emits beside the main thread

    def emit(self, event: str, **payload: Any) -> None:
        payload["event"] = event
        line = json.dumps(self._redactor.data(_sanitize(payload)), allow_nan=False)
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()


def _emit_system(channel: Channel) -> threading.Thread:
    """Collect the system facts (OS, compilers, CPU flags, packages) in a thread while torch
    imports, and send them as soon as they are ready: even a torch import that crashes the
    worker leaves them in the report."""
    from envdoctor.target import sysinfo  # here, not at the top: the parent imports this module for load_module_file alone

    def run() -> None:
        try:
            system = sysinfo.collect_system()
        except Exception as exc:  # noqa: BLE001 - collect_system guards itself; this is the last line
            system = {"errors": {"collect_system": exception_text(exc)}}
        channel.emit("system", system=system)

    thread = threading.Thread(target=run, name="envdoctor-system", daemon=True)
    thread.start()
    return thread


class _FaultLog:
    """faulthandler writes to a copy of the real stderr, which probes that capture fds 1/2
    (imports of chatty extensions) cannot redirect: a crash's stack always reaches the
    runner. A hang inside a step dumps every thread's stack shortly before the runner's
    limit. Arming the watchdog costs a thread, so it is re-armed only when a quarter of
    the limit has passed since the last arming, not at every one of ~100 micro-ops: the
    dump still comes before the runner's deadline (limit since the last event)."""

    def __init__(self) -> None:
        self.fd = os.dup(2)
        faulthandler.enable(file=self.fd)
        self.limit_s: Optional[float] = None
        self._armed_at: Optional[float] = None

    def arm(self) -> None:
        now = time.monotonic()
        if self.limit_s and (self._armed_at is None or now - self._armed_at > self.limit_s / 4):
            faulthandler.dump_traceback_later(max(self.limit_s - 0.5, 0.1), file=self.fd)
            self._armed_at = now

    def disarm(self) -> None:
        if self._armed_at is not None:
            faulthandler.cancel_dump_traceback_later()
            self._armed_at = None

    def emit_through(self, emit: Any) -> Any:
        def emit_step(event: str, **payload: Any) -> None:
            if event == "step":
                self.arm()
            emit(event, **payload)

        return emit_step


def import_torch() -> Tuple[Any, Dict[str, Any]]:
    """Import torch once, recording how long it took, what it warned and how it failed."""
    info: Dict[str, Any] = {"ok": False, "error": None, "error_type": None, "warnings": []}
    torch: Any
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            import torch as imported  # the one place torch is imported
        except BaseException as exc:  # noqa: BLE001 - any failure is a fact
            info["error"] = exception_text(exc)
            info["error_type"] = type(exc).__name__
            info["traceback"] = traceback.format_exc(limit=8)[-4000:]
            torch = None
        else:
            torch = imported
            info["ok"] = True
            info["version"] = getattr(torch, "__version__", None)
            info["file"] = getattr(torch, "__file__", None)
            # what pip knows it as: PyPI's CUDA torch 2.0.1 says "2.0.1+cu117" but is installed as 2.0.1
            info["distribution"] = installed_version("torch")
    info["import_s"] = round(time.perf_counter() - start, 3)
    info["warnings"] = warning_texts(caught, _MAX_WARNINGS)
    return torch, info


def load_module_file(module_name: str, path: str) -> ModuleType:
    """Import one .py file under `module_name` (plug-in checks, in parent and worker)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python module: %s" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def load_check(spec: Dict[str, Any]) -> Check:
    """Built-in checks import by name; plug-ins load from their file."""
    module_name = spec["module"]
    path = spec.get("path")
    module = load_module_file(module_name, path) if path else importlib.import_module(module_name)
    check = getattr(module, spec.get("attr") or "CHECK")
    # a plug-in built against another envdoctor copy: accept anything shaped like a Check
    if not isinstance(check, Check) and not callable(getattr(check, "probe", None)):
        raise TypeError("%s.%s is not an envdoctor Check" % (module_name, spec.get("attr") or "CHECK"))
    return check


def run_probe(check: Check, torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        facts = check.probe(torch, ctx)
    if not isinstance(facts, dict):
        raise TypeError("probe of %s returned %s, not a dict" % (check.id, type(facts).__name__))
    texts = warning_texts(caught, _MAX_WARNINGS)
    if texts:
        facts.setdefault("warnings", texts)
    return facts


def externally_managed() -> bool:
    """PEP 668 (https://peps.python.org/pep-0668/): a Python whose stdlib folder holds EXTERNALLY-MANAGED
    (Debian's and Ubuntu's system Python) refuses pip installs; a venv made from it does not."""
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        return False
    import sysconfig

    try:
        return os.path.isfile(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
    except (KeyError, TypeError, OSError):
        return False


def _option(args: List[str], name: str) -> Optional[str]:
    return args[args.index(name) + 1] if name in args[:-1] else None


def main(argv: Optional[List[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    faults = _FaultLog()  # a segfault leaves a Python traceback on stderr for the report
    channel = Channel(_protocol_stream(), Redactor.from_environ())
    needs = _option(args, "--needs")
    channel.emit(
        "hello",
        # a worker started for the training libraries says at once whether they are here
        distributions={name: installed_version(name) for name in needs.split(",")} if needs else None,
        protocol=PROTOCOL,
        python=platform.python_version(),
        implementation=platform.python_implementation(),
        executable=sys.executable,
        prefix=sys.prefix,
        pip=importlib.util.find_spec("pip") is not None,  # an environment uv made has none
        externally_managed=externally_managed(),
        platform=platform.platform(),
        sys_platform=sys.platform,
        machine=platform.machine(),
        pid=os.getpid(),
    )
    system = None if "--no-system" in args else _emit_system(channel)
    if "--no-torch" in args:
        torch, torch_info = None, {"ok": False, "skipped": True}
    else:
        torch, torch_info = import_torch()
    if system is not None:
        system.join(10.0)  # the facts are sent before "torch", so the runner has them with the handshake
    from envdoctor.target import sysinfo

    runtime = sysinfo.torch_runtime(torch) if torch is not None else None
    channel.emit("torch", runtime=runtime, **torch_info)

    # One job per line, until the runner closes stdin: `fix` sends a second job (the checks whose probes
    # read the training config, with the config as its plan leaves it), `check --distributed` the ranks'
    # exchange, `fix --distributed` its verification, to the worker that already has torch.
    emit_step = faults.emit_through(channel.emit)
    for line in iter(sys.stdin.readline, ""):
        job = json.loads(line)
        if "exchange" in job:  # check --distributed: the ranks' exchange, in this process that has torch already
            from envdoctor.target.exchange import exchange

            channel.emit("exchanged", result=exchange(torch, job["exchange"], float(job["timeout"]), bool(job.get("keep"))))
            continue
        if "again" in job:  # fix --distributed: the collective probe again, with the fix's variables
            from envdoctor.target.exchange import again

            channel.emit("exchanged", result=again(torch, job["again"], job["mine"]))
            continue
        _run_job(job, torch, torch_info, channel, faults, emit_step)
    return 0


def _run_job(job: Dict[str, Any], torch: Any, torch_info: Dict[str, Any], channel: Channel, faults: _FaultLog,
             emit_step: Any) -> None:
    ctx = ProbeContext.from_dict(job.get("ctx") or {})
    ctx.options["torch_import"] = job.get("torch_import") or torch_info
    lost_steps = job.get("lost_steps") or {}
    for spec in job.get("checks", []):
        check_id = spec["id"]
        channel.emit("start", id=check_id)
        start = time.perf_counter()
        faults.limit_s = spec.get("limit_s")
        steps.begin_check(check_id, emit_step, lost_steps.get(check_id))
        try:
            check = load_check(spec)
            if getattr(check, "requires_torch", True) and torch is None:
                channel.emit("result", id=check_id, skipped="torch does not import", facts={})
                continue
            facts = run_probe(check, torch, ctx)
        except BaseException as exc:  # noqa: BLE001 - a broken probe is a result, not a crash
            channel.emit(
                "error",
                id=check_id,
                error=exception_text(exc),
                traceback=traceback.format_exc(limit=12)[-6000:],
                duration_s=round(time.perf_counter() - start, 4),
            )
            continue
        finally:
            steps.end_check()
            faults.disarm()
        channel.emit("result", id=check_id, facts=facts, duration_s=round(time.perf_counter() - start, 4))
    channel.emit("done")


if __name__ == "__main__":  # pragma: no cover - started through the runner's bootstrap
    sys.exit(main())
