"""The comparison-oracle claims: :data:`CLAIMS` declared before they are measured, and
:func:`claims`, the verdicts as a pure function of the config and the metrics (as
``results.json`` has them; no JAX). The slope claims hold when a fitted log-log slope lies
within ``config.slope_tol`` of the paper's exponent; their margin is the slope's distance
from the nearer edge of that band in standard errors (:func:`results.equivalent` with no
s.e. widening, ``k = 0``).
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from reprojax.experiments import results
from reprojax.experiments.results import Claim
from reprojax.experiments.results import Evidence


def _slope_verdict(slope, ci95, target, tol) -> results.Verdict:
  """``|slope - target| <= tol``, with the slope's distance from the nearer edge of
  ``target +- tol`` in standard errors as its margin.

  The s.e. is taken as the 95% half-width over 1.96, an upper bound on the t-interval's
  s.e. (its quantile is above 1.96), so the margin is a lower bound; a non-finite half-width
  (a fit through too few points) counts as no s.e. (an infinite margin).
  """
  se = ci95 / 1.96
  return results.equivalent(slope - target, se if math.isfinite(se) else 0.0, tol, k=0.0)


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
  v_so = _slope_verdict(so, m["ours_n_slope_ci95"], 2.0, tol)
  v_sq = _slope_verdict(sq, m["quantum_sim_n_slope_ci95"], 1.0, tol)
  v_ho = _slope_verdict(ho, m["ours_hard_eps_slope_ci95"], -1.5, tol)
  return results.as_declared([
      CLAIMS["ours_n_slope"].claim(
            f"slope {so:.2f} ± {m['ours_n_slope_ci95']:.2f} (n={list(config.n_grid)})",
            bool(v_so.holds and m["ours_n_all_reached"]),
            evidence=Evidence(
                seeds=len(config.n_grid) * int(config.num_seeds),
                margin_se=v_so.margin_se,
                by_construction="each iteration charges (2n+1) normalized-gradient estimates of "
                                "n + (n-1)(K+1) comparisons plus a 24-comparison scale search "
                                "(~2 n^2 K, K ~ log2(sqrt(n)/delta))",
                note=n_note)),
      CLAIMS["quantum_n_slope"].claim(
            f"slope {sq:.2f} ± {m['quantum_sim_n_slope_ci95']:.2f}",
            bool(v_sq.holds and m["quantum_sim_n_all_reached"]),
            evidence=Evidence(
                seeds=len(config.n_grid_quantum) * int(config.num_seeds),
                margin_se=v_sq.margin_se,
                by_construction="the simulated circuit charges (2n+1) estimates of 2m - 1 + 6 K_q "
                                "queries each (m, K_q logarithmic in n): ~2n log",
                note=n_note + " (a classical simulation; no quantum hardware)")),
      CLAIMS["ours_eps_slope"].claim(
            f"hard chain: slope {ho:.2f} ± {m['ours_hard_eps_slope_ci95']:.2f} "
            f"(n={config.hard_n}, T={list(config.hard_links)}); easy function: {eo:.2f}",
            bool(v_ho.holds and m["ours_hard_all_reached"]),
            evidence=Evidence(
                seeds=len(config.hard_links) * int(config.hard_seeds),
                margin_se=v_ho.margin_se,
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
