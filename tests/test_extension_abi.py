"""extension-abi: compiled extensions (torchvision, torchaudio, xformers, flash-attn,
bitsandbytes, triton, NVIDIA apex) imported for real against the installed torch.

- Rules on snapshots recorded here from real broken stacks (torchvision 0.28.0 CUDA
  build beside the CPU torch 2.13.0; torchvision 0.27.0 + torchaudio 2.11.0 + xformers
  0.0.33.post2 + bitsandbytes 0.50.2; xformers 0.0.35) and on hand-written GPU
  snapshots (tests/fixtures/handwritten/extension-abi-*.json, each says what it mimics).
- The probe's import recorder, in process, on small modules that print, warn and fail.
- End to end (slow): one throwaway venv with torch==2.13.0 whose companions are swapped
  by the tests, checked with `envdoctor check --json --only extension-abi --python VENV`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest
from conftest import ENV, ROOT, check_of, codes, facts_of, handwritten, judge, load_fixture, make_venv, pip_install, rejudged, run_envdoctor, run_json

from envdoctor.pipeline.check.registry import load_checks
from envdoctor.target import versions
from envdoctor.target.cuda_tables import TORCHVISION_FOR_TORCH
from envdoctor.target.model import Finding, Gpu, Severity, Target
from envdoctor.target.probekit.imports import record_import

CHECK = {c.check.id: c.check for c in load_checks(plugins=False)[0]}["extension-abi"]
PAIRING = sys.modules["envdoctor.checks.extension_abi.pairing"]
ID = "extension-abi"
NMS = "operator torchvision::nms does not exist"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

TV028 = load_fixture("torchvision-0.28.0-on-cpu-torch-2.13.0.json")
OLD = load_fixture("old-companions-on-cpu-torch-2.13.0.json")
XF035 = load_fixture("xformers-0.0.35-on-cpu-torch-2.13.0.json")
CPU = load_fixture("cpu-extension-abi.json")


FLASH = handwritten("extension-abi-flash-attn-cxx11abi-false-on-torch-2.7.0-cu128.json")
XF_T4 = handwritten("extension-abi-xformers-0.0.27.post2-on-torch-2.3.1-cu121-t4.json")
TV_CU118 = handwritten("extension-abi-torchvision-cu118-on-torch-2.1.0-cu121.json")
APEX = handwritten("extension-abi-apex-built-for-torch-2.4-on-torch-2.5.1-cu124.json")
ALL_FACTS = [facts_of(r, ID) for r in (TV028, OLD, XF035, CPU)] + [FLASH, XF_T4, TV_CU118, APEX]


TORCHVISION_CU130_ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]


def of(findings: List[Finding], code: str, package: str) -> Finding:
    found = [f for f in findings if f.code == code and f.subject.get("package") == package]
    assert len(found) == 1, [(f.code, f.subject) for f in findings]
    return found[0]


def commands(finding: Finding) -> List[str]:
    return [c for r in finding.remedies for c in r.commands]


# ---------------------------------------------------------------- no extensions


def test_no_compiled_extensions_means_no_findings() -> None:
    facts = facts_of(CPU, ID)
    assert facts["extensions"] == [] and facts["ops"] == []
    assert facts["torch"]["version"] == "2.13.0+cpu"
    assert judge(CHECK, facts) == []
    assert CHECK.summarize(facts) == "no compiled extensions installed"
    assert check_of(CPU, ID)["status"] == "ok"


# ---------------------------------------------------------------- recorded: torchvision 0.28.0 (CUDA build) on CPU torch 2.13.0


def test_torchvision_cuda_build_on_cpu_torch_is_an_import_error() -> None:
    facts = facts_of(TV028, ID)
    (ext,) = facts["extensions"]
    assert (ext["name"], ext["version"], ext["build_version"]) == ("torchvision", "0.28.0", "0.28.0+cu130")
    (op,) = facts["ops"]
    assert (op["op"], op["ok"], op["error_type"], op["error"]) == ("import torchvision", False, "RuntimeError", NMS)
    assert op["import_s"] >= 0
    # the loader's own reason, which torchvision hides behind "Could not load this library"
    assert op["dlopen"][0]["error"].startswith("libc10_cuda.so: cannot open shared object file")

    findings = judge(CHECK, facts)
    assert codes(findings) == ["import-fails"]  # 0.28.0 IS the pair of torch 2.13.0: no version-mismatch
    error = findings[0]
    assert error.severity is Severity.ERROR
    assert error.subject["package"] == "torchvision" and error.subject["module"] == "torchvision"
    assert error.title == "torchvision 0.28.0 does not import: RuntimeError: " + NMS
    assert error.evidence[0] == "import torchvision: RuntimeError: " + NMS
    assert "likely cause: it is a CUDA 13.0 build (+cu130) but torch 2.13.0+cpu is CPU-only" in error.evidence
    python = ENV.python
    assert commands(error) == ["%s -m pip install torchvision==0.28.0+cpu torch==2.13.0+cpu --index-url %s" % (python, CPU_INDEX)]
    assert error.remedies[0].action == {"install": ["torchvision==0.28.0+cpu"], "constraints": ["torch==2.13.0+cpu"], "index_url": CPU_INDEX}
    assert CHECK.summarize(facts) == "torch 2.13.0+cpu · torchvision 0.28.0 import fails"


def test_recorded_report_matches_the_rules_of_today() -> None:
    for report in (TV028, OLD, XF035, CPU):
        check = check_of(report, ID)
        # the findings as recorded; their remedies are now built from actions (test_remedies checks them)
        today = [{k: v for k, v in f.to_dict().items() if k != "remedies"} for f in judge(CHECK, check["facts"])]
        assert today == [{k: v for k, v in f.items() if k != "remedies"} for f in check["findings"]]
        assert CHECK.summarize(check["facts"]) == check["summary"]


# ---------------------------------------------------------------- recorded: companions built for older torch releases


def test_torchvision_paired_with_torch_2_12_names_the_release_for_2_13() -> None:
    findings = judge(CHECK, facts_of(OLD, ID))
    mismatch = of(findings, "version-mismatch", "torchvision")
    assert mismatch.severity is Severity.WARNING
    assert mismatch.subject["expected_torch"] == "==2.12.0" and mismatch.subject["paired"] == "0.28.0"
    assert mismatch.title.endswith("the paired release is torchvision==0.28.0")
    assert "torchvision 0.27.0 requires torch==2.12.0 (its Requires-Dist); installed torch is 2.13.0+cpu" in mismatch.evidence
    assert any("torchvision==0.28.0+cpu torch==2.13.0+cpu --index-url " + CPU_INDEX in c for c in commands(mismatch))
    # and what really happens at import: the same missing operator
    error = of(findings, "import-fails", "torchvision")
    assert error.evidence[0] == "import torchvision: RuntimeError: " + NMS


def test_torchaudio_failure_keeps_the_loader_cause() -> None:
    findings = judge(CHECK, facts_of(OLD, ID))
    error = of(findings, "import-fails", "torchaudio")
    assert error.subject["error_type"] == "OSError"
    assert error.title.startswith("torchaudio 2.11.0 does not import: OSError: Could not load this library: ")
    assert "  caused by OSError: libc10_cuda.so: cannot open shared object file: No such file or directory" in error.evidence
    # no torchaudio exists for torch 2.13: no invented pin, pip chooses under the torch pin
    assert any(c.endswith("install --upgrade torchaudio torch==2.13.0+cpu --index-url " + CPU_INDEX) for c in commands(error))
    assert "version-mismatch" not in [f.code for f in findings if f.subject["package"] == "torchaudio"]


def test_xformers_built_for_torch_2_9_1() -> None:
    facts = facts_of(OLD, ID)
    ext = next(e for e in facts["extensions"] if e["name"] == "xformers")
    assert ext["built_for"] == {"torch": "2.9.1+cu128", "cuda": 1208, "hip": None, "python": "3.10.19"}
    first, ops = [o for o in facts["ops"] if o["package"] == "xformers"]
    assert first["ok"] and "xFormers can't load C++/CUDA extensions. xFormers was built for:" in first["log"][0]
    assert first["extension_error"][-1] == "OSError: libcudart.so.12: cannot open shared object file: No such file or directory"
    assert (ops["module"], ops["ok"], ops["error_type"]) == ("xformers.ops", False, "ImportError")

    findings = judge(CHECK, facts)
    error = of(findings, "import-fails", "xformers")
    assert error.subject["module"] == "xformers.ops"
    assert "likely cause: it is a CUDA 12.8 build (+cu128) but torch 2.13.0+cpu is CPU-only" in error.evidence
    mismatch = of(findings, "version-mismatch", "xformers")
    assert mismatch.subject["paired"] == "0.0.35"
    assert "xformers' C++ library was built for PyTorch 2.9.1+cu128 with CUDA 1208, Python 3.10.19" in mismatch.evidence
    # xformers has no CPU build: the way out on a CPU-only torch is to uninstall it, not another release
    assert commands(error) == ["%s -m pip uninstall -y xformers" % ENV.python]


def test_working_extension_has_no_finding() -> None:
    facts = facts_of(OLD, ID)
    bnb = [o for o in facts["ops"] if o["package"] == "bitsandbytes"]
    assert [o["ok"] for o in bnb] == [True]
    assert not [f for f in judge(CHECK, facts) if f.subject["package"] == "bitsandbytes"]
    assert "bitsandbytes 0.50.2 imports" in CHECK.summarize(facts)


def test_xformers_whose_cpp_library_does_not_load_is_a_warning() -> None:
    facts = facts_of(XF035, ID)
    assert [o["ok"] for o in facts["ops"]] == [True, True]  # xformers and xformers.ops import...
    (finding,) = judge(CHECK, facts)  # ...but the kernels are not there
    assert (finding.code, finding.severity) == ("extension-not-loaded", Severity.WARNING)
    assert "xformers C++ library: OSError: libcudart.so.12: cannot open shared object file: No such file or directory" in finding.evidence


# ---------------------------------------------------------------- hand-written GPU snapshots


def test_flash_attn_old_abi_wheel_on_torch_2_7() -> None:
    (error,) = judge(CHECK, FLASH)
    assert (error.code, error.severity, error.subject["package"]) == ("import-fails", Severity.ERROR, "flash-attn")
    assert "undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs" in error.title
    assert "likely cause: it was built with the old C++ ABI (cxx11abiFALSE) but this torch uses the C++11 ABI" in error.evidence
    cmds = commands(error)
    assert "/usr/bin/python3 -m pip install --no-build-isolation --no-cache-dir flash-attn==2.7.4.post1 torch==2.7.0+cu128" in cmds
    wheel = [c for c in cmds if "releases/download" in c]
    assert wheel and wheel[0].endswith("/v2.7.4.post1/flash_attn-2.7.4.post1+cu12torch2.7cxx11abiTRUE-cp310-cp310-linux_x86_64.whl")


def test_flash_attn_new_abi_wheel_on_old_abi_torch() -> None:
    facts = copy.deepcopy(FLASH)
    facts["torch"].update(version="2.4.0+cu121", dist_version="2.4.0+cu121", cuda="12.1", cxx11_abi=False)
    facts["ops"][0]["error"] = facts["ops"][0]["error"].replace(
        "_ZN3c105ErrorC2ENS_14SourceLocationESs", "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE")
    (error,) = judge(CHECK, facts)
    assert "likely cause: it was built with the C++11 ABI (cxx11abiTRUE) but this torch uses the old ABI" in error.evidence
    assert any(c.endswith("flash_attn-2.7.4.post1+cu12torch2.4cxx11abiFALSE-cp310-cp310-linux_x86_64.whl") for c in commands(error))


def test_xformers_built_for_another_torch_on_a_t4() -> None:
    findings = judge(CHECK, XF_T4)
    assert sorted((f.code, f.severity.value) for f in findings) == [("extension-not-loaded", "warning"), ("version-mismatch", "warning")]
    mismatch = of(findings, "version-mismatch", "xformers")
    assert mismatch.title == ("xformers 0.0.27.post2 is built for torch==2.4.0, not for the installed torch 2.3.1+cu121; "
                              "the paired release is xformers==0.0.27")
    assert commands(mismatch) == ["/usr/bin/python3 -m pip install xformers==0.0.27 torch==2.3.1+cu121 "
                                  "--index-url https://download.pytorch.org/whl/cu121"]
    # torchvision 0.18.1+cu121 is torch 2.3.1's pair and imports: nothing to say
    assert not [f for f in findings if f.subject["package"] == "torchvision"]


def test_torchvision_other_cuda_major_on_cuda_torch() -> None:
    (error,) = judge(CHECK, TV_CU118)  # the release is right (0.16.0 <-> 2.1.0) and triton is torch's pin
    assert error.code == "import-fails" and error.subject["package"] == "torchvision"
    assert "likely cause: it is a CUDA 11.8 build (+cu118) but torch 2.1.0+cu121 is CUDA 12.1" in error.evidence
    assert commands(error) == ["/usr/bin/python3 -m pip install torchvision==0.16.0+cu121 torch==2.1.0+cu121 "
                               "--index-url https://download.pytorch.org/whl/cu121"]


def test_variant_mismatch_without_symptom_is_its_own_warning() -> None:
    facts = copy.deepcopy(TV_CU118)
    op = next(o for o in facts["ops"] if o["package"] == "torchvision")
    op.update(ok=True, error=None, error_type=None, version="0.16.0+cu118")
    (finding,) = judge(CHECK, facts)
    assert (finding.code, finding.severity) == ("cuda-variant-mismatch", Severity.WARNING)
    assert finding.title == "torchvision 0.16.0+cu118 is a CUDA 11.8 build but torch 2.1.0+cu121 is CUDA 12.1"
    # same CUDA major: minor-version compatibility, no finding
    facts["torch"].update(version="2.1.0+cu118", dist_version="2.1.0+cu118", cuda="11.8")
    facts["extensions"][1]["build_version"] = "0.16.0+cu117"
    assert judge(CHECK, facts) == []


def test_triton_other_than_torchs_pin() -> None:
    facts = copy.deepcopy(TV_CU118)
    facts["ops"] = [o for o in facts["ops"] if o["package"] == "triton"]
    facts["extensions"] = [e for e in facts["extensions"] if e["name"] == "triton"]
    assert judge(CHECK, facts) == []
    facts["extensions"][0]["version"] = "2.0.0"
    (finding,) = judge(CHECK, facts)
    assert finding.code == "version-mismatch"
    assert finding.title == "triton 2.0.0 is not the release torch 2.1.0+cu121 requires (triton==2.1.0); the paired release is triton==2.1.0"
    assert commands(finding) == ["/usr/bin/python3 -m pip install triton==2.1.0 torch==2.1.0+cu121"]


def test_apex_compiled_modules_are_recorded_but_judged_by_the_apex_check() -> None:
    """One broken module, one finding: the `apex` check reports apex's ABI (tests/test_apex.py)."""
    assert judge(CHECK, APEX) == []
    failed = [o for o in APEX["ops"] if o["package"] == "apex" and not o["ok"]]
    assert {o["module"] for o in failed} >= {"amp_C", "fused_layer_norm_cuda"}
    assert all("undefined symbol" in o["error"] for o in failed)


