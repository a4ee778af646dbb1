"""DistSeal at tiny scale: the notebook's test run, not a reproduction (seconds; noise).

    python -m reprojax.experiments.distseal.main --config=experiments/distseal/configs/tiny.py --workdir=/tmp/distseal_tiny
"""

from reprojax.experiments.distseal.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 1
  c.num_train = 256
  c.num_eval = 64
  c.ae_steps = 12
  c.bits = 8
  c.width = 8
  c.code_width = 8
  c.extractor_channels = (8, 16)
  c.wm_steps = 12
  c.distill_steps = 6
  c.batch_size = 16
  c.strength_grid = (0.5, 1.0, 2.0)
  c.timing_batch = 16
  c.timing_repeats = 3
  c.gen_steps = 8
  c.gen_finetune_steps = 4
  c.gen_recipe = "authors"  # the generator config's recipe, with a curve of one pause
  c.gen_curve_steps = (2,)
  c.gen_hidden = (32, 32)
  c.gen_samples = 32
  c.gen_sample_steps = 4
  return c
