"""tests/fixtures/record.py: recorded snapshots keep the relations between paths the
rules read, and lose the recording machine's names for them."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict

import pytest
from conftest import FIXTURES, ROOT, load_fixture


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fixture_record", FIXTURES / "record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


record = _load()

DEV = {  # a development machine: a pyenv Python, a checkout in the home directory with its venv inside
    "base_prefix": "/home/alice/.pyenv/versions/3.11.7",
    "source": "/home/alice/src/envdoctor",
    "home": "/home/alice",
    "temp": "/tmp",
    "tool_prefix": "/home/alice/src/envdoctor/.venv",
}


def _report(prefix: str, *strings: str) -> Dict[str, Any]:
    return {"schema": "envdoctor/1", "environment": {"prefix": prefix, "executable": prefix + "/bin/python3"},
            "checks": [{"id": "x", "facts": {"strings": list(strings)}}]}


def _strings(report: Dict[str, Any]) -> list:
    return report["checks"][0]["facts"]["strings"]


def test_every_root_becomes_its_conventional_path_longest_first() -> None:
    report = _report(
        "/home/alice/src/envdoctor/.venv",
        "/home/alice/src/envdoctor/.venv/lib/python3.11/site-packages/torch/__init__.py",
        'Traceback (most recent call last):\n  File "/home/alice/src/envdoctor/envdoctor/worker.py", line 93, in import_torch',
        "/home/alice/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py:126 in import_module",
        "/home/alice/.cache/huggingface",
        "loading /tmp/pytest-of-alice/pytest-7/test_abi0/lib/_C.so: libc10_cuda.so: cannot open shared object file",
        "/tmp/tmpva3quqlu/v/bin/python -m pip uninstall -y apex",
        "PATH=/home/alice/src/envdoctor/.venv/bin:/home/alice/.local/bin:/usr/local/bin",
    )
    out = record.normalize(report, **DEV)
    assert out["environment"] == {"prefix": "/home/me/venv", "executable": "/home/me/venv/bin/python3"}
    assert _strings(out) == [
        "/home/me/venv/lib/python3.11/site-packages/torch/__init__.py",
        'Traceback (most recent call last):\n  File "/src/envdoctor/envdoctor/worker.py", line 93, in import_torch',
        "/usr/local/lib/python3.11/importlib/__init__.py:126 in import_module",
        "/home/me/.cache/huggingface",
        "loading /tmp/envdoctor-test/lib/_C.so: libc10_cuda.so: cannot open shared object file",
        "/tmp/envdoctor-test-2/v/bin/python -m pip uninstall -y apex",
        "PATH=/home/me/venv/bin:/home/me/.local/bin:/usr/local/bin",
    ]


def test_paths_keep_their_relations_to_the_prefix() -> None:
    # the cuBLAS rule: a library under <prefix>/lib/ is the environment's own; site-packages marks a wheel
    prefix = "/home/alice/miniconda3/envs/sd"
    libs = [prefix + "/lib/libcublasLt.so.12", prefix + "/lib/python3.10/site-packages/nvidia/cublas/lib/libcublas.so.12",
            "/home/alice/miniconda3/lib/libcublas.so.11", "/usr/local/cuda-12.0/lib64/libcublasLt.so.12"]
    out = record.normalize(_report(prefix, *libs), base_prefix="/home/alice/miniconda3", home="/home/alice")
    new_prefix = out["environment"]["prefix"]
    assert new_prefix == "/home/me/venv"
    assert [p.startswith(new_prefix + "/lib/") for p in _strings(out)] == [True, True, False, False]
    assert ["site-packages" in p for p in _strings(out)] == ["site-packages" in p for p in libs]
    assert _strings(out)[2:] == ["/usr/local/lib/libcublas.so.11", "/usr/local/cuda-12.0/lib64/libcublasLt.so.12"]


def test_a_prefix_that_is_no_venv_is_the_system_python() -> None:
    out = record.normalize(_report("/opt/python/3.8.18", "/opt/python/3.8.18/bin/python"), base_prefix="/opt/python/3.8.18", home="/home/alice")
    assert out["environment"]["prefix"] == "/usr/local" and _strings(out) == ["/usr/local/bin/python"]


def test_only_whole_paths_are_rewritten_and_system_locations_never() -> None:
    strings = ("/var/tmp/x", "/home/alice2/etc", "/srv/envdoctor-old/x", "/usr/local/bin/nvcc", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
               "~/home/alice/x", "file:///home/alice/notes.txt")
    out = record.normalize(_report("/usr", *strings), base_prefix="/usr", source="/srv/envdoctor", home="/home/alice", temp="/tmp")
    assert out["environment"]["prefix"] == "/usr"
    assert _strings(out) == ["/var/tmp/x", "/home/alice2/etc", "/srv/envdoctor-old/x", "/usr/local/bin/nvcc",
                             "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "~/home/alice/x", "file:///home/me/notes.txt"]
    assert record.normalize(_report("/x/venv", "/etc/passwd"), home="/")["checks"] == _report("/x/venv", "/etc/passwd")["checks"]


def test_another_temporary_root_becomes_tmp() -> None:
    out = record.normalize(_report("/scratch/t/tmpabcd1234/v", "/scratch/t/tmpabcd1234/v/bin/python", "/scratch/t/other",
                                   "/scratch/t/tmpabcd1234/log"), temp="/scratch/t")
    assert _strings(out) == ["/home/me/venv/bin/python", "/tmp/other", "/tmp/envdoctor-test/log"]


def test_keys_are_rewritten_in_place_and_the_input_is_left_alone() -> None:
    report = _report("/home/alice/venvs/a", "x")
    report["checks"][0]["facts"]["by_path"] = {"/home/alice/venvs/a/lib": 1, "/home/alice/b": 2, "plain": 3}
    before = copy.deepcopy(report)
    out = record.normalize(report, **DEV)
    assert report == before
    assert list(out["checks"][0]["facts"]["by_path"].items()) == [("/home/me/venv/lib", 1), ("/home/me/b", 2), ("plain", 3)]
    assert list(out) == list(report) and list(out["checks"][0]) == list(report["checks"][0])


def test_normalizing_twice_changes_nothing() -> None:
    once = record.normalize(_report("/tmp/tmpabcdefgh/v", "/tmp/tmpabcdefgh/x", "/home/alice/y", "/home/alice/src/envdoctor/z"), **DEV)
    assert record.normalize(once, **DEV) == once
    for name in ("cpu-torch-2.13.0.json", "impostor-apex-torch-2.13.0.json", "old-companions-on-cpu-torch-2.13.0.json"):
        assert record.normalize(load_fixture(name), **DEV) == load_fixture(name)


def test_normalize_mode_rewrites_a_file_in_place_in_the_same_layout(tmp_path: Path) -> None:
    original = _report("/home/alice/venvs/a", "/home/alice/venvs/a/bin/python · torch 2.13.0", "/home/alice/.cache")
    text = json.dumps(original, indent=2, ensure_ascii=True) + "\n"  # a report printed to a non-UTF-8 stdout
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    assert record.main(["--normalize", str(path), "--home", "/home/alice"]) == 0
    written = path.read_text(encoding="utf-8")
    assert "\\u00b7" in written and "alice" not in written
    assert written == text.replace("/home/alice/venvs/a", "/home/me/venv").replace("/home/alice", "/home/me")


def test_recording_leaves_none_of_this_machines_paths(tmp_path: Path) -> None:
    out = tmp_path / "recorded.json"
    proc = subprocess.run([sys.executable, str(FIXTURES / "record.py"), str(out), "--", "--only", "torch-install"],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    report = json.loads(text)
    assert report["environment"]["prefix"] in ("/home/me/venv", "/usr/local")
    assert report["environment"]["executable"].startswith(report["environment"]["prefix"] + "/bin/python")
    for machine_path in {str(ROOT), sys.prefix, str(Path.home())} - {"/", "/usr", "/usr/local", "/home/me"}:
        assert machine_path + "/" not in text and '"%s"' % machine_path not in text, machine_path
    assert text.endswith("}\n") and text.startswith('{\n  "schema": "envdoctor/1",')


def test_recording_takes_one_output_file(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        record.main(["a.json", "b.json", "--", "--only", "fp8"])
    assert "one OUT.json" in capsys.readouterr().err
