r"""DistSeal at quick scale with the latent watermark distilled into a latent generator too,
by the authors' recipe (not a registered scale; it decides `generator_distilled`).

    python -m reprojax.experiments.distseal.main --config=experiments/distseal/configs/generator.py --workdir=/tmp/distseal_gen

Hardware and time: 2 CPU cores; 1,368 s beside other sessions' runs (a load of
about 10 on the 2 cores), an estimated 6-7 minutes on 2 free cores (the fine-tuning runs 300-650
steps a second per seed there). TPR 0.046 after 100,000 steps, its target's own 0.019: fails.
The quick run, plus a flow-matching generator over the 4x4x4 latents trained 3,000 steps on
the encoded patches and, per seed, a copy fine-tuned on the latent teacher's watermarked
latents ``z + 0.5 E(z, m*)`` as the public code fine-tunes its diffusion transformer
(``configs/training/diffusion/inmodel_transformer.yaml``, ``docs/TRAINING.md``, "Distilling
into the diffusion transformer"): the plain generative loss on the watermarked latents (no
extractor loss, ``reference_model_weight: 0.0``), AdamW at a constant 2e-4, betas (0.99,
0.99), weight decay 0.03, the samples drawn from the EMA of the weights (decay 0.9999), and
their 100,000 steps (``max_steps``) at our batch of 32 (theirs 128 per process on 8
processes). The fine-tuned generator is also evaluated after 300 to 30,000 steps (the
detection-versus-steps curve, ``generator_curve.png``); 600 samples of each generator are
decoded and read.
"""

from reprojax.experiments.distseal.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "generator"
  c.gen_steps = 3000
  c.gen_recipe = "authors"
  c.gen_finetune_steps = 100_000  # the public code's max_steps
  c.gen_curve_steps = (300, 600, 1000, 3000, 10_000, 30_000)
  return c