def test_missing_python_dependency_is_named() -> None:
    facts = copy.deepcopy(facts_of(OLD, ID))
    op = next(o for o in facts["ops"] if o["package"] == "bitsandbytes")
    # measured in the same venv before packaging was installed
    op.update(ok=False, error="No module named 'packaging'", error_type="ModuleNotFoundError", causes=[], frames=[])
    error = of(judge(CHECK, facts), "import-fails", "bitsandbytes")
    assert error.title == "bitsandbytes 0.50.2 does not import: its dependency packaging is missing"
    assert commands(error) == ["%s -m pip install bitsandbytes==0.50.2 torch==2.13.0+cpu" % ENV.python]


# ---------------------------------------------------------------- properties over every snapshot


@pytest.mark.parametrize("facts", ALL_FACTS, ids=lambda f: "%s:%s" % (f["torch"]["version"], ",".join(e["name"] for e in f["extensions"])))
def test_every_install_command_keeps_torch_pinned(facts: Dict[str, Any]) -> None:
    torch_pin = "torch==%s" % (facts["torch"]["dist_version"] or facts["torch"]["version"])
    for finding in judge(CHECK, facts):
        assert finding.check == ID and finding.evidence
        for command in commands(finding):
            if " -m pip install " in command and "--no-deps" not in command:
                assert torch_pin in command.split(), command


