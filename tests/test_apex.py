"""apex: the PyPI impostor, missing or stale compiled extensions, and apex's fused norms
(FusedRMSNorm / FusedLayerNorm) on each GPU in every fp32/fp16/bf16 input × weight pair.

Rules are tested on snapshots recorded here (no apex; the real PyPI `apex` 0.9.10.dev0 in
a venv with torch 2.13.0) and on hand-written GPU snapshots
(tests/fixtures/handwritten/apex-*.json, each says what it mimics). End to end, the real
impostor is installed into throwaway venvs, with and without torch; on a machine with a
GPU and NVIDIA apex the fused-norm probe runs for real (`-m gpu`).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import IMPOSTOR_APEX, ROOT, check_of, codes, facts_of, handwritten, judge, load_fixture, make_venv, pip_install, run_envdoctor, run_json

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target.model import Finding, Remedy, Severity

CHECK = {c.check.id: c.check for c in load_checks(plugins=False)[0]}["apex"]
SEED_002 = "expected scalar type Float but found Half"
# What must never be advised: the index's `apex` is the impostor.
BAD_ADVICE = re.compile(r"pip3?\s+install\s+(-U\s+|--upgrade\s+)?(-\S+\s+)*['\"]?apex(\b|['\"=<>])", re.IGNORECASE)


def by_code(findings: List[Finding]) -> Dict[str, Finding]:
    return {f.code: f for f in findings}


def remedy_texts(findings: List[Finding]) -> List[str]:
    return [t for f in findings for r in f.remedies for t in (r.summary, *r.commands)]


def assert_never_advises_pypi_apex(findings: List[Finding]) -> None:
    for text in remedy_texts(findings):
        assert not BAD_ADVICE.search(text), text


def remedy(finding: Finding, rid: str) -> Remedy:
    found = [r for r in finding.remedies if r.id == rid]
    assert found, [r.id for r in finding.remedies]
    return found[0]


# ---- the check's declaration and module hygiene


def test_declaration() -> None:
    assert CHECK.id == "apex"
    assert CHECK.requires_torch is False  # the impostor must be found without torch
    assert CHECK.order == 60
    assert CHECK.timeout_s and CHECK.timeout_s >= 60


def test_apex_and_transformers_are_never_imported_by_statement() -> None:
    """apex is imported by name inside probe() (importlib); transformers never: its source is only read."""
    for module in sorted((ROOT / "checks" / "apex").glob("*.py")):
        source = module.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(import|from)\s+(apex|transformers)\b", source, re.MULTILINE), module.name


def test_signatures_match_the_real_messages() -> None:
    def matching(message: str, frames: Tuple[str, ...] = ()) -> List[str]:
        hits = []
        for sig in CHECK.signatures:
            if not re.search(sig.message, message):
                continue
            frame_hit = any(re.search(f, fr) for f in sig.frames for fr in frames)
            if (sig.frames_required and not frame_hit) or sig.context_required:  # (these messages come without a log around them)
                continue
            hits.append(sig.code)
        return hits

    apex_frame = ("/opt/conda/lib/python3.10/site-packages/apex/normalization/fused_layer_norm.py",)
    assert matching(SEED_002, apex_frame) == ["apex-fused-norm-fails"]
    assert matching(SEED_002, ("/x/site-packages/torch/nn/functional.py",)) == []  # torch's own dtype errors are not apex's
    assert matching("No module named 'fused_layer_norm_cuda'", apex_frame) == ["apex-no-cuda-extensions"]
    assert matching("No module named 'amp_C'") == ["apex-no-cuda-extensions"]
    assert matching("No module named 'pyramid_mailer'", ("/v/site-packages/apex/__init__.py",)) == ["apex-impostor"]
    assert matching("No module named 'velruse'") == ["apex-impostor"]
    assert matching("No module named 'cryptacular'") == ["apex-impostor"]
    assert matching("No module named 'pyramid'") == []  # a Pyramid app missing pyramid is not our business
    assert matching("No module named 'pyramid'", ("/v/site-packages/apex/__init__.py",)) == ["apex-impostor"]
    undefined = handwritten("apex-a100-undefined-symbol.json")["extensions"]
    message = next(e["import"]["error"] for e in undefined if e["name"] == "fused_layer_norm_cuda")
    assert "apex-extension-abi" in matching(message)
    assert matching("undefined symbol: _ZN3c10", ("/v/site-packages/apex/normalization/fused_layer_norm.py",)) == ["apex-extension-abi"]


# ---- real snapshots recorded on this machine


def test_recorded_snapshot_without_apex_has_no_findings() -> None:
    report = load_fixture("cpu-apex-absent-torch-2.13.0.json")
    check = check_of(report, "apex")
    facts = facts_of(report, "apex")
    assert facts["distribution"] is None and facts["package"] == {"found": False} and facts["extensions"] == []
    assert facts["ops"] == [] and facts["import"]["skipped"] == "no module named apex"
    assert judge(CHECK, facts) == []
    assert CHECK.summarize(facts) == "apex not installed" == check["summary"]
    assert check["status"] == "ok" and check["duration_s"] < 2.0


def test_recorded_impostor_snapshot() -> None:
    report = load_fixture("impostor-apex-torch-2.13.0.json")
    facts = facts_of(report, "apex")
    dist = facts["distribution"]
    assert dist["version"] == "0.9.10.dev0" and "Pyramid" in dist["summary"]
    assert "apex/lib/libapex.py" in dist["impostor_files"] and dist["compiled_files"] == []
    assert facts["package"]["contents"]["lib/libapex.py"] and not facts["package"]["contents"]["normalization/fused_layer_norm.py"]
    assert facts["import"]["error"] == "No module named 'pyramid_mailer'"
    assert facts["import"]["where"].endswith("apex/__init__.py:1")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-impostor"]
    finding = findings[0]
    assert finding.severity is Severity.ERROR
    evidence = "\n".join(finding.evidence)
    for needle in ("0.9.10.dev0", "Pyramid toolkit", "apex/lib/libapex.py", "No module named 'pyramid_mailer'", "no apex.normalization"):
        assert needle in evidence, needle
    python = facts["python"]
    uninstall = finding.remedies[0]
    assert uninstall.id == "apex-uninstall" and uninstall.kind == "pip"
    assert uninstall.commands == ("%s -m pip uninstall -y apex" % python,)
    assert uninstall.action == {"uninstall": ["apex"]}
    build = remedy(finding, "apex-build-from-source")
    assert build.commands[:2] == ("git clone https://github.com/NVIDIA/apex", "cd apex")
    assert build.commands[2] == "APEX_CPP_EXT=1 APEX_CUDA_EXT=1 %s -m pip install -v --no-build-isolation ." % python
    assert "CPU-only" in build.summary  # torch 2.13.0+cpu: apex cannot be built against it
    flags = remedy(finding, "apex-build-from-source-flags")  # pip 23.2.1 >= 23.1: --config-settings
    assert '--config-settings "--build-option=--cpp_ext" --config-settings "--build-option=--cuda_ext" ./' in flags.commands[0]
    assert_never_advises_pypi_apex(findings)
    # the recorded report was judged by these same rules
    recorded = check_of(report, "apex")
    assert recorded["status"] == "error" and [f["code"] for f in recorded["findings"]] == ["apex-impostor"]
    assert report["summary"]["exit_code"] == 1
    assert CHECK.summarize(facts).startswith("impostor: PyPI `apex` 0.9.10.dev0")


def test_impostor_found_by_its_files_alone_and_removed_by_hand() -> None:
    """An impostor folder with no pip record (copied, or a broken uninstall): the contents decide."""
    facts = facts_of(load_fixture("impostor-apex-torch-2.13.0.json"), "apex")
    facts["distribution"] = None
    facts["import"] = {"ok": False, "skipped": "not imported"}
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-impostor"]
    assert any("lib/libapex.py" in e for e in findings[0].evidence)
    first = findings[0].remedies[0]
    assert first.id == "apex-remove-folder" and first.commands == ()
    assert facts["package"]["locations"][0] in first.summary


def test_impostor_with_old_pip_and_nvidia_leftovers() -> None:
    facts = facts_of(load_fixture("impostor-apex-torch-2.13.0.json"), "apex")
    facts["pip"] = "22.3.1"
    facts["torch_cuda"] = "12.1"
    facts["extensions"] = [{"name": "amp_C", "origin": "/v/amp_C.cpython-311-x86_64-linux-gnu.so", "compiled": True, "kind": "cuda"}]
    finding = judge(CHECK, facts)[0]
    assert finding.code == "apex-impostor"
    assert any("left over from an NVIDIA apex build: amp_C" in e for e in finding.evidence)
    flags = remedy(finding, "apex-build-from-source-flags")
    assert '--global-option="--cpp_ext" --global-option="--cuda_ext" ./' in flags.commands[0]
    assert "nvcc 12.1" in remedy(finding, "apex-build-from-source").summary


def test_impostor_evidence_explains_the_transformers_fallback() -> None:
    facts = facts_of(load_fixture("impostor-apex-torch-2.13.0.json"), "apex")
    facts["transformers"] = handwritten("apex-a100-seed-002-fused-rmsnorm-dtype-mix.json")["transformers"]
    finding = judge(CHECK, facts)[0]
    line = next(e for e in finding.evidence if e.startswith("transformers 4.57.6"))
    assert "t5, longt5, pix2struct, pop2piano" in line and "fall back to their own T5LayerNorm" in line
    assert_never_advises_pypi_apex([finding])


# ---- hand-written GPU snapshots


def test_seed_002_fused_rmsnorm_dtype_mix_on_a100_with_t5_routed() -> None:
    facts = handwritten("apex-a100-seed-002-fused-rmsnorm-dtype-mix.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-fused-norm-fails"]
    finding = findings[0]
    assert finding.severity is Severity.ERROR
    assert "NVIDIA A100-SXM4-80GB" in finding.title and "FusedRMSNorm in 6 of 9" in finding.title
    combos = finding.subject["combinations"]
    assert len(combos) == 12 and all(c["dtype"] != c["weight_dtype"] for c in combos)
    assert {"op": "FusedRMSNorm", "device": "cuda:0", "dtype": "float32", "weight_dtype": "float16"} in combos
    evidence = "\n".join(finding.evidence)
    assert "cuda:0 FusedRMSNorm input fp32 × weight fp16: %s" % SEED_002 in evidence
    assert "transformers 4.57.6 replaces the layer norms of t5, longt5, pix2struct, pop2piano" in evidence
    assert "modeling_t5.py line 266" in evidence
    assert "`pip install --upgrade apex` only seemed to fix seed 002" in evidence
    ids = [r.id for r in finding.remedies]
    assert ids[0] == "apex-uninstall" and "transformers-upgrade" in ids and "apex-norm-same-dtype" in ids
    assert remedy(finding, "apex-uninstall").action == {"uninstall": ["apex"]}
    upgrade = remedy(finding, "transformers-upgrade")  # torch stays as it is
    assert upgrade.commands == ("/opt/conda/bin/python -m pip install 'transformers>=5.8.0' torch==2.4.0+cu121",)
    assert upgrade.action == {"install": ["transformers>=5.8.0"], "constraints": ["torch==2.4.0+cu121"]}
    assert "apex-build-from-source" not in ids  # a rebuilt apex rejects the same mixes
    assert_never_advises_pypi_apex(findings)
    summary = CHECK.summarize(facts)
    assert "FusedRMSNorm 3/9 on cuda:0" in summary and "T5 → FusedRMSNorm (transformers 4.57.6)" in summary


@pytest.mark.parametrize(
    ("transformers", "routed"),
    [
        ({"version": None, "found": False}, False),
        ({"version": "5.8.0", "found": True, "location": "/t", "models": {
            "t5": {"file": "/t/models/t5/modeling_t5.py", "swap": False}}}, False),
        ({"version": "4.30.0", "found": True, "location": "/t", "models": {}}, True),  # no source: docs/facts.md §5 table
        ({"version": "4.16.2", "found": True, "location": "/t", "models": {}}, False),
    ],
)
def test_dtype_mixes_matter_most_when_transformers_routes_t5(transformers: Dict[str, Any], routed: bool) -> None:
    facts = handwritten("apex-a100-seed-002-fused-rmsnorm-dtype-mix.json")
    facts["transformers"] = transformers
    finding = by_code(judge(CHECK, facts))["apex-fused-norm-fails"]
    assert finding.severity is (Severity.ERROR if routed else Severity.WARNING)
    routing = [e for e in finding.evidence if "replaces the layer norms" in e]
    assert bool(routing) is routed
    if transformers["version"] == "4.30.0":
        assert "of t5, longt5, pix2struct with" in routing[0]  # pop2piano came in 4.45
    ids = [r.id for r in finding.remedies]
    assert ("transformers-upgrade" in ids) is routed
    assert "apex-uninstall" in ids and "apex-norm-same-dtype" in ids


def test_same_dtype_failures_call_for_a_rebuild() -> None:
    facts = handwritten("apex-a100-seed-002-fused-rmsnorm-dtype-mix.json")
    facts["transformers"] = {"version": None, "found": False}
    illegal = "CUDA error: an illegal memory access was encountered"
    for op in facts["ops"]:
        op.update(ok=False, error=illegal, error_type="RuntimeError", max_rel_err=None)
    finding = by_code(judge(CHECK, facts))["apex-fused-norm-fails"]
    assert finding.severity is Severity.ERROR
    assert "FusedLayerNorm in 9 of 9" in finding.title
    build = remedy(finding, "apex-build-from-source")
    assert build.commands[0] == "/opt/conda/bin/python -m pip uninstall -y apex"
    assert "nvcc 12.1" in build.summary
    assert "apex-norm-same-dtype" not in [r.id for r in finding.remedies]  # nothing mixed here


@pytest.mark.parametrize("error", ["CUDA error: no kernel image is available for execution on the device",
                                   "CUDA error: invalid device function"])
def test_kernels_without_code_for_this_gpu_are_built_for_it(error: str) -> None:
    """Both wordings of a kernel with no code for the GPU (the H200 recording is in test_recorded_gpus): the
    rebuild names the A100's sm_80, and the launch failures are not told again as dtype failures."""
    facts = handwritten("apex-a100-seed-002-fused-rmsnorm-dtype-mix.json")
    for op in facts["ops"]:
        op.update(ok=False, error=error, error_type="RuntimeError", max_rel_err=None)
    findings = by_code(judge(CHECK, facts))
    assert "apex-fused-norm-fails" not in findings
    finding = findings["apex-wrong-arch"]
    assert finding.severity is Severity.ERROR and "sm_80" in finding.title
    assert finding.subject["capabilities"] == ["8.0"]
    build = remedy(finding, "apex-build-from-source")
    assert build.commands[-1].startswith("TORCH_CUDA_ARCH_LIST=8.0 APEX_CPP_EXT=1 APEX_CUDA_EXT=1 /opt/conda/bin/python -m pip install")


