"""Remedy kind "config": a Remedy's action ({"set": {"precision": "fp32"}, "when": {...}})
becomes edits at the spans the intent located, in each tool's own spelling (its reader's
Format.write), proven by re-parsing the text, backed up before and undone from the journal.

Each action is prepared against the text the earlier ones leave (per file), so several
steps on one file apply in order and undo in reverse order byte for byte. Files are bytes
decoded as UTF-8 with their line ends as they are (document.read_text).
"""

from __future__ import annotations

import difflib
import importlib
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from envdoctor.configs.detect import PARSERS, formats, read_config, recognise
from envdoctor.configs.document import ConfigError, Document, line_column, read_text
from envdoctor.configs.edit import Edit, EditError, apply_edits, edits_for, expected_tree
from envdoctor.configs.reading import Change, Format, Unwritable
from envdoctor.pipeline.fix.action import FixError, NotApplicable
from envdoctor.pipeline.fix.atomic import sha256, write_atomically
from envdoctor.target.intent import PART_NAMES, ConfigSource, Intent, Setting, resolve_auto
from envdoctor.target.model import Target
from envdoctor.target.redact import Redactor
from envdoctor.target.remedies.kinds import CONFIG

if TYPE_CHECKING:
    from envdoctor.pipeline.fix.journal import JournalStep

KIND = CONFIG.name
NO_CONFIG = "no training config given: pass --config FILE"
# The values a config action may set, per setting (intent.py's vocabulary); others are not envdoctor's to write.
SETTABLE: Dict[str, Tuple[Any, ...]] = {
    "precision": ("fp32", "fp16", "bf16", "fp8"),
    "weight_dtype": ("fp32", "fp16", "bf16"),
    "dora": (True, False),
    "device": ("cpu", "cuda", "mps"),  # and "cuda:N"
}


# ---------------------------------------------------------------- resolution (pure)

def current(setting: Setting, bf16_gpu: bool) -> Any:
    """A setting's value as the run will see it: an "auto" precision is what it resolves to."""
    if setting.name == "precision" and setting.value == "auto":
        return resolve_auto(setting, bf16_gpu)
    return setting.value


def same(name: str, have: Any, want: Any) -> bool:
    """Values equal for `name`; a device "cuda:0" is the config's "cuda" (and the reverse)."""
    if name == "device" and isinstance(have, str) and isinstance(want, str) and have != want:
        return "cuda" in (have, want) and have.split(":")[0] == want.split(":")[0] == "cuda"
    return bool(type(have) is type(want) and have == want)


def settable(name: str, value: Any) -> bool:
    if name == "device":
        return value in SETTABLE["device"] or (isinstance(value, str) and value.startswith("cuda:") and value[5:].isdigit())
    return name in SETTABLE and any(same(name, value, v) for v in SETTABLE[name])


def condition_holds(intent: Intent, name: str, want: Any, bf16_gpu: bool) -> bool:
    """A `when` key that the action does not set: the intent's effective value. A device the
    config leaves to the launcher ("auto", or unsaid) is whatever the check found there."""
    if name == "device":
        device = intent.value("device")
        return device in (None, "auto") or same("device", device, want)
    if name in PART_NAMES:
        return any(same(name, intent.value(name, part), want) for part in intent.parts())
    effective = intent.effective(name)
    return effective is not None and same(name, current(effective, bf16_gpu), want)


def select(intent: Intent, settings: Mapping[str, Any], when: Mapping[str, Any], parts: Optional[Sequence[str]],
           bf16_gpu: bool) -> List[Tuple[Setting, Any]]:
    """The settings to edit, each with its new value. A name in `when` too edits only the
    settings that now have that value; else every one that differs. Written settings are
    edited in every file that says them; a tool default only when it is the value in effect
    (the key is then added). `parts` limits per-part names (weight_dtype) to those parts."""
    chosen: List[Tuple[Setting, Any]] = []
    for name, target in settings.items():
        for found in intent.all(name):
            if parts is not None and name in PART_NAMES and found.part not in parts:
                continue
            have = current(found, bf16_gpu)
            if name in when and not same(name, have, when[name]):
                continue
            if same(name, have, target):
                continue
            if found.default and intent.effective(name, found.part) is not found:
                continue
            chosen.append((found, target))
    return chosen


def refusal(action: Mapping[str, Any]) -> Optional[str]:
    """Why an action is not one this kind can carry out, or None."""
    if action.get("reduce"):
        return "envdoctor does not lower %s in a config: change it by hand" % ", ".join(map(str, action["reduce"]))
    settings = action.get("set") or {}
    if not settings:
        return "the remedy names no setting to change"
    for name, value in settings.items():
        if not settable(name, value):
            return "envdoctor cannot set %s to %r in a config file: change it by hand" % (name, value)
    parts = action.get("parts")
    if parts is not None and not (isinstance(parts, (list, tuple)) and all(isinstance(p, str) for p in parts)):
        return "the remedy's parts are not a list of model parts"
    return None


