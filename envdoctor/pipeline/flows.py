"""envdoctor's uses as functions: check, fix (plan, apply, verify), undo, explain, run.

The command line (cli.py) and the Python API (api.py) both call these and nothing else of the
pipeline: they only parse their arguments, then print or display what comes back. Displays
are the callers' (render/): a check is handed a `Progress`, a fix an `on_plan` that shows the
plan and answers whether to apply it, apply a `say` for its lines.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Dict, Iterator, List, Optional, Sequence, Tuple

from envdoctor.pipeline.check.request import CheckRequest, UsageError, validate_request

__all__ = ["CheckRequest", "UsageError", "validate_request"]  # what a front door needs to build, check and catch its input

if TYPE_CHECKING:  # the machinery loads when a flow runs: `--help` loads none, `explain --no-probe` no engine
    from envdoctor.pipeline.check.registry import BrokenPlugin, LoadedCheck
    from envdoctor.pipeline.check.runner import EventCallback
    from envdoctor.pipeline.explain import Explanation
    from envdoctor.pipeline.explain.reader import LogExcerpt
    from envdoctor.pipeline.explain.run import Finished
    from envdoctor.pipeline.fix.apply import FixOutcome, Say
    from envdoctor.pipeline.fix.journal import RunJournal
    from envdoctor.pipeline.fix.plan import Plan
    from envdoctor.target.model import Report

# A progress display: entered while the probes run, it gives the callback for their events.
Progress = Callable[[], ContextManager[Optional["EventCallback"]]]


@contextlib.contextmanager
def _no_progress() -> Iterator[Optional[EventCallback]]:
    yield None


# ---------------------------------------------------------------- check


def check(request: CheckRequest, progress: Progress = _no_progress) -> Report:
    """Probe the target and judge it. The workers start importing torch before anything else,
    so the caller's display and the checks' modules load while torch does. Bad input (an
    option, a config, an interpreter) raises UsageError before anything runs."""
    from envdoctor.pipeline.check.engine import PendingCheck

    pending = PendingCheck(request)
    with progress() as on_event:
        return pending.finish(on_event)


def check_distributed(request: CheckRequest, progress: Progress = _no_progress,
                      environ: Optional[Dict[str, str]] = None) -> Tuple[Report, int]:
    """`check --distributed`: this rank's own check, then the exchange with the other ranks and the
    cluster's findings (id `distributed`) added to the report, the same on every rank. Returns the
    report and this rank's number. Only rank 0 shows `progress`. No rank in the environment:
    UsageError before anything runs."""
    job = _JobRound(request, progress, environ, keep=False, command="check")
    job.pending.close()
    return job.report, job.rank.rank


class _JobRound:
    """One rank's check and the ranks' exchange, the cluster's findings added to its report. `keep`: the
    worker and the ranks' group stay for `verify` (fix --distributed); the caller closes `pending`.
    `command` (check, fix) is what a missing rank's one-line error names."""

    def __init__(self, request: CheckRequest, progress: Progress, environ: Optional[Dict[str, str]], keep: bool,
                 command: str) -> None:
        import os
        import socket
        import time

        from envdoctor.pipeline.check.engine import PendingCheck
        from envdoctor.pipeline.distributed.cluster import cluster_result
        from envdoctor.pipeline.distributed.gather import gathered
        from envdoctor.pipeline.distributed.ranks import read_rank_env
        from envdoctor.pipeline.distributed.summary import rank_summary

        self.rank = rank = read_rank_env(dict(os.environ) if environ is None else environ, command)
        # the worker joins the ranks' group with the standard variables (Slurm's mapped to them)
        request = dataclasses.replace(request, environ=dict(request.environ, **rank.child_environ()))
        if not request.devices:  # each rank probes its own GPU (and the CPU), not every GPU of the node
            request = dataclasses.replace(request, probe_devices=["cpu", "cuda:%d" % rank.local_rank])
        self.request, self.timeout_s = request, request.timeout_s or GATHER_TIMEOUT_S
        started = time.monotonic()
        self.pending = PendingCheck(request)
        try:
            with (progress if rank.rank == 0 else _no_progress)() as on_event:
                self.report = self.pending.finish(on_event, keep=True)
            self.mine = rank_summary(self.report, rank, socket.gethostname())
            # in the check's own worker: the interpreter checked, torch already imported
            answer = self.pending.exchange(self.mine, self.timeout_s, keep)
        except BaseException:
            self.pending.close()
            raise
        # the job's result takes the place of this machine's own `distributed` one (the same rules, every rank's facts)
        job = cluster_result(gathered(answer, self.mine, rank), rank.world_size, started)
        self.report.checks[:] = [c for c in self.report.checks if c.id != job.id] + [job]

    def verify(self, variables: Optional[Dict[str, Optional[str]]]) -> Optional[Report]:
        """The collective probe again on every rank, with the variables rank 0 applied (None: it applied
        nothing, and neither rank verifies: None back); the report with the job's findings judged anew."""
        import time

        from envdoctor.pipeline.distributed.cluster import ID, cluster_result
        from envdoctor.pipeline.distributed.gather import gathered
        from envdoctor.pipeline.distributed.summary import with_variables

        started = time.monotonic()
        mine = with_variables(self.mine, variables or {})
        answer = self.pending.exchange_again(variables, mine, self.timeout_s)
        if answer.get("skipped"):
            return None
        job = cluster_result(gathered(answer, mine, self.rank), self.rank.world_size, started)
        return dataclasses.replace(self.report, checks=[job if c.id == ID else c for c in self.report.checks])


