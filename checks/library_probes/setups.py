"""Which runs to do: the intent's models, device and precision, or the common setups.

Pure functions of the intent's summary (`Intent.summary()`, plain JSON: device, precision,
weights per part, trained parts, training) and the devices the worker can use.

How a part's precision becomes a run, as the tools do it:
- weights in fp16/bf16 (OneTrainer `weight_dtype: FLOAT_16`, kohya `full_fp16`): "pure": the
  weights are cast to that dtype.
- fp32 weights and a half compute precision (accelerate `mixed_precision: fp16`): "autocast":
  fp32 weights under torch.autocast in that dtype; also a part the config says is trained,
  when no weight dtype is given (diffusers' training scripts keep the trained model in fp32
  and cast the frozen ones).
- no weight dtype for a frozen or unknown part: pure, in the compute precision (the same
  scripts cast frozen weights to `weight_dtype = mixed_precision`; seed 004's fp16 CLIP on a CPU).
- quantized weights (fp8, nf4, ...): computed in the compute precision (their storage is
  the dora-fp8 check's family).

Without an intent: fp32 (the control), fp16 and bf16, pure, on the CPU and the first device
of each accelerator type (identical GPUs run identical library code; bf16-support and
cublas probe every GPU), each a forward and a backward step.

Stdlib only, Python 3.8+: the probe (worker) and the rules (parent) both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

HALF = ("fp16", "bf16")
QUANTIZED = ("fp8", "int8", "int4", "nf4", "w8a8", "gguf")  # as envdoctor.target.intent.QUANTIZED
MODES = ("fp32", "fp16", "bf16")  # the common setups, control first

# The intent's model parts (OneTrainer's part names; other readers use the same) and the model
# that stands for each: SDXL's second text encoder is CLIPTextModelWithProjection, SD3's third a T5.
PART_MODELS = {
    "unet": "unet",
    "vae": "vae",
    "text_encoder": "clip",
    "text_encoder_2": "clip-projection",
    "text_encoder_3": "t5",
    "t5": "t5",
}
DEFAULT_MODELS = ("clip", "t5", "unet", "vae")

Asked = Tuple[str, Optional[str]]  # (setting name, part) of the intent that asked for a run


@dataclass(frozen=True)
class Setup:
    """One run: a model on a device, its weights' dtype, autocast or not, forward (+ backward)."""

    model: str
    device: str
    weights: str  # the dtype the weights are cast to: "fp32" | "fp16" | "bf16"
    autocast: Optional[str] = None  # "fp16" | "bf16": run under torch.autocast in that dtype
    training: bool = True  # a backward step after the forward
    part: Optional[str] = None  # the intent's model part it stands for
    asked_by: Tuple[Asked, ...] = ()  # the intent's settings that asked for it
    stored_as: Optional[str] = None  # the quantized weight dtype the intent gave this part
    alternative_for: Optional[str] = None  # the key of the failing run this one tries instead

    @property
    def mode(self) -> str:
        """"fp16" (pure), "autocast-fp16" (fp32 weights), "fp32"."""
        if self.autocast is None:
            return self.weights
        if self.weights == "fp32":
            return "autocast-%s" % self.autocast
        return "%s+autocast-%s" % (self.weights, self.autocast)

    @property
    def half(self) -> Optional[str]:
        """The half dtype the run computes in, if any."""
        return self.autocast or (self.weights if self.weights in HALF else None)

    @property
    def key(self) -> str:
        return "%s %s %s%s" % (self.model, self.device, self.mode, " train" if self.training else "")

    @classmethod
    def from_fact(cls, fact: Dict[str, Any]) -> Setup:
        """The setup a recorded run was (without what asked for it)."""
        return cls(str(fact.get("model")), str(fact.get("device")), str(fact.get("weights")), fact.get("autocast"),
                   bool(fact.get("training")), fact.get("part"))

    def to_fact(self) -> Dict[str, Any]:
        return {
            "key": self.key, "model": self.model, "device": self.device, "mode": self.mode,
            "weights": self.weights, "autocast": self.autocast, "training": self.training, "part": self.part,
            "asked_by": [{"name": n, "part": p} for n, p in self.asked_by], "stored_as": self.stored_as,
            "alternative_for": self.alternative_for,
        }


@dataclass
class Plan:
    setups: List[Setup]
    unavailable: List[Dict[str, Any]]  # what the intent asked for that this machine cannot run
    from_intent: bool


def first_devices(devices: Sequence[str]) -> List[str]:
    """The CPU and the first device of each accelerator type, in the worker's order."""
    chosen: List[str] = []
    kinds: List[str] = []
    for device in devices:
        kind = device.split(":")[0]
        if kind == "cpu" or kind not in kinds:
            chosen.append(device)
            kinds.append(kind)
    return chosen


