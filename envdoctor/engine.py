"""`envdoctor check` as a function: select checks, run their probes in the
worker, judge the facts, and assemble a redacted Report."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.registry import BrokenPlugin, LoadedCheck, checks_dir, load_checks
from envdoctor.runner import PACKAGE_DIR_DEFAULT, EventCallback, Outcome, Runner, RunResult, environ_with
from envdoctor.target.commandline import pip_remedy
from envdoctor.target.intent import Intent
from envdoctor.target.model import (
    Check,
    CheckResult,
    Environment,
    Finding,
    Remedy,
    Report,
    Severity,
    Status,
    report_from_dict,
    status_from_findings,
)
from envdoctor.target.platform.kernel import kernel_state
from envdoctor.target.platform.where import here
from envdoctor.target.redact import Redactor, environment_variables
from envdoctor.target.version import __version__

# Environment variables that change what torch and the trainers do.
RELEVANT_VARIABLES = (
    "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "PYTHONPATH",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "OMP_NUM_THREADS",
    "PYTORCH_", "TORCH_", "NCCL_", "HF_", "HUGGING_FACE_", "ACCELERATE_", "TRANSFORMERS_",
    "COLAB_", "KAGGLE_", "XLA_", "MKL_",
)

_DEVICE_RE = re.compile(r"^(cpu|mps|xpu|cuda(:\d+)?)$")


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


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
    environ: Dict[str, Optional[str]] = field(default_factory=dict)  # variables set (None: unset) for the workers: fix's verification


def resolve_python(python: Optional[str]) -> str:
    """The interpreter to probe: a file, or a venv/conda folder holding one."""
    if not python:
        return sys.executable
    path = Path(python).expanduser()
    if path.is_dir():
        for candidate in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
            if (path / candidate).is_file():
                return str(path / candidate)
        raise UsageError("no Python interpreter in %s" % path)
    if not path.exists():
        raise UsageError("no such interpreter: %s" % python)
    if not os.access(path, os.X_OK):
        raise UsageError("not executable: %s" % python)
    return str(path)


def validate_request(request: CheckRequest) -> None:
    if request.timeout_s is not None and not request.timeout_s > 0:
        raise UsageError("--timeout must be a positive number of seconds, not %g" % request.timeout_s)
    for spec in request.devices or ():
        if not _DEVICE_RE.match(spec):
            raise UsageError("unknown device %r (use cpu, cuda, cuda:N, mps or xpu)" % spec)


def select(checks: List[LoadedCheck], only: Sequence[str], skip: Sequence[str]) -> List[LoadedCheck]:
    known = {c.check.id for c in checks}
    unknown = [i for i in [*only, *skip] if i not in known]
    if unknown:
        raise UsageError("unknown check id %s (known: %s)" % (", ".join(repr(u) for u in unknown), ", ".join(sorted(known))))
    chosen = [c for c in checks if not only or c.check.id in only]
    return [c for c in chosen if c.check.id not in skip]


def read_intent(request: CheckRequest, environ: Optional[Dict[str, str]] = None) -> Tuple[Optional[Intent], List[str]]:
    """The training configs' intent, and notes on configs that were not read.

    A config the user named must be readable (a UsageError otherwise); accelerate's
    default config, read unasked, only earns a note when it is broken."""
    from envdoctor.configs.detect import read_configs
    from envdoctor.configs.document import ConfigError

    if request.configs:
        try:
            return read_configs(list(request.configs)), []
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    if not request.default_config:
        return None, []
    from envdoctor.configs.accelerate import default_config_path

    found = default_config_path(dict(os.environ) if environ is None else environ)
    if not found:
        return None, []
    try:
        return read_configs([found]), []
    except ConfigError as exc:
        return None, ["accelerate's default config was not read: %s" % exc]


class PendingCheck:
    """A check run whose workers are already importing torch: one for the main checks and,
    when a selected check needs the training libraries, one more for those, at the same time."""

    def __init__(self, request: CheckRequest) -> None:
        validate_request(request)
        self.request = request
        self.python = resolve_python(request.python)
        self.intent, self.config_notes = read_intent(request, environ_with(request.environ) if request.environ else None)
        self.runners: Dict[str, Runner] = {"main": self._runner(True)}
        self.runners["main"].start()  # torch imports while the checks load
        try:
            loaded, self.broken = load_checks(plugins=request.plugins)
            self.selected = select(loaded, request.only, request.skip)
            self.groups = {c.check.id: self._group(c) for c in self.selected}
            for group in sorted(set(self.groups.values()) - {"main"}):
                needs = sorted({d for c in self.selected if self.groups[c.check.id] == group for d in c.check.needs})
                self.runners[group] = self._runner(False, needs)
                self.runners[group].start()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for runner in self.runners.values():
            runner.close()

    def _runner(self, collect_system: bool, needs: Sequence[str] = ()) -> Runner:
        return Runner(self.python, PACKAGE_DIR_DEFAULT, checks_dir(), timeout_s=self.request.timeout_s,
                      collect_system=collect_system, needs=needs, environ=self.request.environ)

    def _drop_idle_groups(self) -> None:
        """A group whose libraries the target does not have runs in the main worker: its
        worker's hello (sent before torch imports) says so, and it is stopped at once."""
        for group, runner in list(self.runners.items()):
            if group == "main" or not runner.needs:
                continue
            found = runner.hello().get("distributions") or {}
            if not any(found.get(name) for name in runner.needs):
                runner.close()
                del self.runners[group]
                self.groups = {cid: "main" if g == group else g for cid, g in self.groups.items()}

    def _group(self, loaded: LoadedCheck) -> str:
        # --quick runs no library imports: what is left of those checks costs nothing
        return "main" if self.request.quick else loaded.check.group

    def finish(self, on_event: Optional[EventCallback] = None) -> Report:
        options = dict(self.request.options)  # a caller's own probe options stand unless a config or --quick says more
        if self.intent is not None:
            options["intent"] = self.intent.summary()
        options["quick"] = self.request.quick or bool(options.get("quick"))
        ctx = {"devices": list(self.request.devices) if self.request.devices else None, "options": options}
        skipped = [c for c in self.selected if self.request.quick and not c.check.quick]
        runnable = [c for c in self.selected if c not in skipped]
        runs: Dict[str, RunResult] = {}
        failures: List[BaseException] = []

        try:
            self._drop_idle_groups()
        except BaseException:
            self.close()
            raise

        def run_group(group: str) -> None:
            try:
                specs = [c.worker_spec() for c in runnable if self.groups[c.check.id] == group]
                runs[group] = self.runners[group].run(specs, ctx, on_event)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                failures.append(exc)

        others = [threading.Thread(target=run_group, args=(g,), daemon=True) for g in self.runners if g != "main"]
        try:
            for thread in others:
                thread.start()
            run_group("main")
            for thread in others:
                thread.join()
        finally:
            self.close()
        if failures:
            raise failures[0]
        run = merge_runs(runs)
        env = target_environment(run, self.python, self.intent)
        outcomes = dict(run.outcomes, **{c.check.id: Outcome(c.check.id, "skipped", error="--quick") for c in skipped})
        results = [judge(c, outcomes.get(c.check.id), env) for c in self.selected]
        if not self.request.only:
            results.extend(broken_plugin_result(b) for b in self.broken)
        environment = describe_environment(run, results, self.python, self.request)
        environment["workers"] = {group: sorted(cid for cid, g in self.groups.items() if g == group) for group in self.runners}
        environment["intent"] = self.intent.to_dict() if self.intent else None
        if self.config_notes:
            environment["config_notes"] = self.config_notes
        report = Report(environment=environment, checks=results)
        return report_from_dict(Redactor.from_environ().data(report.to_dict()))


