"""What the comparison-oracle experiment computes: the test problems, the vmapped and
sharded queries-to-eps runs of each method (on the quadratic-plus-quartic and on Carmon et
al.'s hard chain), the Hessian estimator's error against bisection depth, CMA-ES fed
ranks only, the crossover of two query curves and the quantum simulator's self-checks.
:mod:`reprojax.experiments.comparison_oracle.experiment` runs them and gathers the metrics;
every function here that builds a float64 array expects ``jax.enable_x64(True)`` around it.
"""

from __future__ import annotations

import functools
import math
import time

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import comparison_oracle as co
from reprojax.experiments import sharding


# ----------------------------------------------------------------------------- problem

def problem(n: int, config, seed: int):
  """The quadratic-plus-quartic test function in dimension n and its gradient-norm monitor."""
  A = co.indefinite_matrix(n, jax.random.fold_in(jax.random.key(seed), 1000 + n),
                           config.eig_low, config.eig_high).astype(jnp.float64)
  f = co.quadratic_quartic(A)
  monitor = lambda x: jnp.linalg.norm(jax.grad(f)(x))
  return f, monitor


def starts(n: int, num: int, radius: float, key, center=None):
  """``num`` points at distance ``radius`` from ``center`` in random directions."""
  x = jax.random.normal(key, (num, n), jnp.float64)
  x = radius * x / jnp.linalg.norm(x, axis=1, keepdims=True)
  return x if center is None else x + center


def minimizer(n: int, config, seed: int):
  """A minimiser of the quadratic-plus-quartic: sqrt(-lambda_min) v_min.

  The function is even, so -v_min is one too; the sign is fixed (largest entry positive)
  rather than left to LAPACK, whose eigenvector signs differ between CPUs' kernels."""
  A = co.indefinite_matrix(n, jax.random.fold_in(jax.random.key(seed), 1000 + n),
                           config.eig_low, config.eig_high).astype(jnp.float64)
  lam, V = jnp.linalg.eigh(A)
  v = V[:, 0]
  v = v * jnp.sign(v[jnp.argmax(jnp.abs(v))])
  return jnp.sqrt(-lam[0]) * v


def method_kwargs(name, config):
  if name == "zhang_li":
    return dict(ell=config.ell, gamma=config.gamma)
  kw = dict(rho=config.rho, gamma=config.gamma)
  if name == "quantum_sim":
    kw["delta_q"] = config.delta_q
  return kw


def replica_queries(name: str, f, monitor, n: int, config, oracle_kw=None):
  """One replica of :func:`queries_to_eps`: ``(x0_N, key, eps) -> (queries, steps, reached, x)``.

  ``name``'s method holds a comparison oracle of ``f`` only; ``monitor`` (the true
  gradient norm) stops the run at ``eps`` or the config's step cap.
  """
  oracle = co.make_oracle(f, n, **(oracle_kw or {}))
  method = co.make_method(oracle, name, **method_kwargs(name, config))
  max_steps = config.max_steps_baseline if name == "zhang_li" else config.max_steps_ours
  return lambda x, k, e: co.queries_to_stationarity(method, monitor, x, k, e, max_steps)


def queries_to_eps(name: str, n: int, eps_B, config, *, oracle_kw=None, seed_offset=0,
                   mesh=None):
  """Runs over (eps_b, start_b), vmapped and split over the mesh's ``data`` axis.

  Returns numpy (queries, steps, reached). ``mesh`` default: all devices on ``data``.
  """
  f, monitor = problem(n, config, config.seed)
  B = len(eps_B)
  key = jax.random.fold_in(jax.random.key(config.seed), 7 * n + seed_offset)
  k1, k2 = jax.random.split(key)
  x0 = starts(n, config.num_seeds, config.start_radius, k1, minimizer(n, config, config.seed))
  reps = B // config.num_seeds
  x0 = jnp.tile(x0, (reps, 1))
  keys = jax.random.split(k2, B)
  fn = sharding.vmap_sharded(replica_queries(name, f, monitor, n, config, oracle_kw), mesh)
  t0 = time.time()
  q, t, ok, _ = fn(x0, keys, jnp.asarray(eps_B, jnp.float64))
  q, t, ok = np.asarray(q, np.float64), np.asarray(t), np.asarray(ok)
  logging.info("%-12s n=%-3d %d runs: %.1f s, reached %d/%d", name, n, B, time.time() - t0,
               ok.sum(), B)
  return q, t, ok


