"""dora-fp8: LoRA and DoRA adapters on float8 or quantized base weights.

Seed 003: OneTrainer trained DoRA on an SDXL base loaded in fp8 and failed with
`Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and
Half`: the DoRA math added the float8 weight to the fp16 update. peft has the same
family: on torch 2.13 CPU, adding a DoRA adapter to a float8_e4m3fn Linear fails in
`peft/tuners/lora/dora.py: get_weight_norm` with `"mul_cpu_reduced_float" not
implemented for 'Float8_e4m3fn'`, while plain LoRA on the same base works.

The probe runs the setups the training config asks for (or the common ones) with the
installed peft, or in plain torch when peft is absent, `--quick`, or nothing asks for peft (no config, no
`--libraries`, not named by `--only`); bitsandbytes bases
(int8, nf4) are recorded as not probed. One module per job: `setups` (which runs),
`probe` (worker side), `rules` (findings and remedies).

It imports peft, hence transformers: it runs in the "libraries" worker, beside the main one.
"""

from __future__ import annotations

from envdoctor.target.model import Check, Remedy, Signature

from ..fp8 import FLOAT8_MATMUL_MIX
from ..quantized_base import BNB_WITHOUT_LIBRARY
from .probe import probe
from .rules import ID, UPCAST, diagnose, summarize

# An adapter implementation's frames: peft's LoRA tuner, any module file named for LoRA (OneTrainer's
# LoRAModule.py, kohya's networks/lora*.py, musubi-tuner's lora_utils.py, LightX2V's lora_adapter.py), or in a folder
# named for it (A1111's extensions-builtin/Lora/networks.py, SD.Next's modules/lora/network_lokr.py), LyCORIS, ai-toolkit's
# network_mixins.py.
_DORA_FRAMES = (r"peft/tuners/lora/", r"(?i)(^|/)[^/]*lora[^/]*\.py$", r"(?i)(^|/)lora/[^/]+\.py$", r"(^|/)lycoris/",
                r"(^|/)toolkit/network_mixins\.py$")
# A log that names DoRA near the error (OneTrainer's "Decomposed Weights (DoRA)", peft's use_dora) or an adapter
# module's file: plain LoRA words are not enough, a LoRA node can sit beside fp8 math that fails on its own (fp8's then).
_ADAPTER_WORDS = (r"\b(DoRA|dora|use_dora|lora_decompose|weight_decompose|Decomposed)\b",
                  # an adapter module's file named near the error, as a frame the log lost or a poster's own words
                  r"(lora_utils|LoRAModule|networks[/\\]lora\w*)\.py|peft[/\\]tuners[/\\]lora")
_FLOAT8 = (r"Promotion for Float8 Types is not supported, attempted to promote (\w+) and (\w+)|not implemented for 'Float8_\w+|"
           + FLOAT8_MATMUL_MIX)
_CAUSE = ("the adapter's math met the float8 base weight without upcasting it first: DoRA adds W + s·(B@A) and takes "
          "its norm on the base weight (OneTrainer before commit 2925dc8f, seed 003; peft's get_weight_norm), and torch "
          "neither promotes float8 nor has float8 kernels for that math")
EXPLAIN_REMEDIES = (
    Remedy("Turn DoRA off (plain LoRA on a float8 base passes, measured with peft 0.21): OneTrainer `lora_decompose: false`, "
           "peft `use_dora=False`", id="dora-off"),
    Remedy("Or load the trained part's base weights in bf16 instead of fp8 (OneTrainer `weight_dtype: BFLOAT_16`)", id="base-bf16"),
    UPCAST,
)

# A quantized base's packed weights (GPTQ, AWQ, QLoRA's 4-bit) cannot take a LoRA delta: merge where they are whole
MERGE_UNQUANTIZED = Remedy("Merge the adapter into the original model loaded unquantized (bf16/fp16: `from_pretrained(..., "
                           "torch_dtype=torch.bfloat16)` without `load_in_4bit`/`load_in_8bit`), then quantize the merged model "
                           "again if needed; or serve the adapter unmerged", id="merge-unquantized")

