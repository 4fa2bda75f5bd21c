"""Running one tiny torch operation and recording what happened.

Stdlib only, Python 3.8+: used by probes inside the worker; torch is passed in.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Dict, Optional

from envdoctor.model import op_fact

_MAX_MESSAGE = 600
# What torch appends to CUDA errors (c10/cuda/CUDAMiscFunctions.cpp): advice, not the error.
_HELP_SUFFIXES = (
    "\nCUDA kernel errors might",
    "\nSearch for `cuda",
    "\nFor more detailed error",
    "\nCompile with `TORCH_USE_CUDA_DSA`",
    "\nException raised from",
)


def error_text(exc: BaseException) -> str:
    """The exception message as torch printed it, without the long help suffixes."""
    message = str(exc).strip() or type(exc).__name__
    for marker in _HELP_SUFFIXES:
        cut = message.find(marker)
        if cut > 0:
            message = message[:cut]
    return message.strip()[:_MAX_MESSAGE]


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
            out = fn()
            synchronize(torch, device)
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


def dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def seeded_generator(torch: Any, seed: int = 0) -> Any:
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed)
    return gen


def randn(torch: Any, gen: Any, *shape: int) -> Any:
    """fp32 normal samples made on the CPU, so every device sees the same numbers."""
    return torch.randn(*shape, generator=gen, dtype=torch.float32)