def test_tables_agree_with_each_other() -> None:
    # every torchvision pair pins the torch it is paired with (docs/facts.md §3a)
    for torch_release, tv in TORCHVISION_FOR_TORCH.items():
        expected, _ = PAIRING.expected_torch({"name": "torchvision", "version": tv, "requires_torch": []})
        assert versions.satisfies(torch_release, expected), (torch_release, tv, expected)
    for xf, torch_release in PAIRING.XFORMERS_TORCH_PIN.items():
        paired = PAIRING.paired_version({"torch": {"version": torch_release}}, {"name": "xformers"})
        assert PAIRING.XFORMERS_TORCH_PIN[paired] == torch_release, (xf, paired)
    assert PAIRING.paired_version({"torch": {"version": "2.13.0+cpu"}}, {"name": "torchvision"}) == "0.28.0"
    assert PAIRING.paired_version({"torch": {"version": "2.14.1"}}, {"name": "torchvision"}) == "0.29.1"
    assert PAIRING.paired_version({"torch": {"version": "2.12.0"}}, {"name": "torchaudio"}) is None
    assert PAIRING.paired_version({"torch": {"version": "2.1.2"}}, {"name": "bitsandbytes"}) == "0.45.5"


def test_signatures_match_the_real_messages() -> None:
    texts = {
        "torchvision": "RuntimeError: " + NMS,
        "flash": FLASH["ops"][0]["error"],
        "xformers": next(o for o in facts_of(OLD, ID)["ops"] if o["module"] == "xformers")["log"][0],
        "cuda": TV_CU118["ops"][1]["error"],
        "apex": APEX["ops"][1]["error"],
        "windows": "ImportError: DLL load failed while importing flash_attn_2_cuda: The specified procedure could not be found.",
    }
    matched = {key: sorted({s.code for s in CHECK.signatures if re.search(s.message, text)}) for key, text in texts.items()}
    assert matched == {"torchvision": ["import-fails"], "flash": ["import-fails"], "xformers": ["extension-not-loaded"],
                       "cuda": ["cuda-variant-mismatch"], "apex": ["import-fails"], "windows": ["import-fails"]}
    assert not any(re.search(s.message, "expected scalar type Float but found Half") for s in CHECK.signatures)


# ---------------------------------------------------------------- the import recorder, in process


