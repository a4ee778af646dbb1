"""Query complexity of finding eps-stationary points with comparisons (classical, quantum-simulated).

For each method the harness counts the comparisons (quantum queries for the
simulation) charged until the *evaluator's* monitor ``||grad f(x)|| <= eps``
holds; the methods hold only a comparison oracle. Seeds (and eps) are vmapped.
Claims are computed from fitted log-log slopes with 95% t-intervals.

Float64 throughout (comparisons of nearby values need it), scoped with
``jax.enable_x64(True)`` around the computation, never switched process-wide.
:func:`run` measures, writes the figure (:mod:`reprojax.experiments.comparison_oracle.plots`)
and returns the flat metrics; :func:`claims` gives the verdicts from the config and the
metrics alone; :func:`main_step` is the main sharded computation for the every-paper
sharding test.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Mapping

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from reprojax.algorithms import comparison_oracle as co
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments.common import fit_loglog
from reprojax.experiments.comparison_oracle import plots
from reprojax.experiments.results import Claim
from reprojax.experiments.results import Evidence
from reprojax.experiments.results import margin_in_se


# ----------------------------------------------------------------------------- problem


# Open intervals of config fields beyond the naming rules (experiments/config_check.py):
# a flip probability of 1/2 or more leaves the majority vote no signal; targets, radii,
# Lipschitz constants, accuracies and caps are positive.
_POSITIVE = (0.0, float("inf"))
CONFIG_RANGES = {
    "noise_p": (0.0, 0.5), "delta_q": (0.0, 1.0),
    **{name: _POSITIVE for name in (
        "eps_n", "eps_grid", "start_radius", "rho", "ell", "gamma", "hess_deltas", "cma_eps",
        "hard_gap", "hard_start", "slope_tol", "max_steps_ours", "max_steps_baseline",
        "hard_max_steps_ours", "hard_max_steps_baseline", "cma_max_evals", "n_eps", "hard_n",
        "n_grid", "n_grid_quantum", "hess_n_grid", "hess_bits", "hard_links", "hard_seeds",
        "cma_seeds", "cma_n")},
}


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


# ----------------------------------------------------------------------------- run

def run(config, workdir: str) -> dict[str, float]:
  """Measures everything in float64 (scoped), writes the figure and returns the flat metrics."""
  with jax.enable_x64(True):
    m, figure = _measure(config)
  plots.write_all(workdir, config, m, **figure)
  return m


def _measure(config):
  """The metrics and what the figure needs (every JAX computation of the run)."""
  m = {}
  S = config.num_seeds
  mesh = sharding.config_mesh(config)

  # n-scaling (ours, quantum) at eps_n; eps-scaling at n_eps in the same vmapped call.
  eps_grid = np.asarray(config.eps_grid, float)
  res = {"ours": {}, "quantum_sim": {}}
  grids = {"ours": config.n_grid, "quantum_sim": config.n_grid_quantum}
  for name in ("ours", "quantum_sim"):
    for n in grids[name]:
      if n == config.n_eps and (name == "ours" or config.quantum_eps_scaling):
        eps_B = np.repeat(np.concatenate([eps_grid, [config.eps_n]]), S)
      else:
        eps_B = np.repeat([config.eps_n], S)
      res[name][n] = (eps_B,) + queries_to_eps(name, n, eps_B, config, mesh=mesh)
  base = (np.repeat(np.concatenate([eps_grid, [config.eps_n]]), S),) + queries_to_eps(
      "zhang_li", config.n_eps, np.repeat(np.concatenate([eps_grid, [config.eps_n]]), S), config,
      mesh=mesh)

  base_n = {}
  if config.baseline_n_scaling:
    for n in config.n_grid:
      if n != config.n_eps:
        base_n[n] = queries_to_eps("zhang_li", n, np.repeat([config.eps_n], S), config,
                                    mesh=mesh)

  def at(r, eps):
    eps_B, q, _, ok = r
    sel = np.isclose(eps_B, eps)
    return q[sel], ok[sel]

  fits = {}
  for name in ("ours", "quantum_sim"):
    xs_, ys_, all_ok = [], [], True
    for n in grids[name]:
      q, ok = at(res[name][n], config.eps_n)
      all_ok &= bool(ok.all())
      xs_ += [n] * int(ok.sum())
      ys_ += list(q[ok])
      m[f"{name}_queries_n{n}"] = float(np.median(q))
    s, ci, c0 = fit_loglog(xs_, ys_)
    fits[(name, "n")] = (s, ci, c0)
    m[f"{name}_n_slope"], m[f"{name}_n_slope_ci95"] = s, ci
    m[f"{name}_n_all_reached"] = int(all_ok)

  if config.baseline_n_scaling:
    xs_, ys_ = [], []
    for n in config.n_grid:
      if n == config.n_eps:
        q, ok = at(base, config.eps_n)
      else:
        q, _, ok = base_n[n]
      xs_ += [n] * int(ok.sum())
      ys_ += list(q[ok])
      m[f"zhang_li_queries_n{n}"] = float(np.median(q))
    s_, ci_, c0_ = fit_loglog(xs_, ys_)
    fits[("zhang_li", "n")] = (s_, ci_, c0_)
    m["zhang_li_n_slope"], m["zhang_li_n_slope_ci95"] = s_, ci_

  eps_meds = {}
  eps_runs = [("ours", res["ours"][config.n_eps]), ("zhang_li", base)]
  if config.quantum_eps_scaling:
    eps_runs.append(("quantum_sim", res["quantum_sim"][config.n_eps]))
  for name, r in eps_runs:
    xs_, ys_, meds, all_ok = [], [], [], True
    for e in eps_grid:
      q, ok = at(r, e)
      all_ok &= bool(ok.all())
      xs_ += [e] * int(ok.sum())
      ys_ += list(q[ok])
      meds.append(float(np.median(q)))
      m[f"{name}_queries_eps{e:g}"] = meds[-1]
    eps_meds[name] = np.asarray(meds)
    s, ci, c0 = fit_loglog(xs_, ys_)
    fits[(name, "eps")] = (s, ci, c0)
    m[f"{name}_eps_slope"], m[f"{name}_eps_slope_ci95"] = s, ci
    m[f"{name}_eps_all_reached"] = int(all_ok)

  # Crossover: largest eps below which ours needs fewer comparisons than the baseline.
  diff = np.log(eps_meds["ours"]) - np.log(eps_meds["zhang_li"])
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
  m["crossover_eps"] = cross
  m["ours_cheaper_at_smallest_eps"] = int(d[-1] < 0)

  # Hard instance: the eps-exponents of the worst-case bounds (see hard_queries).
  hard = {}
  for name in ("ours", "zhang_li"):
    T_B, e_B, q, t, ok = hard_queries(name, config, mesh)
    hard[name] = (T_B, e_B, q, t, ok)
    for T in config.hard_links:
      sel = T_B == T
      m[f"{name}_hard_eps_T{T}"] = float(e_B[sel][0])
      m[f"{name}_hard_queries_T{T}"] = float(np.median(q[sel]))
      m[f"{name}_hard_steps_T{T}"] = float(np.median(t[sel]))
    s, ci, c0 = fit_loglog(e_B[ok], q[ok])
    fits[(name, "hard")] = (s, ci, c0)
    m[f"{name}_hard_eps_slope"], m[f"{name}_hard_eps_slope_ci95"] = s, ci
    m[f"{name}_hard_steps_T_slope"] = fit_loglog(T_B[ok], t[ok])[0]
    m[f"{name}_hard_all_reached"] = int(ok.all())

  # Noisy oracle (majority vote) at n = n_grid[0], eps_n: overhead vs the exact run.
  if config.noise_run:
    n0 = config.n_grid[0]
    votes = co.votes_for(config.noise_p, 1e5, failure=0.05)
    eps_B = np.repeat([config.eps_n], S)
    qn, _, okn = queries_to_eps("ours", n0, eps_B, config,
                                oracle_kw=dict(flip_prob=config.noise_p, votes=votes), mesh=mesh)
    q0, _ = at(res["ours"][n0], config.eps_n)
    m["noise_p"], m["noise_votes"] = config.noise_p, votes
    m["noise_all_reached"] = int(okn.all())
    m["noise_query_overhead"] = float(np.median(qn) / np.median(q0))

  # Hessian estimator: queries to Frobenius accuracy delta, as n and delta vary.
  hq = {}
  for n in config.hess_n_grid:
    bits, err, cnt = hessian_scaling(n, config, mesh)
    worst = err.max(axis=1)
    for dlt in config.hess_deltas:
      okb = np.nonzero(worst <= dlt)[0]
      hq[(n, dlt)] = float(cnt[okb[0], 0]) if len(okb) else float("nan")
      m[f"hessian_queries_n{n}_delta{dlt:g}"] = hq[(n, dlt)]
  hs_slopes = []
  for dlt in config.hess_deltas:
    pts = [(n, hq[(n, dlt)]) for n in config.hess_n_grid if np.isfinite(hq[(n, dlt)])]
    if len(pts) >= 2:
      s, ci, _ = fit_loglog(*zip(*pts))
      hs_slopes.append(s)
      m[f"hessian_n_slope_delta{dlt:g}"] = s
  m["hessian_n_slope_mean"] = float(np.mean(hs_slopes)) if hs_slopes else float("nan")
  # q / n^2 against log(1/delta): linear with positive slope.
  X, Y = [], []
  for (n, dlt), q in hq.items():
    if np.isfinite(q):
      X.append(math.log(1 / dlt))
      Y.append(q / n ** 2)
  lr = stats.linregress(X, Y)
  m["hessian_log_delta_slope"] = float(lr.slope)
  m["hessian_log_delta_r2"] = float(lr.rvalue ** 2)

  # Quantum simulation checks: statevector vs closed form; quantum vs classical estimate.
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
  m["quantum_tv_statevector_vs_closed_form"] = float(0.5 * np.abs(reg - cf).sum())
  n8 = 8
  f8, _ = problem(n8, config, config.seed)
  or8 = co.make_oracle(f8, n8)
  angs = []
  for s_ in range(S):
    x8 = starts(n8, 1, 1.0, jax.random.key(100 + s_))[0]
    uq, _ = co.quantum_normalized_gradient(or8, co.init_state(jax.random.key(s_)), x8,
                                           jax.random.key(s_), delta=1e-4, gamma=config.gamma)
    uc, _ = co.normalized_gradient(or8, co.init_state(jax.random.key(s_)), x8,
                                   gamma=config.gamma, bits=co.bits_for_accuracy(n8, 1e-6))
    angs.append(float(np.arccos(np.clip(np.dot(uq, uc), -1, 1))))
  m["quantum_vs_classical_max_angle"] = max(angs)

  # CMA-ES on the same function at n = cma_n (skipped, with a warning, without `cma`).
  try:
    import cma  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    have_cma = True
  except ImportError:
    logging.warning("pip package `cma` not installed: CMA-ES comparison skipped")
    have_cma = False
  fC, monC = problem(config.cma_n, config, config.seed)
  x0C = np.asarray(starts(config.cma_n, config.cma_seeds, config.start_radius,
                          jax.random.key(config.seed + 99),
                          minimizer(config.cma_n, config, config.seed)))
  for e in (config.cma_eps if have_cma else ()):
    ev, cp, okc = [], [], []
    for s_ in range(config.cma_seeds):
      a, b_, c_ = cma_queries(fC, monC, x0C[s_], e, config.seed + s_, config.cma_max_evals)
      ev.append(a)
      cp.append(b_)
      okc.append(c_)
    m[f"cma_evals_eps{e:g}"] = float(np.median(ev))
    m[f"cma_comparisons_eps{e:g}"] = float(np.median(cp))
    m[f"cma_reached_eps{e:g}"] = int(all(okc))
  for n in (config.cma_n_grid if have_cma else ()):  # CMA-ES as n varies, at eps_n
    fN, monN = problem(n, config, config.seed)
    x0N = np.asarray(starts(n, config.cma_seeds, config.start_radius,
                            jax.random.key(config.seed + 98), minimizer(n, config, config.seed)))
    cp = [cma_queries(fN, monN, x0N[s_], config.eps_n, config.seed + s_,
                      config.cma_max_evals)[1] for s_ in range(config.cma_seeds)]
    m[f"cma_comparisons_n{n}"] = float(np.median(cp))
  figure = dict(grids=grids, fits=fits, eps_grid=eps_grid, eps_meds=eps_meds, cross=cross,
                hard=hard, hq=hq, have_cma=have_cma)
  return m, figure


def main_step(config, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  The step is our second-order method's queries-to-eps runs at ``n = config.n_eps``, the
  eps-scaling call of :func:`run` (``queries_to_eps("ours", n_eps, ...)``: the same
  per-replica function and :func:`reprojax.experiments.sharding.vmap_sharded`), on its
  ``(len(eps_grid) + 1) * num_seeds`` replicas: every target of ``config.eps_grid`` and
  ``config.eps_n`` times ``num_seeds`` starts, each run until the true gradient norm is
  at most its eps or ``config.max_steps_ours`` iterations. Float64, as in the run.
  Outputs: queries, iterations, reached and the final point per replica.

  With a key: starts drawn from it at distance ``config.start_radius`` from the
  minimiser (as the run's); with None: ``jax.ShapeDtypeStruct`` args only.
  """
  n = config.n_eps
  eps_B = np.repeat(np.concatenate([np.asarray(config.eps_grid, float), [config.eps_n]]),
                    config.num_seeds)
  b = eps_B.size
  with jax.enable_x64(True):
    f, monitor = problem(n, config, config.seed)
    fn = replica_queries("ours", f, monitor, n, config)
    if key is None:
      keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), b))
      args = (jax.ShapeDtypeStruct((b, n), jnp.float64), keys,
              jax.ShapeDtypeStruct((b,), jnp.float64))
    else:
      k1, k2 = jax.random.split(key)
      x0 = starts(n, b, config.start_radius, k1, minimizer(n, config, config.seed))
      args = (np.asarray(x0), jax.random.split(k2, b), eps_B)
  return sharding.Step(build=lambda mesh: sharding.float64(sharding.vmap_sharded(fn, mesh)), args=args)