def test_wrong_numbers_are_an_error() -> None:
    facts = handwritten("apex-a100-seed-002-fused-rmsnorm-dtype-mix.json")
    target = next(o for o in facts["ops"] if o["op"] == "FusedLayerNorm" and o["dtype"] == o["weight_dtype"] == "float16")
    target["max_rel_err"] = 0.4
    finding = by_code(judge(CHECK, facts))["apex-fused-norm-wrong-results"]
    assert finding.severity is Severity.ERROR
    assert finding.evidence == ("cuda:0 FusedLayerNorm input fp16 × weight fp16: max relative error 0.4 vs the fp32 torch reference",)
    assert "FusedLayerNorm 2/9 on cuda:0" in CHECK.summarize(facts)


def test_healthy_apex_with_t5_routed_is_a_note() -> None:
    facts = handwritten("apex-a100-seed-002-fused-rmsnorm-dtype-mix.json")
    facts["ops"] = [o for o in facts["ops"] if o["ok"]]
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-t5-fused-rmsnorm"]
    assert findings[0].severity is Severity.INFO and findings[0].subject["models"] == ["t5", "longt5", "pix2struct", "pop2piano"]
    facts["transformers"] = {"version": None, "found": False}
    assert judge(CHECK, facts) == []


def test_python_only_build_on_a100() -> None:
    facts = handwritten("apex-a100-python-only-build.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-no-cuda-extensions"]  # the 18 failed runs are this, not a separate finding
    finding = findings[0]
    assert finding.severity is Severity.ERROR
    assert "transformers still routes t5, longt5, pix2struct, pop2piano" in finding.title
    evidence = "\n".join(finding.evidence)
    assert "Python-only build" in evidence
    assert "FusedRMSNorm(8) raises ModuleNotFoundError: No module named 'fused_layer_norm_cuda'" in evidence
    assert "fused_layer_norm.py:393" in evidence
    assert "18 fused-norm runs on cuda:0 fail" in evidence
    ids = [r.id for r in finding.remedies]
    assert ids == ["apex-build-from-source", "apex-build-from-source-flags", "apex-uninstall"]
    assert finding.remedies[0].commands[-1] == "APEX_CPP_EXT=1 APEX_CUDA_EXT=1 /opt/conda/bin/python -m pip install -v --no-build-isolation ."
    assert "no CUDA extensions (Python-only build)" in CHECK.summarize(facts)


