"""The command line: argument parsing only; the engine does the work.

`--help` and `--version` import neither torch nor the renderers.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator, List, Optional

import typer

from envdoctor.target.version import __version__

app = typer.Typer(
    name="envdoctor",
    help="Finds the dtype, device and build failures of a PyTorch stack before the run, by running tiny operations on it.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


class CliError(Exception):
    """One line for the user, exit code 2."""


def _version(value: bool) -> None:
    if value:
        print("envdoctor %s" % __version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """envdoctor: a doctor for PyTorch environments."""


def _split(values: Optional[List[str]]) -> List[str]:
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]


@app.command()
def check(
    python: Optional[str] = typer.Option(None, "--python", help="Interpreter (or venv folder) to diagnose; default: this one."),
    only: Optional[List[str]] = typer.Option(None, "--only", help="Run only these check ids (repeat or comma-separate)."),
    skip: Optional[List[str]] = typer.Option(None, "--skip", help="Skip these check ids."),
    device: Optional[List[str]] = typer.Option(None, "--device", help="Probe only these devices: cpu, cuda, cuda:N, mps."),
    timeout: Optional[float] = typer.Option(
        None, "--timeout", help="Seconds a probe step may go without progress before it counts as hung (default 60; more for GPU checks)."
    ),
    config: Optional[List[str]] = typer.Option(
        None, "--config", help="Training config to probe (OneTrainer, autotrain, kohya, accelerate, axolotl, a launch line); repeatable. "
        "Default: accelerate's default config, when there is one."
    ),
    no_config: bool = typer.Option(False, "--no-config", help="Read no training config, not even accelerate's default one."),
    quick: bool = typer.Option(False, "--quick", help="Skip the probes that import transformers, diffusers and peft."),
    libraries: bool = typer.Option(False, "--libraries", help="Run transformers', diffusers' and peft's own models without a "
                                   "training config asking for them (costs their import); a --config runs them anyway."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (schema envdoctor/1)."),
    markdown: bool = typer.Option(False, "--markdown", help="Print the report as Markdown for a bug report."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Show every fact and note."),
    list_checks: bool = typer.Option(False, "--list", help="List the available checks and exit."),
    no_plugins: bool = typer.Option(False, "--no-plugins", help="Do not load third-party checks."),
    distributed: bool = typer.Option(False, "--distributed", help="One of a job's ranks (under torchrun or Slurm): every rank "
                                     "probes its stack, rank 0 prints one report for the job."),
) -> int:
    """Run every probe on the real stack and report findings, evidence and fixes.

    Exit code 0: no errors; 1: at least one error finding; 2: bad input.
    """
    from envdoctor.pipeline import flows

    if as_json and markdown:
        raise CliError("--json and --markdown cannot be combined")
    if list_checks:
        return _list(not no_plugins)
    if config and no_config:
        raise CliError("--config and --no-config cannot be combined")
    request = flows.CheckRequest(
        python=python,
        only=_split(only),
        skip=_split(skip),
        devices=_split(device) or None,
        timeout_s=timeout,
        plugins=not no_plugins,
        configs=list(config or ()),
        default_config=not no_config,
        quick=quick,
        libraries=libraries,
    )
    with _bad_input():
        if distributed:
            report, rank = flows.check_distributed(request, _progress(not (as_json or markdown)))
            if rank != 0 and not verbose:  # rank 0 prints the job's report; every rank exits with its code
                from envdoctor.pipeline.distributed.cluster import lone_rank_line

                line = lone_rank_line(report, rank)  # the exchange failed: this rank says who and why
                if line:
                    print(line, file=sys.stderr)
                return report.exit_code
        else:
            report = flows.check(request, _progress(not (as_json or markdown)))
    from envdoctor.render.as_json import render_json
    from envdoctor.render.markdown import render_markdown
    from envdoctor.render.terminal import render_terminal

    if as_json:
        print(render_json(report, ascii_only=not _stdout_is_utf8()))
    elif markdown:
        print(render_markdown(report, verbose=verbose), end="")
    else:
        render_terminal(report, verbose=verbose)
    return report.exit_code


@app.command()
def fix(
    yes: bool = typer.Option(False, "--yes", "-y", help="Apply the plan without asking, then verify it."),
    python: Optional[str] = typer.Option(None, "--python", help="Interpreter (or venv folder) to fix; default: this one."),
    only: Optional[List[str]] = typer.Option(None, "--only", help="Fix only the findings of these check ids."),
    config: Optional[List[str]] = typer.Option(None, "--config", help="Training config to probe and edit; repeatable. "
                                                "Default: accelerate's default config, when there is one."),
    no_config: bool = typer.Option(False, "--no-config", help="Read no training config, not even accelerate's default one."),
    prefer: Optional[List[str]] = typer.Option(None, "--prefer", help="Take this remedy where a finding offers it (e.g. dora-off, "
                                                "base-bf16, fp32, upgrade-torch); repeatable."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="As in `check`."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan and the outcome as JSON."),
    distributed: bool = typer.Option(False, "--distributed", help="One of a job's ranks (under torchrun or Slurm): the job's own "
                                     "steps (NCCL variables), applied by rank 0 and verified by the collectives on every rank."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="With --distributed: the ranks other than 0 print too."),
) -> int:
    """Plan the fixes for check's findings; with --yes apply them, verify them by re-probing, and journal them for undo.

    Exit code 0: nothing to fix, or everything applied and verified; 1: findings left or a step failed
    (everything it did rolled back); 2: bad input.
    """
    from envdoctor.pipeline import flows
    from envdoctor.pipeline.fix.action import FixError
    from envdoctor.pipeline.fix.journal import JournalError
    from envdoctor.render.as_json import json_text
    from envdoctor.render.lines import outcome_lines, plan_lines

    if config and no_config:
        raise CliError("--config and --no-config cannot be combined")
    request = flows.CheckRequest(python=python, only=_split(only), timeout_s=timeout, configs=list(config or ()), default_config=not no_config)

    quiet = False  # fix --distributed: a rank other than 0 (its plan is rank 0's; only --yes applies under a launcher)

    def on_plan(plan: Any) -> bool:
        """The plan shown (the terminal's text), then: apply it? --yes, or the answer on a terminal."""
        if quiet:
            return yes
        if not as_json:
            print("\n".join(plan_lines(plan.to_dict())))
        applying = yes or (not distributed and _confirmed(as_json))
        if not applying and not as_json:
            print("Nothing changed. Apply with `envdoctor fix%s --yes`; every step is journaled for `envdoctor undo`."
                  % (" --distributed" if distributed else ""))
        return applying

    try:
        with _bad_input():
            if distributed:
                from envdoctor.pipeline.distributed.ranks import read_rank_env

                quiet = read_rank_env(dict(os.environ), "fix").rank != 0 and not verbose
                done, _ = flows.fix_distributed(request, prefer=_split(prefer), on_plan=on_plan,
                                                   progress=_progress(not as_json), say=None if as_json or quiet else _say)
                if quiet:
                    return done.exit_code
            else:
                done = flows.fix(request, prefer=_split(prefer), on_plan=on_plan, progress=_progress(not as_json),
                                 say=None if as_json else _say)
    except JournalError as exc:
        raise CliError("cannot write the journal, so nothing was changed: %s" % exc) from None
    except FixError as exc:  # another run holds the target: nothing was changed
        print("envdoctor: error: %s" % exc, file=sys.stderr)
        return 1
    if as_json:
        print(json_text(done.to_dict(), ascii_only=not _stdout_is_utf8()))
    elif done.plan.empty or not done.plan.applicable:
        print("\n".join(plan_lines(done.plan.to_dict())))
    elif done.outcome is not None:
        print("\n".join(outcome_lines(done.outcome.to_dict())))
    return done.exit_code


@app.command()
def explain(
    log: Optional[str] = typer.Argument(None, metavar="[FILE]", help="A traceback or a whole log; `-` or nothing: standard input."),
    no_probe: bool = typer.Option(False, "--no-probe", help="Only read the text: do not run the matching probes on this stack."),
    python: Optional[str] = typer.Option(None, "--python", help="Confirm against this interpreter (or venv folder); default: this one."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="As in `check`."),
    as_json: bool = typer.Option(False, "--json", help="Print the diagnoses as JSON (schema envdoctor/1)."),
) -> int:
    """Read a traceback or log, name its cause, and confirm it on the live stack.

    Exit code 0: a cause was found; 1: none was; 2: unreadable input.
    """
    from envdoctor.pipeline import flows
    from envdoctor.pipeline.explain.reader import NotText
    from envdoctor.render.as_json import json_text
    from envdoctor.render.lines import explanation_lines

    with _bad_input():  # the options before the input: a bad one is said at once
        flows.validate_request(flows.CheckRequest(timeout_s=timeout))
    try:
        excerpt = _read_log(log)
    except NotText as exc:
        raise CliError(str(exc)) from None
    if excerpt.empty:
        raise CliError("the input is empty: give a traceback or a log (a file, or piped on standard input)")
    with _bad_input():
        explanation = flows.explain(excerpt, not no_probe, python, timeout)
    data = explanation.to_dict()
    if as_json:
        print(json_text(data, ascii_only=not _stdout_is_utf8()))
    else:
        print("\n".join(explanation_lines(data)))
    return int(explanation.exit_code)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(
    command: Optional[List[str]] = typer.Argument(None, metavar="-- CMD [ARGS]...", help="The command to run, after `--`."),
    fix_plan: bool = typer.Option(False, "--fix", help="When it fails with a known cause, also print the fix plan."),
    no_probe: bool = typer.Option(False, "--no-probe", help="Do not confirm the diagnosis on the live stack."),
    python: Optional[str] = typer.Option(None, "--python", help="Confirm against this interpreter; default: the command's own "
                                           "(`python ...`, or a script's #! line), else this one."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="As in `check`."),
) -> int:
    """Run a command with its output passed through; if it fails with a traceback, explain it.

    Exit code: the command's own (128+N when signal N killed it); 127 when it cannot be started.
    """
    from envdoctor.pipeline import flows
    from envdoctor.pipeline.explain.run import CommandNotFound
    from envdoctor.render.lines import explanation_lines, plan_lines

    if not command:
        raise CliError("no command given: envdoctor run -- python train.py ...")
    with _bad_input():  # before the command runs, not after it failed
        flows.validate_request(flows.CheckRequest(timeout_s=timeout))
    try:
        with _bad_input():
            done = flows.run(command, probe=not no_probe, python=python, timeout_s=timeout, plan=fix_plan)
    except CommandNotFound as exc:
        print("envdoctor: error: %s" % exc, file=sys.stderr)
        return 127
    explanation, finished = done.explanation, done.finished
    if explanation is None or not explanation.matching.errors:
        return done.exit_code
    how = "killed by signal %d" % finished.signal if finished.signal else "exit code %d" % finished.exit_code
    _say("")
    _say("envdoctor: the command failed (%s); what its output says:" % how)
    for line in explanation_lines(explanation.to_dict()):
        _say(line)
    if done.plan is not None:
        _say("")
        for line in plan_lines(done.plan.to_dict()):
            _say(line)
        if done.plan.applicable:
            _say("Apply with `envdoctor fix --yes --only %s`." % ",".join(sorted({d.check for d in explanation.diagnoses})))
    return done.exit_code


def _read_log(log: Optional[str]):  # type: ignore[no-untyped-def]
    from envdoctor.pipeline.explain.reader import read_stream

    if log in (None, "-"):
        if sys.stdin is None or sys.stdin.isatty():
            raise CliError("no log given: name a file (`envdoctor explain train.log`) or pipe one in")
        return read_stream(sys.stdin.buffer)
    assert log is not None
    try:
        with open(log, "rb") as stream:
            return read_stream(stream)
    except OSError as exc:
        raise CliError("cannot read %s: %s" % (log, exc.strerror or exc)) from None


@contextlib.contextmanager
def _bad_input() -> Iterator[None]:
    """Bad input the pipeline found (an option, a config, an interpreter): one line, exit code 2."""
    from envdoctor.pipeline.flows import UsageError

    try:
        yield
    except UsageError as exc:
        raise CliError(str(exc)) from None


def _progress(show: bool) -> Any:
    from envdoctor.render.progress import progress_display

    return progress_display(show)


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def _confirmed(as_json: bool) -> bool:
    """On a terminal, ask; without one (CI, a pipe), never apply unasked."""
    if as_json or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    try:
        answer = input("Apply these steps? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


@app.command()
def undo(
    run_id: Optional[str] = typer.Option(None, "--id", help="The fix run to revert (default: the last one)."),
    list_runs: bool = typer.Option(False, "--list", help="Show the journal of fix runs and exit."),
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> int:
    """Revert a fix run byte for byte from its journal (file backups, stashed packages): no network needed."""
    from envdoctor.pipeline import flows
    from envdoctor.pipeline.fix.action import FixError
    from envdoctor.pipeline.fix.journal import JournalError
    from envdoctor.render.as_json import json_text
    from envdoctor.render.lines import runs_lines

    try:
        if list_runs:
            runs = flows.fix_runs()
            print(json_text(runs) if as_json else "\n".join(runs_lines(runs)))
            return 0
        undone = flows.undo(run_id)
    except (JournalError, FixError) as exc:
        raise CliError(str(exc)) from None
    if as_json:
        print(json_text(undone))
    else:
        print("\n".join(undone["steps"] + ["Undone: fix run %s." % undone["undone"]]))
    return 0


def _stdout_is_utf8() -> bool:
    return (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "") == "utf8"


def _list(plugins: bool) -> int:
    from envdoctor.pipeline import flows

    loaded, broken = flows.list_checks(plugins)
    width = max(len(c.check.id) for c in loaded)
    for item in loaded:
        origin = "" if item.origin == "builtin" else "  [%s]" % item.origin
        print("%s  %s%s" % (item.check.id.ljust(width), item.check.title, origin))
    for plugin in broken:
        print("%s  (broken plug-in from %s: %s)" % (plugin.name.ljust(width), plugin.origin, plugin.error))
    return 0


def _click_error(exc: BaseException) -> bool:
    """click's ClickException (a usage error, a bad parameter). typer depends on click up to
    0.2x and vendors it as the private typer._click later: its classes are recognised by
    their interface, so that every typer release pyproject admits works."""
    return callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int)


def _plain_coercion(command: Any) -> None:
    """typer 0.29 and later coerce every option's value through a pydantic TypeAdapter, and importing
    pydantic for it costs `check` more than its own start-up (about 0.3 s here) for values that are
    plain strings, floats and lists of strings. Those get a plain coercion; typer before 0.29 uses
    click's types and imports no pydantic. Anything else keeps typer's own."""
    try:
        from dataclasses import dataclass

        from typer._coercion import RuntimeParam  # typer >= 0.29
    except ImportError:
        return

    @dataclass(frozen=True)
    class Plain(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.annotation is float:
                try:
                    return float(value)
                except (TypeError, ValueError):
                    raise typer.BadParameter("%r is not a valid number." % (value,), ctx=ctx, param=param) from None
            if self.annotation in (str, bool):
                return self.annotation(value)
            return [str(item) for item in value]  # List[str]

    for sub in [command, *getattr(command, "commands", {}).values()]:
        params = list(sub.params)
        with contextlib.suppress(Exception):  # --help: made once per command, on first use (cached by typer)
            params.append(sub.get_help_option(sub.context_class(sub)))
        for param in params:
            descriptor = getattr(param, "type_descriptor", None)
            if descriptor is None or descriptor.file_annotation is not None or getattr(param, "_runtime_param", 0) is not None:
                continue
            if descriptor.annotation in (str, float, bool) or descriptor.annotation == List[str]:
                param._runtime_param = Plain(annotation=descriptor.annotation, parameter_info=descriptor.parameter_info)


def main(argv: Optional[List[str]] = None) -> int:
    if not _stdout_is_utf8() and hasattr(sys.stdout, "reconfigure"):
        # a console that cannot encode "→" gets an escape, never a UnicodeEncodeError
        sys.stdout.reconfigure(errors="backslashreplace")
    command = typer.main.get_command(app)
    _plain_coercion(command)
    try:
        result = command.main(args=argv, prog_name="envdoctor", standalone_mode=False)
    except typer.Exit as exc:  # public in every typer release
        return int(getattr(exc, "exit_code", 0) or 0)
    except typer.Abort:
        return 130
    except CliError as exc:
        print("envdoctor: error: %s" % exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("envdoctor: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # click >= 8.2: `envdoctor` alone prints the help
            print(exc.format_message())  # type: ignore[attr-defined]
            return 0
        if _click_error(exc):
            print("envdoctor: error: %s" % exc.format_message(), file=sys.stderr)  # type: ignore[attr-defined]
            return 2
        raise
    finally:
        _reaped()
    return result if isinstance(result, int) else 0


def _reaped() -> None:
    """The command's workers, killed while it judged and printed, reaped before it returns (only where a
    command started any: --version imports nothing for this)."""
    children = sys.modules.get("envdoctor.pipeline.children")
    if children is not None:
        children.wait_for_reaping()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