def merge_runs(runs: Dict[str, RunResult]) -> RunResult:
    """One RunResult: the main worker's hello, torch import and system facts, every
    group's outcomes and restarts."""
    main = runs["main"]
    outcomes = {cid: o for run in runs.values() for cid, o in run.outcomes.items()}
    return RunResult(main.hello, main.torch_import, outcomes, sum(r.restarts for r in runs.values()), main.system, main.torch_runtime)


def run_check(request: CheckRequest, on_event: Optional[EventCallback] = None) -> Report:
    return PendingCheck(request).finish(on_event)


def target_environment(run: RunResult, python: str, intent: Optional[Intent] = None) -> Environment:
    """What the rules know of the target, from the worker's hello and torch import (the
    hello's keys are the report environment's), and the training configs' intent."""
    version = run.torch_import.get("version") if run.torch_import.get("ok") else None
    env = Environment.from_report(dict(run.hello, target_python=python, torch=version, torch_import=run.torch_import))
    return dataclasses.replace(env, intent=intent, where=here().to_dict())


def judge(loaded: LoadedCheck, outcome: Optional[Outcome], env: Environment) -> CheckResult:
    check = loaded.check
    result = CheckResult(id=check.id, title=check.title, status=Status.OK)
    if outcome is None:
        outcome = Outcome(check.id, "crashed", error="no result came back from the worker")
    result.duration_s = outcome.duration_s
    lost = [lost_step_finding(check.id, step, env) for step in outcome.lost_steps]
    judged = _judge_outcome(check, outcome, result, env)
    claimed = {f.subject.get("lost_step") for f in judged.findings}
    unclaimed = [f for f in lost if f.subject.get("lost_step") not in claimed]
    if unclaimed:
        judged.findings.extend(unclaimed)
        judged.status = _worst_status(judged.status, status_from_findings(unclaimed))
    return judged


