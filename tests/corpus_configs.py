"""The real config corpus (tests/data/configs, INDEX.json) planned by `fix` under recorded
machines, and scored: what the corpus test (tests/test_config_corpus.py) runs.

Each scenario is a machine's recorded facts (tests/fixtures) judged by the real rules with the
config's intent; the plan is made, closed over its own edits (fix's `close_over`, with the
scenario's rules as the check of the planned texts), and the configs as the plan leaves them
are read back and held to what the machine measured."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

from conftest import env_of, facts_of, handwritten, load_fixture

from envdoctor.configs.detect import read_configs
from envdoctor.pipeline.check.judge import judge
from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.check.runner import ProbeOutcome
from envdoctor.pipeline.fix.plan import Plan, close_over, make_plan
from envdoctor.target.intent import Intent
from envdoctor.target.model import Gpu, Report, Target

CORPUS = Path(__file__).resolve().parent / "data" / "configs"
INDEX: List[Dict[str, Any]] = json.loads((CORPUS / "INDEX.json").read_text(encoding="utf-8"))
LOADED = {c.check.id: c for c in load_checks(plugins=False)[0]}


@dataclass(frozen=True)
class Scenario:
    """A recorded machine: each check's facts, and the target they were recorded on."""

    name: str
    facts: Dict[str, Dict[str, Any]]
    target: Target
    # what the configs, as the plan leaves them, must hold there: a list of what is still wrong
    judge_planned: Callable[[Intent, Intent], List[str]] = field(compare=False, default=lambda before, after: [])


def report_for(scenario: Scenario, intent: Intent) -> Report:
    target = dataclasses.replace(scenario.target, intent=intent)
    results = [judge(LOADED[cid], ProbeOutcome(cid, "done", facts), target) for cid, facts in scenario.facts.items()]
    return Report(environment=target.to_dict(), checks=results)


def _dtype_keys(intent: Intent, *values: str) -> Dict[tuple, Any]:
    return {(s.file, s.key, s.part, s.name): s.value for s in intent.settings
            if s.name in ("precision", "weight_dtype") and s.value in values and not s.default}


def _kept(before: Intent, after: Intent, *values: str) -> List[str]:
    """Settings the measurement did not condemn, changed all the same."""
    now = {(s.file, s.key, s.part, s.name): s.value for s in after.settings}
    return ["changed %s %s (%s) that this machine runs" % (k[3], k[1], v) for k, v in _dtype_keys(before, *values).items()
            if k in now and now[k] != v]


def cpu_without_fp16(before: Intent, after: Intent) -> List[str]:
    """torch 2.0.1 on this CPU: no fp16 kernels (measured), bf16 and fp32 run; no GPU; no
    float8 dtypes. (bitsandbytes bases are not judged: no bitsandbytes was measured here.)"""
    wrong = ["still %s" % s.where() for s in after.asks_dtype("fp16", bf16_gpu=False) + after.asks("weight_dtype", "fp8")]
    if after.runs_on(()) != "cpu":
        wrong.append("still on %s" % after.runs_on(()))
    return wrong + _kept(before, after, "bf16", "fp32")


def t4(before: Intent, after: Intent) -> List[str]:
    """A Tesla T4: fp16 runs, bf16 only emulated (slow), no fp8 matmul; the CPU beside it."""
    # bf16 *compute* is what is slow there; bf16 weights are only stored and cast to the compute dtype
    wrong = ["still %s" % s.where() for s in after.asks("precision", "bf16", "fp8")]
    wrong += ["still %s, bf16 there" % s.where() for s in after.asks("precision", "auto") if s.tool != "axolotl"]
    if after.runs_on(("cuda:0",)) == "cpu":
        wrong.append("still trains on the CPU beside the GPU")
    return wrong + _kept(before, after, "fp16", "fp32")


def _scenarios() -> Dict[str, Scenario]:
    old = load_fixture("cpu-torch-2.0.1.json")
    cpu_old = Scenario("cpu-torch-2.0.1", {c["id"]: c["facts"] for c in old["checks"]}, env_of(old), cpu_without_fp16)
    new = load_fixture("cpu-torch-2.13.0.json")
    # A T4 beside this machine's recorded CPU facts: the GPU's own from hand-written snapshots,
    # since no GPU can be here (tests/fixtures/handwritten/bf16-t4-emulated.json)
    gpu = {"id": "cuda:0", "type": "cuda", "name": "Tesla T4", "capability": "7.5"}
    torch_install = dict(facts_of(new, "torch-install"), devices=list(facts_of(new, "torch-install")["devices"]) + [gpu])
    fp8 = dict(facts_of(new, "fp8"), devices=list(facts_of(new, "fp8")["devices"]) + [dict(gpu, fp8_matmul_hardware=False)])
    facts = {"torch-install": torch_install, "cpu-half-kernels": dict(facts_of(new, "cpu-half-kernels"), accelerators=["cuda:0"]),
             "fp8": fp8, "bf16-support": handwritten("bf16-t4-emulated.json")}
    target = dataclasses.replace(env_of(new), devices=("cpu", "cuda:0"), gpus=(Gpu("Tesla T4", "cuda:0", "7.5", bf16=False),))
    return {s.name: s for s in (cpu_old, Scenario("t4-torch-2.13.0", facts, target, t4))}


SCENARIOS = _scenarios()


@dataclass
class Planned:
    """One config under one scenario: the plan, the texts it leaves, and what is still wrong."""

    entry: Dict[str, Any]
    plan: Plan
    texts: Mapping[str, str]
    wrong: List[str]

    @property
    def fixed(self) -> bool:
        return not self.wrong


def plan_config(entry: Dict[str, Any], scenario: Scenario) -> Planned:
    path = str(CORPUS / entry["file"])
    before = read_configs([path])
    plan = make_plan(report_for(scenario, before))
    close_over(plan, lambda texts: report_for(scenario, read_configs([path], texts)))
    texts = plan.planned_texts()
    after = read_configs([path], texts)
    return Planned(entry, plan, texts, scenario.judge_planned(before, after))


def training_configs(split: Optional[str] = None) -> List[Dict[str, Any]]:
    """The corpus's training configs (not kohya's dataset-only TOMLs), of one split or all."""
    return [e for e in INDEX if not e.get("dataset_only") and (split is None or e["split"] == split)]
