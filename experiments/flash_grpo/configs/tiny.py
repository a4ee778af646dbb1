"""Flash-GRPO at tiny scale: the notebook's test run, not a reproduction (seconds; noise).

    python -m reprojax.experiments.flash_grpo.main --config=experiments/flash_grpo/configs/tiny.py --workdir=/tmp/flash_grpo_tiny
"""

from reprojax.experiments.flash_grpo.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 2
  c.arms = ("flow_grpo", "flash")  # fewer programs to compile; the quick run has all six
  c.num_modes = 4
  c.num_points = 512
  c.hidden = (16,)
  c.pretrain_steps = 50
  c.num_steps = 6
  c.sde_high = 3
  c.group = 4
  c.window = 2
  c.budget = 200
  c.curve_points = 3
  c.eval_per_mode = 8
  c.variance_batches = 4
  return c
