r"""CALM at medium scale: the quick run trained longer (not a registered scale).

    python -m reprojax.experiments.calm.main --config=experiments/calm/configs/medium.py --workdir=/tmp/calm_medium

Hardware and time: 2 CPU cores, about 10 minutes (measured: see the README). The base
decoder trained three times as long, four times the training problems per seed, three times
the SFT steps at the same batch, 60 GRPO steps, 100 held-out problems per level; the same
claims and thresholds as the quick config.
"""

from reprojax.experiments.calm.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "medium"
  c.base_steps = 1500
  c.sft_problems = 1536
  c.sft_steps = 120
  c.rl_steps = 60
  c.eval_per_level = 100
  return c
