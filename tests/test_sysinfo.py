"""System facts (envdoctor/target/sysinfo.py) against the tool they replace in a bug report,
`python -m torch.utils.collect_env`, run for real on this machine, fact by fact;
their rendering; and their survival in a hostile environment."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
from conftest import ROOT, find_python, load_fixture, run_envdoctor

from envdoctor.render.markdown import render_markdown
from envdoctor.target import sysinfo
from envdoctor.target.model import Report, report_from_dict

NOT_COLLECTED = {"Could not collect", "N/A", "None", "-", ""}
PYTHON_38 = find_python("3.8")


class CollectEnv:
    """collect_env's text, read by its labels ("GCC version: ...", "Model name:  ...", "[pip3] x==1")."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.labels: Dict[str, str] = {}
        self.pip: Dict[str, str] = {}
        for line in text.splitlines():
            pip = re.match(r"^\[pip3?\] ([A-Za-z0-9_.\-]+)==(\S+)$", line)
            if pip:
                self.pip[_normal(pip.group(1))] = pip.group(2)
                continue
            match = re.match(r"^([A-Za-z][^:\[]*?):\s*(.*)$", line)
            if match:
                self.labels.setdefault(match.group(1).strip(), match.group(2).strip())

    def value(self, label: str) -> Optional[str]:
        """The fact, or None where collect_env says it could not collect it."""
        assert label in self.labels, "collect_env printed no %r line" % label
        value = self.labels[label]
        return None if value in NOT_COLLECTED else value


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def collect_env() -> CollectEnv:
    proc = subprocess.run([sys.executable, "-m", "torch.utils.collect_env"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return CollectEnv(proc.stdout)


@pytest.fixture(scope="module")
def system() -> Dict[str, Any]:
    return sysinfo.collect_system()


@pytest.fixture(scope="module")
def runtime() -> Dict[str, Any]:
    import torch

    return sysinfo.torch_runtime(torch)


# ---------------------------------------------------------------- fact by fact against collect_env


def test_both_dicts_have_exactly_the_documented_keys(system: Dict[str, Any], runtime: Dict[str, Any]) -> None:
    assert tuple(system) == sysinfo.SYSTEM_KEYS
    assert tuple(runtime) == sysinfo.TORCH_RUNTIME_KEYS
    assert set(system["tools"]) == set(sysinfo.TOOLS)
    assert tuple(system["packages"]) == sysinfo.PACKAGES
    assert system["errors"] == {} and runtime["errors"] == {}
    json.dumps(system, allow_nan=False)  # the JSON report takes them as they are
    json.dumps(runtime, allow_nan=False)
    for key in sysinfo.SYSTEM_KEYS:
        assert key in sysinfo.__doc__
    for key in sysinfo.TORCH_RUNTIME_KEYS:
        assert key in sysinfo.__doc__


def test_os_and_libc(collect_env: CollectEnv, system: Dict[str, Any]) -> None:
    assert collect_env.value("OS") == "%s (%s)" % (system["os"], system["machine"])
    assert collect_env.value("Libc version") == system["libc"]


def test_python(collect_env: CollectEnv, system: Dict[str, Any]) -> None:
    # "3.11.7 (main, May  9 2026, 07:35:25) [GCC 12.2.0] (64-bit runtime)"
    text = collect_env.value("Python version") or ""
    py = system["python"]
    assert text.split()[0] == py["version"]
    assert text.endswith("(%d-bit runtime)" % py["bits"])
    assert "[%s]" % py["compiler"] in text
    assert py["implementation"] == "CPython"
    assert py["venv"] == (sys.prefix != sys.base_prefix)


@pytest.mark.parametrize("label, tool", [
    ("GCC version", "gcc"), ("Clang version", "clang"), ("CMake version", "cmake"),
    ("CUDA runtime version", "nvcc"),  # collect_env's "CUDA runtime" is `nvcc --version`
])
def test_compilers(collect_env: CollectEnv, system: Dict[str, Any], label: str, tool: str) -> None:
    theirs, ours = collect_env.value(label), system["tools"][tool]
    if theirs is None:  # absent (or failing) on both sides
        assert ours is None or ours["error"], ours
        assert ours is not None or shutil.which(tool) is None
        return
    assert ours is not None and not ours["error"], ours
    assert ours["line"].endswith(theirs), (ours["line"], theirs)
    assert ours["version"] and ours["version"] in theirs
    assert ours["path"] == shutil.which(tool)


def test_cpu(collect_env: CollectEnv, system: Dict[str, Any]) -> None:
    if "Model name" not in collect_env.labels:
        pytest.skip("collect_env found no lscpu here")
    cpu = system["cpu"]
    assert cpu["model"] == collect_env.value("Model name")
    if "Vendor ID" in collect_env.labels:
        assert cpu["vendor"] == collect_env.value("Vendor ID")
    online = collect_env.value("On-line CPU(s) list")
    assert cpu["logical_cores"] == sysinfo._cpu_list_count(online)
    for label, key in (("Socket(s)", "sockets"), ("Thread(s) per core", "threads_per_core")):
        if (collect_env.value(label) or "").isdigit():  # lscpu says "-" where the firmware does not tell
            assert cpu[key] == int(collect_env.labels[label]), label
    assert cpu["usable_cores"] == len(os.sched_getaffinity(0))


def test_cpu_flags(collect_env: CollectEnv, system: Dict[str, Any]) -> None:
    if "Flags" not in collect_env.labels:
        pytest.skip("collect_env found no CPU flags here")
    flags = set((collect_env.value("Flags") or "").split())
    ours = system["cpu"]["flags"]
    assert list(ours) == list(sysinfo.CPU_FLAGS["x86" if re.match(r"x86|i\d86|amd64", system["machine"], re.I) else "arm"])
    assert ours == {flag: flag in flags for flag in ours}


def test_torch_build(collect_env: CollectEnv, runtime: Dict[str, Any]) -> None:
    import torch

    assert collect_env.value("PyTorch version") == runtime["version"] == torch.__version__
    assert collect_env.value("Is debug build") == str(runtime["debug"])
    assert collect_env.value("CUDA used to build PyTorch") == runtime["cuda"]
    assert collect_env.value("ROCM used to build PyTorch") == runtime["hip"]
    assert collect_env.value("Is XNNPACK available") == str(runtime["xnnpack"])
    assert runtime["cxx11_abi"] is torch.compiled_with_cxx11_abi()
    assert runtime["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert runtime["mkldnn"] is torch.backends.mkldnn.is_available()
    assert runtime["num_threads"] == torch.get_num_threads()


def test_cudnn(collect_env: CollectEnv, runtime: Dict[str, Any]) -> None:
    # collect_env lists the libcudnn files ldconfig knows; we ask torch's own cuDNN
    theirs = collect_env.value("cuDNN version")
    if theirs is None:
        assert runtime["cudnn"] is None
    if runtime["cudnn"] is not None:
        assert theirs is not None and "libcudnn" in collect_env.text


def test_nvidia_driver(collect_env: CollectEnv, system: Dict[str, Any]) -> None:
    # collect_env asks nvidia-smi, we read /proc: they agree where both can see the driver
    theirs, ours = collect_env.value("Nvidia driver version"), system["nvidia_driver"]
    if theirs is not None and os.path.exists(sysinfo.NVIDIA_VERSION):
        assert ours == theirs
    if ours is not None and theirs is None:
        assert shutil.which("nvidia-smi") is None
    if theirs is None and ours is None:
        assert not os.path.exists(sysinfo.NVIDIA_VERSION) or not Path(sysinfo.NVIDIA_VERSION).read_text().strip()


def test_package_versions(collect_env: CollectEnv, system: Dict[str, Any]) -> None:
    from torch.utils import collect_env as ce

    patterns: List[str] = [p for name in ("PIP_PATTERNS", "COMMON_PATTERNS", "NVIDIA_PATTERNS") for p in getattr(ce, name, [])]
    compared = []
    for name, version in system["packages"].items():
        theirs = collect_env.pip.get(_normal(name))
        if theirs is not None:
            assert version == theirs, name
            compared.append(name)
        elif any(p in name for p in patterns):  # collect_env would have listed it
            assert version is None, name
    assert {"torch", "numpy"} <= set(compared)


# ---------------------------------------------------------------- parsers, on the texts of other machines


def _script(folder: Path, name: str, body: str) -> None:
    """An executable shell script. PATH will hold only `folder`: builtins, or programs by absolute path."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.mark.parametrize("tool, output, version", [
    ("gcc", "gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\nCopyright (C) 2021", "11.4.0"),
    ("gcc", "gcc (GCC) 11.4.1 20230605 (Red Hat 11.4.1-2)", "11.4.1"),
    ("gcc", "Apple clang version 15.0.0 (clang-1500.3.9.4)\nTarget: arm64-apple-darwin23.4.0", "15.0.0"),
    ("clang", "Ubuntu clang version 14.0.0-1ubuntu1.1\nTarget: x86_64-pc-linux-gnu", "14.0.0"),
    ("clang", "\n  Debian clang version 16.0.6 (15~deb12u1)", "16.0.6"),
    ("cmake", "cmake version 3.28.0-rc1\n\nCMake suite maintained", "3.28.0"),
    ("nvcc", "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.1, V12.1.105\nBuild cuda_12.1", "12.1.105"),
])
def test_tool_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, output: str, version: str) -> None:
    _script(tmp_path, tool, "printf '%s\\n' " + " ".join(shlex.quote(line) for line in output.splitlines()))
    monkeypatch.setenv("PATH", str(tmp_path))
    found = sysinfo._ask_tool(tool)
    assert found == {"path": str(tmp_path / tool), "version": version, "line": found and found["line"], "error": None}
    assert version in found["line"] and "\n" not in found["line"]


SAPPHIRE_RAPIDS = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
flags\t\t: fpu sse avx f16c fma avx2 avx512f avx512bw avx512vl avx512_vnni avx512_bf16 avx_vnni avx512_fp16 amx_bf16 amx_tile amx_int8

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: should not be read
"""
GRAVITON3 = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 """ \
    """asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng
CPU implementer\t: 0x41
"""


def test_cpu_facts_from_other_machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sysfs = tmp_path / "cpu"
    (sysfs / "cpu0" / "topology").mkdir(parents=True)
    (sysfs / "online").write_text("0-223\n")
    (sysfs / "cpu0" / "topology" / "package_cpus_list").write_text("0-55,112-167\n")
    (sysfs / "cpu0" / "topology" / "core_cpus_list").write_text("0,112\n")
    monkeypatch.setattr(sysinfo, "CPU_SYSFS", str(sysfs))
    (tmp_path / "spr").write_text(SAPPHIRE_RAPIDS)
    monkeypatch.setattr(sysinfo, "CPUINFO", str(tmp_path / "spr"))
    cpu = sysinfo._cpu()
    assert (cpu["model"], cpu["vendor"], cpu["logical_cores"], cpu["sockets"], cpu["threads_per_core"]) == (
        "Intel(R) Xeon(R) Platinum 8480+", "GenuineIntel", 224, 2, 2)
    assert [f for f, on in cpu["flags"].items() if not on] == ["amx_fp16"]
    (tmp_path / "graviton").write_text(GRAVITON3)
    monkeypatch.setattr(sysinfo, "CPUINFO", str(tmp_path / "graviton"))
    cpu = sysinfo._cpu()
    assert cpu["model"] is None and cpu["vendor"] == "0x41"
    assert [f for f, on in cpu["flags"].items() if not on] == ["sve2", "sme"]


@pytest.mark.parametrize("text, version", [
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 12.2.0", "535.104.05"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16)", "565.57.01"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.10  Release Build", "570.86.10"),
    ("garbage", None),
])
def test_nvidia_driver_from_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, version: Optional[str]) -> None:
    (tmp_path / "version").write_text(text)
    monkeypatch.setattr(sysinfo, "NVIDIA_VERSION", str(tmp_path / "version"))
    assert sysinfo._nvidia_driver() == version


def test_os_release_memory_and_conda(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "os-release").write_text('NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\n')
    monkeypatch.setattr(sysinfo, "OS_RELEASE", (str(tmp_path / "missing"), str(tmp_path / "os-release")))
    assert sysinfo._os_name() == "Ubuntu 22.04.4 LTS"
    (tmp_path / "meminfo").write_text("MemTotal:       65536000 kB\nMemFree:         1000 kB\nMemAvailable:   32768000 kB\n")
    monkeypatch.setattr(sysinfo, "MEMINFO", str(tmp_path / "meminfo"))
    assert sysinfo._memory() == {"total_bytes": 65536000 * 1024, "available_bytes": 32768000 * 1024}
    env = tmp_path / "miniconda3" / "envs" / "train"
    (env / "conda-meta").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(env))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    assert sysinfo._conda() == {"env": True, "name": "train", "active": False}
    monkeypatch.setenv("CONDA_PREFIX", str(env))
    monkeypatch.setenv("CONDA_DEFAULT_ENV", "train")
    assert sysinfo._conda() == {"env": True, "name": "train", "active": True}
    base = tmp_path / "miniconda3"
    (base / "conda-meta").mkdir()
    monkeypatch.setattr(sys, "prefix", str(base))
    assert sysinfo._conda() == {"env": True, "name": "base", "active": False}


# ---------------------------------------------------------------- a hostile machine


def test_collect_system_never_raises_in_a_hostile_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir, "gcc", "echo 'gcc: fatal error: broken install' >&2; exit 1")
    _script(bin_dir, "cmake", "exec %s 30" % shutil.which("sleep"))  # hangs
    _script(bin_dir, "clang", "printf 'no version here\\n'")
    (bin_dir / "nvcc").write_text("not executable")  # which() skips it
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("CONDA_PREFIX", str(tmp_path / "nowhere"))
    monkeypatch.setattr(sysinfo, "TOOL_TIMEOUT_S", 0.5)
    missing = str(tmp_path / "missing")
    monkeypatch.setattr(sysinfo, "OS_RELEASE", (str(tmp_path),))  # a directory: open() fails
    for name in ("CPUINFO", "MEMINFO", "NVIDIA_VERSION", "CPU_SYSFS"):
        monkeypatch.setattr(sysinfo, name, missing)
    import importlib.metadata

    real_version = importlib.metadata.version

    def corrupt_numpy(name: str) -> str:
        if name == "numpy":
            raise ValueError("corrupt METADATA")
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", corrupt_numpy)

    start = time.perf_counter()
    facts = sysinfo.collect_system()
    assert time.perf_counter() - start < 3.0  # the hung cmake is killed at TOOL_TIMEOUT_S
    assert tuple(facts) == sysinfo.SYSTEM_KEYS
    json.dumps(facts, allow_nan=False)
    tools = facts["tools"]
    assert tools["gcc"]["error"] == "`gcc --version` exited with 1: gcc: fatal error: broken install"
    assert tools["cmake"]["error"] == "`cmake --version` did not answer within 0.5 s"
    assert tools["clang"] == {"path": str(bin_dir / "clang"), "version": None, "line": "no version here", "error": None}
    assert tools["nvcc"] is None
    assert facts["cpu"]["model"] is None and facts["cpu"]["flags"] is None and facts["cpu"]["sockets"] is None
    assert facts["cpu"]["logical_cores"] == os.cpu_count()
    assert facts["memory"] is None and facts["nvidia_driver"] is None
    assert facts["os"]  # from the platform module instead
    assert facts["conda"]["active"] is False
    assert facts["packages"]["numpy"] is None and facts["packages"]["torch"]
    assert facts["errors"] == {"packages.numpy": "ValueError: corrupt METADATA"}


def test_a_failing_part_is_an_error_entry_not_an_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(sysinfo, "_cpu", boom)
    monkeypatch.setattr(sysinfo, "_start_tools", boom)
    monkeypatch.setattr(sysinfo, "_packages", lambda errors: boom())
    facts = sysinfo.collect_system()
    assert facts["cpu"] is None
    assert facts["tools"] == {name: None for name in sysinfo.TOOLS}
    assert facts["packages"] == {name: None for name in sysinfo.PACKAGES}
    assert facts["errors"] == {"cpu": "RuntimeError: boom", "tools": "RuntimeError: boom", "packages": "RuntimeError: boom"}


def test_torch_runtime_of_a_broken_torch_never_raises() -> None:
    def fail() -> None:
        raise RuntimeError("libcudnn.so.9: cannot open shared object file")

    fake = types.SimpleNamespace(
        __version__="2.1.0+cu121",
        version=types.SimpleNamespace(cuda="12.1", debug=False),  # no hip, no git_version
        backends=types.SimpleNamespace(cudnn=types.SimpleNamespace(version=fail)),
    )
    facts = sysinfo.torch_runtime(fake)
    assert tuple(facts) == sysinfo.TORCH_RUNTIME_KEYS
    assert (facts["version"], facts["cuda"], facts["hip"], facts["cudnn"]) == ("2.1.0+cu121", "12.1", None, None)
    assert facts["errors"]["cudnn"] == "RuntimeError: libcudnn.so.9: cannot open shared object file"
    assert set(facts["errors"]) == {"git_version", "cudnn", "cxx11_abi", "cpu_capability", "mkl", "mkldnn", "openmp", "xnnpack",
                                    "num_threads"}
    assert sysinfo.torch_runtime(None)["errors"]["version"].startswith("AttributeError")


@pytest.mark.skipif(PYTHON_38 is None, reason="no Python 3.8 here")
def test_collect_system_runs_on_python_3_8() -> None:
    code = "import json; from envdoctor.target import sysinfo; print(json.dumps(sysinfo.collect_system()))"
    proc = subprocess.run([str(PYTHON_38), "-I", "-c", "import sys; sys.path.insert(0, %r); %s" % (str(ROOT), code)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)
    assert tuple(facts) == sysinfo.SYSTEM_KEYS and facts["errors"] == {}
    assert facts["python"]["version"].startswith("3.8.")


# ---------------------------------------------------------------- rendering


def test_markdown_shows_the_system_section(system: Dict[str, Any], runtime: Dict[str, Any]) -> None:
    old = load_fixture("cpu-torch-2.13.0.json")
    env = dict(old["environment"], system=system, torch_runtime=runtime)
    md = render_markdown(Report(environment=env, checks=report_from_dict(old).checks))
    section = md[md.index("### System"):md.index("<details>")]
    assert "| OS | %s (%s) |" % (system["os"], system["machine"]) in section
    assert "| libc | %s |" % system["libc"] in section
    assert "| Python | %s CPython 64-bit" % system["python"]["version"] in section
    gcc = system["tools"]["gcc"]
    assert ("| GCC | %s |" % gcc["line"] if gcc else "| GCC | not found |") in section
    if system["tools"]["clang"] is None:
        assert "| clang | not found |" in section
    assert "| CPU | %s · %s |" % (system["cpu"]["model"], system["cpu"]["vendor"]) in section
    assert "| Cores | %d logical" % system["cpu"]["logical_cores"] in section
    flags = system["cpu"]["flags"]
    assert "| CPU fp16/bf16 instructions | F16C %s AVX %s AVX2 %s" % tuple("✓" if flags[f] else "✗" for f in ("f16c", "avx", "avx2")) in section
    assert "| torch CPU capability | %s |" % runtime["cpu_capability"] in section
    assert "| torch | %s |" % runtime["version"] in section
    assert "| CUDA runtime (torch build) | none (CPU build) |" in section
    assert "| cuDNN | none |" in section
    assert "| numpy | %s |" % system["packages"]["numpy"] in section
    assert "Not installed: " in section and "xformers" in section
    assert md.index("### Notes") < md.index("### System") < md.index("<details><summary>Environment</summary>")


def test_cpu_flags_line_reads_like_a_bug_report() -> None:
    from envdoctor.render.markdown import cpu_flags_text

    avx2_only = {f: f in ("f16c", "avx", "avx2", "fma") for f in sysinfo.CPU_FLAGS["x86"]}
    assert cpu_flags_text(avx2_only) == "F16C ✓ AVX ✓ AVX2 ✓ FMA ✓ AVX-512F ✗ AVX512_FP16 ✗ AVX512_BF16 ✗ AVX-VNNI ✗ AMX ✗"
    spr = {f: f != "amx_fp16" for f in sysinfo.CPU_FLAGS["x86"]}
    assert cpu_flags_text(spr).endswith("AVX-VNNI ✓ AMX-TILE ✓ AMX-BF16 ✓ AMX-INT8 ✓ AMX-FP16 ✗")


def test_an_older_report_renders_without_the_section() -> None:
    old = report_from_dict(load_fixture("cpu-torch-2.0.1.json"))
    assert "system" not in old.environment
    md = render_markdown(old)
    assert "### System" not in md
    assert md.rstrip().endswith("</details>")
    # half-filled or foreign-shaped facts render what they can and never raise
    odd = Report(environment={"system": {"cpu": "weird", "tools": ["gcc"], "packages": None, "os": "Linux"}, "torch_runtime": {"version": "2.0"}},
                 checks=[])
    md = render_markdown(odd)
    assert "| OS | Linux |" in md and "| torch | 2.0 |" in md


def test_check_markdown_carries_every_collect_env_fact(collect_env: CollectEnv) -> None:
    """The report a user pastes into a bug report, made by `envdoctor check --markdown` in the
    target interpreter, has each collect_env fact that matters for these failures."""
    proc = run_envdoctor("check", "--markdown", "--only", "torch-install")
    assert proc.returncode == 0, proc.stderr
    markdown = proc.stdout
    rows = dict(re.findall(r"^\| ([^|]+?) \| (.+?) \|$", markdown, re.M))
    os_name, machine = (collect_env.value("OS") or "").rsplit(" (", 1)
    assert rows["OS"].startswith(os_name) and machine.rstrip(")") in rows["OS"]
    assert rows["libc"] == collect_env.value("Libc version")
    assert rows["Python"].startswith((collect_env.value("Python version") or "").split()[0])
    for label, row in (("GCC version", "GCC"), ("Clang version", "clang"), ("CMake version", "CMake")):
        theirs = collect_env.value(label)
        assert (theirs in rows[row]) if theirs else rows[row] == "not found", (label, rows[row])
    assert (collect_env.value("Model name") or "").split()[0] in rows["CPU"]
    assert rows["torch"] == collect_env.value("PyTorch version")
    cuda = collect_env.value("CUDA used to build PyTorch")
    assert (cuda in rows["CUDA runtime (torch build)"]) if cuda else rows["CUDA runtime (torch build)"].startswith("none")
    driver = collect_env.value("Nvidia driver version")
    assert (driver in rows["NVIDIA driver"]) if driver else rows["NVIDIA driver"] == "none"
    flags = (collect_env.value("Flags") or "").split()
    for flag, name in (("f16c", "F16C"), ("avx2", "AVX2"), ("avx512f", "AVX-512F")):
        assert ("%s %s" % (name, "✓" if flag in flags else "✗")) in rows["CPU fp16/bf16 instructions"]
    for package, version in collect_env.pip.items():
        if package in ("torch", "numpy"):
            assert "| %s | %s |" % (package, version) in markdown