def hard_queries(name: str, config, mesh=None):
  """Queries to eps on Carmon et al.'s hard chain, one eps per chain length T; vmapped over (T, seed).

  Ours (and the quantum simulation) runs on the order-2 instance (Hessian-Lipschitz
  constant ``config.rho``, the class of the paper's eps^-1.5 bound), the Zhang-Li baseline
  on the order-1 instance (gradient-Lipschitz constant ``config.ell``, the class of its
  eps^-2 bound). For a chain of T links the gap budget ``config.hard_gap`` fixes eps
  (``co.hard_chain_params``); the dimension ``config.hard_n`` is the same for every T, so
  the per-iteration cost does not change with eps. Returns numpy (T, eps, queries, steps,
  reached), one entry per replica.
  """
  order = 1 if name == "zhang_li" else 2
  lip = config.ell if order == 1 else config.rho
  n = config.hard_n
  T_B = np.repeat(np.asarray(config.hard_links, np.int32), config.hard_seeds)
  if T_B.max() > n:
    raise ValueError(f"hard_links must be <= hard_n = {n}, got {config.hard_links}")
  eps_B, sigma_B, scale_B = co.hard_chain_params(jnp.asarray(T_B, jnp.float64), order,
                                                 config.hard_gap, lip)
  key = jax.random.fold_in(jax.random.key(config.seed), 31 + order)
  k1, k2 = jax.random.split(key)
  # Starts inside the zero-chain region (|x_i| / sigma <= hard_start < 1/2), as at x = 0.
  x0 = config.hard_start * sigma_B[:, None] * jax.random.uniform(
      k1, (len(T_B), n), jnp.float64, -1.0, 1.0)
  kw = method_kwargs(name, config)
  max_steps = config.hard_max_steps_baseline if name == "zhang_li" else config.hard_max_steps_ours

  def one(x0_N, k, num_links, eps, sigma, scale):
    f = co.hard_chain(num_links, sigma, scale)
    method = co.make_method(co.make_oracle(f, n), name, **kw)
    monitor = lambda x: jnp.linalg.norm(jax.grad(f)(x))
    return co.queries_to_stationarity(method, monitor, x0_N, k, eps, max_steps)

  t0 = time.time()
  q, t, ok, _ = sharding.vmap_sharded(one, mesh)(x0, jax.random.split(k2, len(T_B)),
                                                jnp.asarray(T_B), eps_B, sigma_B, scale_B)
  q, t, ok = np.asarray(q, np.float64), np.asarray(t), np.asarray(ok)
  logging.info("%-12s hard chain (order %d, n=%d) %d runs: %.1f s, reached %d/%d", name, order,
               n, len(T_B), time.time() - t0, ok.sum(), len(T_B))
  return T_B, np.asarray(eps_B), q, t, ok


# ----------------------------------------------------------------------------- CMA-ES

def cma_queries(f, monitor, x0, eps, seed, max_evals):
  """CMA-ES (pip ``cma``) fed ranks only; counts evaluations and sorting comparisons."""
  import cma  # a peer library, used only here and in the benchmark

  f_j = jax.jit(f)
  mon = jax.jit(monitor)
  opts = {"seed": int(seed) + 1, "verbose": -9, "maxfevals": max_evals, "tolfun": 0,
          "tolfunhist": 0, "tolx": 0, "tolstagnation": 10 ** 9, "tolflatfitness": 10 ** 9,
          "tolfunrel": 0}
  es = cma.CMAEvolutionStrategy(np.asarray(x0, float), 0.3, opts)
  evals = comps = 0
  while not es.stop() and evals < max_evals:
    X = es.ask()
    vals = [float(f_j(jnp.asarray(x))) for x in X]
    evals += len(X)
    counter = [0]

    def cmp(i, j):
      counter[0] += 1
      return -1 if vals[i] < vals[j] else (1 if vals[i] > vals[j] else 0)

    order = sorted(range(len(X)), key=functools.cmp_to_key(cmp))
    comps += counter[0]
    ranks = np.empty(len(X))
    ranks[order] = np.arange(len(X))
    es.tell(X, list(ranks))  # CMA-ES uses only the ranking
    if float(mon(jnp.asarray(es.mean))) <= eps:
      return evals, comps, True
  return evals, comps, False


# ----------------------------------------------------------------------------- Hessian scaling

