"""SuCo at tiny scale: the notebook's test run, not a reproduction (seconds; noise).

    python -m reprojax.experiments.suco.main --config=experiments/suco/configs/tiny.py --workdir=/tmp/suco_tiny
"""

from reprojax.experiments.suco.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 2
  c.max_ops = 3
  c.train_levels = (1, 2)
  c.eval_levels = (1, 2, 3)
  c.model.d_model = 16
  c.model.n_heads = 2
  c.base_steps = 20
  c.batch_size = 16
  c.msc_questions = 16
  c.mft_steps = 5
  c.sapo_steps = 2
  c.sapo_questions = 4
  c.group = 2
  c.eval_per_level = 8
  return c
