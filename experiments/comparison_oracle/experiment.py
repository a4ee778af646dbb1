"""Query complexity of finding eps-stationary points with comparisons (classical, quantum-simulated).

For each method the harness counts the comparisons (quantum queries for the
simulation) charged until the *evaluator's* monitor ``||grad f(x)|| <= eps``
holds; the methods hold only a comparison oracle. Seeds (and eps) are vmapped.
Claims are computed from fitted log-log slopes with 95% t-intervals.

Float64 throughout (comparisons of nearby values need it), scoped with
``jax.enable_x64(True)`` around the computation, never switched process-wide.
:func:`run` measures (the computations are in
:mod:`reprojax.experiments.comparison_oracle.programs`), writes the figure
(:mod:`reprojax.experiments.comparison_oracle.plots`) and returns the flat metrics;
:mod:`reprojax.experiments.comparison_oracle.claims` gives the verdicts from the config and
the metrics alone; :func:`main_step` is the main sharded computation for the every-paper
sharding test.
"""

from __future__ import annotations

import math

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from reprojax.algorithms import comparison_oracle as co
from reprojax.experiments import sharding
from reprojax.experiments.common import fit_loglog
from reprojax.experiments.comparison_oracle import plots
from reprojax.experiments.comparison_oracle import programs



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
      res[name][n] = (eps_B,) + programs.queries_to_eps(name, n, eps_B, config, mesh=mesh)
  base = (np.repeat(np.concatenate([eps_grid, [config.eps_n]]), S),) + programs.queries_to_eps(
      "zhang_li", config.n_eps, np.repeat(np.concatenate([eps_grid, [config.eps_n]]), S), config,
      mesh=mesh)

  base_n = {}
  if config.baseline_n_scaling:
    for n in config.n_grid:
      if n != config.n_eps:
        base_n[n] = programs.queries_to_eps("zhang_li", n, np.repeat([config.eps_n], S),
                                            config, mesh=mesh)

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
  cross, d = programs.crossover(eps_grid, eps_meds["ours"], eps_meds["zhang_li"])
  m["crossover_eps"] = cross
  m["ours_cheaper_at_smallest_eps"] = int(d[-1] < 0)

  # Hard instance: the eps-exponents of the worst-case bounds (see hard_queries).
  hard = {}
  for name in ("ours", "zhang_li"):
    T_B, e_B, q, t, ok = programs.hard_queries(name, config, mesh)
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
    qn, _, okn = programs.queries_to_eps(
        "ours", n0, eps_B, config, oracle_kw=dict(flip_prob=config.noise_p, votes=votes),
        mesh=mesh)
    q0, _ = at(res["ours"][n0], config.eps_n)
    m["noise_p"], m["noise_votes"] = config.noise_p, votes
    m["noise_all_reached"] = int(okn.all())
    m["noise_query_overhead"] = float(np.median(qn) / np.median(q0))

  # Hessian estimator: queries to Frobenius accuracy delta, as n and delta vary.
  hq = {}
  for n in config.hess_n_grid:
    bits, err, cnt = programs.hessian_scaling(n, config, mesh)
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
  tv, max_angle = programs.quantum_checks(config)
  m["quantum_tv_statevector_vs_closed_form"] = tv
  m["quantum_vs_classical_max_angle"] = max_angle

  # CMA-ES on the same function at n = cma_n (skipped, with a warning, without `cma`).
  try:
    import cma  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
    have_cma = True
  except ImportError:
    logging.warning("pip package `cma` not installed: CMA-ES comparison skipped")
    have_cma = False
  fC, monC = programs.problem(config.cma_n, config, config.seed)
  x0C = np.asarray(programs.starts(config.cma_n, config.cma_seeds, config.start_radius,
                                   jax.random.key(config.seed + 99),
                                   programs.minimizer(config.cma_n, config, config.seed)))
  for e in (config.cma_eps if have_cma else ()):
    ev, cp, okc = [], [], []
    for s_ in range(config.cma_seeds):
      a, b_, c_ = programs.cma_queries(fC, monC, x0C[s_], e, config.seed + s_,
                                       config.cma_max_evals)
      ev.append(a)
      cp.append(b_)
      okc.append(c_)
    m[f"cma_evals_eps{e:g}"] = float(np.median(ev))
    m[f"cma_comparisons_eps{e:g}"] = float(np.median(cp))
    m[f"cma_reached_eps{e:g}"] = int(all(okc))
  for n in (config.cma_n_grid if have_cma else ()):  # CMA-ES as n varies, at eps_n
    fN, monN = programs.problem(n, config, config.seed)
    x0N = np.asarray(programs.starts(n, config.cma_seeds, config.start_radius,
                                     jax.random.key(config.seed + 98),
                                     programs.minimizer(n, config, config.seed)))
    cp = [programs.cma_queries(fN, monN, x0N[s_], config.eps_n, config.seed + s_,
                               config.cma_max_evals)[1] for s_ in range(config.cma_seeds)]
    m[f"cma_comparisons_n{n}"] = float(np.median(cp))
  figure = dict(grids=grids, fits=fits, eps_grid=eps_grid, eps_meds=eps_meds, cross=cross,
                hard=hard, hq=hq, have_cma=have_cma)
  return m, figure


def main_step(config, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes (issue 32's every-paper test).

  The step is our second-order method's queries-to-eps runs at ``n = config.n_eps``, the
  eps-scaling call of :func:`run` (``programs.queries_to_eps("ours", n_eps, ...)``: the same
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
    f, monitor = programs.problem(n, config, config.seed)
    fn = programs.replica_queries("ours", f, monitor, n, config)
    if key is None:
      keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), b))
      args = (jax.ShapeDtypeStruct((b, n), jnp.float64), keys,
              jax.ShapeDtypeStruct((b,), jnp.float64))
    else:
      k1, k2 = jax.random.split(key)
      x0 = programs.starts(n, b, config.start_radius, k1,
                           programs.minimizer(n, config, config.seed))
      args = (np.asarray(x0), jax.random.split(k2, b), eps_B)
  return sharding.Step(build=lambda mesh: sharding.float64(sharding.vmap_sharded(fn, mesh)),
                       args=args)
