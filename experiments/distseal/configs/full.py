r"""DistSeal at full scale: the claims' config.

    python -m reprojax.experiments.distseal.main --config=experiments/distseal/configs/full.py --workdir=/tmp/distseal_full

Hardware and time: not run. On 2 CPU cores an estimated 5 hours (the quick run's step
times, 13.6 ms latent and 35.7 ms pixel, scaled by batch, area and width: about 0.2 s and
0.9 s a step); one GPU, well under an hour. Photo patches at 32 px (8x8x4 latents), 32-bit
messages, five seeds, wider embedders and three times the quick run's training. The
paper's scale (ImageNet at 256-512 px, DC-AE and MaskGIT latents, 64 bits, 600k steps on 8
GPUs) is out of reach of this suite.
"""

from reprojax.experiments.distseal.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 5
  c.image_size = 32
  c.bits = 32
  c.width = 32
  c.code_width = 128
  c.ae_steps = 2000
  c.wm_steps = 3000
  c.distill_steps = 1500
  c.batch_size = 64
  c.timing_batch = 512
  return c
