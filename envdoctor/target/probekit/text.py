"""Exception texts and dtype names, spelled one way for every probe and rule.

Stdlib only, Python 3.8+.
"""

from __future__ import annotations

import re
import traceback
from typing import Any, Iterable, List, Optional

_MAX_MESSAGE = 600
# What torch appends to CUDA errors (c10/cuda/CUDAMiscFunctions.cpp): advice, not the error.
_HELP_SUFFIXES = (
    "\nCUDA kernel errors might",
    "\nSearch for `cuda",
    "\nFor more detailed error",
    "\nCompile with `TORCH_USE_CUDA_DSA`",
    "\nException raised from",
)

# dtype names, written once. torch dtype name -> the short name users write in configs and flags, and back.
SHORT_DTYPE = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}
TORCH_DTYPE = {short: name for name, short in SHORT_DTYPE.items()}
# torch's C++ scalar type names (c10::ScalarType), as its error messages print them -> torch dtype names, and back.
SCALAR_TYPE_DTYPE = {
    "Float": "float32", "Half": "float16", "BFloat16": "bfloat16", "Double": "float64",
    "Float8_e4m3fn": "float8_e4m3fn", "Float8_e5m2": "float8_e5m2", "Float8_e4m3fnuz": "float8_e4m3fnuz",
    "Float8_e5m2fnuz": "float8_e5m2fnuz", "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8",
    "Byte": "uint8", "Bool": "bool", "ComplexHalf": "complex32", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
}
DTYPE_SCALAR_TYPE = {name: scalar for scalar, name in SCALAR_TYPE_DTYPE.items()}


def error_text(exc: BaseException) -> str:
    """The exception message as torch printed it, without the long help suffixes."""
    message = str(exc).strip() or type(exc).__name__
    for marker in _HELP_SUFFIXES:
        cut = message.find(marker)
        if cut > 0:
            message = message[:cut]
    return message.strip()[:_MAX_MESSAGE]


def exception_text(exc: BaseException) -> str:
    """'Type: message' (or just 'Type' when the message is empty)."""
    message = error_text(exc) if str(exc).strip() else ""
    return "%s: %s" % (type(exc).__name__, message) if message else type(exc).__name__


def exception_chain(exc: Optional[BaseException], depth: int = 5) -> List[str]:
    """The exception and its causes as 'Type: message', outermost first."""
    seen: List[str] = []
    while exc is not None and len(seen) < depth:
        text = "%s: %s" % (type(exc).__name__, error_text(exc))
        if text not in seen:
            seen.append(text)
        exc = exc.__cause__ or exc.__context__
    return seen


def warning_texts(caught: Iterable[Any], limit: int = 20) -> List[str]:
    """'Category: message' of recorded warnings, first occurrence only."""
    texts: List[str] = []
    for w in caught:
        text = "%s: %s" % (w.category.__name__, w.message)
        if text not in texts:
            texts.append(text)
    return texts[:limit]


def dtype_name(dtype: Any) -> str:
    """'float16' for torch.float16 (and for the string 'float16')."""
    return str(dtype).replace("torch.", "")


def short_dtype(dtype: Any) -> str:
    """'fp16' for torch.float16 or 'float16'; other dtypes keep their name."""
    name = dtype_name(dtype)
    return SHORT_DTYPE.get(name, name)


def dedupe(items: Iterable[str]) -> List[str]:
    """Items in first-seen order without repeats."""
    out: List[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


# Where an installed package's files start in a path: the last site-packages/dist-packages.
_INSTALLED_RE = re.compile(r"/(?:site|dist)-packages/")


def installed_path(filename: str, package: Optional[str] = None) -> Optional[str]:
    """A file's path relative to where its package is installed, without the machine's paths:
    'peft/tuners/lora/dora.py' (after the last site-packages/dist-packages; in a source checkout
    on sys.path, from the last directory named `package`). None when it is neither."""
    path = filename.replace("\\", "/")
    found = list(_INSTALLED_RE.finditer(path))
    if found:
        return path[found[-1].end():]
    cut = path.rfind("/%s/" % package) if package else -1
    return path[cut + 1:] if cut >= 0 else None


def library_frame(exc: BaseException, package: str) -> Optional[str]:
    """The innermost traceback frame inside `package`, relative to where it is installed and
    without the machine's paths: 'peft/tuners/lora/dora.py: get_weight_norm'. None when no
    frame of the traceback is in that package."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = installed_path(frame.filename, package)
        if path is not None and path.split("/", 1)[0] == package:
            return "%s: %s" % (path, frame.name)
    return None
