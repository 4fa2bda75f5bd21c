"""Import a module and record everything it did: the exception and its causes, the
warnings, log records and whatever it wrote to stdout/stderr (C-level prints too), and,
for a shared library that failed to load, the dynamic loader's own reason.

Every import is a guarded step: an import that segfaults or hangs is pinned on that
package, and the probe goes on past it in a fresh worker.

Stdlib only, Python 3.8+: runs inside the worker.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import time
import traceback
import warnings
from typing import Any, Dict, List, Optional, Sequence

from envdoctor.target.model import op_fact
from envdoctor.target.probekit.compile_deferral import DeferredCompile
from envdoctor.target.probekit.steps import StepLost, step
from envdoctor.target.probekit.text import error_text, exception_chain, warning_texts

_MAX_TEXT = 3000


def find_module_spec(name: str) -> Any:
    """Where `import name` would load from, without running any of its code; None when it is
    not there or its parent package cannot even be looked at."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None


_LIBRARY_RE = re.compile(r"Could not load this library: (\S+)")


def _dlopen_errors(texts: Sequence[str]) -> List[Dict[str, Any]]:
    """torch.ops.load_library hides the loader's reason behind 'Could not load this library:
    PATH'; loading PATH once more with ctypes gives it (e.g. `libc10_cuda.so: cannot open
    shared object file`). Only paths that already failed to load are tried."""
    paths: List[str] = []
    for text in texts:
        for match in _LIBRARY_RE.finditer(text or ""):
            path = match.group(1).rstrip(".,;:'\")")
            if path not in paths and os.path.isfile(path):
                paths.append(path)
    results: List[Dict[str, Any]] = []
    for path in paths[:3]:
        try:
            import ctypes

            ctypes.CDLL(path)
        except OSError as exc:
            results.append({"path": path, "ok": False, "error": error_text(exc)})
        except Exception as exc:  # noqa: BLE001
            results.append({"path": path, "ok": False, "error": "%s: %s" % (type(exc).__name__, error_text(exc))})
        else:
            results.append({"path": path, "ok": True, "error": None})
    return results


def record_import(package: str, module: str, version: Optional[str] = None, env: Optional[Dict[str, str]] = None,
                  defer_compile: Any = None) -> Dict[str, Any]:
    """Import `module` once as a guarded step ("importing flash_attn 2.7.4"), recording the
    outcome, time, warnings, log records and captured output as an op fact
    {"op": "import <module>", "package", "ok", "error", "error_type", ...}. `env` sets
    environment variables for the duration (e.g. to make a library say why it fails).
    `defer_compile` (torch): import with torch.compile deferred (compile_deferral), the
    outcome still the one the real torch.compile would have given."""
    already = module in sys.modules
    saved_env = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    # (imported here, where a probe runs: the parent imports this module with the checks' declarations)
    from envdoctor.target.probekit.capture import OutputCapture, RootLog

    exc_info: Optional[BaseException] = None
    loaded: Any = None
    start = time.perf_counter()
    what = "importing %s%s" % (module, " " + version if version else "")
    lost: Optional[StepLost] = None
    deferred: Optional[DeferredCompile] = None
    try:
        with RootLog() as log, OutputCapture() as output, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with step(what, package=package, module=module, version=version):
                    if defer_compile is None:
                        loaded = importlib.import_module(module)
                    else:
                        with DeferredCompile(defer_compile) as deferred:
                            loaded = importlib.import_module(module)
                        replayed = deferred.replay()
                        if replayed is not None:
                            raise replayed
            except StepLost as exc:
                lost = exc
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - the failure is the fact
                exc_info = exc
    finally:
        elapsed = time.perf_counter() - start
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    warnings_seen = warning_texts(caught, 10)
    extra: Dict[str, Any] = {
        "package": package,
        "module": module,
        "import_s": round(elapsed, 3),
        "warnings": warnings_seen,
        "log": log.records[:10],
        "stderr": output.text.strip()[-_MAX_TEXT:],
    }
    if already:
        extra["already_imported"] = True
    if deferred is not None and deferred.calls:
        extra["compile_deferred"] = deferred.summary()
    if lost is not None:
        return op_fact("import %s" % module, "", "", False, lost.error, None, error_type=lost.error_type, lost=lost.state,
                       what=what, **extra)
    if exc_info is None:
        extra["version"] = str(getattr(loaded, "__version__", "") or "") or None
        extra["file"] = getattr(loaded, "__file__", None)
        fact = op_fact("import %s" % module, "", "", True, None, None, **extra)
    else:
        frames = traceback.extract_tb(exc_info.__traceback__)[-6:]
        extra["error_type"] = type(exc_info).__name__
        extra["causes"] = exception_chain(exc_info)[1:]
        extra["frames"] = ["%s:%s in %s" % (f.filename, f.lineno, f.name) for f in frames]
        fact = op_fact("import %s" % module, "", "", False, error_text(exc_info), None, **extra)
    texts = [fact.get("error") or ""] + list(extra.get("causes") or []) + warnings_seen + log.records + [extra["stderr"]]
    dlopen = _dlopen_errors(texts)
    if dlopen:
        fact["dlopen"] = dlopen
    return fact


