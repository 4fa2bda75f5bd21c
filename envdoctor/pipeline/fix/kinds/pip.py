"""Kind "pip": a remedy's pip action run by the target interpreter's own pip (never a shell),
with torch pinned by the action's constraints; in an environment uv made without pip, by uv
pointed at the target (`uv pip ... --python <target>`), the way its owner changes it.

Before pip changes anything, the step records the target's full listing and stashes every
distribution the action will remove or replace: the uninstalled names, and for an install
what pip itself reports it would replace (`pip install --dry-run --report -`, pip >= 22.2;
`uv pip install --dry-run`'s list; the named requirements on an older pip). `undo(step)` then works offline: it uninstalls
what the step brought in and puts the stashed files back.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

from envdoctor.pipeline.children import kill_group, own_group
from envdoctor.pipeline.fix import stash
from envdoctor.pipeline.fix.action import FixError, NotApplicable, prepared
from envdoctor.pipeline.fix.conda import conda_owned, is_conda_env
from envdoctor.pipeline.fix.journal import JournalStep
from envdoctor.target.model import Target
from envdoctor.target.probekit.distributions import canonical
from envdoctor.target.remedies.actions import action_names
from envdoctor.target.remedies.commandline import PIP as PIP_INSTALLER
from envdoctor.target.remedies.commandline import UV, PipRun, made_by_uv, pip_commands, pip_runs
from envdoctor.target.remedies.kinds import PIP
from envdoctor.target.versions import release_tuple

KIND = PIP.name
_UV_WOULD_INSTALL = re.compile(r"^ \+ ([A-Za-z0-9._-]+)==(\S+)\s*$", re.M)
REPORT_PIP = (22, 2)  # `pip install --dry-run --report`: pip 22.2 release notes (https://pip.pypa.io/en/stable/news/#v22-2)
PIP_VERSION_TIMEOUT_S = 60.0
# What we add to pip's environment, never to its command line: no prompt can hang a fix, and
# no self-update check reaches for the network.
QUIET_PIP_ENV = {"PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


# pip's words for a PEP 668 Python, and the way out that works there
EXTERNALLY_MANAGED = ("this Python is externally managed (PEP 668) and pip refuses to change it: make a venv "
                      "(`python3 -m venv ~/venvs/train`), install there (`~/venvs/train/bin/python -m pip install ...`) "
                      "and train with that python, or use the system's package manager")


def _pip_env(run: PipRun) -> Dict[str, str]:
    env = dict(os.environ)
    for key, value in QUIET_PIP_ENV.items():
        env.setdefault(key, value)
    env.update(dict(run.env))
    return env


# How pip says that it could not reach an index (urllib3's words under its retry warnings).
# uv's: reqwest's "dns error", "tcp connect error", "error sending request for url".
_UNREACHABLE = re.compile(r"NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|"
                          r"Name or service not known|nodename nor servname|Network is unreachable|ConnectTimeoutError|"
                          r"Read timed out|ProxyError|SSLError|dns error|tcp connect error|error sending request for url")


def _index_host(argv: Sequence[str]) -> str:
    """The index a pip command reaches for: its --index-url, else $PIP_INDEX_URL, else PyPI."""
    url = argv[argv.index("--index-url") + 1] if "--index-url" in argv[:-1] else os.environ.get("PIP_INDEX_URL", "")
    return urllib.parse.urlsplit(url).hostname or "pypi.org" if url else "pypi.org"


def _last_error(output: str, argv: Sequence[str] = (), installer: str = PIP_INSTALLER) -> str:
    """pip's last `ERROR:` line, else its last line: the one line the user needs. An index that could
    not be reached is said so ("cannot reach pypi.org"), not as pip's "no matching distribution";
    a resolver conflict by what pip names as its cause."""
    if "externally-managed-environment" in output:
        return EXTERNALLY_MANAGED
    if _UNREACHABLE.search(output):
        return "cannot reach %s: pip could not download from it (no network, or a proxy or a firewall in the way)" % _index_host(argv)
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if "The conflict is caused by:" in lines:
        causes = lines[lines.index("The conflict is caused by:") + 1:]
        causes = causes[:next((i for i, line in enumerate(causes) if line.startswith(("To fix", "Additionally"))), len(causes))]
        return "the requirements conflict: %s" % "; ".join(causes[:4])
    # uv: "error: No solution found when resolving dependencies:" and its "cause:" lines under it
    # (pip writes "error: subprocess-exited-with-error" too: its last ERROR line says more)
    uv_error = next((i for i, line in enumerate(lines) if line.startswith("error:")), None) if installer == UV else None
    if uv_error is not None:
        causes = [line.split(":", 1)[1].strip() for line in lines[uv_error + 1:] if line.startswith(("cause:", "Caused by:", "╰─▶"))]
        return "; ".join([lines[uv_error][len("error:"):].strip().rstrip(":")] + causes[:2])
    # pip's closing "ResolutionImpossible: for help visit ..." says less than the line before it
    errors = [line for line in lines if line.startswith("ERROR:") and not line.startswith("ERROR: ResolutionImpossible: for help")]
    return (errors or lines or ["no output"])[-1]


def _tool(installer: str) -> str:
    """How a message names the installer that ran: `pip ...` or `uv pip ...`."""
    return "uv pip" if installer == UV else "pip"


def find_uv() -> Optional[str]:
    """The uv that runs the steps of an environment uv made: on PATH, else installed beside envdoctor."""
    beside = os.path.join(os.path.dirname(sys.executable), "uv")
    return shutil.which("uv") or (beside if os.access(beside, os.X_OK) else None)


def _run_pip(python: str, run: PipRun, extra: Sequence[str] = (), installer: str = PIP_INSTALLER, uv: str = "uv") -> subprocess.CompletedProcess:
    """One pip invocation with its output captured. pip runs in a process group of its own, so a
    Ctrl-C meant for envdoctor does not cut it at a random point: envdoctor stops it (the whole
    group, its build subprocesses too) and then rolls back; pip never outlives envdoctor."""
    argv = run.argv(python, installer, uv) + list(extra)
    try:
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_pip_env(run), **own_group())
    except OSError as exc:
        raise FixError("cannot run %s: %s" % (run.line(python, installer), exc)) from exc
    try:
        out, err = child.communicate()
    except BaseException:  # Ctrl-C, SIGTERM: stop pip and what it started, then let the rollback run
        kill_group(child)
        raise
    return subprocess.CompletedProcess(argv, child.returncode, out, err)


@functools.cache
def pip_version(python: str) -> Tuple[int, ...]:
    """The target's pip release, (23, 2, 1); NotApplicable when it has none. Asked once per
    interpreter: a plan weighs several pip remedies, and `python -m pip` takes a quarter second."""
    try:
        proc = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True, timeout=PIP_VERSION_TIMEOUT_S,
                              env=_pip_env(PipRun(("--version",))))
    except (OSError, subprocess.SubprocessError) as exc:
        raise NotApplicable("cannot run the target interpreter %s: %s" % (python, exc)) from exc
    words = proc.stdout.split()
    if proc.returncode != 0 or len(words) < 2 or words[0] != "pip":
        raise NotApplicable(_no_pip(python, _last_error(proc.stderr + proc.stdout)))
    return release_tuple(words[1])


def _no_pip(python: str, error: str) -> str:
    """Why the target has no pip, and how to get one: an environment that uv made says so in its
    pyvenv.cfg (`uv = 0.13.9`), and uv puts no pip in it."""
    if made_by_uv(os.path.dirname(os.path.dirname(os.path.abspath(python)))):
        return ("%s is in an environment uv made, which has no pip, and uv is not on PATH here: install uv "
                "(https://docs.astral.sh/uv/getting-started/installation/) and run the step with it "
                "(`uv pip install ... --python %s`), or add pip with `%s -m ensurepip`" % (python, python, python))
    return "%s has no pip (`%s -m pip` fails: %s): add it with `%s -m ensurepip`" % (python, python, error, python)


@dataclass
class PipAction:
    """A prepared pip action for one target interpreter (the Action protocol)."""

    action: Dict[str, Any]
    python: str
    pip: Tuple[int, ...] = ()
    installer: str = PIP_INSTALLER  # "uv": the steps run as `uv pip ... --python <python>`
    uv: str = "uv"  # the uv binary that runs them
    kind: str = KIND
    # filled by apply(), read by confirm()
    before: Dict[str, str] = field(default_factory=dict)
    planned: Dict[str, str] = field(default_factory=dict)  # what pip reported it would install: name → version

    resolved: Optional[Dict[str, str]] = None  # what pip's dry run at plan time would install; None: not asked

    def lines(self) -> List[str]:
        commands = list(pip_commands(self.action, self.python, self.installer))
        if self.resolved:
            commands.append("# pip resolves it to: %s" % ", ".join("%s %s" % kv for kv in sorted(self.resolved.items())))
        return commands

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "python": self.python, "action": dict(self.action), "commands": list(pip_commands(self.action, self.python, self.installer)),
                "resolved": self.resolved}

    def _install_run(self) -> Optional[PipRun]:
        return next((r for r in pip_runs(self.action) if r.verb == "install"), None)

    def will_install(self) -> Optional[Dict[str, str]]:
        """What the install would put in (canonical name → version), asked of pip itself without
        changing anything; None when the target's pip is too old to report it."""
        run = self._install_run()
        if run is None:
            return {}
        if self.installer != UV and self.pip < REPORT_PIP:
            return None
        extra = ("--dry-run",) if self.installer == UV else ("--dry-run", "--quiet", "--report", "-")
        proc = self._run(run, extra)
        if proc.returncode != 0:
            raise FixError("%s cannot install %s: %s" % (self.installer, " ".join(action_names(self.action)) or "the requirements",
                                                         _last_error(proc.stderr + proc.stdout, run.args, self.installer)))
        if self.installer == UV:  # uv lists what it would install as " + name==version" (its --dry-run has no report)
            return {canonical(m.group(1)): m.group(2) for m in _UV_WOULD_INSTALL.finditer(proc.stderr + proc.stdout)}
        try:
            report = json.loads(proc.stdout)
            return {canonical(i["metadata"]["name"]): str(i["metadata"]["version"]) for i in report.get("install") or ()}
        except (ValueError, KeyError, TypeError) as exc:
            raise FixError("cannot read pip's --dry-run report: %s" % exc) from exc

    def _run(self, run: PipRun, extra: Sequence[str] = ()) -> subprocess.CompletedProcess:
        return _run_pip(self.python, run, extra, self.installer, self.uv)

    def apply(self, step: JournalStep) -> None:
        """Listing and stash into the journal, saved; then pip runs."""
        self.before = stash.listing(self.python)
        step.record.update({"python": self.python, "installer": self.installer, "listing_before": self.before, "stashed": [], "ran": []})
        step.save()
        planned = self.will_install()
        removed = {canonical(n) for n in self.action.get("uninstall") or ()}
        replaced = set(planned) if planned is not None else set(action_names(self.action))
        self.planned = dict(planned or {})
        targets = sorted(n for n in removed | replaced if n in self.before)
        stashed = step.record["stashed"]
        for key, dist in sorted(stash.installed(self.python, targets).items()):
            stashed.append(stash.stash(dist, step.dir / "stash" / ("%s-%s" % (key, dist.version))))
            step.save()  # each stash recorded as soon as it exists
        step.record["will_install"] = planned
        step.save()
        for run in pip_runs(self.action):
            step.record["ran"].append(run.verb)
            step.save()  # before pip changes anything: undo knows it may have
            proc = self._run(run)
            if proc.returncode != 0:
                raise FixError("`%s %s` failed: %s" % (_tool(self.installer), run.verb,
                                                       _last_error(proc.stderr + proc.stdout, run.args, self.installer)))
        step.record["listing_after"] = stash.listing(self.python)
        step.save()

    def confirm(self) -> None:
        """The uninstalled names gone, the wanted ones installed (at the versions pip reported),
        and torch untouched when the action pinned it."""
        after = stash.listing(self.python)
        problems: List[str] = []
        for name in self.action.get("uninstall") or ():
            if canonical(name) in after:
                problems.append("%s is still installed (%s)" % (name, after[canonical(name)]))
        for requirement in list(self.action.get("install") or ()) + list(self.action.get("upgrade") or ()):
            problem = _unmet(requirement, after)
            if problem:
                problems.append(problem)
        for name, version in sorted(self.planned.items()):
            if after.get(name) != version:
                problems.append("%s %s was to be installed, found %s" % (name, version, after.get(name, "absent")))
        if self.action.get("constraints") and self.before.get("torch") != after.get("torch"):
            problems.append("torch changed: %s → %s" % (self.before.get("torch", "absent"), after.get("torch", "absent")))
        if problems:
            raise FixError("pip step not confirmed: " + "; ".join(problems))


