"""Runs check probes in a worker subprocess of the target interpreter.

The parent never imports torch. A probe that segfaults, aborts, exits or hangs
only costs the worker. When it happened inside an announced step (an import, a GPU
op: probekit.steps), that step is *lost*: it is recorded with its package or device,
and the check runs again in a fresh worker that skips it, so the rest of its facts
still come back. Outside any step the check becomes a `crashed` / `timeout` outcome
and a fresh worker carries on with the remaining checks.

Time limits: the user's --timeout, when given, is the limit for every check; without
one a check gets DEFAULT_TIMEOUT_S or its own declared larger budget. The limit is on
silence: it restarts at every step, so a hang is caught that long after it began.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Sequence

import envdoctor.target as wall
from envdoctor.pipeline.check.request import UsageError
from envdoctor.pipeline.children import kill_group, kill_group_meanwhile, own_group
from envdoctor.target.redact import Redactor

# envdoctor's own folder: the worker loads envdoctor.target (the wall) from it, nothing else
PACKAGE_DIR = Path(str(wall.__file__)).resolve().parent.parent
HELLO_TIMEOUT_S = 30.0
TORCH_IMPORT_TIMEOUT_S = 180.0
DEFAULT_TIMEOUT_S = 60.0
MAX_LOST_STEPS = 6  # per check: past this, the check is reported as crashed, not resumed again
_STDERR_TAIL_LINES = 40

# Put only envdoctor's own files on the target's path, never this environment's
# site-packages (it may hold another torch). '' (the cwd) goes too: a stray
# torch/ folder there must not shadow the installed one.
BOOTSTRAP = """\
import sys
if sys.version_info < (3, 8):
    sys.stderr.write('Python %d.%d is too old for the envdoctor worker (3.8 or newer)\\n' % sys.version_info[:2])
    sys.exit(3)
import importlib.util
import types
if sys.path and sys.path[0] in ('', '.'):
    del sys.path[0]
# envdoctor itself as a bare package: only envdoctor.target (the wall) and the checks load here,
# never envdoctor/__init__.py or anything that runs in envdoctor's own process
envdoctor = types.ModuleType('envdoctor')
envdoctor.__path__ = [sys.argv[1]]
sys.modules['envdoctor'] = envdoctor
spec = importlib.util.spec_from_file_location(
    'envdoctor.checks', sys.argv[2] + '/__init__.py', submodule_search_locations=[sys.argv[2]])
checks = importlib.util.module_from_spec(spec)
sys.modules['envdoctor.checks'] = checks
spec.loader.exec_module(checks)
from envdoctor.target.worker import main
sys.exit(main(sys.argv[3:]))
"""


class BadInterpreter(UsageError):
    """The target interpreter does not exist or is not a working Python."""


@dataclass
class ProbeOutcome:
    """What happened to one check's probe in the worker."""

    id: str
    state: str  # "done" | "error" | "crashed" | "timeout" | "skipped"
    facts: Dict[str, Any] = field(default_factory=dict)
    error: Optional[str] = None
    detail: Optional[str] = None  # traceback or stderr tail
    duration_s: Optional[float] = None
    lost_steps: List[Dict[str, Any]] = field(default_factory=list)  # steps that crashed or hung a worker


@dataclass
class RunResult:
    hello: Dict[str, Any]
    torch_import: Dict[str, Any]
    outcomes: Dict[str, ProbeOutcome]
    restarts: int = 0
    system: Dict[str, Any] = field(default_factory=dict)  # sysinfo.collect_system() of the target
    torch_runtime: Optional[Dict[str, Any]] = None  # sysinfo.torch_runtime(torch) of the target


EventCallback = Callable[[str, str], None]  # (event, check id)


def describe_exit(returncode: Optional[int]) -> str:
    """"SIGSEGV", "SIGABRT", "exit status 3": how a worker ended."""
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return "signal %d" % -returncode
    return "exit status %d" % returncode


