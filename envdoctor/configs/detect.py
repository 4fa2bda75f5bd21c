"""Which parser and which tool a config file is: from its content, the extension only
ordering the guesses (accelerate writes JSON into `default_config.yaml`)."""

from __future__ import annotations

import importlib
import os
import re
from typing import List, Mapping, Optional, Tuple

from envdoctor.configs.document import ConfigError, Document, read_text
from envdoctor.configs.reading import Format
from envdoctor.target.intent import ConfigSource, Intent, merge

# syntax -> module with `parse(file, text) -> Document` (raises ConfigError)
PARSERS = {
    "json": "envdoctor.configs.parse_json",
    "yaml": "envdoctor.configs.parse_yaml",
    "toml": "envdoctor.configs.parse_toml",
    "shell": "envdoctor.configs.parse_shell",
}
# modules with `FORMATS: Tuple[Format, ...]`
FORMAT_MODULES = (
    "envdoctor.configs.onetrainer",
    "envdoctor.configs.kohya",
    "envdoctor.configs.accelerate",
    "envdoctor.configs.autotrain",
    "envdoctor.configs.axolotl",
    "envdoctor.configs.launch",
)
_TOML_TABLE = re.compile(r"\[\[?[ \t]*[A-Za-z0-9_.-]+[ \t]*\]\]?[ \t]*(?:#.*)?\r?$")
_BY_EXTENSION = {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".sh": "shell", ".bash": "shell", ".txt": "shell"}


def formats() -> List[Format]:
    return [f for name in FORMAT_MODULES for f in importlib.import_module(name).FORMATS]


def syntax_order(path: str, text: str) -> List[str]:
    """The parsers to try, most likely first."""
    first_line = text.lstrip("\ufeff \t\r\n").split("\n", 1)[0]
    head = first_line[:1]
    guesses: List[str] = []
    by_ext = _BY_EXTENSION.get(os.path.splitext(path)[1].lower())
    if head == "[" and (by_ext == "toml" or _TOML_TABLE.match(first_line)):  # TOML files often start with a [table]
        guesses.append("toml")
    if head and head in "{[":
        guesses.append("json")
    if by_ext:
        guesses.append(by_ext)
    if _looks_like_launch_line(text):
        guesses.append("shell")
    guesses += ["yaml", "toml", "json"]
    return list(dict.fromkeys(guesses))


def _looks_like_launch_line(text: str) -> bool:
    """A launcher among the first words of a line: scripts `export` and `cd` before it,
    notebooks write `!accelerate launch`, `CUDA_VISIBLE_DEVICES=0 torchrun ...`."""
    for line in text.splitlines():
        words = [w.lstrip("!") for w in line.split()[:3]]
        if words and not words[0].startswith("#") and any(w in _LAUNCHERS or w.endswith(".py") for w in words):
            return True
    return False


_LAUNCHERS = ("accelerate", "accelerate-launch", "torchrun", "python", "python3", "autotrain")


def recognise(doc: Document) -> Tuple[int, Optional[Format]]:
    scored = [(f.recognise(doc), f) for f in formats() if doc.syntax in f.syntaxes]
    best = max(scored, key=lambda item: item[0], default=(0, None))
    return best if best[0] > 0 else (0, None)


def read_config(path: str, text: Optional[str] = None) -> Intent:
    """One file's intent (from `text` when given: the file as a plan would leave it). Each
    parser that reads the text is asked which tool wrote it; a file no parser reads gets the
    error of the most likely parser (with its line)."""
    planned = text
    text = read_text(path) if planned is None else planned
    likely_error: Optional[ConfigError] = None
    for index, syntax in enumerate(syntax_order(path, text)):
        parser = importlib.import_module(PARSERS[syntax])
        try:
            doc = parser.parse(path, text)
        except ConfigError as exc:
            likely_error = exc if index == 0 else likely_error
            continue
        _score, fmt = recognise(doc)
        if fmt is not None:
            return Intent(sources=(ConfigSource(path, fmt.tool, doc.syntax, fmt.label(doc), planned),), settings=tuple(fmt.read(doc)))
    if likely_error is not None:  # e.g. a TOML file with a duplicate key also "parses" as one YAML string
        raise likely_error
    raise ConfigError(path, "unknown layout: not a config of OneTrainer, autotrain-advanced, kohya, accelerate or axolotl, "
                            "nor an `accelerate launch` line")


def read_configs(paths: List[str], texts: Optional[Mapping[str, str]] = None) -> Intent:
    """The files' intent; a file in `texts` is read from there instead of the disk."""
    return merge([read_config(p, (texts or {}).get(p)) for p in paths])
