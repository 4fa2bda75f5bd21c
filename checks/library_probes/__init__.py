"""library-probes: does the user's own transformers / diffusers code run in the precision and
on the device the training config asks for?

A micro-op that passes does not prove that a model will: the seeds failed inside CLIP's
layer norm (seed 004: `"LayerNormKernelImpl" not implemented for 'Half'`, autotrain SDXL
DreamBooth in fp16 on a CPU), a UNet and a VAE, and a T5 routed through apex FusedRMSNorm
(seed 002). So, for each of transformers and diffusers installed in the target environment,
the probe builds tiny models with random weights from configs written in code (CLIP text
encoders, a T5 encoder, a UNet2DConditionModel, an AutoencoderKL; no hub, no network) and
runs each forward and one backward step on the intent's device in its precision ("pure"
half weights, or fp32 weights under autocast), or without a config in the common setups.

One module per job: `models` (the tiny models), `setups` (which runs: pure functions of the
intent), `probe` (worker side: the imports and runs, each a guarded step), `rules` (findings
and remedies).

It runs in the "libraries" worker group, beside the main checks: importing transformers and
diffusers costs seconds (more than `import torch`), and a second worker overlaps it with them.
"""

from __future__ import annotations

from envdoctor.target.cuda_tables import GPU_NAME_CAPABILITY
from envdoctor.target.model import Check, Remedy, Signature

from ..bf16_support import NATIVE_CC
from .probe import probe
from .rules import ID, diagnose, summarize

# A GPU without bf16 (compute capability below 8.0: V100, T4, Pascal, Turing), named as the GPU table names it, in any case
# and bounded by ASCII letters (a Chinese post writes "v100显卡", where \b finds no edge): a model trained in bf16 runs
# there in fp16
_ASCII_EDGE = r"(?:(?<![A-Za-z0-9])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?![A-Za-z0-9]))"
NO_BF16_GPU = "(?i:%s)" % "|".join(pattern.replace(r"\b", _ASCII_EDGE) for pattern, cap in GPU_NAME_CAPABILITY if cap < NATIVE_CC)

# A run in half precision, as the lines around its error show it: fp16 words, a GPU without bf16, or the pixel conversion
# that meets NaNs (diffusers' image processor, numpy_to_pil's `images = (images * 255).round().astype("uint8")`, any
# program's own `(x * 255).numpy().astype(np.uint8)` of a video's frames)
_HALF_PRECISION_RUN = (r"float16|(?i:\bfp16\b|\b16[- ]?bit\b)|\.half\(\)|\bHalf\b|(diffusers[\\/]+|\b)image_processor\.py|"
                       r"(\* ?255\b|\b255 ?\*)[^\n]{0,40}\.astype\(|" + NO_BF16_GPU,)

_MODEL_FRAMES = (r"transformers[/\\]models[/\\](clip|t5)[/\\]",
                 r"diffusers[/\\]models[/\\](unets|autoencoders|attention|attention_processor|resnet|embeddings|normalization)")

# NaN or inf told in words, and the blank images or empty replies they become (a line of prose, or a printed tensor of
# nan). NaN is bounded by ASCII letters, not \b: a Chinese post writes "logits中有很多nan值".
# (nor inside an identifier: GradScaler's own `found_inf_per_device` quoted in a traceback's frame)
_NAN = r"(?<![A-Za-z_])(nan|NaN|NAN|inf)s?(?![A-Za-z_])"  # and the plural: "it still yields nans", "NaNs in the output"
# An English word inside Chinese or Japanese prose has no \b around it ("基于mt5+amp的模型微调loss直接走向nan": the CJK
# letters are word characters), so the prose words are bounded by ASCII letters alone
_LOSS = r"(?<![A-Za-z])loss(?![A-Za-z])"
# Blank images told in words: an image model's NaN pixels (an fp16 overflow) become black, the commonest way users see it
# (an inpainting tool's masked area: "a black blob where the mask is drawn"), or green on GTX 16xx cards in half
# precision (basujindal/stable-diffusion's "plain green image" without `--precision full`; A1111's wiki: 16xx cards need
# `--precision full --no-half`)
PROSE_BLACK = (r"(?i:\b(solid |pure |all |plain )?(black|green)( flat)? (image|images|output|outputs|result|results|picture|pictures|pics?|video|frames?|"
               r"screen|blobs?|squares?|patch(es)?)\b|"
               r"\b(image|output|result|picture|pic|video|frame)s?( (from|of|in) [^\n.,;:]{1,40}?)? (is|are|was|were|comes? out|came out|turns?|turned) "
               r"(all |total |totally |completely |pure |just |entirely )?(black|green)\b)")