def environ_with(overrides: Mapping[str, Optional[str]]) -> Dict[str, str]:
    """os.environ with `overrides` set, or unset where None (what `fix` verifies with)."""
    env = dict(os.environ)
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


class Worker:
    """One worker process with non-blocking line reads."""

    def __init__(self, python: str, package_dir: Path, checks_dir: Path, extra_args: List[str],
                 environ: Optional[Mapping[str, Optional[str]]] = None) -> None:
        env = environ_with(environ or {})
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("PYTHONSTARTUP", None)
        argv = [python, "-c", BOOTSTRAP, str(package_dir), str(checks_dir), *extra_args]
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                **own_group(die_with_envdoctor=False),  # killing it kills what it started: nothing holds its pipes after
            )
        except FileNotFoundError as exc:
            raise BadInterpreter("no such interpreter: %s" % python) from exc
        except PermissionError as exc:
            raise BadInterpreter("cannot execute %s: permission denied" % python) from exc
        except OSError as exc:
            raise BadInterpreter("cannot start %s: %s" % (python, exc.strerror or exc)) from exc
        self._lines: queue.Queue[Optional[bytes]] = queue.Queue()
        self._stderr: Deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()

    # Each pipe is closed by the thread that reads it, at its end: closing it from another
    # thread would wait for a read that a process still holding the pipe never ends.
    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for raw in self.proc.stdout:
                self._lines.put(raw)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for raw in self.proc.stderr:
                self._stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def stderr_tail(self, lines: int = 12) -> str:
        return "\n".join(list(self._stderr)[-lines:])

    def next_event(self, timeout: float) -> Optional[Dict[str, Any]]:
        """The next protocol event; None when the worker has gone. Raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                raw = self._lines.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError from None
            if raw is None:
                return None
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # not ours: a library wrote to the protocol fd before we took it
            if isinstance(event, dict) and "event" in event:
                return event

    def send(self, job: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the worker died; its EOF is picked up by next_event

    def wait_exit(self, timeout: float = 5.0) -> Optional[int]:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self, meanwhile: bool = False) -> None:
        (kill_group_meanwhile if meanwhile else kill_group)(self.proc)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()


def _died(worker: Worker) -> str:
    rc = worker.wait_exit()
    return describe_exit(rc)


class Runner:
    """Start early (`start()`), then `run()` the job: the worker imports torch while
    the parent is still loading checks and renderers."""

    def __init__(
        self,
        python: str,
        package_dir: Path,
        checks_dir: Path,
        timeout_s: Optional[float] = None,
        torch_import_timeout_s: float = TORCH_IMPORT_TIMEOUT_S,
        collect_system: bool = True,
        needs: Sequence[str] = (),
        environ: Optional[Mapping[str, Optional[str]]] = None,
    ) -> None:
        self.python = python
        self.environ = dict(environ or {})
        self.package_dir = package_dir
        self.checks_dir = checks_dir
        self.timeout_s = timeout_s  # the user's --timeout; None: the defaults
        # A cold `import torch` (network filesystems, first CUDA library load) can take long:
        # 180 s by default; the user's --timeout, when given, bounds it and every other wait.
        self.torch_import_timeout_s = timeout_s or torch_import_timeout_s
        self.hello_timeout_s = min(HELLO_TIMEOUT_S, timeout_s or HELLO_TIMEOUT_S)
        self._lost: Dict[str, Dict[str, Dict[str, Any]]] = {}  # check id -> step key -> lost step
        self._redactor = Redactor.from_environ()
        self._worker: Optional[Worker] = None
        self._hello: Optional[Dict[str, Any]] = None
        self._torch_import: Optional[Dict[str, Any]] = None
        self._system: Optional[Dict[str, Any]] = None if collect_system else {}  # {}: another worker collects them
        self._torch_runtime: Optional[Dict[str, Any]] = None
        self._no_torch = False
        self.needs = list(needs)  # distributions whose versions the hello reports
        self._greeted: Optional[Worker] = None  # the worker whose hello has been read already
        self._ready: Optional[Worker] = None  # the worker whose torch import has been read: it takes jobs

    def start(self) -> None:
        if self._worker is None:
            args = (["--no-torch"] if self._no_torch else []) + (["--no-system"] if self._system is not None else [])
            if self.needs:
                args += ["--needs", ",".join(self.needs)]
            self._worker = Worker(self.python, self.package_dir, self.checks_dir, args, self.environ)

    def hello(self) -> Dict[str, Any]:
        """The worker's hello (sent before it imports torch): start it and read that much."""
        self.start()
        assert self._worker is not None
        self._read_hello(self._worker)
        assert self._hello is not None
        return self._hello

    def _read_hello(self, worker: Worker) -> None:
        if self._greeted is worker:
            return
        try:
            hello = worker.next_event(self.hello_timeout_s)
        except TimeoutError:
            worker.kill()
            raise BadInterpreter("%s did not start a Python worker within %s s" % (self.python, _fmt_seconds(self.hello_timeout_s))) from None
        if hello is None or hello.get("event") != "hello":
            how = _died(worker)
            tail = worker.stderr_tail(3).strip().splitlines()
            if tail and "too old for the envdoctor worker" in tail[-1]:
                raise BadInterpreter("%s: %s" % (self.python, tail[-1]))
            why = (": " + tail[-1]) if tail else ""
            raise BadInterpreter("%s is not a working Python interpreter (%s%s)" % (self.python, how, why))
        if self._hello is None:
            self._hello = hello
        self._greeted = worker

    def _handshake(self, worker: Worker) -> None:
        self._read_hello(worker)
        try:
            event = worker.next_event(self.torch_import_timeout_s)
            if event is not None and event.get("event") == "system":
                if self._system is None:
                    self._system = event.get("system") or {}
                event = worker.next_event(self.torch_import_timeout_s)
        except TimeoutError:
            worker.kill()
            event = {
                "event": "torch",
                "ok": False,
                "error": "timed out importing torch after %d s" % self.torch_import_timeout_s,
                "error_type": "Timeout",
            }
            self._no_torch = True
        if event is None:
            how = _died(worker)
            event = {
                "event": "torch",
                "ok": False,
                "error": "crashed while importing torch: %s" % how,
                "error_type": "Crash",
                "stderr": self._redactor.text(worker.stderr_tail()),
            }
            self._no_torch = True
        runtime = event.pop("runtime", None)
        if self._torch_runtime is None and runtime:
            self._torch_runtime = runtime
        if self._torch_import is None:
            event.pop("event", None)
            self._torch_import = event

    def run(self, checks: List[Dict[str, Any]], ctx: Dict[str, Any], on_event: Optional[EventCallback] = None,
            keep: bool = False) -> RunResult:
        """Run every check spec ({"id", "module", "path"?, "timeout_s"?}) once. `keep`: the worker stays,
        with torch imported, for another run (fix re-probes the checks that read the config it edits)."""
        notify = on_event or (lambda event, check_id: None)
        remaining = [dict(c) for c in checks]
        outcomes: Dict[str, ProbeOutcome] = {}
        restarts = 0
        while True:
            self.start()
            worker = self._worker
            assert worker is not None
            had_no_torch = self._no_torch
            if self._ready is not worker:  # a new worker: its hello and torch import first
                try:
                    self._handshake(worker)
                except BadInterpreter:
                    self._worker = None
                    raise
                if worker.proc.poll() is not None:
                    # It died or hung importing torch: one more worker that skips torch.
                    worker.kill()
                    self._worker = None
                    if restarts and self._torch_import is not None and self._torch_import.get("ok"):
                        # torch imported in the first worker: a restart that cannot import it again in time
                        # is not "torch does not import"; the checks left are unmeasured, and say why.
                        error = "not run: a restarted worker did not import torch again within %s s" % _fmt_seconds(
                            self.torch_import_timeout_s)
                        for spec in remaining:
                            outcomes[spec["id"]] = ProbeOutcome(spec["id"], "timeout", error=error)
                        self._no_torch = False
                        break
                    if had_no_torch:
                        for spec in remaining:
                            outcomes[spec["id"]] = ProbeOutcome(spec["id"], "crashed", error="the worker could not start")
                        break
                    restarts += 1
                    continue
                self._ready = worker
            job: Dict[str, Any] = {"checks": [dict(spec, limit_s=self._limit(spec)) for spec in remaining], "ctx": ctx}
            if self._no_torch:
                job["torch_import"] = self._torch_import
            if self._lost:
                job["lost_steps"] = {cid: {k: {"state": v["state"], "error": v["error"]} for k, v in steps.items()}
                                     for cid, steps in self._lost.items()}
            worker.send(job)
            if self._drain(worker, remaining, outcomes, notify) or not remaining:
                break
            restarts += 1
            self._worker = None
        if not keep:
            self.close(meanwhile=True)  # the results are judged and printed while the worker is torn down
        assert self._hello is not None and self._torch_import is not None
        return RunResult(self._hello, self._torch_import, outcomes, restarts, self._system or {}, self._torch_runtime)

    def _limit(self, spec: Dict[str, Any]) -> float:
        """The user's --timeout when given (their word, whatever the check declares);
        otherwise the default, or the check's declared budget when that is larger."""
        if self.timeout_s is not None:
            return self.timeout_s
        return max(DEFAULT_TIMEOUT_S, float(spec.get("timeout_s") or 0))

    def _lose_step(self, check_id: str, step: Dict[str, Any], state: str, how: str, detail: str) -> bool:
        """Record the step that killed or hung the worker; True when the check should resume past it."""
        lost = self._lost.setdefault(check_id, {})
        again = step["key"] in lost  # the worker did not skip it: resuming would loop forever
        error = "crashed the interpreter (%s)" % how if state == "crashed" else "did not return within %s s" % how
        lost[step["key"]] = {"key": step["key"], "what": step.get("what"), "subject": step.get("subject") or {},
                             "state": state, "error": error, "detail": detail}
        return not again and len(lost) <= MAX_LOST_STEPS

    def _drain(
        self,
        worker: Worker,
        remaining: List[Dict[str, Any]],
        outcomes: Dict[str, ProbeOutcome],
        notify: EventCallback,
    ) -> bool:
        """Read events until done (True) or until the worker is lost (False)."""
        current: Optional[Dict[str, Any]] = None
        step: Optional[Dict[str, Any]] = None  # the announced step that has not ended
        started = 0.0
        last = 0.0  # the last sign of life from the running check

        def lost(state: str, how: str, between: str) -> bool:
            """The worker is gone: the open step gets the blame and its check resumes past it;
            else the running check gets it; between checks, every remaining one."""
            detail = self._redactor.text(worker.stderr_tail(_STDERR_TAIL_LINES))
            worker.kill()
            if current is None:
                for spec in remaining:
                    outcomes[spec["id"]] = ProbeOutcome(spec["id"], "crashed", error=between)
                remaining.clear()
                return False
            if step is not None and self._lose_step(current["id"], step, state, how, detail):
                return False  # `current` stays in `remaining`: the next worker skips the lost step
            error = "crashed: %s" % how if state == "crashed" else "timed out after %s s" % how
            outcomes[current["id"]] = ProbeOutcome(current["id"], state, error=error, detail=detail,
                                              duration_s=round(time.monotonic() - started, 3),
                                              lost_steps=self._lost_list(current["id"]))
            remaining.remove(current)
            notify("finish", current["id"])
            return False

        while True:
            budget = self.hello_timeout_s if current is None else self._limit(current) - (time.monotonic() - last)
            try:
                event = worker.next_event(max(budget, 0.0))
            except TimeoutError:
                if current is None:
                    return lost("timeout", _fmt_seconds(self.hello_timeout_s), "the worker stopped answering")
                return lost("timeout", _fmt_seconds(self._limit(current)), "the worker stopped answering")
            if event is None:
                how = _died(worker)
                return lost("crashed", how, "crashed: %s (between probes)" % how)
            last = time.monotonic()
            kind = event.get("event")
            if kind == "start":
                current = next((c for c in remaining if c["id"] == event.get("id")), None)
                step = None
                started = last
                if current is not None:
                    notify("start", current["id"])
            elif kind == "step" and current is not None:
                step = {"key": event.get("key"), "what": event.get("what"), "subject": event.get("subject") or {}}
            elif kind == "step_end":
                step = None
            elif kind in ("result", "error") and current is not None:
                check_id = current["id"]
                if kind == "error":
                    outcome = ProbeOutcome(check_id, "error", error=event.get("error"), detail=event.get("traceback"),
                                      duration_s=event.get("duration_s"))
                elif event.get("skipped"):
                    outcome = ProbeOutcome(check_id, "skipped", error=event.get("skipped"))
                else:
                    outcome = ProbeOutcome(check_id, "done", facts=event.get("facts") or {}, duration_s=event.get("duration_s"))
                outcome.lost_steps = self._lost_list(check_id)
                outcomes[check_id] = outcome
                remaining.remove(current)
                notify("finish", check_id)
                current = None
                step = None
            elif kind == "done":
                return True

    def exchange(self, mine: Dict[str, Any], timeout_s: float, keep: bool = False) -> Dict[str, Any]:
        """check --distributed: the ranks' exchange in the worker a run(keep=True) left, torch imported
        (envdoctor.target.exchange); {"ranks"} or {"error", "mine", "steps"}, within timeout_s and a grace.
        `keep`: the ranks' group stays for `again`."""
        return self._ask({"exchange": mine, "timeout": timeout_s, "keep": keep}, mine, timeout_s)

    def again(self, variables: Optional[Dict[str, Optional[str]]], mine: Dict[str, Any], timeout_s: float) -> Dict[str, Any]:
        """fix --distributed's verification in the group exchange(keep=True) left: {"ranks"}, {"skipped"} (rank 0
        applied nothing) or {"error", ...}."""
        return self._ask({"again": variables, "mine": mine}, mine, timeout_s)

    def _ask(self, job: Dict[str, Any], mine: Dict[str, Any], timeout_s: float) -> Dict[str, Any]:
        worker = self._worker
        if worker is None or self._ready is not worker or worker.proc.poll() is not None:
            return {"error": "the check's worker is gone: no exchange", "mine": mine}
        worker.send(job)
        limit = timeout_s + exchange_grace(timeout_s)
        deadline = time.monotonic() + limit
        try:
            while True:
                event = worker.next_event(max(deadline - time.monotonic(), 0.0))
                if event is None:
                    return {"error": "the worker died during the exchange (%s)" % _died(worker), "mine": mine}
                if event.get("event") == "exchanged":
                    return dict(event.get("result") or {"error": "the exchange said nothing", "mine": mine})
        except TimeoutError:
            worker.kill()
            self._worker = None
            return {"error": "the exchange between the ranks did not end within %s s" % _fmt_seconds(limit), "mine": mine}

    def _lost_list(self, check_id: str) -> List[Dict[str, Any]]:
        return list(self._lost.get(check_id, {}).values())

    def close(self, meanwhile: bool = False) -> None:
        """Kill the worker; `meanwhile`: its reaping goes on while the caller judges and prints (children.py)."""
        if self._worker is not None:
            # Results are in; tearing torch and CUDA down would only cost time.
            self._worker.kill(meanwhile)
            self._worker = None


# Beyond --timeout (which bounds each collective), what the exchange may take before its worker is killed: up to
# 30 s, and no more than the timeout itself (10 s at least), so that `--timeout 5` does not wait 35 s for a rank
# that hung outside any collective (in its timed compute).
EXCHANGE_GRACE_S = 30.0


def exchange_grace(timeout_s: float) -> float:
    return min(EXCHANGE_GRACE_S, max(10.0, timeout_s))


def _fmt_seconds(value: float) -> str:
    return ("%d" % value) if float(value).is_integer() else ("%g" % value)