def _unmet(requirement: str, after: Mapping[str, str]) -> Optional[str]:
    """Why `requirement` is not met by the listing; None when it is (or names no distribution: a path)."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    key = canonical(req.name)
    if key not in after:
        return "%s is not installed" % req.name
    if req.specifier and not req.specifier.contains(after[key], prereleases=True):
        return "%s %s does not meet %s" % (req.name, after[key], requirement)
    return None


def prepare(action: Mapping[str, Any], python: str, installer: str = PIP_INSTALLER, externally_managed: bool = False,
            prefix: Optional[str] = None) -> PipAction:
    """The action checked against the closed vocabulary and the target's installer; changes nothing."""
    unknown = sorted(set(action) - set(PIP.keys))
    if unknown:
        raise NotApplicable("pip action with keys envdoctor does not apply: %s" % ", ".join(unknown))
    if not (action.get("install") or action.get("upgrade") or action.get("uninstall")):
        raise NotApplicable("pip action with nothing to install, upgrade or uninstall")
    if externally_managed:  # pip's own dry run does not refuse (pip exempts `--dry-run --report`); its install would
        raise NotApplicable("%s: %s" % (python, EXTERNALLY_MANAGED))
    if installer == UV:
        uv = find_uv()
        if uv is None:
            raise NotApplicable(_no_pip(python, "no pip module"))
        prepared_action = PipAction(action=dict(action), python=python, installer=UV, uv=uv)
    else:
        prepared_action = PipAction(action=dict(action), python=python, pip=pip_version(python))
    prepared_action.resolved = _resolved(prepared_action)
    if is_conda_env(prefix):
        _refuse_conda_owned(prepared_action, str(prefix))
    return prepared_action


