"""comparison_oracle at tiny scale: the notebook's test run, not a reproduction.

    python -m reprojax.experiments.comparison_oracle.main \
        --config=experiments/comparison_oracle/configs/tiny.py --workdir=/tmp/comparison_oracle_tiny

Every slope is a fit through two or three points. About 40 s of CPU on 2 cores, over 90%
of it XLA compiles: one per method and dimension (each fit needs two dimensions), plus
the hard chain, the Hessian estimator and the quantum checks; smaller sizes cannot shrink it.
"""

from reprojax.experiments.comparison_oracle.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 1  # one start per setting instead of 4
  c.n_grid = (2, 4)  # two dimensions (n_eps = 4 is among them)
  c.n_grid_quantum = (2, 4)
  c.eps_n = 1e-2  # target of the n-scaling (quick: 1e-3)
  c.eps_grid = (1e-1, 3e-2, 1e-2)  # three targets for the eps-scaling
  c.hess_n_grid = (2, 4)  # Hessian estimator: two dimensions,
  c.hess_bits = (4, 8, 12, 16)  # four bisection depths,
  c.hess_deltas = (1e-1, 1e-2)  # two accuracies
  c.cma_eps = ()  # no CMA-ES comparison
  c.cma_n = 2  # (not n_eps: no empty CMA-ES entry in the eps panel)
  c.hard_links = (2, 3)  # two chain lengths of the hard instance
  c.hard_n = 3  # in dimension 3
  c.hard_seeds = 1  # one start per chain length
  return c
