"""The traceback corpus in tests/data/tracebacks/: real logs from public threads, each with
its source and the check id it should be explained as (`none` for causes not ours)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List

CORPUS = Path(__file__).parent / "data" / "tracebacks"
SEPARATOR = "----"

# Lines of data, not words (base64, minified JSON, a path repeated), each 4,000 characters long (the reader's longest):
# what no error in a log looks like at its worst for the matcher, which reads them all as messages pasted alone
# (tests/test_explain.py; benchmarks/run.py times it: an unbounded `\\w+` before a fixed word is quadratic on them)
JUNK = ["WARN " + "a/" * 1995, "x" * 4000, "/" * 4000, "a b " * 1000, ("lora fp8 " * 450)[:4000], "\\" * 4000,
        "Error: " + "x" * 3993, "nan " * 1000, "a." * 2000, "A" * 4000]


@dataclass(frozen=True)
class Case:
    name: str
    header: Dict[str, str]
    body: str
    also: List[str] = field(default_factory=list)

    @property
    def expect(self) -> str:
        return self.header["expect"]

    @property
    def seed(self) -> bool:
        return "seed" in self.header


def load(path: Path) -> Case:
    text = path.read_text(encoding="utf-8")
    head, _, body = text.partition("\n%s\n" % SEPARATOR)
    header: Dict[str, str] = {}
    also: List[str] = []
    for line in head.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "also":
            also.extend(v.strip() for v in value.split(","))
        else:
            header[key.strip()] = value.strip()
    return Case(path.stem, header, body, also)


def cases() -> List[Case]:
    return [load(p) for p in sorted(CORPUS.glob("*.txt"))]


def held_out(source: str) -> bool:
    """Whether a case of a new batch is held out: 2 in 5 by its address's sha256, the rule every dev-N/holdout-N split
    was made by (tests/corpus_tool.py split)."""
    return int(hashlib.sha256(source.encode()).hexdigest(), 16) % 5 < 2
