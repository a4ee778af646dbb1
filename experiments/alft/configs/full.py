"""ALFT full config: 5 seeds per kind, ranks 1..6, longer fits, 5 Kinetic initialisations.

    python -m reprojax.experiments.alft.main --config=experiments/alft/configs/full.py --workdir=/tmp/alft_full

Hardware: 2 CPU cores, 597 s wall (823 s user CPU; measured with the validated-ridge protocol,
on an otherwise idle machine). Same claims as quick. Results: results/alft/full/.
"""

from reprojax.experiments.alft.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 5
  c.ranks = (1, 2, 3, 4, 5, 6)
  c.n_iter_als = 150
  c.n_iter_grad = 1000
  c.methods = ("cp_als", "cp_grad", "tucker_als", "lft_als", "lft_smooth", "alft_als")
  c.kinetic.n_init_seeds = 5
  c.kinetic.n_iter = 500
  c.kinetic.n_iter_tucker = 200
  return c
