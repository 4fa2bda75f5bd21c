"""The "env" remedy kind: environment variables a fix cannot set in the user's shell.

A child process cannot change its parent shell, so the variables are written to one file
the user sources (`source ~/.local/state/envdoctor/env.sh`), each variable once, and shown
as `export` lines. Inside a notebook kernel they are also set for the running process,
which is the one that trains. Verification runs the checks with them set.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from envdoctor.pipeline.fix.action import FixError, NotApplicable, prepared
from envdoctor.pipeline.fix.atomic import sha256, write_atomically
from envdoctor.target.model import Target
from envdoctor.target.remedies.commandline import env_commands
from envdoctor.target.remedies.kinds import ENV

if TYPE_CHECKING:
    from envdoctor.pipeline.fix.journal import JournalStep

ENV_FILE = "env.sh"
_LINE = re.compile(r"^(?:export\s+([A-Za-z_][A-Za-z0-9_]*)=|unset\s+([A-Za-z_][A-Za-z0-9_]*)\s*$)")


@dataclass
class EnvAction:
    kind = ENV.name
    set_env: Dict[str, str]
    unset_env: List[str]
    path: Path
    before: Optional[bytes] = field(default=None, repr=False)

    def variables(self) -> Dict[str, Optional[str]]:
        """What verification runs with: a value to set, or None to unset."""
        found: Dict[str, Optional[str]] = {k: None for k in self.unset_env}
        found.update(self.set_env)
        return found

    def commands(self) -> List[str]:
        """The `export` / `unset` lines, as the remedy printed them and the file holds them."""
        return list(env_commands({"set_env": self.set_env, "unset_env": self.unset_env}))

    def lines(self) -> List[str]:
        return self.commands() + ["(kept in %s: `source` it in the shell that trains)" % self.path]

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "set_env": dict(self.set_env), "unset_env": list(self.unset_env), "file": str(self.path)}

    def text_after(self, before: str) -> str:
        """The file with each of our variables' lines replaced (or added), others kept."""
        ours = set(self.set_env) | set(self.unset_env)
        kept = []
        for line in before.splitlines(keepends=True):
            match = _LINE.match(line)
            if match and (match.group(1) or match.group(2)) in ours:
                continue
            kept.append(line if line.endswith("\n") else line + "\n")
        if not kept:
            kept.append("# written by `envdoctor fix`; undo with `envdoctor undo`\n")
        return "".join(kept) + "".join(c + "\n" for c in self.commands())

    def apply(self, step: JournalStep) -> None:
        before = self.path.read_bytes() if self.path.exists() else None
        after = self.text_after(before.decode("utf-8", "replace") if before is not None else "").encode("utf-8")
        backup = None
        if before is not None:
            backup = step.dir / ENV_FILE
            backup.write_bytes(before)
        # inside a notebook the kernel's own variables change too: undo puts back these
        previous = {k: os.environ.get(k) for k in self.variables()} if in_notebook() else None
        step.record.update({"file": str(self.path), "backup": backup.name if backup else None,
                            "after_sha256": sha256(after), "variables": self.variables(), "process_before": previous})
        step.save()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self.path, after)
        except OSError as exc:
            raise FixError("cannot write %s: %s" % (self.path, exc.strerror or exc)) from None
        if in_notebook():
            set_variables(self.variables())

    def confirm(self) -> None:
        text = self.path.read_text(encoding="utf-8") if self.path.exists() else ""
        missing = [c for c in self.commands() if c not in text.splitlines()]
        if missing:
            raise FixError("%s does not hold %s" % (self.path, "; ".join(missing)))


def prepare(action: Mapping[str, Any], path: Optional[Path] = None) -> EnvAction:
    if path is None:
        from envdoctor.pipeline.fix.journal import state_dir

        path = state_dir() / ENV_FILE
    return EnvAction(set_env={k: str(v) for k, v in (action.get("set_env") or {}).items()},
                     unset_env=list(action.get("unset_env") or ()), path=path)


def prepare_steps(actions: Sequence[Mapping[str, Any]], target: Target) -> List[Union[EnvAction, NotApplicable]]:
    """The plan's env steps: the variables, for the file the user sources."""
    return [prepared(functools.partial(prepare, action)) for action in actions]


def undo(step: JournalStep) -> None:
    record = step.record
    if not record.get("file"):
        return  # the step stopped before it recorded anything: nothing was written
    path = Path(record["file"])
    current = path.read_bytes() if path.exists() else None
    backup = step.dir / record["backup"] if record.get("backup") else None
    before = backup.read_bytes() if backup is not None else None
    if current == before:
        pass
    elif current is not None and sha256(current) != record.get("after_sha256"):
        raise FixError("%s was changed after the fix; not restoring it (the earlier file is kept at %s)" % (path, backup or "nowhere: it did not exist"))
    elif before is None:
        path.unlink()
    else:
        write_atomically(path, before)
    if record.get("process_before") is not None and in_notebook():
        set_variables(record["process_before"])


def in_notebook() -> bool:
    """Inside a Jupyter/Colab kernel, the process that trains is this one."""
    from envdoctor.target.platform.where import in_kernel

    return in_kernel()


def set_variables(variables: Mapping[str, Optional[str]]) -> None:
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