def _refuse_conda_owned(action: PipAction, prefix: str) -> None:
    """NotApplicable when the step would remove or replace a distribution conda installed here."""
    removed = {canonical(n) for n in action.action.get("uninstall") or ()}
    touched = removed | (set(action.resolved) if action.resolved is not None else set(action_names(action.action)))
    owned = conda_owned(prefix, stash.installed(action.python, sorted(touched))) if touched else {}
    if owned:
        name = sorted(owned)[0]
        first = owned[name]
        command = ("conda remove -p %s %s" % (prefix, first.package) if name in removed
                   else "conda install -p %s -c conda-forge %s" % (prefix, first.package))
        raise NotApplicable(
            "%s in this conda environment came from conda (%s): pip would change it behind conda's back, and conda's "
            "records would no longer say what is installed; do it with conda (`%s`; conda's name for torch is pytorch), "
            "or use pip in a venv of its own" % (", ".join("%s %s" % (n, owned[n].version) for n in sorted(owned)),
                                                  first.record, command))


# A plan weighs a remedy, then prepares the one it takes: pip resolves each action once per run.
# Per run, not per process: in a notebook the next `envdoctor.fix()` meets an environment the
# last one (or the user) changed, and must ask pip again.
_RESOLVED: Dict[Tuple[str, str, str], Union[Optional[Dict[str, str]], str]] = {}