def resolve_device(asked: Optional[str], devices: Sequence[str]) -> Optional[str]:
    """The device the intent's value means here: "auto"/None is the launcher's choice (the
    first accelerator, else the CPU), "cuda" the first CUDA device; None when there is none."""
    if asked in (None, "", "auto"):
        accelerators = [d for d in devices if d != "cpu"]
        return accelerators[0] if accelerators else ("cpu" if "cpu" in devices else None)
    if asked in devices:
        return asked
    if asked == "cuda":
        return next((d for d in devices if d.startswith("cuda")), None)
    return None


def compute_precision(precision: Optional[str], device: str, auto_without_bf16: Optional[str] = None) -> Optional[str]:
    """The half dtype a compute precision means on `device`, or None for fp32.
    "auto" is bf16 on CUDA, else what the tool falls back to (the intent's `auto_without_bf16`:
    fp16 for axolotl, fp32 otherwise); fp8 training keeps everything outside its fp8 matmuls
    in bf16 (accelerate's TE / MS-AMP recipes)."""
    if precision in HALF:
        return precision
    if precision == "auto":
        if device.startswith("cuda"):
            return "bf16"
        return auto_without_bf16 if auto_without_bf16 in HALF else None
    if precision == "fp8":
        return "bf16"
    return None


def _intent_models(intent: Dict[str, Any]) -> List[Tuple[Optional[str], str]]:
    """(part, model) for each part of the intent that one of the tiny models stands for;
    the default models (part None) when none does (an LLM config: `model`)."""
    parts: List[str] = list((intent.get("weights") or {}).keys()) + list(intent.get("trained") or [])
    found: List[Tuple[Optional[str], str]] = []
    for part in parts:
        model = PART_MODELS.get(part)
        if model is not None and model not in [m for _, m in found]:
            found.append((part, model))
    return found or [(None, m) for m in DEFAULT_MODELS]


def _intent_setup(intent: Dict[str, Any], part: Optional[str], model: str, device: str) -> Setup:
    compute = compute_precision(intent.get("precision"), device, intent.get("auto_without_bf16"))
    weight = (intent.get("weights") or {}).get(part) if part else None
    trained = intent.get("trained")
    explicitly_trained = trained is not None and part in trained
    training = bool(intent.get("training")) and (trained is None or part is None or part in trained)
    asked: List[Asked] = []
    stored_as = None
    autocast: Optional[str] = None
    if weight in HALF:
        weights = str(weight)
        asked.append(("weight_dtype", part))
    elif weight in QUANTIZED:
        weights, stored_as = compute or "fp32", weight
        asked.append(("weight_dtype", part))
        if compute:
            asked.append(("precision", None))
    elif compute and (weight == "fp32" or explicitly_trained):
        weights, autocast = "fp32", compute
        asked.append(("precision", None))
    elif compute:
        weights = compute
        asked.append(("precision", None))
    else:
        weights = "fp32"
    if intent.get("device") not in (None, "", "auto"):
        asked.append(("device", None))
    return Setup(model, device, weights, autocast, training, part, tuple(asked), stored_as)


def plan(intent: Optional[Dict[str, Any]], devices: Sequence[str]) -> Plan:
    """The runs for `intent` (Intent.summary()) on `devices` (the ones the worker may use)."""
    if not intent:
        setups = [Setup(model, device, mode) for device in first_devices(devices) for model in DEFAULT_MODELS for mode in MODES]
        return Plan(setups, [], False)
    device = resolve_device(intent.get("device"), devices)
    if device is None:
        return Plan([], [{"device": intent.get("device"), "available": list(devices)}], True)
    return Plan([_intent_setup(intent, part, model, device) for part, model in _intent_models(intent)], [], True)


def other_half(setup: Setup) -> Optional[Setup]:
    """The same run in the other half dtype (autocast stays autocast); None for fp32."""
    swap = {"fp16": "bf16", "bf16": "fp16"}
    if setup.half is None or (setup.half == "bf16" and setup.device == "cpu"):
        return None
    return Setup(setup.model, setup.device, swap.get(setup.weights, setup.weights),
                 swap.get(setup.autocast, setup.autocast) if setup.autocast else None, setup.training, setup.part)


def alternatives(failed: Setup, planned: Sequence[Setup]) -> List[Setup]:
    """What to try when an intent's run fails, so that the remedies are measured: bf16 in
    place of fp16 (fp16 for bf16 on an accelerator: the CPU's fp16 is the weaker one), and
    fp32 (the control); runs already planned are not repeated."""
    keys = {s.key for s in planned}
    found: List[Setup] = []
    other = other_half(failed)
    if other is not None:
        found.append(other)
    if failed.mode != "fp32":
        found.append(Setup(failed.model, failed.device, "fp32", None, failed.training, failed.part))
    return [Setup(s.model, s.device, s.weights, s.autocast, s.training, s.part, alternative_for=failed.key)
            for s in found if s.key not in keys]
