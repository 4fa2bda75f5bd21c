"""The Target of a run, built once, and the report's environment written from it.

The one place that resolves the interpreter (`--python`: a file, or a venv or conda folder),
reads the training configs' intent, detects where envdoctor runs (with the GPUs the probes
found) and which GPUs have native bf16. Every room after (the rules, the plan, apply,
verify, explain, the renderers) reads the Target from the Report; none resolves it again.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from envdoctor.pipeline.check.request import CheckRequest, UsageError
from envdoctor.pipeline.check.runner import RunResult
from envdoctor.target.intent import Intent
from envdoctor.target.model import Gpu, Target
from envdoctor.target.platform.kernel import kernel_state
from envdoctor.target.platform.where import here
from envdoctor.target.redact import environment_variables
from envdoctor.target.remedies.commandline import installer_of
from envdoctor.target.version import __version__

# Environment variables that change what torch and the trainers do.
RELEVANT_VARIABLES = (
    "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "PYTHONPATH",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "OMP_NUM_THREADS",
    "PYTORCH_", "TORCH_", "NCCL_", "HF_", "HUGGING_FACE_", "ACCELERATE_", "TRANSFORMERS_",
    "COLAB_", "KAGGLE_", "XLA_", "MKL_",
)


def resolve_python(python: Optional[str]) -> str:
    """The interpreter to probe: a file, or a venv/conda folder holding one."""
    if not python:
        return sys.executable
    path = Path(python).expanduser()
    if path.is_dir():
        for candidate in ("bin/python", "bin/python3", "Scripts/python.exe", "python.exe"):
            if (path / candidate).is_file():
                return str(path / candidate)
        raise UsageError("no Python interpreter in %s" % path)
    if not path.exists():
        raise UsageError("no such interpreter: %s" % python)
    if not os.access(path, os.X_OK):
        raise UsageError("not executable: %s" % python)
    return str(path)


def read_intent(request: CheckRequest, environ: Optional[Dict[str, str]] = None) -> Tuple[Optional[Intent], List[str]]:
    """The training configs' intent, and notes on configs that were not read.

    A config the user named must be readable (a UsageError otherwise); accelerate's
    default config, read unasked, only earns a note when it is broken."""
    from envdoctor.configs.detect import read_configs
    from envdoctor.configs.document import ConfigError

    if request.configs:
        try:
            return read_configs(list(request.configs), request.config_texts), []
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    if not request.default_config:
        return None, []
    from envdoctor.configs.accelerate import default_config_path

    found = default_config_path(dict(os.environ) if environ is None else environ)
    if not found:
        return None, []
    try:
        return read_configs([found], request.config_texts), []
    except ConfigError as exc:
        return None, ["accelerate's default config was not read: %s" % exc]


def gpus_of(facts: Mapping[str, Dict[str, Any]]) -> Tuple[Gpu, ...]:
    """The GPUs the probes saw: torch's CUDA devices (torch-install), with native bf16 where
    bf16-support measured it; nvidia-smi's when torch sees none (a CPU torch on a GPU machine)."""
    bf16 = {d.get("id"): d.get("is_bf16_supported_native") for d in (facts.get("bf16-support") or {}).get("devices") or ()
            if isinstance(d, dict)}
    found = [Gpu(str(d["name"]), str(d.get("id")), d.get("capability"), _flag(bf16.get(d.get("id"))))
             for d in (facts.get("torch-install") or {}).get("devices") or ()
             if isinstance(d, dict) and str(d.get("id") or "").startswith("cuda") and d.get("name")]
    if found:
        return tuple(found)
    smi = ((facts.get("cuda-compat") or {}).get("nvidia_smi") or {}).get("gpus") or ()
    return tuple(Gpu(str(g["name"]), capability=g.get("compute_cap")) for g in smi if isinstance(g, dict) and g.get("name"))


def _flag(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


def build_target(interpreter: str, run: RunResult, intent: Optional[Intent], facts: Mapping[str, Dict[str, Any]]) -> Target:
    """The run's Target: the worker's hello and torch import, the probes' GPUs, where it runs."""
    hello, imported = run.hello, run.torch_import
    torch_facts = facts.get("torch-install") or {}
    gpus = gpus_of(facts)
    return Target(
        python=hello.get("executable") or interpreter,
        interpreter=interpreter,
        python_version=hello.get("python"),
        implementation=hello.get("implementation"),
        platform=hello.get("platform"),
        sys_platform=hello.get("sys_platform"),
        machine=hello.get("machine"),
        prefix=hello.get("prefix"),
        installer=installer_of(hello.get("prefix"), hello.get("pip")),
        externally_managed=bool(hello.get("externally_managed")),
        torch=imported.get("version") if imported.get("ok") else None,
        torch_distribution=imported.get("distribution") if imported.get("ok") else None,
        torch_import={k: imported.get(k) for k in ("ok", "error_type", "error") if k in imported},
        cuda_build=(torch_facts.get("build") or {}).get("cuda"),
        devices=tuple(str(d.get("id")) for d in torch_facts.get("devices") or () if isinstance(d, dict)),
        gpus=gpus,
        nvidia_driver=(run.system or {}).get("nvidia_driver") or ((facts.get("cuda-compat") or {}).get("proc_driver") or {}).get("version"),
        intent=intent,
        where=here([g.name for g in gpus]),
    )


def environment_of(target: Target, run: RunResult, request: CheckRequest) -> Dict[str, Any]:
    """The report's "environment": the Target's values, and what the run adds about the system."""
    return dict(
        target.to_dict(),
        envdoctor=__version__,
        torch_import_s=run.torch_import.get("import_s"),
        requested_devices=list(request.devices) if request.devices else None,
        worker_restarts=run.restarts,
        kernel=kernel_state(target.where),
        variables=environment_variables(RELEVANT_VARIABLES),
        system=run.system,
        torch_runtime=run.torch_runtime,
    )
