"""Remedies are data for `envdoctor fix`: every remedy any check produces, on every
recorded and hand-written snapshot, speaks the closed action vocabulary of its kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Tuple

import pytest
from conftest import judge, FIXTURES

from envdoctor.model import ACTION_KEYS, Finding
from envdoctor.registry import load_checks

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
PREFIXES = sorted(CHECKS, key=len, reverse=True) + ["bf16"]


def _snapshots() -> Iterator[Tuple[str, str, dict]]:
    for path in sorted(FIXTURES.rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(FIXTURES))
        if "checks" in data:  # a recorded report
            for check in data["checks"]:
                if check["id"] in CHECKS and check["status"] not in ("skipped", "crashed", "timeout"):
                    yield name, check["id"], check["facts"]
        else:  # handwritten/<check-id>-<case>.json
            prefix = next(p for p in PREFIXES if Path(name).name.startswith(p))
            yield name, "bf16-support" if prefix == "bf16" else prefix, data["facts"]


FINDINGS = [(name, check_id, f) for name, check_id, facts in _snapshots() for f in judge(CHECKS[check_id], facts)]


def test_the_snapshots_produce_remedies_of_every_kind() -> None:
    kinds = {r.kind for _, _, f in FINDINGS for r in f.remedies}
    assert kinds == set(ACTION_KEYS)


@pytest.mark.parametrize(("name", "check_id", "finding"), FINDINGS, ids=[f"{n}:{f.code}" for n, _, f in FINDINGS])
def test_every_remedy_speaks_the_vocabulary(name: str, check_id: str, finding: Finding) -> None:
    assert finding.check in (check_id, "device-memory")  # cublas files OOM under device-memory (DESIGN.md)
    for remedy in finding.remedies:
        assert remedy.kind in ACTION_KEYS, remedy
        assert set(remedy.action) <= set(ACTION_KEYS[remedy.kind]), (remedy.id, remedy.action)
        assert remedy.summary
        if remedy.kind == "pip":
            assert remedy.commands and all(" -m pip " in c for c in remedy.commands if "pip" in c), remedy
            assert not any(c.rstrip().endswith("install apex") or "install --upgrade apex" in c for c in remedy.commands)