# ----------------------------------------------------------------------------- claims

def _slope_margin(slope, ci95, target, tol):
  """Distance of a fitted slope from the nearer edge of ``target +- tol``, in standard errors.

  The s.e. is taken as the 95% half-width over 1.96, an upper bound on the t-interval's
  s.e. (its quantile is above 1.96), so the margin is a lower bound.
  """
  return margin_in_se(abs(slope - target), tol, ci95 / 1.96)


_SLOPE_TOL = 0.3  # config.slope_tol, which the slope claims' rules state


def _slope_rule(what: str, target: float, runs: str) -> str:
  return (f"holds when the slope of a least-squares line through log {what} is within "
          f"config.slope_tol = {_SLOPE_TOL:g} of {target:g} (|slope - ({target:g})| <= "
          f"{_SLOPE_TOL:g}) and every run reached its target: {runs}")


CLAIMS = results.declare(
    results.Declared(
        "ours_n_slope", "paper", "classical queries to an eps-stationary point grow like n^2",
        "O~(n^2/eps^1.5): slope 2 in n",
        _slope_rule("comparisons against log n", 2.0, "our method's runs to ||grad f|| <= "
                    "config.eps_n from config.num_seeds starts at each n of config.n_grid")),
    results.Declared(
        "quantum_n_slope", "paper", "quantum (simulated) queries grow like n",
        "O~(n/eps^1.5): slope 1 in n",
        _slope_rule("queries against log n", 1.0, "the simulated quantum method's runs to "
                    "config.eps_n from config.num_seeds starts at each n of "
                    "config.n_grid_quantum")),
    results.Declared(
        "ours_eps_slope", "paper",
        "classical queries grow like eps^-1.5 (worst case: on the Hessian-Lipschitz hard "
        "chain of Carmon et al.)",
        "O~(n^2/eps^1.5): slope -1.5 in eps, attained by the hard chain",
        _slope_rule("comparisons against log eps", -1.5, "our method's runs on the hard "
                    "chain at n = config.hard_n, one chain length T per eps "
                    "(config.hard_links), config.hard_seeds starts each")),
    results.Declared(
        "ours_within_bound", "check", "classical queries grow no faster than eps^-1.5",
        "O~(n^2/eps^1.5)",
        "holds when our fitted log-comparisons against log-eps slope on the easy function "
        "(n = config.n_eps, config.eps_grid) plus its 95% half-width is at least -1.5 and "
        "every run reached its eps"),
    results.Declared(
        "baseline_eps_slope", "baseline",
        "the Zhang-Li baseline grows like eps^-2 (worst case: on the gradient-Lipschitz hard "
        "chain)", "O~(n/eps^2): slope -2 in eps, attained by the hard chain",
        _slope_rule("comparisons against log eps", -2.0, "the Zhang-Li baseline's runs on "
                    "its hard chain at n = config.hard_n over config.hard_links")),
    results.Declared(
        "crossover", "check", "below some eps ours needs fewer queries than the baseline",
        "n^2/eps^1.5 < n/eps^2 for small eps",
        "holds when, on the easy function over config.eps_grid (median comparisons over the "
        "starts), a crossover eps exists below which ours needs fewer comparisons than "
        "Zhang-Li, ours is cheaper at the smallest eps, and our fitted eps-slope is above "
        "the baseline's"),
    results.Declared(
        "hessian_n2_log", "paper", "Hessian estimation to delta uses ~ n^2 log(1/delta) queries",
        "O~(n^2 log(1/delta))",
        f"holds when the mean over config.hess_deltas of the log-log slope of the queries "
        f"to Frobenius error delta against n (config.hess_n_grid) is within "
        f"config.slope_tol = {_SLOPE_TOL:g} of 2, and q/n^2 against log(1/delta), a "
        "least-squares line over every (n, delta), has R^2 >= 0.9 and a positive slope"),
    results.Declared(
        "quantum_sim_consistent", "check",
        "quantum simulation: closed form matches the statevector and the quantum estimate "
        "matches the classical one", "(simulation check, not a paper number)",
        "holds when the total variation between the statevector's and the closed form's "
        "measurement distributions is below 0.05 and the largest angle between the quantum "
        "and the classical gradient-direction estimates is below 1e-3 rad"),
)


