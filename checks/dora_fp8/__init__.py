"""dora-fp8: LoRA and DoRA adapters on float8 or quantized base weights.

Seed 003: OneTrainer trained DoRA on an SDXL base loaded in fp8 and failed with
`Promotion for Float8 Types is not supported, attempted to promote Float8_e4m3fn and
Half`: the DoRA math added the float8 weight to the fp16 update. peft has the same
family: on torch 2.13 CPU, adding a DoRA adapter to a float8_e4m3fn Linear fails in
`peft/tuners/lora/dora.py: get_weight_norm` with `"mul_cpu_reduced_float" not
implemented for 'Float8_e4m3fn'`, while plain LoRA on the same base works.

The probe runs the setups the training config asks for (or the common ones) with the
installed peft, or in plain torch when peft is absent or `--quick`; bitsandbytes bases
(int8, nf4) are recorded as not probed. One module per job: `setups` (which runs),
`probe` (worker side), `rules` (findings and remedies).

It imports peft, hence transformers: it runs in the "libraries" worker, beside the main one.
"""

from __future__ import annotations

from envdoctor.model import Check, Signature

from .probe import probe
from .rules import ID, diagnose, summarize

# A DoRA implementation's frames: peft's LoRA tuner, OneTrainer's LoRA module.
_DORA_FRAMES = (r"peft[/\\]tuners[/\\]lora[/\\]", r"modules[/\\]module[/\\]LoRAModule\.py")

SIGNATURES = (
    Signature("dora-float8-base", r"Promotion for Float8 Types is not supported, attempted to promote (\w+) and (\w+)",
              frames=_DORA_FRAMES, frames_required=True,
              cause="DoRA added the float8 base weight to the adapter's fp16/bf16 update without upcasting it first "
                    "(OneTrainer before commit 2925dc8f; seed 003)"),
    Signature("dora-float8-base", r"\"mul_\w+\" not implemented for 'Float8_\w+'",
              frames=(r"peft[/\\]tuners[/\\]lora[/\\]dora\.py",),
              cause="peft's DoRA computes its weight norm on the float8 base weight itself (get_weight_norm), "
                    "and torch has no float8 multiply"),
)

CHECK = Check(
    id=ID,
    title="adapters on float8 / quantized base weights",
    probe=probe,
    diagnose=diagnose,
    summarize=summarize,
    order=80,
    signatures=SIGNATURES,
    # The main worker, not the libraries one: importing peft (3 s, transformers' modeling
    # stack included) there balances library-probes' transformers + diffusers imports in the
    # other worker; on 2 cores the two finish together (benchmarks/run.py --libs-python).
    group="main",
)
