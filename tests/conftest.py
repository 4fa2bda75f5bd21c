"""Shared test helpers: run envdoctor for real, load recorded fact snapshots."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import pytest
from pip_sources import uv_environment

from envdoctor.target.model import Check, Finding, Report, Target, report_from_dict

ROOT = Path(__file__).resolve().parent.parent

# Every process the tests start writes the bytecode of what it imports, so that the throwaway venvs
# (installed without it) and envdoctor's own modules are compiled once per run, not at every import.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PLUGINS = Path(__file__).resolve().parent / "plugins"


def load_fixture(name: str) -> Dict[str, Any]:
    """A recorded `envdoctor check --json` report (see tests/fixtures/README.md)."""
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def handwritten(name: str) -> Dict[str, Any]:
    """The facts of a hand-written snapshot (tests/fixtures/handwritten/), which must say so."""
    data = json.loads((FIXTURES / "handwritten" / name).read_text(encoding="utf-8"))
    assert data["source"].startswith("hand-written: ")
    return data["facts"]


# The target the rules see when a snapshot does not say (hand-written GPU snapshots).
ENV = Target(python="/home/me/venv/bin/python", python_version="3.11.7", platform="Linux-6.1.0-x86_64-with-glibc2.36",
                  sys_platform="linux", machine="x86_64", prefix="/home/me/venv", torch="2.13.0+cpu", torch_import={"ok": True})


def env_of(report: Dict[str, Any]) -> Target:
    """The environment a recorded report was judged in."""
    return Target.from_report(report["environment"])


def env_for(facts: Dict[str, Any]) -> Target:
    """The target of a snapshot: snapshots recorded before rules took `env` carry the
    interpreter, prefix and platform in their facts; otherwise ENV."""
    torch = facts.get("torch")
    version = torch.get("version") if isinstance(torch, dict) else torch
    version = version or (facts.get("torch_import") or {}).get("version")
    return Target(
        python=facts.get("python") or ENV.python,
        python_version=facts.get("python_version") or ENV.python_version,
        platform=ENV.platform,
        sys_platform=facts.get("platform") or ENV.sys_platform,
        machine=facts.get("machine") or ENV.machine,
        prefix=facts.get("prefix") or ENV.prefix,
        torch=version if isinstance(version, str) else (None if "torch_import" in facts else ENV.torch),
        torch_import=facts.get("torch_import") or {"ok": True},
    )


def judge(check: Check, facts: Dict[str, Any], env: Optional[Target] = None) -> List[Finding]:
    """A check's rules on a snapshot, as the engine calls them."""
    return check.judge(facts, env or env_for(facts))


def rejudged(recorded: Dict[str, Any]) -> Report:
    """A recorded report with its findings judged again by today's rules, on the facts and Target it recorded: for a
    snapshot taken before a rule existed (the rules are pure, so this is what that machine would print now)."""
    from envdoctor.pipeline.check.registry import load_checks

    report = report_from_dict(recorded)
    checks = {item.check.id: item.check for item in load_checks(plugins=False)[0]}
    for result in report.checks:
        result.findings = checks[result.id].judge(result.facts, report.target)
    return report


def find_python(version: str) -> Optional[Path]:
    """Another CPython for the cross-version tests ("3.8", "2.7"), or None when there is none:
    $ENVDOCTOR_TEST_PYTHON<major><minor> (e.g. ENVDOCTOR_TEST_PYTHON38), `pythonX.Y` on PATH,
    or the newest pyenv install of that version ($PYENV_ROOT, default ~/.pyenv). A candidate
    counts only if it runs and reports that version (a pyenv shim may do neither)."""
    candidates: List[Path] = []
    given = os.environ.get("ENVDOCTOR_TEST_PYTHON" + version.replace(".", ""))
    if given:
        candidates.append(Path(given))
    on_path = shutil.which("python" + version)
    if on_path:
        candidates.append(Path(on_path))
    versions = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    if versions.is_dir():
        installs = [p for p in versions.glob(version + ".*/bin/python") if p.exists()]
        candidates += sorted(installs, key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.parent.name)], reverse=True)
    for python in candidates:
        try:
            out = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return python
    return None