def test_python_only_build_without_gpu_or_transformers_is_a_warning() -> None:
    facts = handwritten("apex-a100-python-only-build.json")
    facts.update(torch="2.4.0+cpu", torch_cuda=None, devices=[], ops=[], fused_ops="no CUDA device",
                 transformers={"version": None, "found": False})
    findings = by_code(judge(CHECK, facts))
    assert list(findings) == ["apex-no-cuda-extensions", "apex-no-cuda-device"]
    assert findings["apex-no-cuda-extensions"].severity is Severity.WARNING
    assert [r.id for r in findings["apex-no-cuda-extensions"].remedies] == ["apex-uninstall"]  # nothing to build against
    assert findings["apex-no-cuda-device"].severity is Severity.INFO
    assert "no CUDA device" in CHECK.summarize(facts)


@pytest.mark.parametrize("fixture, amp", [("cpu-nvidia-apex-6424da3-python-only.json", False),
                                          ("cpu-nvidia-apex-25.05-python-only.json", True)])
def test_recorded_nvidia_apex_with_and_without_amp(fixture: str, amp: bool) -> None:
    """Real NVIDIA apex, built here without extensions from its repository: 25.05 (the last tag with apex.amp) and
    6424da3 (after #1896 removed it). Code that does `from apex import amp` fails on the second: a note, not a warning
    (nothing here says the code needs it), with torch.amp as the remedy."""
    facts = facts_of(load_fixture(fixture), "apex")
    assert facts["package"]["contents"]["amp/__init__.py"] is amp
    findings = by_code(judge(CHECK, facts))
    assert "apex-no-cuda-extensions" in findings  # a Python-only build either way
    assert ("apex-no-amp" in findings) is not amp
    assert ("no apex.amp" in CHECK.summarize(facts)) is not amp
    if not amp:
        finding = findings["apex-no-amp"]
        assert finding.severity is Severity.INFO and "pull/1896" in "\n".join(finding.evidence)
        assert [r.id for r in finding.remedies] == ["apex-amp-removed"]
        assert finding.subject["missing"] == ["apex.amp"]


