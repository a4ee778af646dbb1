"""VRPO at tiny scale: the notebook's test run, not a reproduction (seconds; noise).

    python -m reprojax.experiments.vrpo.main --config=experiments/vrpo/configs/tiny.py --workdir=/tmp/vrpo_tiny
"""

from reprojax.experiments.vrpo.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 2
  c.etas = (1.0,)
  c.arms = ("vrpo", "dpo")  # fewer programs to compile; the quick run has all four
  c.num_steps = 6
  c.segment = 2
  c.value_hidden = (16,)
  c.hidden = (16,)
  c.num_atoms = 21
  c.value_steps = 30
  c.value_batch = 16
  c.steps = 20
  c.batch = 16
  c.eval_samples = 64
  c.curve_points = 3
  c.value_check_states = 8
  c.value_check_rollouts = 16
  c.value_tolerance = 10.0  # a 30-step head is not a check
  return c