def torch_has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def check_of(report: Dict[str, Any], check_id: str) -> Dict[str, Any]:
    for check in report["checks"]:
        if check["id"] == check_id:
            return check
    raise KeyError(check_id)


def facts_of(report: Dict[str, Any], check_id: str) -> Dict[str, Any]:
    return check_of(report, check_id)["facts"]


def codes(findings: List[Any]) -> List[str]:
    return [f.code for f in findings]


_EMPTY_HF_HOME = tempfile.mkdtemp(prefix="envdoctor-tests-hf-home-")
# `fix` journals its runs here, never in the developer's own state folder
_STATE_DIR = tempfile.mkdtemp(prefix="envdoctor-tests-state-")
for _folder in (_EMPTY_HF_HOME, _STATE_DIR):  # each xdist worker makes its own: none stays behind
    atexit.register(shutil.rmtree, _folder, True)


def run_envdoctor(
    *args: str,
    env: Optional[Dict[str, str]] = None,
    timeout: float = 300,
    python: str = sys.executable,
    encoding: str = "utf-8",
    cwd: Optional[Path] = None,
    input: Optional[str] = None,
) -> subprocess.CompletedProcess:
    """`python -m envdoctor ARGS` in a subprocess, as a user would run it."""
    full_env = dict(os.environ)
    full_env.pop("ENVDOCTOR_CHECKS_PATH", None)
    # the developer's own accelerate default config must not reach the tests unasked (and
    # the libraries the probes import may create cache folders there: not in the repository)
    full_env["HF_HOME"] = _EMPTY_HF_HOME
    full_env["ENVDOCTOR_STATE_DIR"] = _STATE_DIR
    full_env.pop("ACCELERATE_CONFIG_FILE", None)
    full_env.update(env or {})
    return subprocess.run(
        [python, "-m", "envdoctor", *args],
        capture_output=True,
        encoding=encoding,
        timeout=timeout,
        env=full_env,
        cwd=str(cwd or ROOT),
        input=input,
    )


def run_json(*args: str, env: Optional[Dict[str, str]] = None, timeout: float = 300) -> Dict[str, Any]:
    proc = run_envdoctor("check", "--json", *args, env=env, timeout=timeout)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="session")
def live_report() -> Dict[str, Any]:
    """One real `envdoctor check --json` on this machine's torch, shared by tests."""
    return run_json()


def make_venv(path: Path, system_site_packages: bool = False, with_pip: bool = True) -> Path:
    """A throwaway venv; returns its python. Without pip it takes 0.3 s instead of 8 s of CPU."""
    args = [sys.executable, "-m", "venv", str(path)]
    if system_site_packages:
        args.append("--system-site-packages")
    if not with_pip:
        args.append("--without-pip")
    subprocess.run(args, check=True, capture_output=True)
    return path / "bin" / "python"


def pip_install(python: Path, *requirements: str) -> None:
    """Install into a test's venv: with uv where the test session has it (the `tests` session installs it: it
    unpacks in parallel and links from its cache, seconds where pip takes most of a minute for torch), from the
    sources pip is configured with here (tests/pip_sources.py); else with pip. The venvs keep their own pip, which
    `fix` runs. Neither compiles: compiling all of torch costs half a minute of CPU per venv; the modules a test
    imports are compiled once, on their first import (bytecode writing is on for the tests, below)."""
    uv = Path(sys.executable).parent / "uv"
    if uv.exists():
        command = [str(uv), "pip", "install", "-q", "--python", str(python), *requirements]
        env = dict(_uv_environment(), **os.environ)  # what nox already set wins
    else:
        command = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile", *requirements]
        env = None
    subprocess.run(command, check=True, capture_output=True, text=True, env=env)


@functools.cache
def _uv_environment() -> Dict[str, str]:
    return uv_environment()