def hessian_scaling(n: int, config, mesh=None):
  """Frobenius error of the normalized Hessian vs bisection bits; vmapped over (seed, bits).

  The seeds are split over the mesh's ``data`` axis. Returns (bits, err_BxS, count_BxS).
  """
  S = config.num_seeds
  key = jax.random.fold_in(jax.random.key(config.seed), 500 + n)
  kA, kx, kb = jax.random.split(key, 3)
  A = jax.random.normal(kA, (n, n), jnp.float64)
  A = (A + A.T) / 2
  b = jax.random.normal(kb, (n,), jnp.float64)
  f = lambda x: 0.5 * x @ A @ x + b @ x
  oracle = co.make_oracle(f, n)
  bits = np.asarray(config.hess_bits)
  xs = jax.random.normal(kx, (S, n), jnp.float64)
  keys = jax.random.split(jax.random.fold_in(key, 1), S)
  target = A / jnp.linalg.norm(A)

  def one(x, k, nb):
    H, _, _, st = co.normalized_hessian(oracle, co.init_state(k), x, k, gamma=1e-3, bits=nb)
    return jnp.linalg.norm(H - target), st.count

  err_SxB, cnt_SxB = sharding.vmap_sharded(jax.vmap(one, (None, None, 0)), mesh, (0, 0, None))(
      xs, keys, jnp.asarray(bits, jnp.int32))
  return bits, np.asarray(err_SxB).T, np.asarray(cnt_SxB).T


# ----------------------------------------------------------------------------- summaries

def crossover(eps_grid, meds_ours, meds_base):
  """The crossover eps (NaN when none) and ``d``, log(ours / baseline) median queries by
  decreasing eps: the largest eps below which ours needs fewer comparisons, interpolated
  log-linearly between the two targets around the sign change (the largest eps itself when
  ours is already cheaper there)."""
  diff = np.log(meds_ours) - np.log(meds_base)
  order = np.argsort(eps_grid)[::-1]  # decreasing eps
  cross = float("nan")
  d, e = diff[order], eps_grid[order]
  for i in range(len(d) - 1):
    if d[i] > 0 >= d[i + 1]:
      w = d[i] / (d[i] - d[i + 1])
      cross = float(np.exp((1 - w) * np.log(e[i]) + w * np.log(e[i + 1])))
      break
  if math.isnan(cross) and d[0] <= 0:
    cross = float(e[0])  # ours already cheaper at the largest eps
  return cross, d


def quantum_checks(config):
  """The quantum simulator's self-checks: the total variation between the statevector's and
  the closed form's measurement distributions (n = 2), and the largest angle between the
  quantum and the classical gradient-direction estimates over ``config.num_seeds`` points
  (n = 8). Returns ``(tv, max_angle)``."""
  f2, _ = problem(2, config, config.seed)
  or2 = co.make_oracle(f2, 2)
  x2 = jnp.asarray([0.4, 0.1])
  g2 = np.asarray(jax.grad(f2)(x2))
  u0 = jnp.asarray(g2 / np.linalg.norm(g2) + np.array([0.3, -0.2]))
  u0 = u0 / jnp.linalg.norm(u0)
  N = 128
  M = 0.45 * N / (np.abs(g2).max() / (g2 @ np.asarray(u0)))
  Bq = float(np.sqrt(2) / 2 * np.linalg.norm(g2) / (g2 @ np.asarray(u0))) + 0.5
  Kq = math.ceil(math.log2(2 * math.pi * M * Bq / 0.02))
  reg = co.register_distribution(or2, x2, u0, gamma=config.gamma, N=N, M=M, K=Kq, B=Bq)
  cf = co.closed_form_distribution(or2, x2, u0, gamma=config.gamma, N=N, M=M)
  tv = float(0.5 * np.abs(reg - cf).sum())
  n8 = 8
  f8, _ = problem(n8, config, config.seed)
  or8 = co.make_oracle(f8, n8)
  angs = []
  for s_ in range(config.num_seeds):
    x8 = starts(n8, 1, 1.0, jax.random.key(100 + s_))[0]
    uq, _ = co.quantum_normalized_gradient(or8, co.init_state(jax.random.key(s_)), x8,
                                           jax.random.key(s_), delta=1e-4, gamma=config.gamma)
    uc, _ = co.normalized_gradient(or8, co.init_state(jax.random.key(s_)), x8,
                                   gamma=config.gamma, bits=co.bits_for_accuracy(n8, 1e-6))
    angs.append(float(np.arccos(np.clip(np.dot(uq, uc), -1, 1))))
  return tv, max(angs)