def _worst_status(a: Status, b: Status) -> Status:
    order = [Status.SKIPPED, Status.OK, Status.WARNING, Status.ERROR, Status.TIMEOUT, Status.CRASHED]
    return max(a, b, key=order.index)


def _judge_outcome(check: Check, outcome: Outcome, result: CheckResult, env: Environment) -> CheckResult:
    if outcome.state == "skipped":
        result.status = Status.SKIPPED
        result.summary = "skipped: %s" % outcome.error
        return result
    if outcome.state in ("crashed", "timeout"):
        result.status = Status.CRASHED if outcome.state == "crashed" else Status.TIMEOUT
        result.summary = outcome.error or outcome.state
        result.findings = [contained_failure(check.id, outcome)]
        return result
    if outcome.state == "error":
        result.status = Status.CRASHED
        result.summary = "the probe raised %s" % (outcome.error or "an exception")
        result.findings = [
            Finding(
                check=check.id,
                code="probe-raised",
                severity=Severity.WARNING,
                title="the probe could not complete: %s" % outcome.error,
                evidence=tuple((outcome.detail or "").strip().splitlines()[-8:]),
                remedies=(Remedy("This environment behaves in a way the probe did not expect; please report it with `envdoctor check --markdown`."),),
            )
        ]
        return result
    result.facts = outcome.facts
    if outcome.lost_steps:  # the rules see which steps could not run, and why
        result.facts["lost_steps"] = [dict(step, detail="\n".join(fault_stack(step.get("detail"), 16))) for step in outcome.lost_steps]
    try:
        result.findings = check.judge(outcome.facts, env)
        result.summary = check.summarize(outcome.facts)
    except Exception as exc:  # noqa: BLE001 - a rule bug must not hide the other checks
        result.status = Status.CRASHED
        result.summary = "envdoctor's rules for this check failed"
        result.findings = [
            Finding(
                check=check.id,
                code="rules-failed",
                severity=Severity.WARNING,
                title="envdoctor's rules for %s failed: %s: %s" % (check.id, type(exc).__name__, exc),
                evidence=tuple(traceback.format_exc(limit=4).strip().splitlines()[-6:]),
                remedies=(Remedy("This is a bug in envdoctor; please report it with `envdoctor check --json`."),),
            )
        ]
        return result
    result.status = status_from_findings(result.findings)
    return result


def contained_failure(check_id: str, outcome: Outcome) -> Finding:
    """A probe that killed or hung the worker is itself the finding."""
    evidence = tuple(line for line in (outcome.detail or "").splitlines() if line.strip())[-10:]
    if outcome.state == "timeout":
        return Finding(
            check=check_id,
            code="probe-timeout",
            severity=Severity.ERROR,
            title="%s: the probe %s" % (check_id, outcome.error),
            evidence=evidence,
            remedies=(
                Remedy("A first CUDA initialisation or a PTX JIT compile can take minutes: retry with a larger `--timeout`."),
                Remedy(
                    "If it hangs again, a driver or library call never returns: run the check alone "
                    "(`envdoctor check --only %s`) and see where it stops with `py-spy dump`." % check_id
                ),
            ),
        )
    return Finding(
        check=check_id,
        code="probe-crashed",
        severity=Severity.ERROR,
        title="%s: the probe %s" % (check_id, outcome.error),
        evidence=evidence,
        remedies=(
            Remedy("Native code in this stack crashed on a tiny operation; the stack above names the library. Reinstall that library for the installed torch."),
            Remedy("Run `envdoctor check --only %s -v` to see the last operation it started." % check_id),
        ),
    )


def fault_stack(detail: Optional[str], limit: int = 8) -> List[str]:
    """What faulthandler left on stderr when a step crashed or hung: its headline and the
    innermost frames (it prints the most recent call first)."""
    lines = [line.strip() for line in (detail or "").splitlines() if line.strip()]
    head = [line for line in lines if line.startswith(("Fatal Python error", "Timeout ("))][:1]
    frames = [line for line in lines if line.startswith("File ") and "<frozen importlib" not in line]
    return head + frames[:limit] if frames else lines[-limit:]


