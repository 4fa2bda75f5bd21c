"""One spelling for what torch writes many ways, so that signatures match meaning.

The same fp32/fp16 mix reads `expected scalar type Float but found Half` (CPU and
CUDA kernels), `mat1 and mat2 must have the same dtype, but got Float and Half`,
`expected m1 and m2 to have the same dtype, but got: float != c10::Half` (newer CPU
builds), `Input type (torch.cuda.HalfTensor) and weight type (torch.cuda.FloatTensor)`
or `... bias type (struct c10::Half)` (MSVC). `canonical` rewrites every dtype to its
scalar type name (Half, Float, BFloat16, Float8_e4m3fn), which the checks' signatures
are written against; `dtypes_in` reads them back as torch dtype names.
"""

from __future__ import annotations

import functools
import re
from typing import List

from envdoctor.target.probekit.text import DTYPE_SCALAR_TYPE, SCALAR_TYPE_DTYPE

_SCALAR = "|".join(sorted(SCALAR_TYPE_DTYPE, key=len, reverse=True))
_CPP = re.compile(r"(?:struct |class )?(?:c10|at)::(%s)\b" % _SCALAR)
_TENSOR_TYPE = re.compile(r"\btorch\.(?:cuda\.)?(%s)Tensor\b" % _SCALAR)
# Tensor types named after their device: MPS's "Input type (MPSFloatType) and weight type (MPSHalfType) should be the same",
# and the legacy CPU/CUDA names torch still prints for complex and reduced types ("Input type (CUDAComplexHalfType) and
# weight type (CUDAComplexFloatType)", "(CPUBFloat16Type)")
_DEVICE_TYPE = re.compile(r"\b(?:MPS|CPU|CUDA|XPU|HIP)(%s)Type\b" % _SCALAR)
# torch.<name> as Python prints a float dtype, and the aliases torch.half, torch.float, torch.double
_TORCH_DTYPE = dict({name: scalar for name, scalar in DTYPE_SCALAR_TYPE.items() if name.startswith(("float", "bfloat"))},
                    half="Half", float="Float", double="Double")
_PY_DTYPE = re.compile(r"\btorch\.(%s)\b" % "|".join(sorted(_TORCH_DTYPE, key=len, reverse=True)))
# C++'s own `float` / `double` where a dtype stands: "(float)", "got: float != c10::Half", "!= float", and after "dtype"
# where ATen prints a TypeMeta ("expected dtype float for `end` but got dtype c10::BFloat16", torch.lerp)
_C_NAME = re.compile(r"(?:(?<=\()|(?<=: )|(?<== ))(float|double)(?=\)| !=|\s*$)|(?<=!= )(float|double)\b|(?<=\bdtype )(float|double)\b")
_WORD = re.compile(r"\b(%s)\b" % _SCALAR)
# A message retyped by hand, as people do on phones and in CJK text: full-width punctuation ("Input type （BFloat16）")
# and a dtype in its own parentheses in another case ("(BFLoat16)", "(half)"); and typographic quotes, as a blog, a word
# processor or a Mac's smart quotes print the quoted names ("No module named ‘fused_layer_norm_cuda‘")
_FULL_WIDTH = str.maketrans("（）：，＇＂［］‘’“”", "():,'\"[]''\"\"")
_RETYPED = re.compile(r"\((bfloat16|half|float)\)", re.IGNORECASE)
_RETYPED_AS = {"bfloat16": "(BFloat16)", "half": "(Half)", "float": "(Float)"}
# An English word written flush against Japanese, Chinese or Korean text, as those languages write it ("CUDA out of
# memoryエラーが出て", "bitsandbytesがインストール"): Python counts their characters as word characters, so `\b` finds
# no word's end there; a space is put between them (a signature written for CJK words allows one: "Torch ?未在启用 ?CUDA")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff66-\uff9f"


@functools.cache  # compiled on the first text that is not ASCII: its wide classes cost 6 ms, and most logs are ASCII
def _flush_with_cjk() -> re.Pattern[str]:
    return re.compile(r"(?<=[A-Za-z0-9])(?=[%s])|(?<=[%s])(?=[A-Za-z0-9])" % (_CJK, _CJK))


# macOS's loader says what glibc's says as "<library>: undefined symbol: <symbol>", with the symbol's Mach-O underscore
# ("dlopen(/.../torchaudio/lib/libtorchaudio.so, 0x0006): Symbol not found: __ZN2at14RecordFunction...", dyld(1))
_DYLD = re.compile(r"dlopen\(([^,()\n]+), \w+\): Symbol not found: _(\w+)")
# (and a C++ symbol pasted without the dlopen(...) that names its library: "Symbol not found: __Z16THPVariable_Wrap...")
_DYLD_BARE = re.compile(r"Symbol not found: _(_Z\w+)")


def canonical(text: str) -> str:
    """The message with every dtype spelled as its scalar type name, the quotes that a repr
    or a JSON string escaped (`not implemented for \\'BFloat16\\'`) read as quotes, macOS's missing symbol as
    Linux's, and English words apart from the CJK text they were written against."""
    if not text.isascii():
        text = _flush_with_cjk().sub(" ", text)
    if "\\'" in text or '\\"' in text:
        text = text.replace("\\'", "'").replace('\\"', '"')
    if "Symbol not found" in text:
        text = _DYLD_BARE.sub(r"undefined symbol: \1", _DYLD.sub(r"\1: undefined symbol: \2", text))
    text = _RETYPED.sub(lambda m: _RETYPED_AS[m.group(1).lower()], text.translate(_FULL_WIDTH))
    text = _CPP.sub(r"\1", text)
    text = _TENSOR_TYPE.sub(r"\1", text)
    if "Type" in text:
        text = _DEVICE_TYPE.sub(r"\1", text)
    text = _PY_DTYPE.sub(lambda m: _TORCH_DTYPE[m.group(1)], text)
    return _C_NAME.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)).capitalize(), text)


def dtypes_in(text: str) -> List[str]:
    """The float dtypes a canonical message names, as torch dtype names, in order, once each."""
    found: List[str] = []
    for m in _WORD.finditer(text):
        name = SCALAR_TYPE_DTYPE[m.group(1)]
        if name.startswith(("float", "bfloat")) and name not in found:
            found.append(name)
    return found
