"""Quick config: query scaling of comparison-based stationary-point methods (paper: abstract's rates).

    python -m reprojax.experiments.comparison_oracle.main \
        --config=experiments/comparison_oracle/configs/quick.py --workdir=/tmp/comparison_oracle

Hardware and time: 2 CPU cores, under 2 minutes (105 s in `make reproduce`, beside another
paper), mostly XLA compiles and the hard-chain runs. Reproduces the query-complexity claims of
"Finding Stationary Points by Comparisons" (ICML 2026): O~(n^2/eps^1.5) classical, O~(n^2 log
1/delta) Hessian estimation, O~(n/eps^1.5) quantum (simulated classically), against the
O~(n/eps^2) baseline of Zhang & Li.
"""

import ml_collections


def get_config():
  c = ml_collections.ConfigDict()
  c.scale = "quick"  # "quick" or "full"
  c.seed = 0  # root PRNG seed (starts, random bases, quantum outcomes)
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  c.num_seeds = 4  # starts per setting, vmapped
  c.n_grid = (2, 4, 8, 16)  # dimensions for the n-scaling of ours and the quantum simulation
  c.n_grid_quantum = (4, 8, 16)  # dimensions for the quantum simulation
  c.quantum_eps_scaling = False  # also run the quantum simulation over eps_grid at n_eps
  c.eps_n = 1e-3  # target ||grad f|| for the n-scaling
  c.n_eps = 4  # dimension for the eps-scaling
  c.eps_grid = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4)  # targets for the eps-scaling
  c.start_radius = 0.7  # starts at this distance from a minimiser, random direction
  c.eig_low = -1.0  # A = Q diag(linspace(eig_low, eig_high, n)) Q^T of the test function
  c.eig_high = 2.0
  c.rho = 1.0  # Hessian-Lipschitz constant used by ours (radius sqrt(eps/rho))
  c.ell = 5.0  # gradient-Lipschitz constant used by the baseline (step eps/(2 ell))
  c.gamma = 1e-5  # finite-difference radius of the comparisons
  c.delta_q = 1e-6  # angle accuracy of each simulated quantum gradient estimate
  c.max_steps_ours = 2000  # iteration caps
  c.max_steps_baseline = 200000
  c.hess_n_grid = (2, 4, 8)  # Hessian-estimator scaling: dimensions
  c.hess_bits = tuple(range(4, 25, 2))  # bisection steps tried
  c.hess_deltas = (1e-1, 1e-2, 1e-3, 1e-4)  # Frobenius accuracies
  c.noise_run = False  # run the noisy-oracle overhead measurement (tests cover it in quick)
  c.noise_p = 0.2  # flip probability of the noisy-oracle run (n = n_grid[0], eps = eps_n)
  c.cma_n = 4  # CMA-ES comparison: dimension
  c.cma_eps = (1e-1, 1e-2, 1e-3)  # CMA-ES targets
  c.cma_seeds = 2  # CMA-ES runs per target (a Python loop: cma is not JAX)
  c.cma_max_evals = 20000
  c.cma_n_grid = ()  # CMA-ES as n varies (at eps_n); empty: skipped
  c.baseline_n_scaling = False  # also run the baseline over n_grid at eps_n
  c.hard_links = (2, 3, 4, 6, 8)  # chain lengths T of the hard instance (each fixes an eps)
  c.hard_n = 8  # dimension of the hard-instance runs (>= max T, the same for every eps)
  c.hard_gap = 1.0  # f(x0) - inf f budget Delta of the hard instance
  c.hard_seeds = 2  # starts per T (|x0_i| <= hard_start * sigma), vmapped
  c.hard_start = 0.1
  c.hard_max_steps_ours = 3000  # iteration caps on the hard instance
  c.hard_max_steps_baseline = 100000
  c.slope_tol = 0.3  # |fitted slope - paper exponent| counted as "near" (all slope claims)
  return c