@pytest.fixture()
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "edx_noisy.py").write_text(textwrap.dedent("""
        import logging, os, sys, warnings
        os.write(2, b"C-level line on fd 2\\n")
        print("a print on stdout")
        sys.stderr.write("python-level stderr\\n")
        warnings.warn("deprecated thing", DeprecationWarning)
        logging.getLogger("edx").warning("WARNING[EDX]: built for another torch")
        __version__ = "1.2.3"
    """))
    (tmp_path / "edx_broken.py").write_text(textwrap.dedent("""
        try:
            raise OSError("libc10_cuda.so: cannot open shared object file: No such file or directory")
        except OSError as exc:
            raise ImportError("Could not load this library: %s") from exc
    """ % (tmp_path / "fake_C.so")))
    (tmp_path / "fake_C.so").write_text("not an ELF file, only text\n" * 20)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("edx_noisy", "edx_broken"):
        sys.modules.pop(name, None)


def test_import_records_prints_warnings_and_logs(modules: Path, capfd: pytest.CaptureFixture) -> None:
    fact = record_import("edx", "edx_noisy")
    assert (fact["op"], fact["ok"], fact["version"]) == ("import edx_noisy", True, "1.2.3")
    assert "C-level line on fd 2" in fact["stderr"]
    assert "a print on stdout" in fact["stderr"] and "python-level stderr" in fact["stderr"]
    assert fact["warnings"] == ["DeprecationWarning: deprecated thing"]
    assert fact["log"] == ["edx: WARNING[EDX]: built for another torch"]
    # the file descriptors are back: later output is not swallowed
    os.write(2, b"after the probe\n")
    assert "after the probe" in capfd.readouterr().err


def test_import_failure_records_type_causes_frames_and_loader_error(modules: Path) -> None:
    fact = record_import("edx", "edx_broken")
    assert fact["ok"] is False and fact["error_type"] == "ImportError"
    assert fact["error"] == "Could not load this library: %s" % (modules / "fake_C.so")
    assert fact["causes"] == ["OSError: libc10_cuda.so: cannot open shared object file: No such file or directory"]
    assert fact["frames"][-1].endswith("edx_broken.py:5 in <module>")
    # the named library is loaded once more to get the dynamic loader's own words
    (dl,) = fact["dlopen"]
    assert dl["path"] == str(modules / "fake_C.so") and dl["ok"] is False and "invalid ELF header" in dl["error"]


