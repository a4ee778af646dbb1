r"""Flash-GRPO at full scale: the claims' config.

    python -m reprojax.experiments.flash_grpo.main --config=experiments/flash_grpo/configs/full.py --workdir=/tmp/flash_grpo_full

Hardware and time: 2 CPU cores, an estimated 15 minutes (not yet run). Five seeds, the
public code's 20-step schedule with the SDE step in its first 10, a wider model, and a
budget five times the quick one.
"""

from reprojax.experiments.flash_grpo.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 5
  c.hidden = (128, 128, 128)
  c.pretrain_steps = 3000
  c.num_steps = 20
  c.sde_high = 10
  c.window = 5
  c.budget = 20000
  c.curve_points = 11
  c.variance_batches = 64
  return c
