"""Full config of ising_aggregation: larger panels and item counts.

    python -m reprojax.experiments.ising_aggregation.main \
        --config=experiments/ising_aggregation/configs/full.py --workdir=/tmp/ising_aggregation_full

CPU (2 cores): about 15-20 minutes (one GPU: a few minutes). Same claims as quick
(the paper's Table 2 analogue, Curie-Weiss separation, flip example, jn_product
baselines) with K up to 12 and up to 16,000 items per trial.
"""

from reprojax.experiments.ising_aggregation.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.synth_ks = (3, 5, 8, 10, 12)
  c.synth_items = 4000
  c.synth_item_grid = (300, 1000, 2000, 8000, 16000)
  c.bloc_ks = (3, 5, 8, 10, 12)
  c.semi_ks = (3, 5, 7, 9, 11)
  c.num_trials = 20
  c.max_iters = 300
  c.cw_ks = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384)
  return c