def test_snapshots_that_did_not_record_amp_say_nothing_of_it() -> None:
    facts = facts_of(load_fixture("h200-apex-python-only.json"), "apex")  # recorded before the probe looked
    assert "amp/__init__.py" not in facts["package"]["contents"]
    assert "apex-no-amp" not in codes(judge(CHECK, facts))


def test_explain_confirms_a_missing_apex_amp_on_recorded_nvidia_apex() -> None:
    """The live half of explain on the recorded 6424da3 build: the apex-no-amp finding witnesses the reading."""
    from envdoctor.pipeline.explain.confirm import apply_verdicts
    from envdoctor.pipeline.explain.match import match
    from envdoctor.pipeline.explain.reader import read_text
    from envdoctor.target.model import report_from_dict

    text = ('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    from apex import amp\n'
            "ImportError: cannot import name 'amp' from 'apex' (/opt/venv/lib/python3.11/site-packages/apex/__init__.py)\n")
    checks = [c.check for c in load_checks(plugins=False)[0]]
    for fixture, confirmed in (("cpu-nvidia-apex-6424da3-python-only.json", True), ("cpu-nvidia-apex-25.05-python-only.json", False)):
        diagnoses = match(read_text(text), checks).diagnoses
        assert (diagnoses[0].check, diagnoses[0].code) == ("apex", "apex-no-amp")
        apply_verdicts(diagnoses, report_from_dict(load_fixture(fixture)))
        assert diagnoses[0].confirmed is confirmed, diagnoses[0].confirmation
        if confirmed:
            assert "has no apex.amp" in diagnoses[0].confirmation


