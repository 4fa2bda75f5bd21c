#!/bin/bash
export MODEL_NAME="stabilityai/stable-diffusion-xl-base-1.0"
export VAE=madebyollin/sdxl-vae-fp16-fix
cd examples/dreambooth && pip install -r requirements.txt
# accelerate launch --mixed_precision bf16 old.py

CUDA_VISIBLE_DEVICES=0 accelerate launch --cpu train_dreambooth_lora_sdxl.py \
  --pretrained_model_name_or_path=$MODEL_NAME  \
  --instance_prompt='a photo of sks dog' \
  --mixed_precision 'no' \
  --use_dora \
  --seed -1 # the last line
python infer.py --mixed_precision fp16