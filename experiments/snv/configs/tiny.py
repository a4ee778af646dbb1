"""SNV at tiny scale: the notebook's test run, not a reproduction.

Seconds on 2 CPU cores: two seeds, three tasks, one value per grid, few steps and
permutations. Its figures and claims are noise.

    python -m reprojax.experiments.snv.main --config=experiments/snv/configs/tiny.py --workdir=/tmp/snv_tiny
"""

from reprojax.experiments.snv.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 2
  c.num_tasks = 3
  c.hidden = (16, 16)
  c.train_steps = 20
  c.num_permutations = 4
  c.shapley_chunk = 8
  c.freeze_fractions = (0.2,)
  c.ewc_lambdas = (100.0,)
  c.si_strengths = (1.0,)
  c.mas_lambdas = (1.0,)
  c.wsn_capacities = (0.3,)
  c.pec_steps = 20
  c.consolidation_steps = 10
  return c