def fix_distributed(request: CheckRequest, prefer: Sequence[str] = (), on_plan: Callable[[Plan], bool] = lambda plan: False,
                    progress: Progress = _no_progress, say: Optional[Say] = None,
                    environ: Optional[Dict[str, str]] = None) -> Tuple[FixRun, int]:
    """`fix --distributed`: every rank checks and exchanges as `check --distributed` does, and plans the job's
    own steps (id `distributed`: the same plan on every rank, from the same findings). Rank 0 applies them
    (journaled on its host, for `undo` there); then every rank runs the collective probe again with the
    variables rank 0 set, and the job's findings judged anew verify the steps (rank 0 rolls back those not
    fixed). Each rank's own findings are `envdoctor fix` on its node. Returns the run and this rank's number."""
    from envdoctor.pipeline.distributed.cluster import ID
    from envdoctor.pipeline.fix.apply import apply_plan, variables_of
    from envdoctor.pipeline.fix.journal import Journal, state_dir
    from envdoctor.pipeline.fix.lock import hold
    from envdoctor.pipeline.fix.plan import make_plan
    from envdoctor.pipeline.fix.verify import new_findings, verdicts

    job = _JobRound(request, progress, environ, keep=True, command="fix")
    rank = job.rank.rank
    verified: List[Optional[Report]] = []

    def verify(request: CheckRequest) -> Report:  # apply_plan's re-check: the collectives on every rank
        changed = {k: request.environ[k] for k in variables_of(done.plan.applicable) if k in request.environ}  # the applied steps'
        verified.append(job.verify(changed))
        if verified[0] is None:
            raise RuntimeError("the other ranks did not verify")
        return verified[0]

    try:
        done = FixRun(job.report, make_plan(job.report, prefer=prefer, only=[ID]))
        # the same plan on every rank, and --yes on every rank's command line
        if done.plan.applicable and on_plan(done.plan):
            if rank == 0:
                try:
                    with hold(state_dir(), job.report.target.python, "fix"):
                        done.outcome = apply_plan(done.plan, job.request, Journal(state_dir()), say=say, recheck=verify)
                finally:
                    if not verified:  # nothing was applied (refused, failed): the others stop waiting for the variables
                        job.verify(None)
            else:
                after = job.verify(variables_of(done.plan.applicable))  # rank 0's variables, whatever these are
                if after is not None:  # what rank 0 verified, judged here the same way
                    applied = done.plan.applicable
                    caused = new_findings(done.plan, applied, after)[0]
                    done.verified_by_rank0 = all(v.fixed for v in verdicts(applied, after, caused))
    finally:
        job.pending.close()
    return done, rank


# How long the ranks wait for each other without --timeout: a rank's own check runs first, and ranks
# start minutes apart on a loaded cluster.
GATHER_TIMEOUT_S = 300.0


def list_checks(plugins: bool = True) -> Tuple[List[LoadedCheck], List[BrokenPlugin]]:
    """Every check there is (built-in, then plug-ins), and the plug-ins that failed to load."""
    from envdoctor.pipeline.check.registry import load_checks

    return load_checks(plugins=plugins)


# ---------------------------------------------------------------- fix and undo


@dataclass
class FixRun:
    """A fix: the report it planned from, the plan, and what applying it did (None: not applied)."""

    report: Report
    plan: Plan
    outcome: Optional[FixOutcome] = None
    notes: List[str] = field(default_factory=list)  # what a notebook kernel must do now (restart)
    verified_by_rank0: Optional[bool] = None  # fix --distributed, on the other ranks: what rank 0's steps did

    @property
    def exit_code(self) -> int:
        """0: nothing to fix, or everything applied and verified; 1: findings left or a step failed."""
        if self.outcome is not None:
            return self.outcome.exit_code
        if self.verified_by_rank0 is not None:
            return 0 if self.verified_by_rank0 else 1
        return 0 if self.plan.empty else 1

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": "envdoctor/1", "plan": self.plan.to_dict(),
                "outcome": self.outcome.to_dict() if self.outcome is not None else None, "exit_code": self.exit_code}