def lost_step_finding(check_id: str, step: Dict[str, Any], env: Environment) -> Finding:
    """A step that crashed or hung the worker, named by what it was doing: "importing
    flash_attn 2.7.4 crashed the interpreter (SIGSEGV)". A check whose rules explain the
    step better file their own finding with subject["lost_step"] = its key, replacing this one."""
    subject = dict(step.get("subject") or {})
    what = step.get("what") or "a probe step"
    title = "%s %s" % (what, step.get("error"))
    evidence = fault_stack(step.get("detail"))
    remedies = []
    package, version = subject.get("package"), subject.get("version")
    if package and version:
        remedies.append(pip_remedy(
            "Reinstall %s %s for the installed torch (a build for another torch, CUDA or C++ ABI crashes or hangs on import); "
            "if it happens again, uninstall it" % (package, version),
            "reinstall-%s" % package, env, install=["%s==%s" % (package, version)], force_reinstall=True, no_deps=True))
    if step.get("state") == "timeout":
        remedies.append(Remedy("If this step is only slow (a first CUDA initialisation or a JIT compile can take minutes), "
                               "retry with a larger `--timeout`.", id="larger-timeout"))
    remedies.append(Remedy("Run `envdoctor check --only %s -v` to see every step this check completed." % check_id, id="rerun-verbose"))
    subject.update(lost_step=step.get("key"), state=step.get("state"))
    code = "step-crashed" if step.get("state") == "crashed" else "step-timeout"
    return Finding(check=check_id, code=code, severity=Severity.ERROR, title=title, evidence=tuple(evidence),
                   remedies=tuple(remedies), subject=subject)


def broken_plugin_result(plugin: BrokenPlugin) -> CheckResult:
    return CheckResult(
        id=plugin.name,
        title="plug-in %s" % plugin.name,
        status=Status.CRASHED,
        summary="could not load: %s" % plugin.error,
        findings=[
            Finding(
                check=plugin.name,
                code="plugin-broken",
                severity=Severity.WARNING,
                title="the check plug-in %s from %s could not be loaded" % (plugin.name, plugin.origin),
                evidence=(plugin.error,),
                remedies=(Remedy("Fix or uninstall the plug-in, or set ENVDOCTOR_DISABLE_PLUGIN_AUTOLOAD=1."),),
            )
        ],
    )


def gpu_names(results: List[CheckResult]) -> List[str]:
    """The GPUs the probes saw: torch's devices, or nvidia-smi's when torch sees none (a CPU torch on a GPU machine)."""
    facts = {r.id: r.facts for r in results}
    names = [str(d.get("name")) for d in (facts.get("torch-install") or {}).get("devices") or ()
             if str(d.get("id") or "").startswith("cuda") and d.get("name")]
    smi = ((facts.get("cuda-compat") or {}).get("nvidia_smi") or {}).get("gpus") or ()
    return names or [str(g.get("name")) for g in smi if isinstance(g, dict) and g.get("name")]


def describe_environment(run: RunResult, results: List[CheckResult], python: str, request: CheckRequest) -> Dict[str, Any]:
    hello = run.hello
    torch_facts = next((r.facts for r in results if r.id == "torch-install"), {})
    where = here(gpu_names(results)).to_dict()
    return {
        "envdoctor": __version__,
        "target_python": python,
        "python": hello.get("python"),
        "implementation": hello.get("implementation"),
        "executable": hello.get("executable"),
        "prefix": hello.get("prefix"),
        "platform": hello.get("platform"),
        "machine": hello.get("machine"),
        "sys_platform": hello.get("sys_platform"),
        "torch": run.torch_import.get("version"),
        "torch_import_s": run.torch_import.get("import_s"),
        "torch_import": {k: run.torch_import.get(k) for k in ("ok", "error_type", "error") if k in run.torch_import},
        "cuda_build": (torch_facts.get("build") or {}).get("cuda"),
        "devices": [d.get("id") for d in torch_facts.get("devices") or ()],
        "requested_devices": list(request.devices) if request.devices else None,
        "worker_restarts": run.restarts,
        "where": where,
        "kernel": kernel_state(where),
        "variables": environment_variables(RELEVANT_VARIABLES),
        "system": run.system,
        "torch_runtime": run.torch_runtime,
    }