# ---------------------------------------------------------------- the prepared change

@dataclass(frozen=True)
class FileEdit:
    """One file's part of a step: its text before and after, and what was meant."""

    file: str  # as the user gave it
    path: str  # absolute: undo may run from another folder
    tool: str
    syntax: str
    before: str
    after: str
    edits: Tuple[Edit, ...]
    changes: Tuple[Change, ...]
    selected: Tuple[Tuple[Setting, Any], ...]  # the settings this fixes, with their new values

    def diff(self) -> List[str]:
        """The edit as a unified diff, for people: its context lines are the user's config, so a
        secret beside the edited line (a hub token, a W&B key) is masked; the backups keep the bytes."""
        redactor = Redactor.from_environ()
        lines = difflib.unified_diff(self.before.splitlines(), self.after.splitlines(), self.file, self.file, lineterm="")
        return [redactor.text(line) for line in lines]

    def to_dict(self) -> Dict[str, Any]:
        return {
            "file": self.file, "path": self.path, "tool": self.tool,
            "before_sha256": sha256(self.before.encode("utf-8")), "after_sha256": sha256(self.after.encode("utf-8")),
            "edits": [{"key": e.key, "line": line_column(self.before, e.start)[0], "old": e.old, "new": e.new, "sets": e.sets}
                      for e in self.edits],
            "settings": [{"name": s.name, "part": s.part, "key": s.key, "from": s.value, "to": value} for s, value in self.selected],
        }


@dataclass(frozen=True)
class ConfigAction:
    """The Action of kind "config" (envdoctor/pipeline/fix/action.py)."""

    action: Mapping[str, Any]
    files: Tuple[FileEdit, ...]
    kind: str = KIND

    def lines(self) -> List[str]:
        return [line for f in self.files for line in f.diff()]

    def to_dict(self) -> Dict[str, Any]:
        return {"kind": self.kind, "action": dict(self.action), "files": [f.to_dict() for f in self.files]}

    def apply(self, step: JournalStep) -> None:
        """Refuse unless every file is as planned and writable; back each up into step.dir and
        record it (saved) before the first byte changes; then write each atomically."""
        for f in self.files:
            data = _read_bytes(f.path)
            if data is None or sha256(data) != sha256(f.before.encode("utf-8")):
                raise FixError("%s changed since the plan was made: run `envdoctor fix` again" % f.file)
            # os.access answers yes to root for any file; a file with no write bit is read-only to envdoctor too
            if not os.access(f.path, os.W_OK) or not os.stat(f.path).st_mode & 0o222:
                raise FixError("%s is not writable: envdoctor leaves read-only files alone" % f.file)
            if not os.access(os.path.dirname(os.path.realpath(f.path)) or ".", os.W_OK | os.X_OK):
                raise FixError("%s: its folder is not writable, so it cannot be replaced safely" % f.file)
        records: List[Dict[str, Any]] = []
        for index, f in enumerate(self.files):
            backup = Path(step.dir) / ("%d-%s" % (index + 1, os.path.basename(f.path)))
            _write_atomic(str(backup), f.before.encode("utf-8"), 0o600)
            records.append({"file": f.file, "path": f.path, "backup": str(backup), "mode": os.stat(f.path).st_mode & 0o7777,
                            "before": sha256(f.before.encode("utf-8")), "after": sha256(f.after.encode("utf-8"))})
        step.record["files"] = records
        step.save()
        for f, record in zip(self.files, records):
            _write_atomic(f.path, f.after.encode("utf-8"), record["mode"])

    def confirm(self) -> None:
        """Each file re-read from disk: exactly as this step wrote it, the same tool, the
        intended settings at their new values and every other setting and key unchanged."""
        for f in self.files:
            data = _read_bytes(f.path)
            if data is None or sha256(data) != sha256(f.after.encode("utf-8")):
                raise FixError("%s is not as this step wrote it" % f.file)
            try:
                reread = read_config(f.path)
            except ConfigError as exc:
                raise FixError("%s no longer reads as a config: %s" % (f.file, exc.message)) from None
            if [(s.tool, s.syntax) for s in reread.sources] != [(f.tool, f.syntax)]:
                raise FixError("%s now reads as %s, not %s" % (f.file, ", ".join(s.label for s in reread.sources), f.tool))
            verify(f, data.decode("utf-8"))


