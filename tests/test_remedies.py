"""Remedies are actions first, for `envdoctor fix`: every remedy any check produces, on
every recorded and hand-written snapshot, speaks the closed action vocabulary of its
kind, and its commands are exactly what envdoctor.target.remedies.commandline builds from that action."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Tuple

import pytest
from conftest import FIXTURES, env_for, env_of

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.model import Finding, Target
from envdoctor.target.remedies.kinds import KINDS, commands_for
from envdoctor.target.versions import requirement_name

CHECKS = {c.check.id: c.check for c in load_checks(plugins=False)[0]}
PREFIXES = sorted(CHECKS, key=len, reverse=True) + ["bf16"]


def _snapshots() -> Iterator[Tuple[str, str, dict, Target]]:
    for path in sorted(FIXTURES.rglob("*.json")):
        if "measurements" in path.parts:  # measured beside a snapshot, no report (tests/fixtures/README.md)
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        name = str(path.relative_to(FIXTURES))
        if "checks" in data:  # a recorded report
            for check in data["checks"]:
                if check["id"] in CHECKS and check["status"] not in ("skipped", "crashed", "timeout"):
                    yield name, check["id"], check["facts"], env_of(data)
        else:  # handwritten/<check-id>-<case>.json
            prefix = next(p for p in PREFIXES if Path(name).name.startswith(p))
            yield name, "bf16-support" if prefix == "bf16" else prefix, data["facts"], env_for(data["facts"])


FINDINGS = [(name, check_id, f, env) for name, check_id, facts, env in _snapshots() for f in CHECKS[check_id].judge(facts, env)]


def test_the_snapshots_produce_remedies_of_every_kind() -> None:
    kinds = {r.kind for _, _, f, _ in FINDINGS for r in f.remedies}
    assert kinds == set(KINDS)


@pytest.mark.parametrize(("name", "check_id", "finding", "env"), FINDINGS, ids=[f"{n}:{f.code}" for n, _, f, _ in FINDINGS])
def test_every_remedy_is_an_action_and_its_commands_are_built_from_it(name: str, check_id: str, finding: Finding, env: Target) -> None:
    assert finding.check == check_id
    for remedy in finding.remedies:
        assert remedy.kind in KINDS, remedy
        assert set(remedy.action) <= set(KINDS[remedy.kind].keys), (remedy.id, remedy.action)
        assert remedy.summary
        if remedy.kind in ("pip", "env", "config"):
            assert remedy.action, remedy  # fix executes the action: one is required
            assert remedy.commands == commands_for(remedy.kind, remedy.action, env.python, env.installer), remedy
        for key in ("install", "upgrade", "uninstall", "constraints", "unset_env", "reduce"):
            assert isinstance(remedy.action.get(key, []), list), (remedy.id, key)
        for key in ("force_reinstall", "no_deps", "no_build_isolation", "no_cache"):
            assert remedy.action.get(key, True) is True, (remedy.id, key)  # a flag is present and true, or absent
        if remedy.kind == "pip":
            assert remedy.commands and all(c.split(" -m pip ")[0].endswith(env.python) for c in remedy.commands), remedy
            assert not any(c.rstrip().endswith("install apex") or "install --upgrade apex" in c for c in remedy.commands)
            installs = remedy.action.get("install", []) + remedy.action.get("upgrade", [])
            if env.torch and installs and "torch" not in {requirement_name(r) for r in installs} and not remedy.action.get("no_deps"):
                assert remedy.action.get("constraints") == ["torch==%s" % env.torch], remedy  # torch is pinned


# One action, told two ways on purpose: the same id, so that the live finding's exact command replaces either.
TOLD_TWO_WAYS = {
    ("apex", "apex-uninstall"): "the PyPI impostor, and NVIDIA apex under transformers' T5 norm swap",
    ("distributed", "nccl-p2p-disable"): "peer-to-peer off as the test that confirms a transport fault, and as the fix",
}


def test_each_explain_remedy_of_a_check_has_one_wording() -> None:
    """A remedy id names one action: within one check's signatures it is written once (a constant) and called, so
    that explain never tells the same step in two wordings, except the pairs above."""
    for check in CHECKS.values():
        wordings: dict = {}
        for signature in check.signatures:
            for remedy in signature.remedies:
                wordings.setdefault(remedy.id, set()).add(remedy.summary)
        told_twice = {rid for rid, summaries in wordings.items() if len(summaries) > 1}
        assert told_twice == {rid for cid, rid in TOLD_TWO_WAYS if cid == check.id}, (check.id, told_twice)