# ---- environments with the training libraries, built once per test run

TORCH = "torch==2.13.0"  # the CPU wheel: a looser pin pulls GBs of CUDA packages
# transformers, diffusers and peft pinned beside torch on one pip line (FACTS: they install together)
LIBRARIES = ("transformers==5.23.0", "diffusers==0.42.1", "peft==0.21.2", "accelerate==1.15.0", "numpy")
# the same families in releases that still run on torch 2.0.1 (numpy 1.x: torch 2.0.1 was built against it)
OLD_TORCH = "torch==2.0.1"
OLD_LIBRARIES = ("transformers==4.46.3", "diffusers==0.31.0", "peft==0.13.2", "accelerate==1.0.1", "huggingface_hub==0.26.5", "numpy==1.26.4")


def run_folder(factory: Any) -> Path:
    """A folder every test process of this run shares: pytest-xdist's workers each get their own
    basetemp inside the run's one."""
    base = Path(factory.getbasetemp())
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes
        yield


def shared_venv(factory: Any, name: str, *installs: Sequence[str], override: str = "") -> Path:
    """A venv built once per test run, by the first test process that asks; the others wait for
    it and share it. Each of `installs` is one pip command's requirements, in order. For tests
    that only read it: a test that changes a venv gets its own, or undoes in an xdist_group.
    $`override` names a ready interpreter to reuse instead (a developer's prepared venv)."""
    given = os.environ.get(override) if override else None
    if given:
        return Path(given)
    root = run_folder(factory) / "venvs"
    root.mkdir(exist_ok=True)
    folder = root / name
    python = folder / "bin" / "python"
    with _locked(root / (name + ".lock")):
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that an interrupted run left half done
            make_venv(folder)
            for requirements in installs:
                pip_install(python, *requirements)
            _first_import(python)
            (folder / ".built").touch()
    return python


def _first_import(python: Path) -> None:
    """Import torch once under the build's lock: it writes the bytecode the tests then share (the packages
    install without it), and a venv whose torch does not import stops here, with the free disk named (a
    disk that fills up mid-write leaves a truncated .pyc: 'marshal data too short' in every later import)."""
    proc = subprocess.run([str(python), "-c", "import torch"], capture_output=True, text=True)
    if proc.returncode != 0:
        free = shutil.disk_usage(python.parent).free / 2**30
        raise RuntimeError("torch does not import in the new venv %s (%.1f GiB free on its disk): %s"
                           % (python.parent.parent, free, proc.stderr.strip().splitlines()[-1:]))


# The venvs with downloads in them (the libraries; torch 2.0.1 with its CUDA libraries), by name.
DOWNLOADING_VENVS = {
    "libs": ([TORCH, *LIBRARIES],),
    "old-torch": ([OLD_TORCH, *OLD_LIBRARIES],),
}


@pytest.fixture(scope="session")
def torch_python(tmp_path_factory: Any) -> Path:
    """A venv with the CPU torch 2.13 and nothing else (no envdoctor, no numpy), as `pip install torch` leaves it."""
    return shared_venv(tmp_path_factory, "torch", [TORCH])


@pytest.fixture(scope="session")
def libs_python(tmp_path_factory: Any) -> Path:
    """torch 2.13 CPU with transformers, diffusers, peft and accelerate really installed."""
    return shared_venv(tmp_path_factory, "libs", *DOWNLOADING_VENVS["libs"], override="ENVDOCTOR_TEST_LIBS_PYTHON")