def test_environment_variable_is_set_only_during_the_import(modules: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDX_FLAG", raising=False)
    (modules / "edx_env.py").write_text("import os\nSEEN = os.environ.get('EDX_FLAG')\n")
    try:
        assert record_import("edx", "edx_env", env={"EDX_FLAG": "1"})["ok"]
        assert sys.modules["edx_env"].SEEN == "1"
        assert "EDX_FLAG" not in os.environ
    finally:
        sys.modules.pop("edx_env", None)


# A package that wraps functions in torch.compile while it imports, as bitsandbytes 0.50's default backend does
# (backends/default/ops.py: _try_torch_compile falls back to the plain function when compiling fails)
GUARDED_PACKAGE = """import torch

def _try_compile(fn):
    try:
        compiled = torch.compile(fn, dynamic=False)
    except Exception:
        return fn
    return compiled

@_try_compile
def double(x):
    return x * 2
"""
# ... and one whose bare call raises in the real torch.compile at decoration (mode and options both given)
UNGUARDED_PACKAGE = """import torch

@torch.compile(mode="default", options={"max_autotune": False})
def double(x):
    return x * 2
"""
DEFERRED_IMPORT = """import sys, json
sys.path.insert(0, sys.argv[1])
import torch
from envdoctor.target.probekit.imports import record_import
fact = record_import("pkg", sys.argv[2], defer_compile=torch)
print(json.dumps({"ok": fact["ok"], "error_type": fact.get("error_type"), "error": fact.get("error"),
                  "compile_deferred": fact.get("compile_deferred"), "dynamo": "torch._dynamo" in sys.modules,
                  "still_compile": torch.compile.__module__}))
"""


def _deferred_import(tmp_path: Path, name: str, source: str) -> Dict[str, Any]:
    (tmp_path / ("%s.py" % name)).write_text(source, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", DEFERRED_IMPORT, str(tmp_path), name], capture_output=True, text=True,
                          timeout=300, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_a_guarded_torch_compile_is_deferred_and_torch_dynamo_never_imported(tmp_path: Path) -> None:
    """The real torch: the package imports, its one torch.compile call sits in a broad try (so the real one could not
    have failed the import), torch._dynamo is never loaded, and torch.compile is torch's own again afterwards."""
    got = _deferred_import(tmp_path, "guarded_pkg", GUARDED_PACKAGE)
    assert got == {"ok": True, "error_type": None, "error": None, "compile_deferred": {"calls": 1, "unguarded": 0},
                   "dynamo": False, "still_compile": "torch"}


def test_an_unguarded_torch_compile_is_replayed_and_its_failure_is_the_imports(tmp_path: Path) -> None:
    """A bare decorator: the real torch.compile is run afterwards with the same arguments, and what it raises is recorded as
    the import's failure, the one a plain import of the package shows (run beside it)."""
    got = _deferred_import(tmp_path, "unguarded_pkg", UNGUARDED_PACKAGE)
    plain = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import unguarded_pkg",
                            str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 1
    assert (got["ok"], got["error_type"], got["compile_deferred"]) == (False, "RuntimeError", {"calls": 1, "unguarded": 1})
    assert "RuntimeError: %s" % got["error"] in plain.stderr.strip().splitlines()[-1]


def test_the_lines_a_broad_try_guards(tmp_path: Path) -> None:
    from envdoctor.target.probekit.compile_deferral import guarded_lines

    source = tmp_path / "m.py"
    source.write_text("\n".join([
        "try:",                      # 1
        "    a = 1",                 # 2 guarded (except Exception)
        "except Exception:",         # 3
        "    pass",                  # 4
        "try:",                      # 5
        "    b = 2",                 # 6 not guarded (ValueError only)
        "except ValueError:",        # 7
        "    pass",                  # 8
        "try:",                      # 9
        "    c = (3,",               # 10 guarded (a tuple naming Exception), both lines of the statement
        "         4)",               # 11
        "except (KeyError, Exception):",
        "    pass",
        "try:",                      # 14
        "    d = 5",                 # 15 guarded (bare except)
        "except:",
        "    pass",
        "e = 6",                     # 18
    ]) + "\n", encoding="utf-8")
    assert guarded_lines(str(source)) == {2, 10, 11, 15}
    assert guarded_lines(str(tmp_path / "missing.py")) == set()
    (tmp_path / "bad.py").write_text("def (:\n", encoding="utf-8")
    assert guarded_lines(str(tmp_path / "bad.py")) == set()


# ---------------------------------------------------------------- end to end


def test_end_to_end_on_this_machine() -> None:
    from importlib.metadata import PackageNotFoundError, version

    installed = []
    for dist in ("torchvision", "torchaudio", "xformers", "flash-attn", "bitsandbytes", "triton", "apex"):
        try:
            installed.append((dist, version(dist)))
        except PackageNotFoundError:
            pass
    if installed:
        pytest.skip("this environment has compiled companions: %s" % installed)
    check = check_of(run_json("--only", ID), ID)
    assert check["status"] == "ok" and check["findings"] == []
    assert check["summary"] == "no compiled extensions installed"
    assert check["facts"]["torch"]["version"].startswith("2.")


# The slow tests share one venv, each installing the companions it needs: one test process runs them in turn.
ABI_VENV = pytest.mark.xdist_group("extension-abi-venv")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One venv with the CPU torch 2.13.0, shared by the slow tests (ABI_VENV); each installs the companions it needs."""
    python = make_venv(tmp_path_factory.mktemp("abi") / "v")
    pip_install(python, "torch==2.13.0")
    return python


def swap(python: Path, *wanted: str) -> None:
    """Leave exactly these companions installed beside torch (with --no-deps: torch must not move)."""
    present = subprocess.run([str(python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True)
    names = {p["name"].lower() for p in json.loads(present.stdout)}
    stale = [n for n in ("torchvision", "torchaudio", "xformers", "bitsandbytes", "apex")
             if n in names and not any(w == n or w.startswith(n + "==") for w in wanted)]
    if stale:
        subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "-q", *stale], check=True, capture_output=True)
    if wanted:
        pip_install(python, "--no-deps", *wanted)


def check_venv(python: Path) -> Dict[str, Any]:
    proc = run_envdoctor("check", "--json", "--only", ID, "--python", str(python))
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    report["exit_code"] = proc.returncode
    return report


@ABI_VENV
@pytest.mark.slow
def test_real_torchvision_0_28_0_beside_cpu_torch_2_13_0(venv: Path) -> None:
    # with its dependencies, so that the pinned pair (torch==2.13.0) has its _C loaded alone first: that load fails
    # (a CUDA build), and the full import records the failure as the user meets it
    swap(venv, "torchvision==0.28.0", "numpy", "pillow")
    report = check_venv(venv)
    assert report["exit_code"] == 1
    check = check_of(report, ID)
    assert check["status"] == "error"
    (finding,) = check["findings"]
    assert (finding["code"], finding["severity"]) == ("import-fails", "error")
    assert finding["subject"]["package"] == "torchvision" and finding["subject"]["error_type"] == "RuntimeError"
    assert finding["evidence"][0] == "import torchvision: RuntimeError: " + NMS
    torch = check["facts"]["torch"]
    assert torch["version"] == "2.13.0+cpu" and torch["cuda"] is None
    assert [(e["name"], e["version"]) for e in check["facts"]["extensions"]] == [("torchvision", "0.28.0")]
    assert [op["op"] for op in check["facts"]["ops"]] == ["import torchvision"]
    # read from its _C.so's fat binaries, as `cuobjdump --list-elf --list-ptx` lists them: the cu130 build's GPUs
    assert check["facts"]["extensions"][0]["cuda_archs"] == {"_C.so": TORCHVISION_CU130_ARCHS}
    assert finding["remedies"][0]["commands"] == [
        "%s -m pip install torchvision==0.28.0+cpu torch==2.13.0+cpu --index-url %s" % (report["environment"]["executable"], CPU_INDEX)]
    # the recorded snapshot shows the same thing
    recorded = check_of(TV028, ID)["findings"][0]
    assert (recorded["code"], recorded["title"]) == (finding["code"], finding["title"])


@ABI_VENV
@pytest.mark.slow
def test_real_torchvision_0_27_0_is_paired_with_torch_2_12(venv: Path) -> None:
    swap(venv, "torchvision==0.27.0")
    check = check_of(check_venv(venv), ID)
    findings = {f["code"]: f for f in check["findings"]}
    assert sorted(findings) == ["import-fails", "version-mismatch"]
    mismatch = findings["version-mismatch"]
    assert mismatch["severity"] == "warning"
    assert mismatch["subject"] == {"package": "torchvision", "version": "0.27.0", "torch": "2.13.0+cpu",
                                   "expected_torch": "==2.12.0", "paired": "0.28.0"}
    assert any("torchvision==0.28.0+cpu torch==2.13.0+cpu" in c for r in mismatch["remedies"] for c in r["commands"])
    # what really happens at import with 0.27.0: the same missing operator
    assert findings["import-fails"]["evidence"][0] == "import torchvision: RuntimeError: " + NMS


@ABI_VENV
@pytest.mark.slow
def test_real_xformers_built_for_torch_2_9_1(venv: Path) -> None:
    swap(venv, "xformers==0.0.33.post2")
    try:
        check = check_of(check_venv(venv), ID)
    finally:
        swap(venv)
    xformers, ops = check["facts"]["ops"]
    assert xformers["ok"] and any("xFormers was built for:\n    PyTorch 2.9.1+cu128 with CUDA 1208 (you have 2.13.0+cpu)" in t
                                  for t in xformers["log"])
    assert not ops["ok"] and ops["module"] == "xformers.ops"
    findings = {f["code"]: f for f in check["findings"]}
    assert sorted(findings) == ["import-fails", "version-mismatch"]
    assert findings["version-mismatch"]["subject"]["paired"] == "0.0.35"
    assert findings["import-fails"]["subject"]["module"] == "xformers.ops"
    assert 0 <= xformers["import_s"] < 60


@ABI_VENV
@pytest.mark.slow
def test_real_bitsandbytes_imports_with_its_torch_compile_deferred(venv: Path) -> None:
    """bitsandbytes 0.50.2 wraps its default backend's ops in torch.compile while it imports (all of torch._dynamo: 2.4 s
    on this machine, 4 s on an H200); every such call sits in its own fallback, so the probe defers them and the
    import is what the user's is."""
    swap(venv, "bitsandbytes==0.50.2", "numpy", "packaging")
    try:
        check = check_of(check_venv(venv), ID)
    finally:
        swap(venv)
    (op,) = [o for o in check["facts"]["ops"] if o["package"] == "bitsandbytes"]
    assert op["ok"] is True and op["version"] == "0.50.2"
    assert op["compile_deferred"]["calls"] >= 4 and op["compile_deferred"]["unguarded"] == 0
    assert check["findings"] == [] and "bitsandbytes 0.50.2 imports" in check["summary"]


@ABI_VENV
@pytest.mark.slow
def test_real_pypi_apex_impostor_is_left_to_the_apex_check(venv: Path) -> None:
    swap(venv, "apex")  # --no-deps: the web toolkit 0.9.10.dev0 (docs/facts.md §7 "apex")
    try:
        check = check_of(check_venv(venv), ID)
    finally:
        swap(venv)
    assert check["findings"] == [] and check["facts"]["ops"] == []  # nothing of it was imported
    (skipped,) = check["facts"]["skipped"]
    assert skipped["name"] == "apex" and skipped["version"].startswith("0.9.")
    assert check["summary"] == "no compiled extensions installed"


def test_a_crash_inside_an_import_still_reaches_the_real_stderr(tmp_path: Path) -> None:
    """While fds 1/2 go to the capture file, the worker's faulthandler (on a copy of the real
    stderr) must still write to the runner's stderr."""
    (tmp_path / "edx_segv.py").write_text("import ctypes, os\nos.write(2, b'before the crash\\n')\nctypes.string_at(0)\n")
    script = textwrap.dedent("""
        import sys
        from envdoctor.target.worker import _FaultLog
        faults = _FaultLog()
        sys.path.insert(0, %r)
        from envdoctor.target.probekit.imports import record_import
        record_import("edx", "edx_segv")
    """ % str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert proc.returncode != 0
    assert "Fatal Python error: Segmentation fault" in proc.stderr
    assert "edx_segv.py" in proc.stderr


def test_the_triton_torch_pins_is_not_imported_on_an_old_stack(old_torch_python: Path) -> None:
    """torch 2.0.1 from the index pins triton==2.0.0; importing that triton loads all of its LLVM for what
    torch needs only when it compiles. The pinned pair is judged by its pin, and the report says so."""
    report = run_json("--no-config", "--only", "extension-abi", "--python", str(old_torch_python))
    [check] = report["checks"]
    triton = next(e for e in check["facts"]["extensions"] if e["name"] == "triton")
    assert triton["version"] == "2.0.0" and triton["not_imported"].startswith("the release torch pins (triton==2.0.0")
    assert not any(op.get("package") == "triton" for op in check["facts"]["ops"])
    assert "triton 2.0.0 not imported: the release torch pins" in check["summary"]
    assert check["findings"] == []


def test_a_compiled_library_is_loaded_alone_for_real_and_its_operator_looked_up() -> None:
    """_load_alone as torchvision's pinned pair gets it, on a library every torch has (libtorch_cpu registers aten::add):
    the real torch.ops.load_library and operator lookup; an operator the library lacks, or no such library, is None (the
    full import then runs)."""
    import torch
    from envdoctor.checks.extension_abi.probe import _load_alone

    lib = str(Path(torch.__file__).parent / "lib")
    fact = _load_alone(torch, "torch", lib, torch.__version__, ("libtorch_cpu", "aten", "add"))
    assert fact is not None and (fact["op"], fact["ok"], fact["package"], fact["operator"]) == (
        "load torch.libtorch_cpu", True, "torch", "aten::add")
    assert fact["file"].startswith(lib) and fact["import_s"] >= 0
    assert _load_alone(torch, "torch", lib, None, ("libtorch_cpu", "aten", "no_such_operator")) is None
    assert _load_alone(torch, "torch", lib, None, ("libno_such_library", "aten", "add")) is None
    assert _load_alone(torch, "torchvision", None, None) is None


def test_the_load_alone_path_needs_the_exact_pin_and_every_dependency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A companion is released with this torch only where it pins the installed release exactly (a local label like
    +cpu is PEP 440's `==` too) and nothing it needs unconditionally is missing; real METADATA files, read by
    importlib.metadata."""
    from envdoctor.checks.extension_abi.probe import _released_with_torch

    from envdoctor.target.probekit.distributions import requires

    def dist(name: str, *lines: str) -> None:
        info = tmp_path / ("%s-1.0.dist-info" % name)
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n%s" % (
            name, "".join("Requires-Dist: %s\n" % r for r in lines)), encoding="utf-8")

    dist("tvlike", "numpy", "torch (==2.13.0)", "pillow (!=8.3.*,>=5.3.0)", "scipy ; extra == 'scipy'")
    dist("numpy")
    monkeypatch.syspath_prepend(str(tmp_path))
    torch_facts = {"dist_version": "2.13.0+cpu"}
    assert _released_with_torch(requires("tvlike"), torch_facts) is None  # pillow is missing: the full import shows it
    dist("pillow")
    assert _released_with_torch(requires("tvlike"), torch_facts) == "torch==2.13.0"
    assert _released_with_torch(requires("tvlike"), {"dist_version": "2.12.0"}) is None
    ranged = [r for r in requires("tvlike") if not r.startswith("torch")] + ["torch>=2.4,<3"]
    assert _released_with_torch(ranged, torch_facts) is None


def test_a_triton_other_than_the_pin_is_still_imported_and_judged() -> None:
    facts = {"torch": {"version": "2.0.1", "dist_version": "2.0.1", "requires": ['triton==2.0.0; platform_system == "Linux"']},
             "extensions": [{"name": "triton", "dist": "triton", "version": "2.1.0"}],
             "ops": [{"op": "import triton", "package": "triton", "module": "triton", "ok": True}], "skipped": []}
    [finding] = CHECK.judge(facts, ENV)
    assert finding.code == "version-mismatch" and "triton 2.1.0 is not the release torch 2.0.1 requires (triton==2.0.0)" in finding.title


# ---- the GPUs a companion's compiled code is built for


def with_gpu(name: str, capability: str) -> Target:
    """The recorded machine's Target with one GPU it could not have (this machine has none)."""
    return dataclasses.replace(ENV, gpus=(Gpu(name, "cuda:0", capability),))


def test_the_companions_fat_binaries_are_read_from_their_files() -> None:
    """Recorded from the real wheels (torchvision 0.27.0 and torchaudio 2.11.0 cu130 builds, xformers 0.0.33.post2):
    each compiled file with CUDA code and the architectures its fat binaries hold; files without any (torchvision's
    image.so) are left out."""
    archs = {e["name"]: e.get("cuda_archs") for e in facts_of(OLD, ID)["extensions"]}
    assert archs["torchvision"] == {"_C.so": TORCHVISION_CU130_ARCHS}
    assert archs["torchaudio"] == {"lib/libtorchaudio.abi3.so": TORCHVISION_CU130_ARCHS,
                                   "lib/torchaudio_prefixctc.abi3.so": TORCHVISION_CU130_ARCHS}
    # xformers' Hopper code is the architecture-specific sm_90a (as cuobjdump 13.5 lists its cubins), runnable on 9.0 only
    assert archs["xformers"] == {"_C.so": ["sm_75", "sm_80", "compute_80", "sm_90a"],
                                 "flash_attn_3/_C.so": ["sm_80", "compute_80", "sm_90a"]}
    assert archs["bitsandbytes"] == {}  # on a CPU torch it loads none of its CUDA libraries


@pytest.mark.parametrize("gpu, capability, lacking", [
    ("NVIDIA H100 80GB HBM3", "9.0", []),  # the recorded H100's capability: every companion has sm_90 code
    ("NVIDIA GeForce RTX 5090", "12.0", []),  # sm_120 cubins in torchvision/torchaudio; xformers' compute_80 PTX compiles
    ("Tesla T4", "7.5", []),  # xformers' FlashAttention-3 module has no sm_75 code, but its main library has
    ("NVIDIA GeForce GTX 1080", "6.1", ["torchaudio", "torchvision", "xformers"]),  # Pascal: below every wheel's oldest
])
def test_a_companion_without_code_for_a_gpu_is_named(gpu: str, capability: str, lacking: List[str]) -> None:
    findings = [f for f in judge(CHECK, facts_of(OLD, ID), with_gpu(gpu, capability)) if f.code == "no-kernel-for-gpu"]
    assert sorted(f.subject["package"] for f in findings) == lacking
    if lacking:
        xformers = of(findings, "no-kernel-for-gpu", "xformers")
        assert xformers.severity is Severity.ERROR
        assert xformers.title == "xformers 0.0.33.post2 has no CUDA code for NVIDIA GeForce GTX 1080 (sm_61): its compiled kernels cannot run there"
        assert xformers.evidence[:2] == ("_C.so: CUDA code for sm_75 sm_80 compute_80 sm_90a",
                                         "flash_attn_3/_C.so: CUDA code for sm_80 compute_80 sm_90a")
        assert "no kernel image is available for execution on the device" in xformers.evidence[2]
        assert xformers.remedies[-1].id == "build-extension-for-gpu" and "TORCH_CUDA_ARCH_LIST=6.1" in xformers.remedies[-1].summary


def test_architecture_specific_code_is_read_with_its_suffix_and_runs_on_its_own_gpu_only() -> None:
    """tests/data/fatbin/archs.o (its make.sh: NVIDIA's ptxas and fatbinary 13.5, every entry compressed): cubins for
    sm_80, sm_90a, sm_100f and sm_120 and PTX for sm_80 and sm_90a, read as cuobjdump 13.5 lists them (the family suffix
    `f` is not shown there either). Code for sm_90a runs on a 9.0 GPU only, and its PTX compiles for no other."""
    from envdoctor.target import cuda_tables as ct
    from envdoctor.target.probekit.fatbin import cuda_archs

    archs = cuda_archs(str(ROOT / "tests" / "data" / "fatbin" / "archs.o"))
    assert archs == ["sm_80", "compute_80", "sm_90a", "compute_90a", "sm_100", "sm_120"]
    hopper_only = ["sm_90a", "compute_90a"]
    assert ct.arch_coverage(hopper_only, (9, 0)) == ("native", "sm_90a")
    assert ct.arch_coverage(hopper_only, (10, 0)) is None and ct.arch_coverage(hopper_only, (12, 0)) is None
    assert ct.arch_coverage(["sm_90", "compute_90"], (10, 0)) == ("ptx", "compute_90")


def test_the_fat_binary_reader_agrees_with_torchs_own_arch_list(old_torch_python: Path) -> None:
    """torch 2.0.1's cu117 build as pip installs it: the architectures read from libtorch_cuda.so's fat binaries are
    exactly the list torch reports it was built for (recorded in cpu-torch-2.0.1.json: torch._C._cuda_getArchFlags())."""
    from envdoctor.target.probekit.fatbin import cuda_archs

    site = next(old_torch_python.parent.parent.glob("lib/python3*/site-packages/torch/lib"))
    flags = check_of(load_fixture("cpu-torch-2.0.1.json"), "cuda-compat")["facts"]["torch"]["arch_flags"]
    assert cuda_archs(str(site / "libtorch_cuda.so")) == flags.split() == ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"]
    assert cuda_archs(str(site / "libtorch_cpu.so")) == []  # a shared object without CUDA code
    assert cuda_archs(str(old_torch_python)) is None or cuda_archs(str(old_torch_python)) == []  # the interpreter
    assert cuda_archs(str(site.parent / "__init__.py")) is None  # not a shared object


def test_explain_names_the_companion_for_a_no_kernel_image_error() -> None:
    """A "no kernel image" traceback read as a torch without code for the GPU, confirmed here by the companion's file:
    the recorded companions judged on a GTX 1080 (a GPU this machine cannot have)."""
    from envdoctor.pipeline.explain.confirm import apply_verdicts
    from envdoctor.pipeline.explain.match import match
    from envdoctor.pipeline.explain.reader import read_text

    text = ('Traceback (most recent call last):\n  File "/home/me/venv/lib/python3.11/site-packages/xformers/ops/fmha/__init__.py", '
            'line 306, in _memory_efficient_attention_forward\n    out, *_ = op.apply(inp, needs_gradient=False)\n'
            "RuntimeError: CUDA error: no kernel image is available for execution on the device\n")
    diagnoses = match(read_text(text), [c.check for c in load_checks(plugins=False)[0]]).diagnoses
    assert (diagnoses[0].check, diagnoses[0].code) == ("cuda-compat", "no-kernel-image")
    recorded = copy.deepcopy(OLD)
    recorded["environment"]["gpus"] = [Gpu("NVIDIA GeForce GTX 1080", "cuda:0", "6.1").to_dict()]
    apply_verdicts(diagnoses, rejudged(recorded))  # recorded without a GPU, before no-kernel-for-gpu: judged here on one
    assert diagnoses[0].confirmed is True
    assert diagnoses[0].confirmation.startswith("confirmed here: ") and "has no CUDA code for NVIDIA GeForce GTX 1080 (sm_61)" in diagnoses[0].confirmation


@pytest.fixture(scope="module")
def bitsandbytes_libraries(tmp_path_factory: Any) -> Path:
    """bitsandbytes 0.50.2's Linux wheel as pip downloads it (the release in OLD): its folder with the per-CUDA libraries."""
    import zipfile

    folder = tmp_path_factory.mktemp("bnb")
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--platform",
                    "manylinux_2_24_x86_64", "--python-version", "3.11", "-d", str(folder), "bitsandbytes==0.50.2"],
                   check=True, capture_output=True)
    [wheel] = folder.glob("bitsandbytes-0.50.2-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder, [n for n in archive.namelist() if re.match(r"bitsandbytes/libbitsandbytes_cuda\d+\.so$", n)])
    return folder / "bitsandbytes"


def bitsandbytes_read(folder: Path, torch_cuda: Any) -> Dict[str, Any]:
    """extension-abi's entry for bitsandbytes as the probe reads its files beside a torch of this CUDA release."""
    probe = sys.modules["envdoctor.checks.extension_abi.probe"]
    loaded, unloaded = probe._bnb_archs(str(folder), torch_cuda)
    return {"name": "bitsandbytes", "dist": "bitsandbytes", "version": "0.50.2", "cuda_archs": loaded, "cuda_archs_unloaded": unloaded}


@pytest.mark.slow
def test_bitsandbytes_is_judged_by_the_library_it_loads(bitsandbytes_libraries: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bitsandbytes ships a library per CUDA release and loads the one of torch's CUDA: 0.50.2's CUDA 12.8 library
    dropped Pascal (sm_60), its 12.6 one kept it; its CUDA 13 libraries start at Turing (sm_75). A CPU torch loads none."""
    monkeypatch.delenv("BNB_CUDA_VERSION", raising=False)  # the probe reads it: not the test machine's
    cu128 = bitsandbytes_read(bitsandbytes_libraries, "12.8")
    assert cu128["cuda_archs"] == {"libbitsandbytes_cuda128.so": ["sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100",
                                                                  "sm_120", "compute_120"]}
    assert sorted(cu128["cuda_archs_unloaded"]) == ["libbitsandbytes_cuda121.so", "libbitsandbytes_cuda124.so", "libbitsandbytes_cuda126.so"]
    assert bitsandbytes_read(bitsandbytes_libraries, None) == dict(cu128, cuda_archs={}, cuda_archs_unloaded={})
    monkeypatch.setenv("BNB_CUDA_VERSION", "126")  # bitsandbytes' own override: the probe reads the library it names
    assert list(bitsandbytes_read(bitsandbytes_libraries, "12.8")["cuda_archs"]) == ["libbitsandbytes_cuda126.so"]
    monkeypatch.delenv("BNB_CUDA_VERSION")

    def findings(entry: Dict[str, Any], gpu: str, capability: str, cuda: str) -> List[Finding]:
        facts = copy.deepcopy(facts_of(OLD, ID))
        facts["torch"]["cuda"] = cuda
        facts["extensions"] = [entry]
        return [f for f in judge(CHECK, facts, with_gpu(gpu, capability)) if f.code == "no-kernel-for-gpu"]

    [pascal] = findings(cu128, "NVIDIA GeForce GTX 1080", "6.1", "12.8")
    assert pascal.title == "bitsandbytes 0.50.2 has no CUDA code for NVIDIA GeForce GTX 1080 (sm_61): its compiled kernels cannot run there"
    assert pascal.remedies[0].id == "bnb-cuda-version" and pascal.remedies[0].action == {"set_env": {"BNB_CUDA_VERSION": "126"}}
    assert findings(cu128, "Tesla V100-SXM2-16GB", "7.0", "12.8") == []
    [volta] = findings(bitsandbytes_read(bitsandbytes_libraries, "13.0"), "Tesla V100-SXM2-16GB", "7.0", "13.0")
    assert "bnb-cuda-version" not in [r.id for r in volta.remedies]  # no CUDA 13 library of it has sm_70 code


@pytest.mark.slow
def test_the_fat_binary_reader_agrees_with_cuobjdump(bitsandbytes_libraries: Path, tmp_path: Path) -> None:
    """NVIDIA's own cuobjdump (its PyPI wheel, nvidia-cuda-cuobjdump) lists the cubins and PTX of each of bitsandbytes'
    libraries it can read: the reader finds the same architectures, compressed entries included."""
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--platform",
                    "manylinux_2_17_x86_64", "-d", str(tmp_path), "nvidia-cuda-cuobjdump==13.5.37"], check=True, capture_output=True)
    [wheel] = tmp_path.glob("nvidia_cuda_cuobjdump-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith("bin/cuobjdump")]
        tool = Path(archive.extract(name, tmp_path))
    tool.chmod(0o755)
    from envdoctor.target.probekit.fatbin import cuda_archs

    compared = []
    for library in sorted(bitsandbytes_libraries.glob("libbitsandbytes_cuda*.so")):
        proc = subprocess.run([str(tool), "-all", "--list-elf", "--list-ptx", str(library)], capture_output=True, text=True)
        if "fatal" in proc.stderr:  # cuobjdump 13.5 stops at the first entry of the CUDA 12.1 build ("Invalid ELF")
            continue
        listed = {("compute_" if kind == "ptx" else "sm_") + arch for arch, kind in re.findall(r"\.sm_(\w+)\.(cubin|ptx)$", proc.stdout, re.M)}
        assert listed and set(cuda_archs(str(library)) or ()) == listed, library.name
        compared.append(library.name)
    assert len(compared) >= 6, compared


@pytest.mark.slow
def test_a_windows_dll_reads_as_its_linux_build(tmp_path: Path) -> None:
    """xformers 0.0.33.post2's Windows wheel as pip downloads it: its _C.pyd (a PE file, the fat binaries in a section
    cut to `.nv_fatb`) holds code for the same architectures as the Linux wheel's _C.so recorded in OLD."""
    import zipfile

    from envdoctor.target.probekit.fatbin import cuda_archs

    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--platform",
                    "win_amd64", "--python-version", "3.11", "-d", str(tmp_path), "xformers==0.0.33.post2"],
                   check=True, capture_output=True)
    [wheel] = tmp_path.glob("xformers-0.0.33.post2-*-win_amd64.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extract("xformers/_C.pyd", tmp_path)
    linux = next(e for e in facts_of(OLD, ID)["extensions"] if e["name"] == "xformers")["cuda_archs"]["_C.so"]
    assert cuda_archs(str(tmp_path / "xformers" / "_C.pyd")) == linux == ["sm_75", "sm_80", "compute_80", "sm_90a"]