def undo(step: JournalStep) -> None:
    """Put back each file this step changed, from its backup, when it is as the fix left it;
    a file already as it was is left; one the user changed since is refused (naming the backup)."""
    records = list(step.record.get("files") or ())
    restore = []
    for record in records:
        data = _read_bytes(record["path"])
        if data is not None and sha256(data) == record["before"]:
            continue
        if data is None or sha256(data) != record["after"]:
            raise FixError("%s was changed after envdoctor fixed it; undo leaves it as it is. The original is at %s"
                           % (record["file"], record["backup"]))
        original = _read_bytes(record["backup"])
        if original is None or sha256(original) != record["before"]:
            raise FixError("the backup of %s (%s) is missing or damaged: undo leaves the file as it is" % (record["file"], record["backup"]))
        restore.append((record, original))
    for record, original in restore:
        _write_atomic(record["path"], original, int(record.get("mode") or 0o644))


# ---------------------------------------------------------------- planning


def prepare_steps(actions: Sequence[Mapping[str, Any]], target: Target) -> List[Union[ConfigAction, NotApplicable]]:
    """The plan's config steps, together and in order: each edits the text the earlier ones leave."""
    return prepare([edit_action(a) for a in actions], target.intent, target.bf16_gpu)


def edit_action(action: Mapping[str, Any]) -> Dict[str, Any]:
    """The config action as the step edits it. A `when` key that is not being set (the device
    the run is on) was judged by the rule on the live facts; only the values to replace stay."""
    edited = dict(action)
    changes = edited.get("set") or {}
    when = {k: v for k, v in (edited.get("when") or {}).items() if k in changes}
    edited["when"] = when
    if not when:
        del edited["when"]
    return edited


def prepare(actions: Sequence[Mapping[str, Any]], intent: Optional[Intent], bf16_gpu: bool = False) -> List[Union[ConfigAction, NotApplicable]]:
    """One entry per action, in order, each against the texts the earlier ones leave."""
    if intent is None:
        return [NotApplicable(NO_CONFIG) for _ in actions]
    texts: Dict[str, str] = {}
    out: List[Union[ConfigAction, NotApplicable]] = []
    for action in actions:
        try:
            prepared = _prepare_one(action, intent.sources, texts, bf16_gpu)
        except NotApplicable as exc:
            out.append(exc)
            continue
        out.append(prepared)
        texts.update({f.file: f.after for f in prepared.files})
    return out


@dataclass(frozen=True)
class _Read:
    source: ConfigSource
    fmt: Format
    doc: Document


def _prepare_one(action: Mapping[str, Any], sources: Sequence[ConfigSource], texts: Dict[str, str], bf16_gpu: bool) -> ConfigAction:
    why = refusal(action)
    if why:
        raise NotApplicable(why)
    settings: Mapping[str, Any] = action["set"]
    when: Mapping[str, Any] = action.get("when") or {}
    parts = action.get("parts")
    read = [_read(source, texts) for source in sources]
    intent = Intent(sources=tuple(sources), settings=tuple(s for r in read for s in r.fmt.read(r.doc)))
    for name, want in when.items():
        if name not in settings and not condition_holds(intent, name, want, bf16_gpu):
            found = intent.effective(name)
            raise NotApplicable("the config's %s is %s, not %s" % (name, found.where() if found else "not set", want))
    chosen = select(intent, settings, when, parts, bf16_gpu)
    for name in settings:  # a value the action changes *from*: some file must say it (or have changed it already)
        if name in when and not any(s.name == name for s, _ in chosen) and not any(
                same(name, current(s, bf16_gpu), settings[name]) for s in intent.all(name) if not s.default):
            chosen = []
    if not chosen:
        wanted = ", ".join("%s %s" % (n, when[n]) if n in when else "%s other than %s" % (n, v) for n, v in settings.items())
        raise NotApplicable("no config file given asks for %s" % wanted)
    _refuse_shared(intent, chosen)
    files: List[FileEdit] = []
    by_file = {r.source.file: r for r in read}
    for file in dict.fromkeys(s.file for s, _ in chosen):
        files += _file_edit(by_file[file], [(s, v) for s, v in chosen if s.file == file])
    if not files:
        raise NotApplicable("the config already says %s" % ", ".join("%s %s" % kv for kv in settings.items()))
    return ConfigAction(action=dict(action), files=tuple(files))


def _read(source: ConfigSource, texts: Dict[str, str]) -> _Read:
    try:
        # the text the earlier steps leave, else the one the intent was read from, else the file's
        text = texts.get(source.file, source.text)
        text = read_text(source.file) if text is None else text
        doc = importlib.import_module(PARSERS[source.syntax]).parse(source.file, text)
    except ConfigError as exc:
        raise NotApplicable("%s cannot be read now: %s" % (source.file, exc.message)) from None
    fmt = next((f for f in formats() if f.tool == source.tool and source.syntax in f.syntaxes), None)
    if fmt is None or fmt.write is None:
        raise NotApplicable("envdoctor cannot write %s files (%s)" % (source.tool, source.file))
    return _Read(source, fmt, doc)


