"""The ROCP experiment's claims, decided from hand-made metrics.

That the vmapped evaluation over random splits gives on 8 devices what it gives
on one is ``tests/experiments/test_papers.py::test_main_step_on_8_devices_equals_1``
(``experiment.main_step``: the evaluation of one cell of the grid at the quick
config's shapes).
"""

import ml_collections

from reprojax.experiments.rocp import experiment


def _metrics(rocp_risk=1.0, baseline_risk=2.0, rocp_critical=0.01, baseline_critical=0.02,
             severe_gain=0.5, z=0.0):
  """Every metric the claims read: ROCP ahead of each baseline by the given margins."""
  m = {}
  for t in experiment.TASKS:
    for l in experiment.LOSSES:
      m[f"{t}/{l}/rocp/max_miscoverage_excess_z"] = z
      m[f"{t}/{l}/rocp/critical_rate"] = rocp_critical
      scale = 1.0 if l == "mild" else 1.0 / (1.0 - severe_gain)  # baselines' risk / ROCP's
      m[f"{t}/{l}/rocp/robust_risk"] = rocp_risk
      for b in experiment.BASELINES:
        m[f"{t}/{l}/{b}/robust_risk"] = baseline_risk * scale
        m[f"{t}/{l}/{b}/critical_rate"] = baseline_critical
        m[f"{t}/{l}/rocp_minus_{b}/robust_risk"] = rocp_risk - baseline_risk * scale
        m[f"{t}/{l}/rocp_minus_{b}/robust_risk_se"] = 0.01
  return m


def _verdicts(metrics):
  config = ml_collections.ConfigDict({"report_alpha": 0.05})
  return {c.id: bool(c.holds) for c in experiment.claims(config, metrics)}


def test_claims_hold_when_rocp_is_ahead_and_fail_otherwise():
  assert _verdicts(_metrics()) == {"coverage": True, "robust_risk": True,
                                   "critical_mistakes": True, "larger_gain_when_costly": True}
  assert not _verdicts(_metrics(z=2.5))["coverage"]  # miscoverage 2.5 s.e. above alpha
  assert _verdicts(_metrics(z=2.0))["coverage"]
  assert not _verdicts(_metrics(rocp_risk=2.5))["robust_risk"]
  assert not _verdicts(_metrics(rocp_critical=0.03))["critical_mistakes"]
  # The same relative gain (50%) under both losses is not a larger gain when costly.
  assert not _verdicts(_metrics(severe_gain=0.0))["larger_gain_when_costly"]