@pytest.fixture(scope="session")
def old_torch_python(tmp_path_factory: Any) -> Path:
    """torch 2.0.1 (CPU kernels without fp16 layer_norm, addmm, conv) with libraries of its time."""
    return shared_venv(tmp_path_factory, "old-torch", *DOWNLOADING_VENVS["old-torch"], override="ENVDOCTOR_TEST_OLD_TORCH_PYTHON")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist the controlling process only hands out tests: it builds the venvs whose
    downloads take minutes meanwhile, so that the test processes spend that time on other tests
    instead of waiting. Only for a run of the whole suite, which needs them: a build that no test
    waits for would outlive the run."""
    config = session.config
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS or config.option.keyword or config.option.markexpr:
        return
    factory = config._tmp_path_factory  # type: ignore[attr-defined]  # the run's, as tmp_path_factory is
    for name, installs in DOWNLOADING_VENVS.items():
        threading.Thread(target=_prebuild, args=(factory, name, installs), daemon=True).start()


def _prebuild(factory: Any, name: str, installs: Sequence[Sequence[str]]) -> None:
    try:
        shared_venv(factory, name, *installs)
    except (OSError, RuntimeError, subprocess.CalledProcessError):  # the test that needs it builds it again and fails with the error
        pass


# The tests that change the impostor venv (and undo) run in one test process, one after another.
IMPOSTOR_APEX = pytest.mark.xdist_group("impostor-apex-venv")


@pytest.fixture(scope="session")
def impostor_apex_python(tmp_path_factory: Any) -> Path:
    """torch 2.13 CPU, the PyPI `apex` (the Pyramid web toolkit 0.9.10.dev0; --no-deps: its cryptacular
    does not build here) and transformers 4.57.6 (--no-deps: the apex probe only reads its source), no
    numpy: what `fix` must uninstall, verify and bring back offline. Every test that uses it is marked
    IMPOSTOR_APEX (one process runs them in turn); those that change it undo."""
    return shared_venv(tmp_path_factory, "impostor-apex", [TORCH], ["--no-deps", "apex", "transformers==4.57.6"])


# ---- GPUs that are not here: a fake torch.cuda over the real CPU torch

GiB = 2**30


@dataclass
class FakeGpu:
    """One GPU as a fake torch.cuda answers for it; an `*_error` is raised by that call."""

    name: str = "Fake A100"
    capability: Tuple[int, int] = (8, 0)
    uuid: str = "5b0a3cde-1111-2222-3333-444455556666"  # torch's spelling: no "GPU-"
    free: int = 70 * GiB
    total: int = 80 * GiB
    reserved: int = 0
    bf16_native: bool = True  # what is_bf16_supported(including_emulation=False) says with this GPU current
    capability_error: Optional[Exception] = None  # get_device_capability
    mem_error: Optional[Exception] = None  # mem_get_info
    blas_error: Optional[Exception] = None  # current_blas_handle, with this GPU current
    alloc_error: Optional[Exception] = None  # torch.empty(..., device="cuda:N")


class FakeCuda:
    """torch.cuda for the FakeGpus; every memory call is recorded in `calls`, every bf16 question in `asked_for`."""

    def __init__(self, gpus: List[FakeGpu], bf16_keyword: bool = True) -> None:
        self.gpus = gpus
        self.bf16_keyword = bf16_keyword  # torch >= 2.4's is_bf16_supported(including_emulation=...)
        self.current = 0
        self.calls: List[str] = []
        self.asked_for: List[Tuple[int, Dict[str, Any]]] = []

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return len(self.gpus)

    def get_device_name(self, i: int) -> str:
        return self.gpus[i].name

    def get_device_capability(self, i: int) -> Tuple[int, int]:
        if self.gpus[i].capability_error is not None:
            raise self.gpus[i].capability_error
        return self.gpus[i].capability

    def get_device_properties(self, i: int) -> Any:
        return SimpleNamespace(uuid=self.gpus[i].uuid, name=self.gpus[i].name)

    def memory_reserved(self, i: int) -> int:
        return self.gpus[i].reserved

    def memory_allocated(self, i: int) -> int:
        return 0

    def empty_cache(self) -> None:
        self.calls.append("empty_cache")

    def mem_get_info(self, i: int) -> Tuple[int, int]:
        self.calls.append("mem_get_info(%d)" % i)
        if self.gpus[i].mem_error is not None:
            raise self.gpus[i].mem_error
        return (self.gpus[i].free, self.gpus[i].total)

    def current_blas_handle(self) -> int:
        if self.gpus[self.current].blas_error is not None:
            raise self.gpus[self.current].blas_error
        return 1234

    def is_bf16_supported(self, **kwargs: Any) -> bool:
        if kwargs and not self.bf16_keyword:
            raise TypeError("is_bf16_supported() got an unexpected keyword argument 'including_emulation'")
        self.asked_for.append((self.current, kwargs))
        return self.gpus[self.current].bf16_native or bool(kwargs.get("including_emulation", True))

    @contextlib.contextmanager
    def device(self, i: int) -> Iterator[None]:
        previous, self.current = self.current, i
        try:
            yield
        finally:
            self.current = previous

    def synchronize(self, device: Any = None) -> None:
        self.calls.append("synchronize(%s)" % device)


class FakeCudaTorch:
    """The real CPU torch with a FakeCuda in place of torch.cuda: the probes take their GPU path,
    and their real tensor ops on "cuda:N" fail as a CPU build makes them fail."""

    def __init__(self, torch: Any, gpus: List[FakeGpu], cuda_version: str = "12.4", bf16_keyword: bool = True) -> None:
        self._torch = torch
        self.cuda = FakeCuda(gpus, bf16_keyword)
        self.version = SimpleNamespace(cuda=cuda_version, hip=None)
        self.allocated: List[str] = []

    def empty(self, n: int, dtype: Any = None, device: Any = None) -> Any:
        self.allocated.append(str(device))
        index = int(str(device).split(":")[1]) if str(device).startswith("cuda:") else None
        if index is not None and self.cuda.gpus[index].alloc_error is not None:
            raise self.cuda.gpus[index].alloc_error
        return self._torch.empty(n, dtype=dtype)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._torch, name)


def pytest_configure(config: pytest.Config) -> None:
    """Say it before any worker starts: a worker's UsageError (below) reaches the terminal only as xdist's INTERNALERROR."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    if getattr(config.option, "dist", "no") != "loadgroup":
        raise pytest.UsageError("tests that share a venv are grouped: run them in parallel with `--dist loadgroup` "
                                "(README: pytest -n 2 --dist loadgroup), or without -n")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Tests that change one shared venv (an xdist_group) must run in one process, one after
    another: under pytest-xdist that takes `--dist loadgroup` and a pytest whose nodes xdist can
    tag with the group. Without it they would race on the venv, so the run stops here instead."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    grouped = [item for item in session.items if item.get_closest_marker("xdist_group")]
    if grouped and not all("@" in item.nodeid for item in grouped):
        raise pytest.UsageError("xdist_group tests are not grouped: run with `--dist loadgroup` "
                                "(and a pytest that pytest-xdist can tag: pytest<9 with pytest-xdist 3.8)")


BROKEN_BACKEND = """
import os

def get_requires_for_build_wheel(config_settings=None):
    return []

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    folder = os.path.join(metadata_directory, "{dist}-{version}.dist-info")
    os.makedirs(folder)
    with open(os.path.join(folder, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n")
    return "{dist}-{version}.dist-info"

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    raise RuntimeError("{name} cannot be built")
"""


def broken_build_project(folder: Path, name: str, version: str) -> Path:
    """A real project whose metadata builds (pip resolves it, its dry run passes) and whose wheel
    build fails: a failure only the install itself meets."""
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "broken_backend"\nbackend-path = ["."]\n')
    (folder / "broken_backend.py").write_text(BROKEN_BACKEND.format(name=name, dist=name.replace("-", "_"), version=version))
    (folder / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    return folder


def broken_build_links(folder: Path, name: str, version: str) -> Path:
    """A folder for PIP_FIND_LINKS offering only that project, as an sdist."""
    import tarfile

    source = broken_build_project(folder / "src" / ("%s-%s" % (name, version)), name, version)
    with tarfile.open(folder / ("%s-%s.tar.gz" % (name, version)), "w:gz") as archive:
        archive.add(source, arcname=source.name)
    return folder
