"""Running one tiny torch operation and recording what happened.

Each operation is a guarded step (probekit.steps): an op that kills or hangs the
interpreter is pinned on that op, and the probe goes on past it in a fresh worker.

Stdlib only, Python 3.8+: used by probes inside the worker; torch is passed in.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Dict, Optional, Tuple

from envdoctor.target.model import op_fact
from envdoctor.target.probekit.steps import StepLost, step
from envdoctor.target.probekit.text import dtype_name, error_text


def max_rel_err(torch: Any, out: Any, ref: Any) -> float:
    """max |out - ref| / max |ref|, in fp32; NaN when the output is not finite."""
    out32 = out.detach().float().cpu()
    ref32 = ref.detach().float().cpu()
    if out32.shape != ref32.shape:
        return float("nan")
    if not bool(torch.isfinite(out32).all()):
        return float("nan")
    scale = float(ref32.abs().max()) or 1.0
    return float((out32 - ref32).abs().max()) / scale


def synchronize(torch: Any, device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)
        # A kernel that never launched (no kernel image for this GPU) leaves its error pending, and a synchronize
        # does not report it: torch's own next launch check does. Launch one here, so that an extension which does
        # not check its launches (apex built for sm_80 alone, run on an H200) fails in its own op, not in the next.
        torch.ones(1, device=device).add_(1)
    elif device == "mps":  # reached only where torch.backends.mps.is_available(): nothing MPS-only runs elsewhere
        torch.mps.synchronize()


def run_op(
    torch: Any,
    op: str,
    device: str,
    dtype: str,
    fn: Callable[[], Any],
    reference: Optional[Callable[[], Any]] = None,
    **extra: Any,
) -> Dict[str, Any]:
    """Run `fn` (and, when it works, compare with the fp32 `reference`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with step("running %s %s on %s" % (op, dtype, device), op=op, device=device, dtype=dtype):
                out = fn()
                synchronize(torch, device)
        except StepLost as lost:
            return op_fact(op, device, dtype, False, lost.error, None, error_type=lost.error_type, lost=lost.state, **extra)
        except Exception as exc:  # noqa: BLE001 - the failure is the fact
            return op_fact(op, device, dtype, False, error_text(exc), None, error_type=type(exc).__name__, **extra)
    err: Optional[float] = None
    if reference is not None:
        try:
            err = max_rel_err(torch, out, reference())
        except Exception as exc:  # noqa: BLE001
            extra["reference_error"] = error_text(exc)
    fact = op_fact(op, device, dtype, True, None, None if err is None else round_err(err), **extra)
    if hasattr(out, "dtype"):
        fact["out_dtype"] = dtype_name(out.dtype)
    if caught:
        fact["warnings"] = sorted({str(w.message) for w in caught})[:5]
    return fact


def round_err(err: float) -> float:
    if math.isnan(err) or math.isinf(err):
        return err
    return float("%.3g" % err)


def seeded_generator(torch: Any, seed: int = 0) -> Any:
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed)
    return gen


def randn(torch: Any, gen: Any, *shape: int) -> Any:
    """fp32 normal samples made on the CPU, so every device sees the same numbers."""
    return torch.randn(*shape, generator=gen, dtype=torch.float32)


def attempt(fn: Callable[[], Any]) -> Tuple[Any, Optional[str]]:
    """(fn(), None), or (None, the error text) when a query raises: a failing query is a fact."""
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001
        return None, error_text(exc)
