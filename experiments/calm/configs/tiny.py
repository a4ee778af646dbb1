"""CALM at tiny scale: the notebook's test run, not a reproduction (seconds; noise).

    python -m reprojax.experiments.calm.main --config=experiments/calm/configs/tiny.py --workdir=/tmp/calm_tiny
"""

from reprojax.experiments.calm.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 2
  c.base_levels = (1, 2)
  c.base_weights = (0.6, 0.4)
  c.eval_levels = (1, 2)
  c.model.d_model = 16
  c.model.n_heads = 2
  c.base_steps = 10
  c.batch_size = 16
  c.sft_problems = 16
  c.max_hints = 1
  c.sft_steps = 3
  c.rl_steps = 1
  c.rl_questions = 4
  c.group = 2
  c.eval_per_level = 4
  return c