def test_extension_built_for_another_torch() -> None:
    facts = handwritten("apex-a100-undefined-symbol.json")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-extension-abi"]  # the failed runs are the same ImportError
    finding = findings[0]
    assert finding.severity is Severity.ERROR
    assert finding.subject["modules"] == ["amp_C", "fused_layer_norm_cuda"]
    evidence = "\n".join(finding.evidence)
    assert "fused_layer_norm_cuda: /opt/conda/lib/python3.10/site-packages/fused_layer_norm_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol" in evidence
    assert "installed 2.5.1+cu124" in evidence and "18 of 18 fused-norm runs on cuda:0 fail with it" in evidence
    build = finding.remedies[0]
    assert build.id == "apex-build-from-source" and "nvcc 12.4" in build.summary
    assert build.commands[0] == "/opt/conda/bin/python -m pip uninstall -y apex"
    assert finding.remedies[-1].action == {"uninstall": ["apex"]}
    assert "12 compiled extensions, 2 fail to load" in CHECK.summarize(facts)


def test_extension_that_fails_otherwise_is_broken_not_abi() -> None:
    facts = handwritten("apex-a100-undefined-symbol.json")
    lost = "libc10_cuda.so: cannot open shared object file: No such file or directory"
    for ext in facts["extensions"]:
        if ext["name"] in ("amp_C", "fused_layer_norm_cuda"):
            ext["import"] = {"ok": False, "error": lost, "error_type": "ImportError"}
    for op in facts["ops"]:
        op["error"] = lost
    facts["construct"] = {"FusedRMSNorm": {"ok": False, "error": lost, "error_type": "ImportError"},
                          "FusedLayerNorm": {"ok": False, "error": lost, "error_type": "ImportError"}}
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-extension-broken"]
    assert any("18 of 18 fused-norm runs" in e for e in findings[0].evidence)


