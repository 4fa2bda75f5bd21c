"""`envdoctor check` as a function: start the workers (torch imports at once), select the
checks, run their probes, build the run's Target, judge the facts, and assemble a redacted
Report."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence

from envdoctor.pipeline.check.judge import broken_plugin_result, judge
from envdoctor.pipeline.check.registry import LoadedCheck, checks_dir, load_checks
from envdoctor.pipeline.check.request import NOT_ASKED, CheckRequest, runs_libraries, select, validate_request
from envdoctor.pipeline.check.runner import PACKAGE_DIR, EventCallback, ProbeOutcome, Runner, RunResult, environ_with
from envdoctor.pipeline.check.target import build_target, environment_of, read_intent, resolve_python
from envdoctor.target.intent import Intent
from envdoctor.target.model import Report, Status, report_from_dict
from envdoctor.target.redact import Redactor

# The check whose facts are the Target's own (torch's build, devices and GPUs): it runs in every check run.
FOUNDATION = "torch-install"


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
            # an intent from a config, or one a caller passed as a probe option (the probes read either)
            self.libraries = runs_libraries(request, self.intent is not None or bool(request.options.get("intent")), self.selected)
            # torch-install runs whatever was selected (it costs milliseconds): its facts are the Target's
            # torch build, devices and GPUs, and a torch that does not import is said even to `--only apex`
            self.foundation = [c for c in loaded if c.check.id == FOUNDATION and c not in self.selected and FOUNDATION not in request.skip]
            self.groups = {c.check.id: self._group(c) for c in self.foundation + self.selected}
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
        return Runner(self.python, PACKAGE_DIR, checks_dir(), timeout_s=self.request.timeout_s,
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
        # a run without the library imports (--quick, or nothing asks for them): what is left of those checks costs nothing
        return loaded.check.group if self.libraries else "main"

    def _ctx(self, intent: Optional[Intent]) -> Dict[str, Any]:
        options = dict(self.request.options)  # a caller's own probe options stand unless a config or --quick says more
        if intent is not None:
            options["intent"] = intent.summary()
        options["quick"] = self.request.quick or bool(options.get("quick"))
        options["libraries"] = self.libraries or bool(options.get("libraries"))
        devices = self.request.devices or self.request.probe_devices
        if devices and not self.request.devices:
            options["devices_optional"] = True  # probed where they exist: none missing is a finding
        return {"devices": list(devices) if devices else None, "options": options}

    def _run(self, checks: Sequence[LoadedCheck], ctx: Dict[str, Any], on_event: Optional[EventCallback], keep: bool) -> RunResult:
        """The checks' probes, each group's in its own worker, at the same time; the workers stay when `keep`."""
        runs: Dict[str, RunResult] = {}
        failures: List[BaseException] = []

        def run_group(group: str) -> None:
            try:
                specs = [c.worker_spec() for c in checks if self.groups[c.check.id] == group]
                runs[group] = self.runners[group].run(specs, ctx, on_event, keep=keep)
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
            if not keep or failures:
                self.close()
        if failures:
            raise failures[0]
        return merge_runs(runs)

    def finish(self, on_event: Optional[EventCallback] = None, keep: bool = False) -> Report:
        """Probe and judge. `keep`: the workers stay, torch imported, for `again`; the caller closes."""
        skipped = [c for c in self.selected if not self.libraries and not c.check.quick]
        self.runnable = [c for c in self.foundation + self.selected if c not in skipped]
        try:
            self._drop_idle_groups()
        except BaseException:
            self.close()
            raise
        self.measured = self._run(self.runnable, self._ctx(self.intent), on_event, keep)
        why = "--quick" if self.request.quick else NOT_ASKED
        self.measured.outcomes.update({c.check.id: ProbeOutcome(c.check.id, "skipped", error=why) for c in skipped})
        return self._report(self.measured, self.intent, self.config_notes)

    def again(self, config_texts: Mapping[str, str], on_event: Optional[EventCallback] = None) -> Report:
        """The configs as `config_texts` leave them (a fix plan's edits), judged on the stack finish(keep=True)
        measured: the checks whose probes read the training config probe again in the workers it kept; every
        other check's facts are judged again with the new intent. Costs the rules, not another `import torch`."""
        request = dataclasses.replace(self.request, config_texts=dict(config_texts))
        intent, notes = read_intent(request, environ_with(request.environ) if request.environ else None)
        reprobe = [c for c in self.runnable if c.check.probe_reads_intent]
        outcomes = dict(self.measured.outcomes)
        if reprobe:
            outcomes.update(self._run(reprobe, self._ctx(intent), on_event, keep=True).outcomes)
        return self._report(dataclasses.replace(self.measured, outcomes=outcomes), intent, notes)

    def exchange(self, mine: Dict[str, Any], timeout_s: float, keep: bool = False) -> Dict[str, Any]:
        """check --distributed: the ranks' exchange in the main worker finish(keep=True) left."""
        return self.runners["main"].exchange(mine, timeout_s, keep)

    def exchange_again(self, variables: Optional[Dict[str, Optional[str]]], mine: Dict[str, Any], timeout_s: float) -> Dict[str, Any]:
        """fix --distributed: the collectives again, in the group exchange(keep=True) left."""
        return self.runners["main"].again(variables, mine, timeout_s)

    def _report(self, run: RunResult, intent: Optional[Intent], notes: List[str]) -> Report:
        outcomes = run.outcomes
        target = build_target(self.python, run, intent, {cid: o.facts for cid, o in outcomes.items() if o.state == "done"})
        results = [judge(c, outcomes.get(c.check.id), target) for c in self.selected]
        results[:0] = [r for r in (judge(c, outcomes.get(c.check.id), target) for c in self.foundation) if r.status is Status.ERROR]
        if not self.request.only:
            results.extend(broken_plugin_result(b) for b in self.broken)
        environment = environment_of(target, run, self.request)
        environment["workers"] = {group: sorted(cid for cid, g in self.groups.items() if g == group) for group in self.runners}
        if notes:
            environment["config_notes"] = notes
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
