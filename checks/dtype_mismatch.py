"""dtype-mismatch: which fp32 / fp16 / bf16 mixes does this stack reject, on each
device, and with which message? (seeds 000 and 001: a CLIP layer_norm, linear,
conv and VAE bias meeting tensors of another dtype in OneTrainer.)

The rejections are torch's rules, not a defect: they are recorded so that a
traceback can be matched to them, and a mix that is *accepted* but computes
the wrong numbers is an error."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Tuple

from envdoctor.target.model import Check, Finding, ProbeContext, Remedy, Severity, Signature, Target
from envdoctor.target.probekit.ops import randn, run_op, seeded_generator
from envdoctor.target.probekit.text import short_dtype
from envdoctor.target.remedies.actions import config_remedy

ID = "dtype-mismatch"
FLOATS = ("float32", "float16", "bfloat16")
PAIRS = [(a, b) for a in FLOATS for b in FLOATS if a != b]
TOLERANCE = 8e-2  # an accepted mix computes at the lower precision at worst


def _probe_device(torch: Any, F: Any, device: str) -> List[Dict[str, Any]]:
    gen = seeded_generator(torch, 2)
    x, w = randn(torch, gen, 4, 16), randn(torch, gen, 8, 16)
    img, kern, kb = randn(torch, gen, 1, 3, 8, 8), randn(torch, gen, 4, 3, 3, 3), randn(torch, gen, 4)
    ln_w, ln_b = randn(torch, gen, 16), randn(torch, gen, 16)
    ops: List[Dict[str, Any]] = []

    def on(t: Any, name: str) -> Any:
        return t.to(device=device, dtype=getattr(torch, name))

    def ref(t: Any, name: str) -> Any:  # the rounded values in fp32, on the CPU
        return t.to(getattr(torch, name)).float()

    for a, c in PAIRS:
        mix = {"weight_dtype": c, "mix": "input %s × weight %s" % (short_dtype(a), short_dtype(c))}
        ops.append(run_op(torch, "linear", device, a, lambda: F.linear(on(x, a), on(w, c)), lambda: F.linear(ref(x, a), ref(w, c)), **mix))
        ops.append(run_op(torch, "matmul", device, a, lambda: torch.matmul(on(x, a), on(w, c).t()),
                          lambda: torch.matmul(ref(x, a), ref(w, c).t()), **mix))
        ops.append(run_op(torch, "conv2d", device, a, lambda: F.conv2d(on(img, a), on(kern, c), padding=1),
                          lambda: F.conv2d(ref(img, a), ref(kern, c), padding=1), **mix))
        ops.append(run_op(torch, "layer_norm", device, a, lambda: F.layer_norm(on(x, a), (16,), on(ln_w, c), on(ln_b, c)),
                          lambda: F.layer_norm(ref(x, a), (16,), ref(ln_w, c), ref(ln_b, c)), **mix))
    for a, c in PAIRS:  # input and weight agree, the bias does not (seed 001's VAE)
        mix = {"weight_dtype": a, "bias_dtype": c, "mix": "input/weight %s × bias %s" % (short_dtype(a), short_dtype(c))}
        ops.append(run_op(torch, "conv2d_bias", device, a, lambda: F.conv2d(on(img, a), on(kern, a), on(kb, c), padding=1),
                          lambda: F.conv2d(ref(img, a), ref(kern, a), ref(kb, c), padding=1), **mix))
    return ops


def probe(torch: Any, ctx: ProbeContext) -> Dict[str, Any]:
    import torch.nn.functional as F

    devices = [d for d in ctx.select_devices(torch) if d != "mps"]
    facts: Dict[str, Any] = {"torch": torch.__version__, "devices": devices, "ops": []}
    for device in devices:
        facts["ops"].extend(_probe_device(torch, F, device))
    return facts


# ---------------------------------------------------------------- rules

REMEDIES = (
    Remedy("Cast the input to the layer's dtype where the two meet: `x = x.to(layer.weight.dtype)` "
           "(the maintainer fix for seed 000 casts to fp32 before the CLIP layer_norm)", id="cast-input"),
    config_remedy("Load every model part in one weight dtype (OneTrainer: the same `weight_dtype` for unet, text encoders and vae), "
                  "or train in fp32 / bf16 throughout", "consistent-weight-dtype", {"weight_dtype": "consistent"}),
    Remedy("Run the forward pass under autocast (`with torch.autocast(device_type, dtype=torch.bfloat16):`), "
           "which casts at operation boundaries", id="use-autocast"),
)


def _garbage(fact: Dict[str, Any]) -> bool:
    err = fact.get("max_rel_err")
    return isinstance(err, str) or (err is not None and float(err) > TOLERANCE)


def diagnose(facts: Dict[str, Any], env: Target) -> List[Finding]:
    findings: List[Finding] = []
    for device in facts.get("devices") or ():
        ops = [o for o in facts.get("ops") or () if o.get("device") == device]
        rejected = [o for o in ops if not o.get("ok")]
        if rejected:
            distinct: Dict[Tuple[str, str], str] = {}
            for o in rejected:
                distinct.setdefault((o["op"], o.get("error") or ""), o.get("mix", ""))
            findings.append(
                Finding(
                    ID,
                    "mixes-rejected",
                    Severity.INFO,
                    "%s: %d of %d fp32/fp16/bf16 mixes are rejected; a model whose parts disagree in dtype fails there"
                    % (device, len(rejected), len(ops)),
                    tuple("%s (%s): %s" % (op, mix, error) for (op, error), mix in distinct.items()),
                    REMEDIES,
                    {"device": device, "rejected": len(rejected), "total": len(ops)},
                )
            )
        wrong = [o for o in ops if o.get("ok") and _garbage(o)]
        if wrong:
            findings.append(
                Finding(
                    ID,
                    "mix-wrong-results",
                    Severity.ERROR,
                    "%s: mixed-dtype %s run but compute wrong numbers" % (device, ", ".join(sorted({o["op"] for o in wrong}))),
                    tuple("%s (%s): max relative error %s vs fp32" % (o["op"], o.get("mix"), o.get("max_rel_err")) for o in wrong),
                    REMEDIES,
                    {"device": device},
                )
            )
    return findings


def summarize(facts: Dict[str, Any]) -> str:
    parts = []
    for device in facts.get("devices") or ():
        ops = [o for o in facts.get("ops") or () if o.get("device") == device]
        accepted = sum(1 for o in ops if o.get("ok"))
        parts.append("%s: %d of %d mixes rejected, %d accepted" % (device, len(ops) - accepted, len(ops), accepted))
    return "; ".join(parts) or "no device selected"


# Messages as envdoctor.pipeline.explain.spelling writes them (Half, Float, BFloat16 for every spelling);
# the CPU and CUDA wordings of each mix are in ../docs/facts.md and the probe's own facts.
_FLOATS = r"(Float|Half|BFloat16)"
# Two different float dtypes: `torch.cuda.FloatTensor` against `torch.FloatTensor` reads "Float" twice once
# spelled one way, and is a cuda/cpu device mix, not a dtype one.
# torch 0.4 to 1.x named tensor types: "(torch.cuda.HalfTensor)", "(CUDAFloatTensor)".
# (and their complex kinds, an fp16 autocast meeting a complex convolution: "(ComplexHalf) and weight type (ComplexFloat)")
_TWO = (r"\(?(?:torch\.)?(?:cuda\.|CUDA)?(?P<a>(?:Complex)?(?:Float|Half|BFloat16))(?:Tensor)?\)?%s"
        r"\(?(?:torch\.)?(?:cuda\.|CUDA)?(?!(?P=a)(?:Tensor)?\b)((?:Complex)?(?:Float|Half|BFloat16))(?:Tensor)?\)?")
MPS_MIX = "float32 and half tensors met in one operation on the Mac's MPS backend"
# torch 0.4-1.5 named the two dtypes in two wordings, one signature each (_TWO's named group is one per pattern)
MIX_OLDER_WORDING = "two tensors of different float dtypes met in one operation (an older torch's wording)"

_SIGNATURES = (
    # (torch 0.4 to 1.x also wrote "expected type torch.cuda.FloatTensor but got torch.cuda.HalfTensor")
    # (and as people retype it: "expect scalar type Float but Half")
    Signature("mixes-rejected", r"expect(ed)? scalar type %s but (found )?%s|expected type %s" % (_FLOATS, _FLOATS, _TWO % " but got "),
              cause="two tensors of different float dtypes met in one operation (a layer's weights in one dtype, its "
                    "input in another)", remedies=REMEDIES),
    # torch.lerp_ (an EMA's update: its weights in bf16 under DeepSpeed, the EMA copy in fp32) checks its operands itself:
    # "expected dtype float for `end` but got dtype c10::BFloat16" (aten/src/ATen/native/Lerp.cpp)
    Signature("mixes-rejected", r"expected dtype %s" % (_TWO % r" for `?\w+`? but got dtype "),
              cause="two tensors of different float dtypes met in one operation (torch.lerp's operands: an EMA copy kept in "
                    "one dtype, the model's weights in another)", remedies=REMEDIES),
    # xformers' memory-efficient attention checking its operands: "Query/Key/Value should either all have the same dtype, or
    # (in the quantized case) Key/Value should have dtype torch.int32", then each one's dtype (an IP-Adapter's fp32 keys
    # beside fp16 queries)
    Signature("mixes-rejected", r"Query/Key/Value should either all have the same dtype",
              cause="attention's query, key and value are of different float dtypes (an adapter's projections left in fp32 "
                    "beside an fp16 model)", remedies=REMEDIES),
    # torch 1.0-1.5's wording ("Expected object of scalar type Float but got scalar type Half for argument #2 'mat2'") and
    # torch 0.4's for a sequence argument ("Expected a Tensor of type torch.cuda.HalfTensor but found a type
    # torch.cuda.FloatTensor for sequence element 926": torch.cat of fp16 and fp32 gradients)
    Signature("mixes-rejected", r"Expected object of scalar type %s" % (_TWO % " but got scalar type "),
              cause=MIX_OLDER_WORDING, remedies=REMEDIES),
    # (torch 0.4-1.0's for an argument: "Expected object of type torch.cuda.FloatTensor but found type torch.cuda.HalfTensor
    # for argument #2 'weight'", an fp16 model fed fp32 input)
    Signature("mixes-rejected", r"Expected object of type %s" % (_TWO % " but found type "),
              cause=MIX_OLDER_WORDING, remedies=REMEDIES),
    Signature("mixes-rejected", r"Expected a Tensor of type %s" % (_TWO % " but found a type "),
              cause="tensors of different float dtypes in one sequence argument (torch.cat of fp16 and fp32; torch 0.4)",
              remedies=REMEDIES),
    # autocast meeting two lower-precision float dtypes at once (a stray `.half()` inside a bf16 autocast region):
    # aten/src/ATen/autocast_mode.h prioritize() "Unexpected floating ScalarType in at::autocast::prioritize"
    # (github.com/Parskatt/RoMa/issues/2)
    Signature("mixes-rejected", r"Unexpected floating ScalarType in at::autocast::prioritize",
              cause="autocast met tensors of two lower-precision dtypes in one operation (fp16 and bf16: a tensor cast by hand "
                    "inside an autocast region of the other dtype)", remedies=REMEDIES),
    # (not where it names an integer type: token ids fed into a Linear, "but got: long int != float"; float64 beside
    # float32 stays a reading, as the corpus's threads label it)
    Signature("mixes-rejected", r"(mat1 and mat2|m1 and m2|self and mat2) (must|to) have the same dtype"
                                r"(?![^\n]{0,30}\b(?i:long|int|short|bool)\b)",
              cause="a linear/matmul input and weight have different dtypes", remedies=REMEDIES),
    # MPSGraph's own verifier on a Mac: "error: 'mps.add' op requires the same element type for all operands and results",
    # its next line naming the operands ("(tensor<2x1280xf32>, tensor<*xf16>)"): float32 and half met in one MPS op
    Signature("mixes-rejected", r"'mps\.\w+' op requires the same element type for all operands",
              context=(r"tensor<[^>]*x(b?f16|f32)>[^\n]*tensor<[^>]*x(b?f16)>|tensor<[^>]*x(b?f16)>[^\n]*tensor<[^>]*xf32>",),
              context_required=True,
              cause=MPS_MIX, remedies=REMEDIES),
    # (and where the paste stops at the error, its operands not shown: on the Macs' image apps nearly always fp16 weights
    # meeting fp32 tensors, which --no-half settles; not where the operands shown are integers or booleans, a code's own mix)
    Signature("mixes-rejected", r"'mps\.\w+' op requires the same element type for all operands",
              unless=(r"tensor<[^>]*x(i\d+|ui\d+)>",),
              cause=MPS_MIX, remedies=REMEDIES),
    # (and MPSGraph's executable given another float dtype than it was built for: "failed assertion `Incompatible element
    # type for parameter at index 1, mlir module expected element type bf16 but received f32'"; a graph built for f32 and
    # given bf16 is bf16-support's, the Mac without bf16)
    Signature("mixes-rejected", r"Incompatible element type\b[^\n]{0,80}\bexpected element type (b?f16 but received f32|"
                                r"f32 but received f16|bf16 but received f16|f16 but received bf16)\b",
              cause=MPS_MIX, remedies=REMEDIES),
    Signature("mixes-rejected", r"Input type %s [Ss]hould be the same" % (_TWO % r" and (?:weight|bias) type "),
              cause="a convolution's input, weight or bias have different dtypes", remedies=REMEDIES),
    # The same said by a library's own check, naming both dtypes: "Input and cos/sin must have the same dtype, got
    # torch.float32 and torch.bfloat16" (transformers' rotary embedding; github.com/huggingface/transformers/issues/36257)
    Signature("mixes-rejected", r"must have the same dtype,? (?:but )?got %s" % (_TWO % " and "),
              cause="two tensors of different float dtypes met in one operation (a library checked them first)", remedies=REMEDIES),
    # ... and by Triton's `tl.dot` in a kernel (triton/language/semantic.py: "Both operands must be same dtype. Got bf16 and
    # fp16"), in Triton's own dtype names
    Signature("mixes-rejected", r"Both operands must be same dtype\. Got (?P<a>fp32|fp16|bf16) and (?!(?P=a)\b)(fp32|fp16|bf16)\b",
              cause="two tensors of different float dtypes met in a Triton kernel's matmul (tl.dot)", remedies=REMEDIES),
    # fp32 reaching a half-only kernel: flash-attn's "FlashAttention only support fp16 and bf16 data type" (a model loaded in
    # fp32, or a layer whose fp32 output autocast does not cast back: DoRA's fp32 magnitude on a 4-bit base,
    # github.com/unslothai/unsloth/issues/1013)
    Signature("mixes-rejected", r"FlashAttention only supports? fp16 and bf16 data types?",
              cause="fp32 tensors reached FlashAttention, which runs in fp16/bf16 only: a model or a layer left in fp32 beside "
                    "half-precision attention", remedies=REMEDIES),
    # torch's own attention dispatcher with only half-precision kernels allowed (sdpa_kernel(FLASH_ATTENTION), or a GPU
    # where only they apply) and fp32 inputs: each kernel's refusal is a warning, and the error names none of them
    # ("UserWarning: Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: float ..." then
    # "RuntimeError: No available kernel. Aborting execution.", as torch 2.11 said it on an H200:
    # tests/fixtures/measurements/h200-failures/)
    Signature("mixes-rejected", r"No available kernel\. +Aborting execution",
              context=(r"Expected query, key,? and value to all be of dtype: \{Half, BFloat16\}",), context_required=True,
              cause="fp32 tensors reached scaled_dot_product_attention where only its half-precision kernels (FlashAttention, "
                    "cuDNN) may run: a model or a layer left in fp32 beside half-precision attention", remedies=REMEDIES),
    # index_put_ (`y[mask] = expert(x[mask])` with bf16 experts into an fp32 buffer: github.com/hiyouga/LLaMA-Factory)
    Signature("mixes-rejected", r"requires the source and destination dtypes match, got %s for the destination and %s for the "
                                r"source" % (_FLOATS, _FLOATS),
              cause="a tensor of one float dtype was written into one of another (index_put_, a masked assignment)",
              remedies=REMEDIES),
    # MPS graphs refusing an elementwise op on fp32 and fp16 tensors (Apple's MPSGraph: "error: input types
    # 'tensor<2x1280xf32>' and 'tensor<1280xf16>' are not broadcast compatible", then "LLVM ERROR: Failed to infer result
    # type(s)"): the same types with different shapes are a shape bug, not this
    Signature("mixes-rejected", r"input types 'tensor<[\dx*]*?(?P<t>f32|f16|bf16)>' and 'tensor<[\dx*]*?(?!(?P=t)>)(f32|f16|bf16)>' "
                                r"are not broadcast compatible",
              cause="tensors of different float dtypes met in one MPS operation (fp32 and fp16 on Apple's GPU)", remedies=REMEDIES),
    Signature("mixes-rejected", r"mixed dtype \(CPU\): expect (parameter|input) to have scalar type",
              cause="a normalisation's input and weight have different dtypes on the CPU", remedies=REMEDIES),
    Signature("mixes-rejected", r"Expected query, key,? and value to have the same dtype",
              cause="attention's query, key and value come in different dtypes", remedies=REMEDIES),
    Signature("mixes-rejected", r"Expected tensor for argument #\d+ '\w+' to have the same type as tensor for argument #\d+ '\w+'; "
                                r"but type %s" % (_TWO % " does not equal "),
              cause="a layer's gradient and weight have different dtypes (a conv backward under half precision with fp32 "
                    "weights)", remedies=REMEDIES),
    # scatter/index ops writing one dtype into another ("scatter_add_cuda_(): Expected self.dtype to be equal to
    # src.dtype": half features into an fp32 volume under AMP; "index_add_(): self (Float) and source (Half) must have
    # the same scalar type")
    # (index_copy_'s own words: "self and source expected to have the same dtype, but got (self) Float and (source) Half")
    Signature("mixes-rejected", r"Expected self\.dtype to be equal to src\.dtype|self \(%s\) and source \(%s\) must have the "
                                r"same scalar type|expected to have the same dtype, but got \(self\) %s and \(source\) %s"
                                % (_FLOATS, _FLOATS, _FLOATS, _FLOATS),
              cause="a scatter or index op wrote a tensor of one dtype into one of another (half values into an fp32 buffer "
                    "under autocast)", remedies=REMEDIES),
    # masked_scatter's own words ("expected self and source to have same dtypes but gotFloat and Half", its space lost);
    # scaled_dot_product_attention's mask of another float dtype than the query ("Expected attn_mask dtype to be bool or
    # to match query dtype, but got attn_mask.dtype: float and  query.dtype: c10::BFloat16 instead."); cuDNN's RNN
    # ("Input and parameter tensors are not the same dtype, found input tensor with Half and parameter tensor with Float")
    Signature("mixes-rejected", r"expected self and source to have same dtypes but got ?%s and %s|"
                                r"Expected attn_mask dtype to be bool or (float or )?to match query dtype, but got attn_mask\.dtype: "
                                r"(float|c10::Half|c10::BFloat16|half|bfloat16)\b[^\n]{0,30}query\.dtype: (c10::)?(Half|BFloat16|float)\b|"
                                r"Input and parameter tensors are not the same dtype, found input tensor with %s and parameter "
                                r"tensor with %s" % (_FLOATS, _FLOATS, _FLOATS, _FLOATS),
              cause="two tensors of different float dtypes met in one operation (a mask, a buffer or an RNN's weights left in "
                    "fp32 beside half activations)", remedies=REMEDIES),
    Signature("mixes-rejected", r"Found dtype %s but expected %s" % (_FLOATS, _FLOATS),
              cause="a loss's prediction and target have different float dtypes (backward under fp16/bf16)", remedies=REMEDIES),
)
# Every mix is the code's: it brought the two dtypes together where they met, which no probe runs
SIGNATURES = tuple(replace(s, in_code=True) for s in _SIGNATURES)

CHECK = Check(
    id=ID,
    title="mixed fp32/fp16/bf16 operations",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    order=20,
    signatures=SIGNATURES,
)