def test_apex_that_does_not_import_is_a_warning() -> None:
    facts = handwritten("apex-a100-seed-002-fused-rmsnorm-dtype-mix.json")
    facts["normalization_import"] = {"ok": False, "error": "module 'torch.compiler' has no attribute 'is_compiling'",
                                     "error_type": "AttributeError", "where": "/x/apex/normalization/fused_layer_norm.py:10"}
    facts.update(ops=[], construct={}, fused_ops="apex.normalization does not import")
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-import-fails"]
    assert findings[0].severity is Severity.WARNING
    assert any("discovered apex but it failed to load" in e for e in findings[0].evidence)  # not an ImportError: transformers warns


def test_nvidia_apex_without_torch_is_left_to_torch_install() -> None:
    facts = handwritten("apex-a100-python-only-build.json")
    facts.update(torch=None, torch_cuda=None, ops=[], devices=[])
    facts["import"] = {"ok": False, "skipped": "torch does not import"}
    for key in ("normalization_import", "construct", "fused_ops"):
        facts.pop(key)
    assert judge(CHECK, facts) == []
    assert CHECK.summarize(facts) == "NVIDIA apex 0.1 · not imported: torch does not import"


def test_an_unrecognised_apex_is_a_warning() -> None:
    facts = handwritten("apex-a100-python-only-build.json")
    facts["distribution"] = dict(facts["distribution"], version="2.0", summary="Something else", nvidia_files=[])
    facts["package"]["contents"] = {k: False for k in facts["package"]["contents"]}
    findings = judge(CHECK, facts)
    assert codes(findings) == ["apex-unrecognized"] and findings[0].severity is Severity.WARNING
    assert_never_advises_pypi_apex(findings)


