"""Which adapter setups to run: the ones a training config asks for, or the common ones.

Pure and stdlib only (Python 3.8+): the probe calls it in the worker with the intent's
summary (Intent.summary(), plain JSON) and the devices it may use; tests call it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from envdoctor.target.probekit.text import TORCH_DTYPE

# envdoctor's weight/precision vocabulary (envdoctor.target.intent) -> torch dtype names.
# fp8 weights are float8_e4m3fn: the storage format OneTrainer, diffusers' layerwise
# casting and torchao use for weights (e5m2 is for gradients).
BASE_DTYPES = dict(TORCH_DTYPE, fp8="float8_e4m3fn")  # a config's fp8 base weights are e4m3fn
# Compute precision -> the adapters' dtype. "auto" is bf16 where supported (accelerate);
# fp8 mixed precision (TransformerEngine, torchao) keeps adapters and activations in bf16.
ADAPTER_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "auto": "bfloat16", "fp8": "bfloat16"}
# Quantized bases that need a library this probe does not load (bitsandbytes on CUDA for
# int8/nf4/int4; OneTrainer's own w8a8 and gguf modules).
NOT_PROBED = {
    "int8": "int8 base weights are bitsandbytes Int8Params, which need bitsandbytes and a CUDA GPU",
    "int4": "int4 base weights are bitsandbytes Params4bit, which need bitsandbytes and a CUDA GPU",
    "nf4": "nf4 base weights are bitsandbytes Params4bit, which need bitsandbytes and a CUDA GPU",
    "w8a8": "w8a8 base weights are OneTrainer's own quantized linear layers, not loaded here",
    "gguf": "gguf base weights are dequantized by the trainer's own gguf layers, not loaded here",
}
FLOAT8 = "float8_e4m3fn"
COMMON_ADAPTER_DTYPES = ("float16", "bfloat16")


@dataclass(frozen=True)
class Setup:
    """One run: an adapter on a Linear whose base weight is in `base` (a torch dtype name),
    with the adapter and the activations in `compute`, on `device`.

    role: "asked" (what the config asks), "common" (no config: a usual setup), "control"
    (the same on another base or without DoRA, so the rules know which remedy works).
    """

    adapter: str  # "lora" | "dora"
    base: str
    compute: str
    device: str
    training: bool = True
    role: str = "common"

    def to_dict(self) -> Dict[str, Any]:
        return {"adapter": self.adapter, "base_dtype": self.base, "adapter_dtype": self.compute,
                "device": self.device, "training": self.training, "role": self.role}


def _devices(wanted: Optional[str], found: Sequence[str]) -> Tuple[List[str], List[Dict[str, Any]]]:
    """The devices to run on for the intent's `device` (None: every device found), and a
    'not probed' fact for a device it names that this machine does not have."""
    usable = [d for d in found if d != "mps"]  # MPS has no float8 dtypes at all
    if not wanted:
        return usable, []
    if wanted == "auto":  # what accelerate picks: the first accelerator, else the CPU
        accelerators = [d for d in usable if d != "cpu"]
        return (accelerators[:1] or [d for d in usable if d == "cpu"]), []
    if wanted == "cuda":
        cuda = [d for d in usable if d.startswith("cuda")]
        if cuda:
            return cuda[:1], []
    elif wanted in usable:
        return [wanted], []
    # The library code is the same on every device, and torch has no float8 arithmetic
    # kernels on any of them: the CPU run still answers, and says where it ran.
    reason = "float8 is not supported on MPS" if wanted == "mps" else "no %s device here" % wanted
    if "cpu" in usable:
        return ["cpu"], [{"device": wanted, "reason": reason + ": probed on cpu instead"}]
    return [], [{"device": wanted, "reason": reason}]


def _trained_bases(intent: Dict[str, Any]) -> Dict[str, str]:
    """{weight dtype (envdoctor vocabulary): the first trained part stored in it}."""
    weights = intent.get("weights") or {}
    trained = intent.get("trained")
    parts = [p for p in weights if trained is None or p in trained]
    bases: Dict[str, str] = {}
    for part in parts:
        bases.setdefault(str(weights[part]), part)
    return bases


def from_intent(intent: Dict[str, Any], found: Sequence[str]) -> Tuple[List[Setup], List[Dict[str, Any]]]:
    """The setups a config's intent asks for, with their controls, and what cannot be
    probed here (a quantized base, a missing device, full fine-tuning)."""
    not_probed: List[Dict[str, Any]] = []
    if intent.get("adapter") == "full":
        return [], [{"adapter": "full", "reason": "full fine-tuning: no adapter on the base weights"}]
    devices, missing = _devices(intent.get("device"), found)
    not_probed.extend(missing)
    precision = intent.get("precision")
    computes = [ADAPTER_DTYPES[precision]] if precision in ADAPTER_DTYPES else list(COMMON_ADAPTER_DTYPES)
    dora = bool(intent.get("dora"))
    adapter = "dora" if dora else "lora"
    training = intent.get("training") is not False
    bases: List[Optional[str]] = []
    quantized: List[Dict[str, Any]] = []
    for value, part in _trained_bases(intent).items():
        if value in BASE_DTYPES:
            bases.append(BASE_DTYPES[value])
        else:
            quantized.append({"base": value, "part": part, "adapter": adapter,
                              "reason": NOT_PROBED.get(value, "%s base weights are not probed here" % value)})
    not_probed.extend(quantized)
    if not bases and not quantized:
        bases = [None]  # the config names no weight dtype: the weights are loaded in the compute dtype
    setups: List[Setup] = []
    for device in devices:
        for compute in computes:
            for base in bases:
                base = base or compute
                setups.append(Setup(adapter, base, compute, device, training, "asked"))
                if dora:  # is plain LoRA a way out on this base?
                    setups.append(Setup("lora", base, compute, device, training, "control"))
                if base == FLOAT8:  # is a bf16 base a way out?
                    setups.append(Setup(adapter, "bfloat16", compute, device, training, "control"))
    return _unique(setups), not_probed


def common(found: Sequence[str]) -> List[Setup]:
    """No config: DoRA and LoRA on a float8_e4m3fn base with fp16 and bf16 adapters on each
    device, and DoRA on a bf16 base with a bf16 adapter as the control."""
    devices, _ = _devices(None, found)
    setups: List[Setup] = []
    for device in devices:
        for compute in COMMON_ADAPTER_DTYPES:
            setups.append(Setup("dora", FLOAT8, compute, device))
            setups.append(Setup("lora", FLOAT8, compute, device))
        setups.append(Setup("dora", "bfloat16", "bfloat16", device, role="control"))
    return setups


def _unique(setups: List[Setup]) -> List[Setup]:
    """First occurrence of each (adapter, base, compute, device): an asked run is not repeated as a control."""
    seen = set()
    out: List[Setup] = []
    for s in setups:
        key = (s.adapter, s.base, s.compute, s.device)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out
