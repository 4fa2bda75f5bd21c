"""The tiny models: the user's own transformers / diffusers classes, built with random
weights from configs written here (no hub, no network, 5,000-14,000 parameters), with
inputs shaped for them.

The shapes follow the libraries' own test suites (tiny CLIP, T5, UNet and VAE configs in
transformers' tests/models/*/test_modeling_*.py and diffusers' tests/models/), shrunk further:
two layers or blocks of each kind, so that every code path of the real model (attention,
MLP, norms, cross-attention, resnets, down/up sampling) runs once in the dtype asked for.
The keyword arguments used exist unchanged from transformers 4.46 to 5.x and diffusers
0.31 to 0.42.

Each class is imported from its own submodule (`transformers.models.clip.modeling_clip`),
a guarded step of its own, so that a crash is pinned on the model's file (T5's module imports
apex.normalization when it is there); the top-level package is the fallback for a layout that
moved. It costs the same as `from transformers import CLIPTextModel` (measured: 7.1 s vs 7.0 s
wall for the four classes beside torch, medians of 5, transformers 5.23 / diffusers 0.42): the
lazy package imports that same submodule, and modeling_utils, which pulls in torch._dynamo,
torch.distributed.tensor and sympy, is most of it either way.

Stdlib only, Python 3.8+: runs inside the worker; torch and the modules are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

# Token ids within the tiny vocabulary: CLIP's legacy pooling (eos_token_id == 2) takes the
# argmax of the ids, as the SD 1.x / SDXL text encoder configs do.
_CLIP_IDS = [[0, 5, 9, 17, 33, 2, 1, 1]]
_T5_IDS = [[5, 9, 17, 33, 41, 1, 0, 0]]  # T5: eos 1, pad 0
_T5_MASK = [[1, 1, 1, 1, 1, 1, 0, 0]]


@dataclass(frozen=True)
class TinyModel:
    """One model the check runs: where its class lives and how to build and feed it."""

    key: str  # "clip", "clip-projection", "t5", "unet", "vae"
    library: str  # the distribution and top-level module: "transformers", "diffusers"
    label: str  # the class name: "CLIPTextModel"
    modules: Tuple[str, ...]  # modules defining the class, newest layout first, the package last
    build: Callable[[Any], Any]  # (module) -> the model, fp32 on the CPU, random weights
    inputs: Callable[[Any, Any, str, Any], Dict[str, Any]]  # (torch, generator, device, dtype) -> forward kwargs
    describe: Optional[Callable[[Any], Dict[str, Any]]] = None  # facts about the built model


def _clip_config(module: Any) -> Any:
    return module.CLIPTextConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=8, projection_dim=8, bos_token_id=0, eos_token_id=2, pad_token_id=1,
    )


def _ids(torch: Any, rows: Any, device: str) -> Any:
    return torch.tensor(rows, dtype=torch.long).to(device)


def _clip_inputs(torch: Any, gen: Any, device: str, dtype: Any) -> Dict[str, Any]:
    return {"input_ids": _ids(torch, _CLIP_IDS, device)}


def _t5_config(module: Any) -> Any:
    # "gated-gelu": the T5 v1.1 feed-forward of the text encoders diffusion models use (SD3, PixArt, Flux)
    return module.T5Config(
        vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2, relative_attention_num_buckets=8,
        feed_forward_proj="gated-gelu", is_encoder_decoder=False, use_cache=False, pad_token_id=0, eos_token_id=1,
    )


def _t5_inputs(torch: Any, gen: Any, device: str, dtype: Any) -> Dict[str, Any]:
    return {"input_ids": _ids(torch, _T5_IDS, device), "attention_mask": _ids(torch, _T5_MASK, device)}


def _t5_norm(model: Any) -> Dict[str, Any]:
    """Which class T5's layer norm resolved to: transformers 4.17 to 5.7 use apex's
    FusedRMSNorm whenever `apex.normalization` imports (docs/facts.md §5 "transformers wires
    apex into T5")."""
    norm = type(model.encoder.final_layer_norm)
    return {"norm_class": "%s.%s" % (norm.__module__, norm.__name__)}


def _unet(module: Any) -> Any:
    return module.UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(4, 8),
        norm_num_groups=4, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=8, attention_head_dim=2,
    )


def _randn(torch: Any, gen: Any, device: str, dtype: Any, *shape: int) -> Any:
    return torch.randn(*shape, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype)


def _unet_inputs(torch: Any, gen: Any, device: str, dtype: Any) -> Dict[str, Any]:
    return {
        "sample": _randn(torch, gen, device, dtype, 1, 4, 8, 8),
        "timestep": torch.tensor([10], dtype=torch.long).to(device),
        "encoder_hidden_states": _randn(torch, gen, device, dtype, 1, 6, 8),
    }


def _vae(module: Any) -> Any:
    return module.AutoencoderKL(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), block_out_channels=(4, 8), latent_channels=4,
        norm_num_groups=2, layers_per_block=1, sample_size=8,
    )


def _vae_inputs(torch: Any, gen: Any, device: str, dtype: Any) -> Dict[str, Any]:
    return {"sample": _randn(torch, gen, device, dtype, 1, 3, 8, 8)}


_CLIP_MODULES = ("transformers.models.clip.modeling_clip", "transformers")
_T5_MODULES = ("transformers.models.t5.modeling_t5", "transformers")

MODELS: Dict[str, TinyModel] = {
    m.key: m
    for m in (
        TinyModel("clip", "transformers", "CLIPTextModel", _CLIP_MODULES,
                  lambda mod: mod.CLIPTextModel(_clip_config(mod)), _clip_inputs),
        # SDXL's second text encoder
        TinyModel("clip-projection", "transformers", "CLIPTextModelWithProjection", _CLIP_MODULES,
                  lambda mod: mod.CLIPTextModelWithProjection(_clip_config(mod)), _clip_inputs),
        TinyModel("t5", "transformers", "T5EncoderModel", _T5_MODULES,
                  lambda mod: mod.T5EncoderModel(_t5_config(mod)), _t5_inputs, _t5_norm),
        # diffusers moved the classes into models/unets/ and models/autoencoders/ in 0.25-0.26
        TinyModel("unet", "diffusers", "UNet2DConditionModel",
                  ("diffusers.models.unets.unet_2d_condition", "diffusers.models.unet_2d_condition", "diffusers"),
                  _unet, _unet_inputs),
        TinyModel("vae", "diffusers", "AutoencoderKL",
                  ("diffusers.models.autoencoders.autoencoder_kl", "diffusers.models.autoencoder_kl", "diffusers"),
                  _vae, _vae_inputs),
    )
}

LIBRARIES = ("transformers", "diffusers")


def first_output(output: Any) -> Any:
    """The main tensor of a model output: last_hidden_state, text_embeds, sample."""
    if isinstance(output, (tuple, list)):
        return output[0]
    to_tuple = getattr(output, "to_tuple", None)
    if callable(to_tuple):
        return to_tuple()[0]
    return output