def forget_resolutions() -> None:
    """A new fix run: what pip resolved for the last one may no longer hold."""
    _RESOLVED.clear()


def _resolved(action: PipAction) -> Optional[Dict[str, str]]:
    """What pip's dry run would install, before anything changes; NotApplicable (a conflict, an
    index out of reach) so that the plan says why and takes an alternative that can work."""
    key = (action.python, action.installer, json.dumps(action.action, sort_keys=True))
    if key not in _RESOLVED:
        try:
            _RESOLVED[key] = action.will_install()
        except FixError as exc:
            _RESOLVED[key] = str(exc)
    found = _RESOLVED[key]
    if isinstance(found, str):
        raise NotApplicable(found)
    return found


def prepare_steps(actions: Sequence[Mapping[str, Any]], target: Target) -> List[Union[PipAction, NotApplicable]]:
    """The plan's pip steps, each in the target interpreter."""
    return [prepared(functools.partial(prepare, action, target.python, target.installer, target.externally_managed, target.prefix))
            for action in actions]


def undo(step: JournalStep) -> None:
    """Offline: uninstall what the step brought in or replaced, put the stashed distributions
    back, and prove the listing is the recorded one again."""
    record = step.record
    if "listing_before" not in record:
        return  # the record is saved before anything changes: nothing changed
    python = str(record["python"])
    before: Dict[str, str] = dict(record["listing_before"])
    now = stash.listing(python)
    after: Dict[str, str] = dict(record.get("listing_after") or now)  # a step that failed midway: what is there now
    stashed: List[Dict[str, Any]] = list(record.get("stashed") or ())
    touched: Set[str] = {n for n in set(before) | set(after) if before.get(n) != after.get(n)}
    touched |= {canonical(s["name"]) for s in stashed}
    # Since the step: what the user changed on the same names is theirs, and undo would overwrite
    # it; unless an undo of this step already began (interrupted): those changes are its own.
    since = {n for n in set(after) | set(now) if after.get(n) != now.get(n)}
    clash = sorted(touched & since)
    if record.get("undoing"):
        since -= touched
    elif clash:
        raise FixError("cannot undo step %d: changed since the fix: %s" % (
            step.number, "; ".join(stash.listing_changes({n: after[n] for n in clash if n in after},
                                                          {n: now[n] for n in clash if n in now}))))
    record["undoing"] = True
    step.save()
    remove = sorted(n for n in touched if n in now)
    if remove:
        run = PipRun(("uninstall", "-y", *remove))
        installer = str(record.get("installer") or PIP_INSTALLER)
        uv = find_uv() if installer == UV else "uv"
        if uv is None:
            raise FixError("cannot undo step %d: it ran with uv, and uv is not on PATH here" % step.number)
        proc = _run_pip(python, run, (), installer, uv)
        if proc.returncode != 0:
            raise FixError("cannot undo step %d: `%s uninstall` failed: %s" % (step.number, _tool(installer),
                                                                            _last_error(proc.stderr + proc.stdout, (), installer)))
    for entry in stashed:
        stash.restore(entry, step.dir / "stash" / entry["folder"])
    final = stash.listing(python)
    differs = stash.listing_changes({n: v for n, v in before.items() if n not in since},
                                    {n: v for n, v in final.items() if n not in since})
    if differs:
        raise FixError("undo of step %d left the environment different from before: %s" % (step.number, "; ".join(differs)))