# The same family told by structure, not by one library's words: a failure raised in, or pointed at, peft's adapter
# layers for quantized bases (tuners/lora/{bnb,gptq,awq,aqlm,eetq,hqq,torchao}.py) or its dequantize helpers
# (utils/integrations.py); or one line naming an adapter, a quantized or float8 base and a failure together ("the
# official scaled fp8 weights still does not support lora", "Loading LoRA on quantized model (int8) - this may fail").
_QUANT_ADAPTER_PATHS = r"peft[/\\]+(tuners[/\\]+lora[/\\]+(bnb|gptq|awq|aqlm|eetq|hqq|torchao)|utils[/\\]+integrations)\.py"
# Errors that pass through peft's layers for quantized bases without being theirs
# ... the user's Ctrl-C ending the traceback whose frame line names those files
_INTERRUPTED = r"^\s*KeyboardInterrupt\s*$"
_NOT_THE_ADAPTERS = r"(?!(KeyboardInterrupt|SystemExit|[\w.]*OutOfMemoryError)\b)(?!.*?\bout of memory\b)"
_CUDA_ECHO = (r"device-side assert|index out of (range|bounds)|an illegal memory access was encountered",)
# ... and bitsandbytes' functions on a native library it could not load ("'NoneType' object has no attribute
# 'cgemm_4bit_inference_naive_bf16'"): any 4-bit forward meets that there; quantized-base's
_BNB_WITHOUT_LIBRARY = (BNB_WITHOUT_LIBRARY,)
_ADAPTER = r"\b(q?lora|dora|lokr|loha|locon|lycoris|adapter)s?\b"
# (and llama.cpp's GGUF files and their block quantizations, Q4_K, Q8_0, which ComfyUI-GGUF, Forge and stable-diffusion.cpp
# load for image models: github.com/ggml-org/ggml/blob/master/docs/gguf.md)
_QUANT_BASE = (r"\bfp8|float8|\bint8\b|int8_|\bnf4\b|\b[48][- ]?bit\b|\bquanti[sz]ed\b|\bq(float8|int8|int4)\b|\bgptq\b|\bawq\b|e4m3|"
               r"\bgguf\b|\bq[2-8]_(k|[01])\b")
_FAILS = (r"\bnot (yet )?(be )?supported\b|\bunsupported\b|\bdo(es)?(n't| not) (yet )?(work|support)\b|\b(in|not )compatible\b|"
          r"\b(may|will|would) fail\b|\bfail(s|ed|ing)?\b|\bcannot\b|\bcan't\b|\bnoise\b|\bsnowflakes?\b|\bgarbage\b|"
          # the adapter loads and does nothing, or errors, told in the user's words ("loras make no different on nf4")
          r"\bno (effect|differen(ce|t))\b|\bgibberish\b|\bgives? errors?\b|"
          # or spoils what it makes ("the output looks sadly bad"), or does not run ("not working")
          r"\b(looks?|is|are) (\w+ )?bad\b|\bnot working\b")
# An API drift between peft and the trainer (a keyword one release added) fails in the same files but is no base's fault
_API_DRIFT = (r"unexpected keyword argument|cannot import name",)
# A quantized model with no adapter at all (transformers' "cannot perform fine-tuning on purely quantized models. Please
# attach trainable adapters"): the code forgot get_peft_model, or merged the adapters away before training
_NO_ADAPTER = (r"(?i)\battach (trainable )?adapters\b|\bno (trainable )?adapters?\b|\bwithout (an? )?adapters?\b",)
# A serving engine without LoRA for the model's architecture (vLLM: "Model QWenLMHeadModel does not support LoRA, but LoRA
# is enabled"): the model class, not its base's dtype
_ARCH_NO_LORA = (r"\b[A-Z]\w*(For\w+|Model)\b does not support LoRA",)
# peft's refusal to wrap the AWQ and GPTQ kernels' layers (tuners/lora/model.py "Target module ... is not supported")
# (its repr may carry the layer's arguments: "Target module WQLinear_GEMM(in_features=4096, ..., w_bit=4, group_size=128)
# is not supported"); and peft's own refusal of DoRA on such a layer ("AwqLoraLinear does not support DoRA yet")
_PEFT_REFUSES = (r"Target module \W*(WQLinear_\w+|\w*QuantLinear\w*)\b.{0,200}?is not supported|"
                 r"\b\w*(Awq|Gptq|Eetq|Hqq|Aqlm|Quant|4bit|8bit)\w*Linear does not support DoRA")