def claims(config, metrics: Mapping[str, float]) -> list[Claim]:
  """The verdicts of :data:`CLAIMS`: a pure function of the config and the metrics (as
  ``results.json`` has them).

  Evidence: ``seeds`` counts the runs behind a fitted slope (settings x starts); the
  n-exponents and the Hessian estimator's are formulas of the charged count (the docstrings
  of :mod:`reprojax.algorithms.comparison_oracle` derive them), so they are declared by
  construction.
  """
  m = metrics
  tol = config.slope_tol
  if tol != _SLOPE_TOL:
    raise ValueError(f"config.slope_tol must be the declared rules' {_SLOPE_TOL} (a changed "
                     f"rule takes new claim ids), got {tol}")
  cross = m["crossover_eps"]
  so, sq = m["ours_n_slope"], m["quantum_sim_n_slope"]
  eo, eb = m["ours_eps_slope"], m["zhang_li_eps_slope"]
  ho, hb = m["ours_hard_eps_slope"], m["zhang_li_hard_eps_slope"]
  n_note = "iterations do not grow with n on this family, so the n-slope reads the formula"
  return results.as_declared([
      CLAIMS["ours_n_slope"].claim(
            f"slope {so:.2f} ± {m['ours_n_slope_ci95']:.2f} (n={list(config.n_grid)})",
            bool(abs(so - 2.0) <= tol and m["ours_n_all_reached"]),
            evidence=Evidence(
                seeds=len(config.n_grid) * int(config.num_seeds),
                margin_se=_slope_margin(so, m["ours_n_slope_ci95"], 2.0, tol),
                by_construction="each iteration charges (2n+1) normalized-gradient estimates of "
                                "n + (n-1)(K+1) comparisons plus a 24-comparison scale search "
                                "(~2 n^2 K, K ~ log2(sqrt(n)/delta))",
                note=n_note)),
      CLAIMS["quantum_n_slope"].claim(
            f"slope {sq:.2f} ± {m['quantum_sim_n_slope_ci95']:.2f}",
            bool(abs(sq - 1.0) <= tol and m["quantum_sim_n_all_reached"]),
            evidence=Evidence(
                seeds=len(config.n_grid_quantum) * int(config.num_seeds),
                margin_se=_slope_margin(sq, m["quantum_sim_n_slope_ci95"], 1.0, tol),
                by_construction="the simulated circuit charges (2n+1) estimates of 2m - 1 + 6 K_q "
                                "queries each (m, K_q logarithmic in n): ~2n log",
                note=n_note + " (a classical simulation; no quantum hardware)")),
      CLAIMS["ours_eps_slope"].claim(
            f"hard chain: slope {ho:.2f} ± {m['ours_hard_eps_slope_ci95']:.2f} "
            f"(n={config.hard_n}, T={list(config.hard_links)}); easy function: {eo:.2f}",
            bool(abs(ho + 1.5) <= tol and m["ours_hard_all_reached"]),
            evidence=Evidence(
                seeds=len(config.hard_links) * int(config.hard_seeds),
                margin_se=_slope_margin(ho, m["ours_hard_eps_slope_ci95"], -1.5, tol),
                after_change="23ed50a: measured on Carmon et al.'s hard chain instead of the "
                             "quadratic-quartic, where it failed (-0.46 +- 0.01)",
                note="the chain's length is set by eps, T ~ eps^-1.5 (the README: by "
                     "construction); measured is that iterations grow linearly in T")),
      CLAIMS["ours_within_bound"].claim(
            f"slope {eo:.2f} >= -1.5",
            bool(eo + m["ours_eps_slope_ci95"] >= -1.5 and m["ours_eps_all_reached"])),
      CLAIMS["baseline_eps_slope"].claim(
            f"hard chain: slope {hb:.2f} ± {m['zhang_li_hard_eps_slope_ci95']:.2f} "
            f"(n={config.hard_n}, T={list(config.hard_links)}); easy function: {eb:.2f}",
            bool(abs(hb + 2.0) <= tol and m["zhang_li_hard_all_reached"])),
      CLAIMS["crossover"].claim(
            f"crossover eps ~ {cross:.2g}; eps-slopes: ours {eo:.2f}, baseline {eb:.2f}",
            bool(np.isfinite(cross) and m["ours_cheaper_at_smallest_eps"] and eo > eb)),
      CLAIMS["hessian_n2_log"].claim(
            f"n-slope {m['hessian_n_slope_mean']:.2f}; q/n^2 linear in log(1/delta), "
            f"R^2 {m['hessian_log_delta_r2']:.3f}",
            bool(abs(m["hessian_n_slope_mean"] - 2.0) <= tol and m["hessian_log_delta_r2"] >= 0.9
                 and m["hessian_log_delta_slope"] > 0),
            evidence=Evidence(
                seeds=int(config.num_seeds),
                by_construction="the count is hessian_queries(n, K) = (2n+1)(n + (n-1)(K+1)) + 24 "
                                "at the bisection depth K where the worst of the quadratics "
                                "reaches delta, so q/n^2 ~ 2K",
                note="measured: the depth K needed, linear in log(1/delta) (R^2); the n-slope is "
                     "a mean over deltas of 3-point fits, no s.e.")),
      CLAIMS["quantum_sim_consistent"].claim(
            f"TV {m['quantum_tv_statevector_vs_closed_form']:.3g}, max angle "
            f"{m['quantum_vs_classical_max_angle']:.2g} rad",
            bool(m["quantum_tv_statevector_vs_closed_form"] < 0.05
                 and m["quantum_vs_classical_max_angle"] < 1e-3)),
  ], CLAIMS)