def _refuse_shared(intent: Intent, chosen: Sequence[Tuple[Setting, Any]]) -> None:
    """A token that also decides a part the action leaves alone (OneTrainer's top-level
    weight_dtype inherited by several parts, kohya's fp8_base for U-Net and text encoders)
    cannot be changed for one part only."""
    picked = {id(s) for s, _ in chosen}
    for found, _ in chosen:
        if found.default or found.part is None:
            continue
        others = [s for s in intent.all(found.name) if id(s) not in picked and s.part is not None and s.file == found.file
                  and (s.start, s.end) == (found.start, found.end)]
        if others:
            raise NotApplicable("%s also sets %s's %s: change that part by hand" % (found.where(), others[0].part, found.name))


def _file_edit(read: _Read, chosen: Sequence[Tuple[Setting, Any]]) -> List[FileEdit]:
    doc = read.doc
    assert read.fmt.write is not None
    changes: List[Change] = []
    edits: List[Edit] = []
    for found, value in chosen:
        try:
            made = read.fmt.write(doc, found, value)
            edits += edits_for(doc, made, sets="")
        except (Unwritable, EditError) as exc:
            raise NotApplicable("%s: %s" % (found.where(), exc)) from None
        changes += made
    try:
        after = apply_edits(doc.text, edits)
    except EditError as exc:
        raise NotApplicable(str(exc)) from None
    if after == doc.text:
        return []
    edit = FileEdit(file=read.source.file, path=os.path.abspath(read.source.file), tool=read.source.tool, syntax=read.source.syntax,
                    before=doc.text, after=after, edits=tuple(_unique(edits)), changes=tuple(changes), selected=tuple(chosen))
    try:
        verify(edit, after)
        _, fmt = recognise(importlib.import_module(PARSERS[edit.syntax]).parse(edit.file, after))
    except (FixError, ConfigError) as exc:
        raise NotApplicable("the edit of %s would not hold: %s" % (edit.file, exc)) from None
    if fmt is None or fmt.tool != edit.tool:
        raise NotApplicable("after the edit %s would no longer read as a %s config" % (edit.file, edit.tool))
    return [edit]


def _unique(edits: Sequence[Edit]) -> List[Edit]:
    out: List[Edit] = []
    for edit in edits:
        if not any((e.start, e.end, e.new) == (edit.start, edit.end, edit.new) for e in out):
            out.append(edit)
    return out


# ---------------------------------------------------------------- proof

def verify(edit: FileEdit, text: str) -> None:
    """`text` (the edited file) parsed by the syntax's parser holds exactly the planned changes
    in its tree; re-read by the tool's reader, the fixed settings have their new values and
    every setting the edits did not touch is as it was. FixError otherwise."""
    parser = importlib.import_module(PARSERS[edit.syntax])
    fmt = next(f for f in formats() if f.tool == edit.tool and edit.syntax in f.syntaxes)
    try:
        before, after = parser.parse(edit.file, edit.before), parser.parse(edit.file, text)
    except ConfigError as exc:
        raise FixError("%s does not parse after the edit: %s" % (edit.file, exc)) from None
    if after.root.plain() != expected_tree(before.root.plain(), edit.changes):
        raise FixError("%s: the edit changes more than %s" % (edit.file, ", ".join(c.key for c in edit.changes)))
    new = fmt.read(after)
    spans = [(e.start, e.end) for e in edit.edits if e.start != e.end]
    fixed = {_identity(s) for s, _ in edit.selected}
    left = Counter(_identity(s) for s in new)
    for old in fmt.read(before):
        touched = old.start is not None and old.end is not None and any(old.start < end and start < old.end for start, end in spans)
        if touched or _identity(old) in fixed:
            continue
        if left[_identity(old)] <= 0:
            raise FixError("%s: the edit would also change %s" % (edit.file, old.where()))
        left[_identity(old)] -= 1
    for found, value in edit.selected:
        now = Intent(settings=tuple(s for s in new if s.name == found.name and s.part == found.part)).effective(found.name, found.part)
        # a device left to the launcher ("auto") is the GPU wherever there is one
        reached = now is None or same(found.name, now.value, value) or (found.name == "device" and now.value == "auto" and value != "cpu")
        if not reached and now is not None:
            raise FixError("%s is %s after the edit, not %s" % (now.where(), now.value, value))


def _identity(setting: Setting) -> Tuple[Any, ...]:
    return (setting.name, setting.part, setting.key, repr(setting.value), setting.default, repr(setting.raw))


# ---------------------------------------------------------------- files

def _read_bytes(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FixError("%s cannot be read (%s)" % (path, exc.strerror or exc)) from None


def _write_atomic(path: str, data: bytes, mode: int) -> None:
    try:
        write_atomically(Path(path), data, mode)
    except OSError as exc:
        raise FixError("cannot write %s (%s)" % (path, exc.strerror or exc)) from None