def fix(request: CheckRequest, prefer: Sequence[str] = (), on_plan: Callable[[Plan], bool] = lambda plan: False,
        progress: Progress = _no_progress, say: Optional[Say] = None) -> FixRun:
    """Check, plan the remedies for the findings, and apply them when `on_plan` (shown the plan)
    says so: each step journaled before it runs, then verified by re-probing, undone on failure.
    Raises JournalError before anything changes when the journal cannot be written."""
    from envdoctor.pipeline.check.engine import PendingCheck
    from envdoctor.pipeline.fix.apply import apply_plan
    from envdoctor.pipeline.fix.journal import Journal, state_dir
    from envdoctor.pipeline.fix.kinds.pip import forget_resolutions
    from envdoctor.pipeline.fix.lock import hold
    from envdoctor.pipeline.fix.plan import close_over, make_plan
    from envdoctor.target.platform.kernel import kernel_state

    forget_resolutions()
    pending = PendingCheck(request)
    try:
        with progress() as on_event:
            report = pending.finish(on_event, keep=True)
        plan = make_plan(report, prefer=prefer, only=request.only)
        # what the plan's own config edits would make wrong is planned too, from the configs as it leaves
        # them judged on the stack just measured (the probes that read the config run again, in the same workers)
        close_over(plan, pending.again, prefer, request.only)
    finally:
        pending.close()
    done = FixRun(report, plan)
    if plan.empty or not plan.applicable or not on_plan(plan):
        return done
    state = state_dir()
    with hold(state, report.target.python, "fix"):  # one fix or undo of a target at a time; FixError names the other
        done.outcome = apply_plan(plan, request, Journal(state), say=say)
    done.notes = list(kernel_state(report.target.where).get("notes") or ())
    return done


def fix_runs() -> List[Dict[str, Any]]:
    """The journal's fix runs, oldest first, as `undo --list` shows them: a run that stopped while
    applying (its process killed) says "interrupted", a run whose journal cannot be read "damaged"."""
    from envdoctor.pipeline.fix.journal import Journal, state_dir

    journal = Journal(state_dir())
    runs = [run_summary(run, journal.root) for run in journal.runs()]
    return runs + [{"id": d["id"], "status": "damaged", "python": None, "error": d["error"], "steps": []} for d in journal.damaged]


def run_summary(run: RunJournal, state: Path) -> Dict[str, Any]:
    from envdoctor.pipeline.fix.lock import holder

    status = run.status
    python = run.meta.get("python")
    if status in ("applying", "applied") and python and holder(state, python) is None:
        status = "interrupted"  # no live run holds its target: its process ended without finishing
    return {
        "id": run.id,
        "status": status,
        "python": python,
        "steps": [{"number": s.number, "kind": s.kind, "status": s.status, "summary": (s.plan.get("summary") or "")} for s in run.steps],
    }


def undo(run_id: Optional[str] = None) -> Dict[str, Any]:
    """Revert a fix run (default: the newest whose changes are still in place) from the journal
    alone: {"undone": run id, "steps": what each step's undo did}. Raises JournalError or FixError."""
    from envdoctor.pipeline.fix.journal import Journal, state_dir
    from envdoctor.pipeline.fix.lock import hold
    from envdoctor.pipeline.fix.undo import undo_run

    state = state_dir()
    run = Journal(state).find(run_id)
    with hold(state, str(run.meta.get("python") or run.id), "undo"):
        return {"undone": run.id, "steps": undo_run(run)}


# ---------------------------------------------------------------- explain and run


def explain(excerpt: LogExcerpt, probe: bool = True, python: Optional[str] = None, timeout_s: Optional[float] = None) -> Explanation:
    """Name the causes of the errors in a log; with `probe`, confirm them on the live stack
    (`python`, or this interpreter) in a fresh worker."""
    from envdoctor.pipeline.explain import explain_excerpt

    if probe:
        validate_request(CheckRequest(timeout_s=timeout_s))
    return explain_excerpt(excerpt, probe=probe, python=python, timeout_s=timeout_s)


@dataclass
class CommandRun:
    """`envdoctor run`: how the command ended and, when it failed with errors in its output,
    what they mean (and the plan that would fix them)."""

    finished: Finished
    explanation: Optional[Explanation] = None
    plan: Optional[Plan] = None

    @property
    def exit_code(self) -> int:
        return self.finished.exit_code


def run(command: Sequence[str], probe: bool = True, python: Optional[str] = None, timeout_s: Optional[float] = None,
        plan: bool = False) -> CommandRun:
    """Run the command with its output passed through; when it fails with errors in its output,
    explain them, confirmed against the command's own interpreter unless `python` says another.
    Raises CommandNotFound when it cannot start."""
    from envdoctor.pipeline.explain.run import interpreter_of_command, run_command
    from envdoctor.pipeline.fix.plan import make_plan

    finished = run_command(command)
    done = CommandRun(finished)
    if finished.exit_code == 0 or finished.excerpt.empty:
        return done
    # probes run only for a diagnosis: output with no error in it costs a read, nothing more
    done.explanation = explain(finished.excerpt, probe or plan, python or interpreter_of_command(command), timeout_s)
    diagnosed = done.explanation.diagnoses
    if plan and diagnosed and done.explanation.report is not None:
        # the diagnosed checks, and the check whose finding confirmed a reading (its remedies are the exact ones)
        witnesses = {w for d in diagnosed if d.confirmed for w in d.signature.witnesses}
        done.plan = make_plan(done.explanation.report, prefer=[], only=sorted({d.check for d in diagnosed} | witnesses))
    return done
