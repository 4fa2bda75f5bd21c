"""The traceback corpus in tests/data/tracebacks/: real logs from public threads, each with
its source and the check id it should be explained as (`none` for causes not ours)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List

CORPUS = Path(__file__).parent / "data" / "tracebacks"
SEPARATOR = "----"


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