ADAPTER_ON_QUANTIZED = Remedy("Load the base unquantized (bf16/fp16) to train, load or merge the adapter, then quantize the "
                              "result; or use a quantization, loader and release that support adapters (bitsandbytes 4/8-bit "
                              "QLoRA in peft), with the trainer's fast LoRA path off for packed AWQ/GPTQ layers",
                              id="lora-unquantized")
_QUANTIZED_CAUSE = ("the adapter met a base whose weights are quantized (bitsandbytes, torchao, quanto, GPTQ/AWQ, an fp8 "
                    "checkpoint): the loader or trainer cannot apply or merge a LoRA delta on those packed weights")

SIGNATURES = (
    Signature("dora-float8-base", _FLOAT8, frames=_DORA_FRAMES, frames_required=True, cause=_CAUSE, remedies=EXPLAIN_REMEDIES),
    Signature("dora-float8-base", _FLOAT8, context=_ADAPTER_WORDS, context_required=True, cause=_CAUSE, remedies=EXPLAIN_REMEDIES),
    # A logger that names the LoRA it was patching on the error's own line (ComfyUI: `ERROR lora <key> "addmm_cuda" not
    # implemented for 'Float8_e4m3fn'`; LyCORIS' kinds alike: "ERROR lokr ...", "loha")
    Signature("dora-float8-base", r"^(?=.*?\b(lora|LoRA|LORA|lokr|LoKr|loha|LoHa)\b).*?(%s)" % _FLOAT8, cause=_CAUSE, remedies=EXPLAIN_REMEDIES),
    # kohya's sd-scripts training a LoRA on an fp8 base without mixed precision (train_network.py: "fp8_base requires mixed
    # precision='fp16' or 'bf16'"): the adapter's math runs in the base's float8 unless autocast lifts it
    Signature("dora-float8-base", r"fp8_base requires mixed\s+precision='fp16' or 'bf16'",
              cause="the LoRA trains on a float8 base without mixed precision: sd-scripts needs autocast (fp16 or bf16) to "
                    "compute the adapter over the fp8 weights",
              remedies=(Remedy("Set mixed_precision to bf16 (or fp16) with fp8_base, or drop fp8_base and load the base in bf16",
                               id="fp8-base-mixed-precision"),)),
    # A LoRA loaded into a base that optimum-quanto quantized (qfloat8, qint8): quanto's modules read their packed
    # weight as `<name>._data` / `._scale` from the state dict, which an adapter's keys do not have
    # (github.com/huggingface/diffusers/issues/9514: LoRA into a quanto-quantized Flux "is not yet supported"; 9270)
    # peft before 0.7 refused to merge any adapter into a bitsandbytes-quantized base: "Cannot merge LORA layers when the
    # model is loaded in 8-bit mode" (its check covered 4-bit too; github.com/artidoro/qlora/issues/29)
    Signature("adapter-on-quantized-base", r"Cannot merge LORA layers when the model is loaded in (8|4)-bit mode",
              cause="peft cannot merge the adapter into a base loaded in 4/8-bit by bitsandbytes",
              remedies=(MERGE_UNQUANTIZED,
                        Remedy("Or upgrade peft (0.7+ dequantizes 4/8-bit bases to merge)", id="peft-upgrade"))),
    # The trainers' own refusals to merge into a quantized base: LLaMA-Factory's export ("Cannot merge adapters to a
    # quantized model."), ms-swift's ("... is a quantized model and does not support merge-lora")
    Signature("adapter-on-quantized-base", r"Cannot merge adapters to a quantized model|is a quantized model and does not support merge-lora",
              cause="the adapter was trained on a quantized base (QLoRA, GPTQ, AWQ) and cannot be merged into those packed weights",
              remedies=(MERGE_UNQUANTIZED,)),
    # peft wrapping a quantized layer class it has no LoRA layer for (AWQ's WQLinear_GEMM, GPTQ's QuantLinear: peft's
    # tuners/lora/model.py "Target module ... is not supported"), or a LoRA patch reading `.weight`, which packed
    # layers keep as qweight (github.com/casper-hansen/AutoAWQ: "not compatible with training yet")
    Signature("adapter-on-quantized-base", _PEFT_REFUSES,
              cause="peft has no adapter layer for this quantized layer (AWQ, GPTQ kernels): the base cannot take LoRA as loaded",
              remedies=(ADAPTER_ON_QUANTIZED,)),
    # ... as peft 0.2-0.3 said it: `_find_and_replace` built `new_module` only for the layer classes it knew (Linear,
    # Conv1D, bitsandbytes' Linear8bitLt), so a GPTQ QuantLinear or a 4-bit layer left it unbound
    # (github.com/huggingface/peft/blob/v0.3.0/src/peft/tuners/lora.py)
    Signature("adapter-on-quantized-base", r"local variable 'new_module' referenced before assignment",
              frames=(r"peft/tuners/lora",), frames_required=True,
              cause="this peft has no adapter layer for the base's layer class (a GPTQ or 4-bit quantized layer it predates)",
              remedies=(ADAPTER_ON_QUANTIZED,)),
    Signature("adapter-on-quantized-base", r"'(WQLinear_\w+|\w*QuantLinear\w*)' object has no attribute 'weight'",
              context=(r"(?i)\b(q?lora\w*|peft|adapters?)\b",), context_required=True,
              cause="a LoRA patch reads the base layer's `.weight`, which AWQ/GPTQ packed layers do not have (only qweight)",
              remedies=(ADAPTER_ON_QUANTIZED,)),
    # FSDP flattening a bitsandbytes 4-bit base: its packed weights are uint8 storage, which FlatParameter refuses ("Cannot
    # flatten integer dtype tensors"); QLoRA under FSDP needs bnb_4bit_quant_storage set to the compute dtype
    # (huggingface.co/docs/peft/accelerate/fsdp "Use PEFT QLoRA and FSDP for finetuning large models on multiple GPUs")
    Signature("adapter-on-quantized-base", r"Cannot flatten integer dtype tensors",
              cause="FSDP cannot shard the quantized base: bitsandbytes stores its 4-bit weights as uint8 unless told otherwise",
              remedies=(Remedy("Load the 4-bit base with `bnb_4bit_quant_storage=torch.bfloat16` (the compute dtype) so that FSDP can "
                               "flatten it, and keep the adapter's parameters in that dtype too", id="bnb-quant-storage"),
                        ADAPTER_ON_QUANTIZED)),
    # Backward through torch._scaled_mm, which has no derivative: a base quantized to float8 for inference (torchao's
    # Float8DynamicActivationFloat8WeightConfig) trained under an adapter, whose gradient to the input flows back through
    # the base's float8 matmul (github.com/pytorch/ao/issues/4376)
    Signature("adapter-on-quantized-base", r"derivative for (aten::)?_scaled_mm\w*(\.\w+)? is not implemented",
              cause="the run trains through a matmul quantized to float8 for inference: torch._scaled_mm has no backward, so "
                    "an adapter (or any training) over that base cannot take its gradient",
              remedies=(Remedy("Train over the base in bf16, or quantize it with a float8 training recipe (torchao's "
                               "`convert_to_float8_training`) instead of an inference config", id="float8-training-recipe"),
                        ADAPTER_ON_QUANTIZED)),
    # accelerate's prepare() refusing to train (adapters on) a base bitsandbytes loaded in 8/4-bit on another GPU than the
    # one it trains on, or spread over several (accelerate/accelerator.py; github.com/artidoro/qlora/issues/137, fixed for
    # adapters by accelerate#1523: "You can't train a model that has been loaded in 8-bit precision on multiple devices")
    Signature("adapter-on-quantized-base", r"You can't train a model that has been loaded in (8|4)-bit precision on "
                                           r"(a different device|multiple devices)",
              cause="accelerate refuses to train a base quantized by bitsandbytes where it is not on the training GPU: loaded "
                    "with a device_map across devices, or onto another GPU than the process's",
              remedies=(Remedy("Load the quantized base onto the training process's own GPU (`device_map={'': "
                               "torch.cuda.current_device()}`, or the local rank's under accelerate/torchrun), and upgrade "
                               "accelerate (0.20+ lets adapters train on a base spread for inference)", id="quantized-base-one-device"),
                        ADAPTER_ON_QUANTIZED)),
    # peft refuses to merge into a GPTQ base (tuners/lora/model.py `_check_merge_allowed`): its int4 weights cannot take the delta
    Signature("adapter-on-quantized-base", r"Cannot merge LORA layers when the model is gptq quantized",
              cause="peft cannot merge the adapter into a GPTQ-quantized base: its packed int4 weights cannot take the LoRA delta",
              remedies=(MERGE_UNQUANTIZED,)),
    Signature("adapter-on-quantized-base", r"KeyError: '[\w.]+\.(_data|_scale)'", frames=(r"optimum/quanto/",), frames_required=True,
              cause="the adapter was loaded into a base quantized by optimum-quanto, whose packed weights the LoRA loader "
                    "cannot address",
              remedies=(Remedy("Load the LoRA into the unquantized base, then quantize (`quantize(...)` and `freeze(...)` after "
                               "`load_lora_weights`), or fuse the LoRA first; recent peft and quanto releases load some "
                               "adapters directly", id="lora-before-quantize"),)),
    # An error that names a quantized layer or tensor class (bitsandbytes' Linear4bit/Params4bit, GPTQ/AWQ/Marlin kernels,
    # quanto's QLinear, torchao's AffineQuantizedTensor/Float8Tensor, HQQ) beside an adapter: the adapter code met the
    # packed weight
    # (not a model's printed layout, "(base_layer): Linear4bit(in_features=4096, ...)", which a healthy QLoRA run shows)
    Signature("adapter-on-quantized-base", r"\b(Linear4bit|Linear8bitLt|Params4bit|Int8Params|\w*QuantLinear\w*|WQLinear_\w+|"
                                           r"QLinear|QBytesTensor|AffineQuantizedTensor|Float8Tensor|HQQLinear|\w*Marlin\w*Linear)\b"
                                           r"(?!\((in_features=|\s*$))",
              context=(r"(?i)\b(q?lora|dora|peft|lycoris|adapters?)\b",), context_required=True,
              unless=_API_DRIFT + (_PEFT_REFUSES,),  # peft's own refusal for those kernels, below, says more
              cause=_QUANTIZED_CAUSE, remedies=(ADAPTER_ON_QUANTIZED,)),
    # Read weakest (a message pattern that matches no characters ranks below every worded one): the structural readings
    # (not a CUDA error every QLoRA forward would carry through peft's bnb layer: a device-side assert, an index out of
    # bounds, an illegal memory access are the data's or the kernel's)
    # (nor what any forward would meet there: the GPU's memory running out, the user's Ctrl-C)
    Signature("adapter-on-quantized-base", r"^" + _NOT_THE_ADAPTERS, frames=(_QUANT_ADAPTER_PATHS,), frames_required=True,
              unless=_API_DRIFT + _CUDA_ECHO + _BNB_WITHOUT_LIBRARY,
              cause=_QUANTIZED_CAUSE, remedies=(ADAPTER_ON_QUANTIZED,)),
    # (a line naming those files, but not a warning they print on a run that goes on: "bnb.py:325: UserWarning: Merge lora
    # module to 4-bit linear may get different generations due to rounding errors")
    Signature("adapter-on-quantized-base", r"^%s(?!.*?\b\w*Warning: )(?=.*?%s)" % (_NOT_THE_ADAPTERS, _QUANT_ADAPTER_PATHS),
              unless=_API_DRIFT + _CUDA_ECHO + _BNB_WITHOUT_LIBRARY + (_INTERRUPTED,),
              cause=_QUANTIZED_CAUSE, remedies=(ADAPTER_ON_QUANTIZED,)),
    Signature("adapter-on-quantized-base", r"(?i)^(?=.*?%s)(?=.*?(%s))(?=.*?(%s))" % (_ADAPTER, _QUANT_BASE, _FAILS),
              unless=_API_DRIFT + _NO_ADAPTER + _ARCH_NO_LORA, cause=_QUANTIZED_CAUSE, remedies=(ADAPTER_ON_QUANTIZED,)),
)

CHECK = Check(
    id=ID,
    title="adapters on float8 / quantized base weights",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    order=80,
    probe_reads_intent=True,  # its setups come from the training config
    imports_libraries=True,  # peft, transformers, diffusers: where the run asks for them
    signatures=SIGNATURES,
    # The main worker, not the libraries one: importing peft (3 s, transformers' modeling
    # stack included) there balances library-probes' transformers + diffusers imports in the
    # other worker; on 2 cores the two finish together (benchmarks/run.py --libs-python).
    group="main",
)
