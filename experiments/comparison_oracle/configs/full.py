"""Full config: more dimensions, targets and seeds.

    python -m reprojax.experiments.comparison_oracle.main \
        --config=experiments/comparison_oracle/configs/full.py --workdir=/tmp/comparison_oracle_full

Hardware: 2 CPU cores, about 15 minutes (measured 455 s before the baseline and CMA-ES
n-scaling and the hard chain were added; the hard chain at n = 12, T <= 12 is estimated
at 4-6 minutes from the quick run). Reproduces the same claims as quick.py with n up to 32,
eps down to 1e-4 and hard chains up to T = 12 links.
"""

from reprojax.experiments.comparison_oracle.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 16
  c.n_grid = (2, 4, 8, 16, 32)
  c.n_grid_quantum = (2, 4, 8, 16, 32)
  c.quantum_eps_scaling = True
  c.eps_grid = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4)
  c.hess_n_grid = (2, 4, 8, 16)
  c.cma_n = 8
  c.cma_eps = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3)
  c.cma_seeds = 5
  c.noise_run = True
  c.cma_n_grid = (2, 4, 8, 16, 32)
  c.baseline_n_scaling = True
  c.hard_links = (2, 3, 4, 6, 8, 12)
  c.hard_n = 12
  return c
