"""The comparison_oracle claims: each verdict flips when its deciding metric crosses the threshold.

The other metrics come from the committed quick run; the deciding ones are set by
hand on both sides of the threshold, so a reversed comparison fails here.
"""

import json
import os

import pytest

from reprojax.experiments import registry
from reprojax.experiments import results as results_lib
from reprojax.experiments.comparison_oracle import claims
from reprojax.experiments.comparison_oracle import programs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def base():
  with open(os.path.join(ROOT, "results", "comparison_oracle", "results.json")) as f:
    metrics = results_lib.load_metrics(json.load(f))
  config = registry.load_config("comparison_oracle", "quick")
  metrics.update({  # every claim holds
      "ours_n_slope": 2.0, "ours_n_all_reached": 1, "quantum_sim_n_slope": 1.0,
      "quantum_sim_n_all_reached": 1, "ours_hard_eps_slope": -1.5, "ours_hard_all_reached": 1,
      "ours_eps_slope": -1.2, "ours_eps_slope_ci95": 0.1, "ours_eps_all_reached": 1,
      "zhang_li_hard_eps_slope": -2.0, "zhang_li_hard_all_reached": 1, "zhang_li_eps_slope": -1.9,
      "crossover_eps": 0.05, "ours_cheaper_at_smallest_eps": 1,
      "hessian_n_slope_mean": 2.0, "hessian_log_delta_r2": 0.99, "hessian_log_delta_slope": 1.0,
      "quantum_tv_statevector_vs_closed_form": 0.01, "quantum_vs_classical_max_angle": 1e-5})
  return config, metrics


def _verdicts(config, m, **changes):
  return {c.id: (bool(c.holds), c.kind) for c in claims.claims(config, dict(m, **changes))}


def test_all_hold_and_kinds(base):
  config, m = base
  got = _verdicts(config, m)
  assert all(h for h, _ in got.values()), got
  kinds = {k: kind for k, (_, kind) in got.items()}
  assert [k for k, v in kinds.items() if v == "paper"] == [
      "ours_n_slope", "quantum_n_slope", "ours_eps_slope", "hessian_n2_log"]
  assert kinds["baseline_eps_slope"] == "baseline"


def test_each_claim_flips(base):
  config, m = base
  t = config.slope_tol + 0.01  # just past the tolerance
  flips = [
      ("ours_n_slope", dict(ours_n_slope=2.0 + t)), ("ours_n_slope", dict(ours_n_slope=2.0 - t)),
      ("ours_n_slope", dict(ours_n_all_reached=0)),
      ("quantum_n_slope", dict(quantum_sim_n_slope=1.0 + t)),
      ("ours_eps_slope", dict(ours_hard_eps_slope=-1.5 - t)),
      ("ours_eps_slope", dict(ours_hard_eps_slope=-1.5 + t)),
      ("ours_within_bound", dict(ours_eps_slope=-1.7)),  # faster growth than eps^-1.5
      ("baseline_eps_slope", dict(zhang_li_hard_eps_slope=-2.0 + t)),
      ("crossover", dict(ours_cheaper_at_smallest_eps=0)),
      ("crossover", dict(crossover_eps=float("nan"))),
      ("hessian_n2_log", dict(hessian_n_slope_mean=2.0 + t)),
      ("hessian_n2_log", dict(hessian_log_delta_r2=0.89)),
      ("hessian_n2_log", dict(hessian_log_delta_slope=-0.1)),
      ("quantum_sim_consistent", dict(quantum_tv_statevector_vs_closed_form=0.06)),
      ("quantum_sim_consistent", dict(quantum_vs_classical_max_angle=2e-3)),
  ]
  for claim, change in flips:
    got = _verdicts(config, m, **change)
    assert not got[claim][0], (claim, change)
  for claim, change in [("ours_n_slope", dict(ours_n_slope=2.0 + config.slope_tol - 0.01)),
                        ("ours_eps_slope", dict(ours_hard_eps_slope=-1.5 + config.slope_tol - 0.01))]:
    assert _verdicts(config, m, **change)[claim][0], (claim, change)


def test_the_start_centre_is_a_minimiser_with_its_sign_fixed():
  """minimizer(): a stationary point of the even test function, its sign not LAPACK's choice
  (eigenvector signs differ between CPUs' kernels): its largest entry is positive."""
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  config = registry.load_config("comparison_oracle", "tiny")
  for n in (2, 4, 8):
    x = np.asarray(programs.minimizer(n, config, config.seed))
    assert x[np.argmax(np.abs(x))] > 0
    f, _ = programs.problem(n, config, config.seed)
    assert np.linalg.norm(np.asarray(jax.grad(f)(x))) < 1e-5 * max(1.0, np.linalg.norm(x))
