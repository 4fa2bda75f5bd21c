"""Choosing among remedies: the least invasive one that applies here, --prefer, and one step
for the findings that chose the same remedy. Pure rules, on the remedies the checks'
rules really return for recorded facts."""

from __future__ import annotations

from typing import Optional

from conftest import load_fixture

from envdoctor.pipeline.fix.choose import actionable, choose, merge_actions, prefer_matches, rank
from envdoctor.pipeline.fix.kinds.config import edit_action
from envdoctor.pipeline.fix.plan import _steps
from envdoctor.target.model import Finding, Remedy, Severity, report_from_dict


def seed_004_findings() -> list[Finding]:
    """autotrain SDXL DreamBooth `mixed_precision: fp16` on torch 2.0.1 (CPU): library-probes' errors."""
    report = report_from_dict(load_fixture("library-probes-autotrain-sdxl-fp16-torch-2.0.1.json"))
    return actionable(report.findings)


def remedy(rid: str, kind: str, **action: object) -> Remedy:
    return Remedy(summary=rid, kind=kind, id=rid, action=dict(action))


FP32 = remedy("precision-fp32", "config", set={"precision": "fp32"}, when={"device": "cpu", "precision": "fp16"})
BF16 = remedy("precision-bf16", "config", set={"precision": "bf16"}, when={"device": "cpu", "precision": "fp16"})
GPU = remedy("use-gpu", "manual")
TORCH = remedy("torch-upgrade", "pip", upgrade=["torch"])
APEX = remedy("apex-uninstall", "pip", uninstall=["apex"])
ENV = remedy("ld-library-path", "env", unset_env=["LD_LIBRARY_PATH"])


def finding(*remedies: Remedy, check: str = "cpu-half-kernels", code: str = "fp16-missing") -> Finding:
    return Finding(check, code, Severity.ERROR, "t", remedies=remedies)


def test_kinds_rank_config_env_package_torch_manual() -> None:
    assert [rank(r) for r in (FP32, ENV, APEX, TORCH, GPU)] == sorted(rank(r) for r in (FP32, ENV, APEX, TORCH, GPU))
    assert rank(TORCH) > rank(APEX)  # torch itself only when nothing less invasive applies


def test_least_invasive_first_whatever_the_rules_order() -> None:
    (choice,) = choose([finding(GPU, TORCH, FP32)])
    assert choice.chosen is FP32
    assert [r.id for r in choice.alternatives] == ["use-gpu", "torch-upgrade"]


def test_a_remedy_that_cannot_apply_is_passed_over_with_its_reason() -> None:
    def no_config(r: Remedy) -> Optional[str]:
        return "no training config given" if r.kind == "config" else None

    (choice,) = choose([finding(FP32, GPU, TORCH)], applicable=no_config)
    assert choice.chosen is TORCH
    assert [(r.id, why) for r, why in choice.passed_over] == [("precision-fp32", "no training config given")]


def test_manual_steps_are_never_chosen() -> None:
    (choice,) = choose([finding(GPU)])
    assert choice.chosen is None


def test_prefer_picks_another_and_accepts_the_words_people_type() -> None:
    (choice,) = choose([finding(FP32, GPU, TORCH)], prefer=["upgrade-torch"])
    assert choice.chosen is TORCH and choice.preferred
    (choice,) = choose([finding(BF16, FP32)], prefer=["fp32"])
    assert choice.chosen is FP32
    assert prefer_matches("apex-uninstall", "uninstall-apex")
    assert prefer_matches("apex-build-from-source", "rebuild-apex")
    assert not prefer_matches("precision-fp32", "fp16")


def test_prefer_that_does_not_apply_falls_back_to_the_default() -> None:
    def torch_offline(r: Remedy) -> Optional[str]:
        return "offline" if r.id == "torch-upgrade" else None

    (choice,) = choose([finding(FP32, TORCH)], prefer=["torch-upgrade"], applicable=torch_offline)
    assert choice.chosen is FP32 and not choice.preferred
    assert choice.passed_over[0][1] == "offline"


def test_the_remedy_most_findings_offer_wins_among_equals() -> None:
    """Seed 004 on torch 2.0.1: library-probes offers bf16 then fp32, cpu-half-kernels only
    fp32; both are config edits of the same token, so fp32 answers all of them at once."""
    models = seed_004_findings()
    assert models and all(r.id for f in models for r in f.remedies)
    kernels = finding(FP32, GPU, TORCH)
    choices = choose([kernels, *models])
    assert {c.chosen.id for c in choices if c.chosen} == {"precision-fp32"}
    steps = _steps(choices)
    assert [s.remedy.id for s in steps] == ["precision-fp32"]
    (step,) = steps
    assert [f.check for f in step.findings] == ["cpu-half-kernels"] + ["library-probes"] * len(models)
    # the merged action sets what every finding asked: the precision and the weights it casts
    assert step.remedy.action["set"] == {"precision": "fp32", "weight_dtype": "fp32"}
    assert {r.id for r in step.alternatives} >= {"precision-bf16", "use-gpu", "torch-upgrade"}


def test_merge_refuses_disagreeing_values() -> None:
    assert merge_actions([FP32, remedy("precision-fp32", "config", set={"precision": "bf16"})]) is None
    assert merge_actions([APEX, APEX]) == APEX


def test_a_config_edit_keeps_only_the_values_it_replaces() -> None:
    """The device the run is on was judged by the rule on live facts; the edit filters by
    the values it replaces."""
    assert edit_action(FP32.action) == {"set": {"precision": "fp32"}, "when": {"precision": "fp16"}}
    assert edit_action(remedy("device-cuda", "config", set={"device": "cuda"}, when={"device": "cpu"}).action) == {
        "set": {"device": "cuda"}, "when": {"device": "cpu"}}


def test_manual_only_findings_become_manual_steps_after_the_others() -> None:
    steps = _steps(choose([finding(GPU, check="torch-install", code="config-device-missing"), finding(APEX, check="apex", code="apex-impostor")]))
    assert [(s.number, s.kind, s.remedy.id) for s in steps] == [(1, "pip", "apex-uninstall"), (2, "manual", "use-gpu")]


def test_info_findings_are_not_fixed() -> None:
    info = Finding("fp8", "float8-promotion", Severity.INFO, "t", remedies=(TORCH,))
    assert actionable([info]) == []


def test_only_edits_of_the_same_config_file_build_on_each_other() -> None:
    """A step that fails takes with it the later edits of its file (their backups hold its text); a pip
    step and an edit of another file stand on their own."""
    from types import SimpleNamespace

    from envdoctor.pipeline.fix.apply import _with_dependents, builds_on
    from envdoctor.pipeline.fix.plan import Step

    def step(number: int, kind: str, *paths: str) -> Step:
        action = SimpleNamespace(files=[SimpleNamespace(path=p) for p in paths]) if kind == "config" else SimpleNamespace()
        return Step(number=number, kind=kind, remedy=FP32, findings=[], action=action)  # type: ignore[arg-type]

    steps = [step(1, "config", "/a/train.yaml"), step(2, "config", "/a/train.yaml", "/a/accelerate.yaml"),
             step(3, "pip"), step(4, "config", "/a/accelerate.yaml"), step(5, "config", "/a/other.toml")]
    later = builds_on(steps)
    assert later == {1: [2], 2: [4], 3: [], 4: [], 5: []}
    assert _with_dependents([1], later) == [1, 2, 4]
    assert _with_dependents([3, 5], later) == [3, 5]