def test_no_remedy_anywhere_advises_the_index_apex() -> None:
    names = ["apex-a100-seed-002-fused-rmsnorm-dtype-mix.json", "apex-a100-python-only-build.json", "apex-a100-undefined-symbol.json"]
    findings = [f for n in names for f in judge(CHECK, handwritten(n))]
    findings += judge(CHECK, facts_of(load_fixture("impostor-apex-torch-2.13.0.json"), "apex"))
    assert len(findings) >= 4
    assert_never_advises_pypi_apex(findings)
    assert BAD_ADVICE.search("python -m pip install --upgrade apex") and BAD_ADVICE.search("pip install apex")  # the guard works


# ---- end to end on this machine


def test_live_check_without_apex() -> None:
    report = run_json("--only", "apex")
    check = check_of(report, "apex")
    assert check["status"] == "ok" and check["findings"] == [] and check["summary"] == "apex not installed"
    assert "python" not in check["facts"]  # the rules take the interpreter from the environment
    assert check["duration_s"] < 2.0


@pytest.fixture()
def impostor_venv(impostor_apex_python: Path) -> Path:
    """torch 2.13.0 (CPU), the real PyPI `apex` and transformers 4.57.6 (conftest.impostor_apex_python)."""
    return impostor_apex_python


@IMPOSTOR_APEX
@pytest.mark.slow
def test_full_check_fails_on_the_impostor(impostor_venv: Path) -> None:
    proc = run_envdoctor("check", "--python", str(impostor_venv))  # every check, as a user runs it
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the installed `apex` 0.9.10.dev0 is the unrelated PyPI web toolkit" in proc.stdout
    assert "%s -m pip uninstall -y apex" % impostor_venv in proc.stdout
    commands = [line.split("$ ", 1)[1] for line in proc.stdout.splitlines() if line.lstrip().startswith("$ ")]
    assert commands and not [c for c in commands if BAD_ADVICE.search(c)]


@IMPOSTOR_APEX
def test_explain_confirms_a_missing_apex_amp_where_the_impostor_is_installed(impostor_venv: Path) -> None:
    """`from apex import amp` failing is confirmed by the impostor found here (it has no amp either), with its uninstall
    first; before, the verdict was "this environment does not reproduce it" beside the impostor's own finding."""
    text = ('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    from apex import amp\n'
            "ImportError: cannot import name 'amp' from 'apex'\n")
    proc = run_envdoctor("explain", "--json", "--python", str(impostor_venv), "-", input=text)
    assert proc.returncode == 0, proc.stderr
    first = json.loads(proc.stdout)["diagnoses"][0]
    assert (first["check"], first["code"], first["confirmed"]) == ("apex", "apex-no-amp", True)
    assert "PyPI web toolkit" in first["confirmation"]
    assert "%s -m pip uninstall -y apex" % impostor_venv in json.dumps(first["remedies"])


