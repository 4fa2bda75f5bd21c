"""Real failures made on a lent NVIDIA H200 (torch 2.11.0+cu130, driver 580.159.04, bitsandbytes 0.50.2) by
tests/fixtures/gpu_failures.py, each explained there by `envdoctor explain --json` with its probes running on that GPU
(tests/fixtures/measurements/h200-failures/, tests/fixtures/README.md). What the GPU printed is read again here, by
today's rules; what the live probes said is what that machine said; and the probes' verdicts are judged again from the
facts the same machine recorded for every check (h200-torch-2.11.0-cu130-bitsandbytes-0.50.2.json), since the rules
that decide them are pure."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conftest import FIXTURES, load_fixture, rejudged

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.pipeline.explain.confirm import apply_verdicts
from envdoctor.pipeline.explain.match import Diagnosis, Matching, match
from envdoctor.pipeline.explain.reader import read_text

FOLDER = FIXTURES / "measurements" / "h200-failures"
CASES: List[Dict[str, Any]] = json.loads((FOLDER / "cases.json").read_text(encoding="utf-8"))
CHECKS = [c.check for c in load_checks(plugins=False)[0]]
PROBE_DECIDED = ("gradscaler-bf16-weights",)
# Readings the GPU's own probes refuted there, which later rules no longer offer: bitsandbytes' loader missing the CUDA
# runtime its library was built for is bitsandbytes', not torch's install (torch imported and ran on the H200; stop 46)
DROPPED_SINCE: Dict[str, List[Tuple[str, str]]] = {"bnb-cuda126-library-on-cuda-13-torch": [("torch-install", "torch-import-failed")]}


def matched(name: str) -> Matching:
    """What the rules read in the log the GPU printed (its diagnoses, and the supporting checks to probe)."""
    return match(read_text((FOLDER / ("%s.log" % name)).read_text(encoding="utf-8")), CHECKS)


def read(name: str) -> List[Diagnosis]:
    return list(matched(name).diagnoses)


def recorded(name: str) -> List[Dict[str, Any]]:
    report = json.loads((FOLDER / ("%s.explain.json" % name)).read_text(encoding="utf-8"))
    return list(report["diagnoses"])


def readings(diagnoses: List[Any]) -> List[Tuple[str, str]]:
    return [(d.check, d.code) if isinstance(d, Diagnosis) else (d["check"], d["code"]) for d in diagnoses]


def verdicts(name: str) -> Dict[Tuple[str, str], Optional[bool]]:
    return {(d["check"], d["code"]): d["confirmed"] for d in recorded(name)}


def test_the_cases_cover_every_family_the_gpu_can_show_and_the_code_s_own_bugs() -> None:
    """The failures a single Hopper GPU can really make, and look-alikes whose cause is the user's code (none)."""
    assert len(CASES) == 26
    assert {c["expect"] for c in CASES} == {"device-memory", "cublas", "dtype-mismatch", "fp8", "dora-fp8", "library-probes",
                                            "cuda-compat", "quantized-base", "none"}
    assert sum(c["expect"] == "none" for c in CASES) == 5
    assert [c["name"] for c in CASES if c["rc"] == 0] == ["bnb-cuda132-library-on-cuda-13-torch", "bnb-own-library"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_what_the_gpu_printed_is_read_as_its_cause(case: Dict[str, Any]) -> None:
    diagnoses = read(case["name"])
    if case["name"] in PROBE_DECIDED:  # two readings of the text: the live probe put this one first
        assert case["expect"] in [d.check for d in diagnoses]
    else:
        assert (diagnoses[0].check if diagnoses else "none") == case["expect"]
    # the live explanation was recorded with these rules: the same readings, in the order the GPU's probes left them (but
    # those its probes refuted and later rules dropped)
    dropped = DROPPED_SINCE.get(case["name"], [])
    assert all(verdicts(case["name"])[reading] is False for reading in dropped)
    assert sorted(readings(diagnoses)) == sorted(r for r in readings(recorded(case["name"])) if r not in dropped)
    live = recorded(case["name"])
    assert (live[0]["check"] if live else "none") == case["expect"]


def test_the_gpu_confirmed_what_its_probes_can_see() -> None:
    # the same op in the same dtypes fails on cuda:0 in the dtype-mismatch probe
    assert verdicts("linear-fp32-input-fp16-weight") == {("dtype-mismatch", "mixes-rejected"): True}
    assert verdicts("conv-fp32-input-fp16-weight") == {("dtype-mismatch", "mixes-rejected"): True}
    assert verdicts("fp8-plain-matmul") == {("fp8", "float8-promotion"): True}
    assert verdicts("dora-on-fp8-weight") == {("dora-fp8", "dora-float8-base"): True, ("fp8", "float8-promotion"): True}
    # the environment the program ran in: explain run with it sees what the program saw
    assert verdicts("cuda-visible-devices-empty") == {("cuda-compat", "cuda-visible-devices-hides-all"): True}
    assert verdicts("cuda-visible-devices-past-the-gpus") == {("cuda-compat", "cuda-visible-devices-hides-all"): True}
    for name in ("bnb-cuda126-library-on-cuda-13-torch", "bnb-cuda-version-without-its-library"):
        assert verdicts(name)[("quantized-base", "bnb-cuda-version-unloadable")] is True
        [first, *_] = recorded(name)
        assert first["confirmation"].startswith("confirmed here: BNB_CUDA_VERSION=")
        assert first["remedies"][0]["action"] == {"unset_env": ["BNB_CUDA_VERSION"]}


def test_a_moment_past_is_not_reproduced_and_the_code_s_cause_is_left_undecided() -> None:
    """Out of memory and a cuBLAS that could not start on a full GPU are not so when explain runs on the emptied GPU; a
    cause that lies in the code (an operand layout, a float8 variant, a model cast whole before GradScaler) is not
    refuted by probes that did not run that code."""
    for name in ("oom-one-tensor", "oom-kept-activations", "oom-under-memory-fraction"):
        assert verdicts(name) == {("device-memory", "out-of-memory"): False}
    assert verdicts("cublas-handle-on-a-full-gpu") == {("cublas", "cublas-init-failed"): False}
    for name, reading in [("fp8-scaled-mm-row-major", ("fp8", "scaled-mm-operands")),
                          ("fp8-scaled-mm-dimension-not-16", ("fp8", "scaled-mm-operands")),
                          ("fp8-scaled-mm-two-e5m2", ("fp8", "scaled-mm-operands")),
                          ("fp8-fnuz-on-nvidia", ("fp8", "float8-variant")),
                          ("sdpa-fp16-query-fp32-key", ("dtype-mismatch", "mixes-rejected")),
                          ("sdpa-flash-only-fp32", ("dtype-mismatch", "mixes-rejected")),
                          ("gradscaler-fp16-weights", ("library-probes", "fp16-grads"))]:
        assert verdicts(name) == {reading: None}, name
        assert recorded(name)[0]["confirmation"].startswith("not decided here: the cause lies in the code that ran")


def test_the_probe_decides_between_two_readings_of_gradscaler_over_bf16() -> None:
    """GradScaler's unscale kernel has no bf16 case: on a GPU without native bf16 that reads as bf16-support's, but the
    H200's bf16 is native, so its probe refutes that reading and GradScaler's goes first."""
    assert readings(recorded("gradscaler-bf16-weights")) == [("library-probes", "fp16-grads"), ("bf16-support", "bf16-unsupported")]
    assert verdicts("gradscaler-bf16-weights") == {("library-probes", "fp16-grads"): None, ("bf16-support", "bf16-unsupported"): False}
    assert "cuda:0 (9.0) bf16 native" in recorded("gradscaler-bf16-weights")[1]["confirmation"]
    # read without a probe, the text alone ranks them the other way: only the live GPU decides
    assert readings(read("gradscaler-bf16-weights"))[:2] == [("bf16-support", "bf16-unsupported"), ("library-probes", "fp16-grads")]


@pytest.mark.parametrize("name", [c["name"] for c in CASES if not c["env"] and c["expect"] != "none"])
def test_the_verdicts_follow_from_the_facts_the_gpu_recorded(name: str) -> None:
    """The explanation's probes, judged again from the every-check report the same H200 recorded: the same verdict for
    each reading as the GPU gave live (library-probes' models ran live, with their libraries; the report skipped them, and
    either way they decide nothing of GradScaler's use)."""
    matching = matched(name)
    diagnoses = matching.diagnoses
    apply_verdicts(diagnoses, rejudged(load_fixture("h200-torch-2.11.0-cu130-bitsandbytes-0.50.2.json")), matching.supporting)
    assert {(d.check, d.code): d.confirmed for d in diagnoses} == verdicts(name)
    assert readings(diagnoses) == readings(recorded(name))


def test_bitsandbytes_told_to_load_a_library_that_cannot_load_here_is_named_from_the_gpu_s_facts() -> None:
    """BNB_CUDA_VERSION under torch 2.11.0+cu130 on the H200: its CUDA 13.2 library loaded and ran 4-bit layers (the
    `bnb-cuda-version` remedy stays within torch's CUDA major release); the 12.6 one needs libcudart.so.12, and no
    13.9 library ships."""
    def of(name: str) -> Dict[str, Any]:
        report = load_fixture(name)
        return next(c for c in report["checks"] if c["id"] == "extension-abi")

    within = of("h200-bnb-cuda-version-132.json")
    bnb = next(e for e in within["facts"]["extensions"] if e["name"] == "bitsandbytes")
    assert bnb["bnb_cuda_version"] == "132" and list(bnb["cuda_archs"]) == ["libbitsandbytes_cuda132.so"]
    assert within["findings"] == []
    assert "ok (2, 64) torch.bfloat16 0.50.2" in (FOLDER / "bnb-cuda132-library-on-cuda-13-torch.log").read_text(encoding="utf-8")
    for version, words in [("126", "load its library for CUDA 12.6, but torch is built with CUDA 13.0"),
                           ("139", "load a library for CUDA 13.9 that it does not ship (libbitsandbytes_cuda139.so)")]:
        check = of("h200-bnb-cuda-version-%s.json" % version)
        report = rejudged(load_fixture("h200-bnb-cuda-version-%s.json" % version))
        [finding] = [f for r in report.checks if r.id == "extension-abi" for f in r.findings]
        assert [f["code"] for f in check["findings"]] == [finding.code] == ["bnb-cuda-version-unloadable"]
        assert words in finding.title and finding.remedies[0].action == {"unset_env": ["BNB_CUDA_VERSION"]}
    # torch's own CUDA 13 runtime loads the 13.2 library: no finding for a library within its major release
    assert within["facts"]["torch"]["cuda"] == "13.0"
    assert [f for r in rejudged(load_fixture("h200-bnb-cuda-version-132.json")).checks for f in r.findings] == []
