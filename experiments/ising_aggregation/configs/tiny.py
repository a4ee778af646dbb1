"""ising_aggregation at tiny scale: the notebook's test run (seconds), not a reproduction.

    python -m reprojax.experiments.ising_aggregation.main \
        --config=experiments/ising_aggregation/configs/tiny.py --workdir=/tmp/ising_aggregation_tiny

One panel size per part (K = 5), few items, trials, starts and EM iterations: every
part runs and every claim is computed, but the figures are noise. Part 5 still reads
the real crowd labels unless ``--config.use_crowd_data=False``.
"""

from reprojax.experiments.ising_aggregation.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_trials = 2  # trials per cell instead of 20
  c.synth_ks = (5,)  # one simulated panel size (the claims need one K >= 5)
  c.synth_items = 400  # items per simulated trial
  c.synth_item_grid = ()  # no extra item counts
  c.bloc_ks = (5,)  # one bloc panel size
  c.semi_ks = (5,)  # one semi-real panel size
  c.semi_train_size = 80  # training fold per judge family
  c.max_iters = 10  # EM iterations at most
  c.num_starts = 2  # Ising EM runs per model (DS and MV)
  c.cw_ks = (4, 16, 64, 256)  # Curie-Weiss panel sizes
  return c