@IMPOSTOR_APEX
@pytest.mark.slow
def test_impostor_report_beside_torch_and_transformers(impostor_venv: Path) -> None:
    proc = run_envdoctor("check", "--json", "--only", "apex", "--python", str(impostor_venv))
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    check = check_of(report, "apex")
    errors = [f for f in check["findings"] if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["apex-impostor"]
    finding = errors[0]
    assert finding["remedies"][0]["commands"] == ["%s -m pip uninstall -y apex" % impostor_venv]
    assert finding["remedies"][0]["action"] == {"uninstall": ["apex"]}
    for r in finding["remedies"]:
        for text in [r["summary"], *r["commands"]]:
            assert "pip install --upgrade apex" not in text and not BAD_ADVICE.search(text), text
    facts = check["facts"]
    assert facts["torch"] == "2.13.0+cpu" and facts["import"]["error"] == "No module named 'pyramid_mailer'"
    # transformers' real source: the swap is there, but apex.normalization does not import, so T5 falls back
    t5 = facts["transformers"]["models"]["t5"]
    assert facts["transformers"]["version"] == "4.57.6" and t5["swap"] is True and t5["line"] > 1
    assert all(m["swap"] for m in facts["transformers"]["models"].values())
    assert any("fall back to their own T5LayerNorm" in e for e in finding["evidence"])


@pytest.mark.slow
def test_impostor_found_without_torch(tmp_path: Path) -> None:
    py = make_venv(tmp_path / "v")
    pip_install(py, "--no-deps", "apex", "transformers==5.8.0")
    proc = run_envdoctor("check", "--json", "--python", str(py))
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["environment"]["torch"] is None
    check = check_of(report, "apex")
    assert check["status"] == "error"
    assert [f["code"] for f in check["findings"]] == ["apex-impostor"]
    facts = check["facts"]
    assert facts["torch"] is None and facts["devices"] == [] and facts["ops"] == []
    assert facts["import"]["error"] == "No module named 'pyramid_mailer'"  # imported for its error: it needs no torch
    assert "normalization_import" not in facts
    # transformers 5.8.0 removed the swap: read from its real source
    assert facts["transformers"]["version"] == "5.8.0"
    assert facts["transformers"]["models"]["t5"]["file"] and facts["transformers"]["models"]["t5"]["swap"] is False
    build = next(r for r in check["findings"][0]["remedies"] if r["id"] == "apex-build-from-source")
    assert "install a CUDA build of torch first" in build["summary"]


# ---- a real GPU with NVIDIA apex


def _gpu_with_nvidia_apex() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available()) and importlib.util.find_spec("fused_layer_norm_cuda") is not None


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_with_nvidia_apex(), reason="needs a CUDA GPU and NVIDIA apex with its CUDA extensions")
def test_fused_norms_on_a_real_gpu() -> None:
    import torch

    report = run_json("--only", "apex", "--device", "cuda", timeout=600)
    facts = facts_of(report, "apex")
    assert facts["fused_ops"] == "run"
    devices = ["cuda:%d" % i for i in range(torch.cuda.device_count())]
    assert [d["id"] for d in facts["devices"]] == devices
    for device in devices:
        for op in ("FusedRMSNorm", "FusedLayerNorm"):
            runs = [o for o in facts["ops"] if o["device"] == device and o["op"] == op]
            assert len(runs) == 9 and {(o["dtype"], o["weight_dtype"]) for o in runs} == {
                (a, b) for a in ("float32", "float16", "bfloat16") for b in ("float32", "float16", "bfloat16")}
            for o in runs:
                assert o["ok"] == (o["error"] is None)
                if o["ok"]:
                    assert o["out_dtype"] == o["dtype"] or o["dtype"] != o["weight_dtype"]
    findings = judge(CHECK, facts)
    assert "apex-fused-norm-wrong-results" not in codes(findings), [f.evidence for f in findings]
    same = [o for o in facts["ops"] if o["dtype"] == o["weight_dtype"] and o["dtype"] != "bfloat16"]
    assert all(o["ok"] for o in same), [o for o in same if not o["ok"]]
    print(CHECK.summarize(facts), file=sys.stderr)


def test_a_kernel_that_never_launched_fails_in_its_own_op() -> None:
    """A kernel launch that fails (no kernel image for the GPU) leaves its error pending: a synchronize does not
    report it, torch's next launch check does. Seen on an H200 with apex built for sm_80 (record_apex_gpu.sh): the
    probe's fused norms passed and the next op raised. run_op now launches a check of its own, so the error is the
    op's. The GPU is faked here, as little as that takes: synchronize succeeds, torch's next launch raises."""
    from envdoctor.target.probekit.ops import run_op

    pending = "CUDA error: no kernel image is available for execution on the device"
    launched: List[str] = []

    class Cuda:
        @staticmethod
        def synchronize(device: str) -> None:
            launched.append("synchronize %s" % device)

    class Torch:
        cuda = Cuda

        @staticmethod
        def ones(n: int, device: str) -> Any:
            launched.append("ones on %s" % device)
            raise RuntimeError(pending)

    fact = run_op(Torch, "FusedRMSNorm", "cuda:0", "float16", lambda: object(), weight_dtype="float16")
    assert launched == ["synchronize cuda:0", "ones on cuda:0"]
    assert (fact["ok"], fact["error"], fact["error_type"]) == (False, pending, "RuntimeError")