PROSE_NAN = (r"(?i)" + PROSE_BLACK + r"|"
             # (not a Trainer's metrics where the gradient norm alone is inf: GradScaler's skipped step, "{'loss': 2.34,
             # 'grad_norm': inf, ...}")
             r"%(loss)s[^\n]{0,40}(?<!grad_norm': )(?<!grad_norm\": )(?<!grad_norm: )(?<!grad_norm=)%(nan)s|"
             r"%(nan)s[^\n]{0,20}%(loss)s|\ball[- ]nan\b|NaN detected in latents|"
             # (a Trainer's metrics with the loss gone to 0.0 and its gradients NaN: the fp16 logits overflowed)
             r"[\"']loss[\"']: 0\.0,\s*[\"']grad_norm[\"']: %(nan)s|"
             r"%(nan)s[^\n]{0,15}\b(values?|logits|outputs?|latents|results?|(attention )?scores|activations)\b|"
             r"\b(yields?|gives?|returns?|produces?|outputs?|getting|gets?|got|occurs?|occurred|appears?|appeared|"
             r"becomes?|became|goes|went|turns? (in)?to)\s+(only\s+|all\s+)?%(nan)s|"
             r"(logits|outputs?|latents|hidden (states|outputs))[^\n]{0,40}%(nan)s|overflow\w* to inf|tensor\(\[+nan,|"
             r"\b(output|reply|response|generation)s? (is|are|was|were) (empty|blank)\b" % {"nan": _NAN, "loss": _LOSS})
# fp16 asked for, or a setup that overflows in it: SDXL's VAE, the GTX 1650/1660 cards
# (not where a setting turns it off: "fp16=False", "--fp16 false", "amp: off")
_OFF = r"(?!\s*[=:]?\s*[\"']?(False|false|0|no|off|None)\b)"
# (nor the backend a settings dump names whether fp16 is on or not: "fp16_backend=auto")
# (nor where the words deny it: "no --fp16, no autocast", "not fp16", "without amp")
_DENIED = r"(?<!\bno )(?<!\bno --)(?<!\bnot )(?<!\bwithout )(?<!\bwithout --)"
PROSE_FP16 = (r"(?i)(?<![A-Za-z])" + _DENIED + r"(fp16|half|amp|sdxl)(?![A-Za-z]|_backend)" + _OFF + r"|(?<![A-Za-z0-9])f16(?![A-Za-z0-9])" + _OFF +
              r"|float16|--no-half|no_half|\.half\(\)|16-mixed|fp16-fix|mix(ed)?.precision|混合精度|半精度|"
              r"GTX ?16[56]0|\b16[56]0( ?ti| super)?\b")

# The safety checker of diffusers and the image apps blanks an image on purpose: not an overflow; but not where the user
# turned it off (`--sd-disable-nsfw`, `--disable-nsfw-filter`, `safety_checker=None`, and diffusers' own warning then: "You
# have disabled the safety checker for <class ...> by passing `safety_checker=None`")
# NaNs said to persist in fp32 (or with fp16 turned off) are not an fp16 overflow: wrong settings, a broken checkpoint, a
# learning rate ("Even with --precision full --no-half the loss is still nan", "关闭amp，全部用fp32训练后loss仍然是nan")
FP32_TOO = (r"(?i:(already|still|even)\b[^\n]{0,80}(float32|fp32|--no-half|32-bit|full precision))|"
            r"(关闭|关掉|去掉|不用|禁用)\s*(amp|fp16|混合精度|半精度)|(fp32|float32)[^\n]{0,20}(仍然|还是|依然|也是?)")
