"""CausalDPO at tiny scale: the notebook's test run, not a reproduction.

Seconds on 2 CPU cores: two seeds, a small world, few steps, one invariance
weight. Its figures and claims are noise.

    python -m reprojax.experiments.causal_dpo.main --config=experiments/causal_dpo/configs/tiny.py --workdir=/tmp/causal_dpo_tiny
"""

from reprojax.experiments.causal_dpo.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 2
  c.world.num_items = 40
  c.world.num_train = 256
  c.world.num_val = 64
  c.world.num_test = 64
  c.batch_size = 32
  c.sft_steps = 30
  c.pref_steps = 20
  c.kmeans_steps = 5
  c.invariance_weights = (100.0,)
  return c
