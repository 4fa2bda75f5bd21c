"""Run a program of the machine (nvidia-smi, nvcc) and record exactly what happened, written once for
every probe that asks one. Never a shell; a program that is missing, hangs or fails is a fact.

Stdlib only, Python 3.8+.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Dict, List, Optional

from envdoctor.target.probekit.text import exception_text

TIMEOUT_S = 10.0


def nvidia_smi_program() -> str:
    """nvidia-smi from PATH; WSL keeps it in /usr/lib/wsl/lib, often off PATH."""
    if shutil.which("nvidia-smi") is None and os.path.exists("/usr/lib/wsl/lib/nvidia-smi"):
        return "/usr/lib/wsl/lib/nvidia-smi"
    return "nvidia-smi"


def run_command(argv: List[str], timeout: float = TIMEOUT_S, limit: Optional[int] = None) -> Dict[str, Any]:
    """{"argv", "returncode" (None: it never ran or did not end), "stdout" (its first `limit` characters),
    "stderr", "error" (why it did not run, or its exit status and first line; None when it succeeded)}."""
    out: Dict[str, Any] = {"argv": argv, "returncode": None, "stdout": "", "stderr": "", "error": None}
    try:
        proc = subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout, encoding="utf-8", errors="replace")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:  # FileNotFoundError: no such program
        out["error"] = exception_text(exc)
        return out
    out["returncode"] = proc.returncode
    out["stdout"] = (proc.stdout or "")[:limit] if limit else proc.stdout or ""
    out["stderr"] = (proc.stderr or "").strip()[:2000]
    if proc.returncode != 0:
        first = (out["stderr"] or out["stdout"]).strip().splitlines()
        out["error"] = "exit status %d%s" % (proc.returncode, ": " + first[0][:300] if first else "")
    return out
