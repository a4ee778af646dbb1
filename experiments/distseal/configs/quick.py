r"""DistSeal at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.distseal.main --config=experiments/distseal/configs/quick.py --workdir=/tmp/distseal

Hardware and time: 2 CPU cores, about 2.5 minutes (154 s in `make reproduce`, alone; the seeds'
runs in two threads): over the 90 s budget (issue 23). Grey 16 px patches of scikit-learn's two
photographs, an f4 autoencoder (4x4x4 latents), 16-bit messages; three seeds, each a latent and
a pixel watermarker of matched capacity and the decoder distillation of each.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0
  c.num_seeds = 3
  c.mesh = ml_collections.ConfigDict({"data": -1})
  # --- data and autoencoder (the generator's latent space)
  c.dataset = "photos"  # grey patches of two photographs; "digits": mostly black background
  c.num_train = 1800  # patches (photos only; digits: its training fold)
  c.num_eval = 600
  c.image_size = 16  # a multiple of 8 (JPEG's blocks)
  c.ae_channels = (16, 32)  # one stride-2 stage each: f4
  c.latent_channels = 4
  c.ae_steps = 400
  # --- watermark networks (latent and pixel embedders share everything but their input)
  c.bits = 16
  c.width = 16
  c.blocks = 2
  c.code_width = 64  # the message code's width (the public code: 64 for 64 bits)
  c.extractor_channels = (16, 32, 64)
  # --- post-hoc training
  c.wm_steps = 1000
  c.batch_size = 32
  c.learning_rate = 1e-3  # 3e-3 and 1e-2 learned no faster
  c.latent_strength = 0.5  # the public code's DC-AE deployment strength
  c.pixel_strength = 0.05  # about the latent one's PSNR here
  c.latent_strength_start = 3.0  # the cosine schedule's start over the final strength:
  c.pixel_strength_start = 10.0  # the public code's (DC-AE 1.5 -> 0.5, pixels 0.2 -> 0.02)
  c.anneal = 0.6  # fraction of training over which the strength anneals
  c.edit_start = 0.3  # fraction of training before edits are applied
  # --- decoder distillation
  c.distill_steps = 300
  c.distill_learning_rate = 1e-3
  c.bit_weight = 0.1  # the public code's DC-AE weight of the extractor's BCE
  # --- generator distillation (0 steps: off; configs/generator.py turns it on)
  c.gen_steps = 0  # the base latent generator's flow-matching steps
  c.gen_finetune_steps = 600  # the copy fine-tuned on the watermarked latents
  c.gen_hidden = (256, 256, 256)  # the flow MLP's widths
  c.gen_learning_rate = 1e-3  # the base generator's Adam (and the fine-tuning's, recipe "adam")
  # the fine-tuning's recipe: "adam" (ours before issue 66: Adam at gen_learning_rate, the last
  # weights sampled) or "authors" (the public code's configs/training/diffusion/
  # inmodel_transformer.yaml: AdamW, constant rate, the EMA of the weights sampled)
  c.gen_recipe = "adam"
  c.gen_finetune_learning_rate = 2e-4  # recipe "authors": AdamW's rate (theirs 2e-4)
  c.gen_betas = (0.99, 0.99)  # recipe "authors": AdamW's betas (theirs)
  c.gen_weight_decay = 0.03  # recipe "authors": AdamW's decoupled weight decay (theirs)
  c.gen_ema_decay = 0.9999  # recipe "authors": the weights' EMA decay (theirs)
  c.gen_ema_warmup = 2000  # recipe "authors": decay x (1 - exp(-step / this)) (theirs 2000)
  c.gen_curve_steps = ()  # fine-tuning steps at which the generator is also evaluated
  c.gen_samples = 600  # samples of each generator evaluated
  c.gen_sample_steps = 20  # Euler steps of the sampler
  # --- evaluation
  c.strength_grid = (0.25, 0.5, 0.71, 1.0, 1.41, 2.0, 4.0)
  c.fpr = 1e-3
  c.timing_batch = 256
  c.timing_repeats = 21
  return c