SAFETY_CHECKER = (r"(?i)(?<!disabled the )(?<!requires_)(?<!\bno )safety[_ ]checker(?!\W{0,3}[=:]\s*(None|null|False)\b)|"
                  r"(?<!disable[-_])(?<!\bno )\bnsfw\b")

# What `explain` says of an fp16 overflow, however it showed
BF16_NOT_FP16 = Remedy("Run the model in bf16 where the GPU has it (compute capability 8.0+), else fp32 (`torch_dtype="
                       "torch.bfloat16`; SDXL: an fp32 VAE, `--no-half-vae`, or madebyollin/sdxl-vae-fp16-fix; GTX 16xx: "
                       "`--precision full --no-half`)", id="bf16-not-fp16")

FP16_LOWER_LR = Remedy("Or keep fp16 with a lower learning rate, gradient clipping and a warm-up", id="fp16-lower-lr")

FP32_MASTER_WEIGHTS = Remedy("Load the model (or the parameters being trained: LoRA weights, the UNet) in float32 and let "
                             "autocast compute in fp16; or train in bf16 where the GPU has it", id="fp32-master-weights")

# A model whose activations pass fp16's range, however the run shows it
OVERFLOWS_IN_FP16 = "the model overflows in fp16 (values past 65504 become inf, then NaN): it was trained in bf16 or fp32"

