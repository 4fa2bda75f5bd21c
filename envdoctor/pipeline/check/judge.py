"""A check's outcome judged: the rules on its facts, or the worker's fate (a crash, a hang, a
raised probe, a lost step) made a finding that names what happened."""

from __future__ import annotations

import traceback
from typing import Any, Dict, List, Optional

from envdoctor.pipeline.check.registry import BrokenPlugin, LoadedCheck
from envdoctor.pipeline.check.runner import ProbeOutcome
from envdoctor.target.model import Check, CheckResult, Finding, Remedy, Severity, Status, Target, status_from_findings
from envdoctor.target.remedies.actions import pip_remedy


def judge(loaded: LoadedCheck, outcome: Optional[ProbeOutcome], env: Target) -> CheckResult:
    check = loaded.check
    result = CheckResult(id=check.id, title=check.title, status=Status.OK)
    if outcome is None:
        outcome = ProbeOutcome(check.id, "crashed", error="no result came back from the worker")
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


def _judge_outcome(check: Check, outcome: ProbeOutcome, result: CheckResult, env: Target) -> CheckResult:
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


def contained_failure(check_id: str, outcome: ProbeOutcome) -> Finding:
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


def lost_step_finding(check_id: str, step: Dict[str, Any], env: Target) -> Finding:
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