SIGNATURES = (
    Signature("fp16-fails", r"(?<!\w)\"?\w{1,80}\"? not implemented for 'Half'", frames=_MODEL_FRAMES, frames_required=True, supporting=True,
              cause="this torch has no CPU kernel for an operation the model runs in fp16 (torch before 2.1 lacks fp16 "
                    "layer_norm, addmm, conv2d, group_norm on the CPU)"),
    Signature("bf16-fails", r"(?<!\w)\"?\w{1,80}\"? not implemented for 'BFloat16'", frames=_MODEL_FRAMES, frames_required=True, supporting=True,
              cause="this torch has no kernel for an operation the model runs in bf16 on this device"),
    Signature("fp16-fails", r"expected scalar type (Float|Half|BFloat16) but found (Float|Half|BFloat16)",
              frames=(r"transformers[/\\]models[/\\]t5[/\\]", r"apex[/\\]normalization"), frames_required=True,
              supporting=True,
              cause="T5's layer norm ran through apex FusedRMSNorm (transformers 4.17 to 5.7 swap it in whenever "
                    "apex.normalization imports), whose fused kernel rejects this mix of dtypes"),
    Signature("fp16-fails", r"mixed dtype \(CPU\): expect parameter to have scalar type of Float|"
                            r"expected scalar type (Float|Half|BFloat16) but found (Float|Half|BFloat16)",
              frames=(r"transformers[/\\]models[/\\]clip[/\\]",), frames_required=True, supporting=True,
              cause="a layer norm's fp32 weights met half-precision activations on the CPU"),
    # fp16 overflow (max 65504) inside a model turns activations into inf/NaN: sampling then refuses the probabilities
    # (transformers generate -> torch.multinomial) and image pipelines cast NaN pixels (black images). Models trained
    # in bf16 (T5, most LLMs since, SDXL's VAE) overflow in fp16 (github.com/huggingface/transformers/issues/4586).
    Signature("fp16-overflow", r"probability tensor contains either .?inf.?, .?nan.? or element < 0",
              context=_HALF_PRECISION_RUN, context_required=True,
              cause=OVERFLOWS_IN_FP16,
              remedies=(BF16_NOT_FP16,)),
    # numpy's warning as NaN pixels are cast to bytes: in every dev thread of the corpus (8 of 8 at stop 49) an image or video
    # model that overflowed in fp16 (an upscaler under autocast, an fp16 VAE), with or without fp16 words beside it
    # (not where the cast it shows is to another type than bytes: a table's NaNs cast to int64 are no pixels)
    Signature("fp16-overflow", r"invalid value encountered in cast", context=_HALF_PRECISION_RUN,
              unless=(r"\.astype\(\s*(?!(?:np\.|numpy\.)?['\"]?uint8\b)[\w.'\"]",),
              cause=OVERFLOWS_IN_FP16,
              remedies=(BF16_NOT_FP16,)),
    # fp16's dynamic loss scaler giving up: every step overflowed down to its smallest scale (DeepSpeed's
    # runtime/fp16/loss_scaler.py "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.";
    # fairseq's optim/dynamic_loss_scaler.py "Minimum loss scale reached (0.0001). Your loss is probably exploding"):
    # the gradients do not fit fp16's range, a model trained in bf16 or a learning rate too high for fp16
    # (and the scaler stuck at its floor before it gives up, step after step: DeepSpeed's "[deepspeed] OVERFLOW! Rank 0
    # Skipping step. Attempted loss scale: 1, reducing to 1"; apex amp's "Gradient overflow.  Skipping step, loss scaler 0
    # reducing loss scale to 0.0" or to an ever smaller scale; a skipped step at a higher scale is fp16's normal search)
    Signature("fp16-overflow", r"Current loss scale already at minimum - cannot decrease scale anymore|"
                               r"Minimum loss scale reached \([\d.e-]+\)|"
                               r"Attempted loss scale: 1(\.0)?, reducing to 1(\.0)?\b|"
                               r"reducing loss scale to (0\.0|[\d.]+e-(0[5-9]|[1-9]\d))\b",
              cause="fp16 mixed precision overflowed at every loss scale: the gradients do not fit fp16's range (a model "
                    "trained in bf16, or a learning rate too high for fp16)",
              remedies=(BF16_NOT_FP16, FP16_LOWER_LR)),
    # transformers' own overflow detector (debug_utils.DebugUnderflowOverflow, `--debug underflow_overflow`: "Detected inf/nan
    # during batch_number=0", then the last frames' absolute min and max): run to find where a model overflows in fp16
    Signature("fp16-overflow", r"Detected inf/nan during batch_number=\d+",
              cause=OVERFLOWS_IN_FP16,
              remedies=(BF16_NOT_FP16,)),
    # AUTOMATIC1111's own NaN check (modules/devices.py test_for_nans): "A tensor with all NaNs was produced in VAE. This
    # could be because there's not enough precision to represent the picture. Try adding --no-half-vae ..."
    Signature("fp16-overflow", r"A tensor with all NaNs was produced in (VAE|Unet)",
              cause="the VAE or UNet overflowed in fp16 (SDXL's VAE does at any size): it needs fp32 or bf16 there",
              remedies=(Remedy("Run the VAE in fp32 (`--no-half-vae`; diffusers: `vae.to(torch.float32)` or madebyollin/sdxl-vae-fp16-fix), "
                               "or the whole model in bf16 where the GPU has it", id="vae-fp32"),),
              # NaNs that persist in fp32 are not an fp16 overflow (wrong settings, a broken checkpoint)
              unless=(FP32_TOO,)),
    # The same overflow told in words, with no error line: NaN losses, NaN logits or latents, black images, from a run in
    # fp16. Read only where no raised error explains the log, and only beside fp16 words or the setups known to overflow
    # there: SDXL's VAE (the reason madebyollin/sdxl-vae-fp16-fix exists), GTX 16xx cards (A1111's wiki: they need
    # --precision full --no-half).
    Signature("fp16-overflow", PROSE_NAN, context=(PROSE_FP16,), context_required=True,
              unless=(SAFETY_CHECKER, FP32_TOO),  # the pipeline's safety checker blanks an image on purpose
              cause="the model overflows in fp16 (values past 65504 become inf, then NaN: NaN losses, black images); it was "
                    "trained in bf16 or fp32",
              remedies=(BF16_NOT_FP16,)),
    # Black images alone, with no fp16 word beside them: in the image apps' threads nearly always the fp16 overflow (the
    # apps default to half precision; GTX 16xx cards produce them at any setting), read weaker than with fp16 words. Not
    # diffusers' safety checker, which blanks an image on purpose ("Potential NSFW content was detected ... A black image
    # will be returned instead"), nor a training run whose loss went NaN (it diverged: the learning rate as often as fp16,
    # which the signature above reads where fp16 words are near)
    Signature("fp16-overflow", PROSE_BLACK, unless=(SAFETY_CHECKER + r"|A black image will be returned instead|"
                                                    r"\bloss\W{0,3}(=|:|is|of|becomes?|went)?\W{0,3}nan\b", FP32_TOO),
              cause="black images are NaN pixels: the image model most likely overflowed in fp16 (the apps' default precision; "
                    "GTX 16xx cards do at any setting)",
              remedies=(BF16_NOT_FP16,)),
    # torch's GradScaler refusing gradients that are themselves fp16 (torch/amp/grad_scaler.py _unscale_grads_: "Attempting
    # to unscale FP16 gradients."): the trained weights were loaded or cast in fp16 (`torch_dtype=torch.float16` before
    # Trainer(fp16=True), an fp16 UNet trained without LoRA); mixed precision wants fp32 master weights
    Signature("fp16-grads", r"(?i)Atte\w*ing to unscale FP16 gradients", in_code=True,
              cause="the weights being trained are fp16 themselves: fp16 mixed precision (GradScaler) keeps fp32 weights "
                    "and computes in fp16, so load or keep the trained parameters in float32 (or train in bf16)",
              remedies=(FP32_MASTER_WEIGHTS,)),
    # (and over bf16 gradients, which GradScaler's unscale kernel has no bf16 case for: "\"_amp_foreach_non_finite_check_
    # and_unscale_cuda\" not implemented for 'BFloat16'", a model cast to bf16 whole then trained with fp16 AMP; still so in
    # torch 2.11 on an H200, whose bf16 is native: tests/fixtures/measurements/h200-failures/gradscaler-bf16-weights.log)
    Signature("fp16-grads", r"\"?_amp_foreach_non_finite_check_and_unscale\w*\"? not implemented for '(BFloat16|Half)'", in_code=True,
              cause="GradScaler (fp16 mixed precision) was given low-precision gradients: the trained weights were loaded or "
                    "cast in bf16/fp16; it keeps fp32 weights and unscales fp32 gradients",
              remedies=(FP32_MASTER_WEIGHTS,)),
    # transformers asked for FlashAttention-2 on a model loaded in float32 (src/transformers/modeling_utils.py,
    # _check_and_enable_flash_attn_2, its own spelling: "Flash Attention 2.0 only supports torch.float16 and torch.bfloat16
    # dtypes, but the current dype in Qwen2ForCausalLM is torch.float32"): flash-attn's kernels refuse it next
    # (the dtypes as explain spells them: torch.float16 reads Half; a warning the run may go on after, so only where the run
    # stopped on it)
    Signature("fa2-needs-half", r"Flash ?Attention ?2(\.0)? only supports Half and BFloat16 dtypes, but the current dt?ype in \w+ "
                                r"is Float\b", last_only=True,
              cause="the model was loaded in float32 while FlashAttention-2 was asked for: its kernels run fp16 and bf16 only",
              remedies=(Remedy("Load the model in bf16 (fp16 on GPUs before compute capability 8.0) where FlashAttention-2 is "
                               "asked for (`torch_dtype=torch.bfloat16`; the trainer's bf16/fp16 option), or keep float32 with "
                               "`attn_implementation=\"sdpa\"`", id="half-for-flash-attention"),)),
    Signature("fp16-fails", r"Input type \(\S+\) and (weight|bias) type \(\S+\) should be the same",
              frames=(r"diffusers[/\\]models[/\\]",), frames_required=True, supporting=True,
              cause="part of the UNet or VAE is in another dtype than its input (weights cast partly, or autocast off)"),
)

CHECK = Check(
    id=ID,
    title="transformers / diffusers models in the asked precision",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    timeout_s=180.0,  # importing transformers and diffusers takes seconds, on a slow disk a minute
    order=80,  # after the torch-level checks: a failing micro-op explains a failing model
    probe_reads_intent=True,  # its setups come from the training config
    imports_libraries=True,  # peft, transformers, diffusers: where the run asks for them
    signatures=SIGNATURES,
    group="libraries",  # its own worker, beside the main checks
    needs=("transformers", "diffusers"),  # without them a second torch import buys nothing
    quick=False,  # `check --quick` skips it: the imports cost seconds
)
