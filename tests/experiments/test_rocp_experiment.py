"""The ROCP experiment's claims, decided from hand-made metrics.

That the vmapped evaluation over random splits gives on 8 devices what it gives
on one is ``tests/experiments/test_multihost.py`` (8 devices over 2 processes against 1)
(``experiment.main_step``: the evaluation of one cell of the grid at the quick
config's shapes).
"""

import ml_collections

from reprojax.experiments.rocp import claims


def _metrics(rocp_risk=1.0, baseline_risk=2.0, rocp_critical=0.01, baseline_critical=0.02,
             severe_gain=0.5, z=0.0, label_diff=-0.01, label_se=0.004):
  """Every metric the claims read: ROCP ahead of each baseline by the given margins.

  Under both protocols the ROCP of the protocol has ``rocp_risk`` and each baseline
  ``baseline_risk`` (times 1 / (1 - severe_gain) under the costly loss); per critical
  label ROCP's rate minus each paper baseline's is ``label_diff`` with s.e. ``label_se``.
  """
  m = {}
  for t in claims.TASKS:
    for l in claims.LOSSES[t]:
      c = f"{t}/{l}"
      costly = l == claims.GAIN_PAIRS.get(t, (None, None))[1]
      scale = 1.0 / (1.0 - severe_gain) if costly else 1.0
      for ours, others in (("rocp", claims.BASELINES),
                           ("rocp_released", claims.PAPER_RISK_BASELINES)):
        m[f"{c}/{ours}/max_miscoverage_excess_z"] = z
        m[f"{c}/{ours}/critical_rate"] = rocp_critical
        m[f"{c}/{ours}/robust_risk"] = rocp_risk
        for b in others:
          m[f"{c}/{b}/robust_risk"] = baseline_risk * scale
          m[f"{c}/{b}/critical_rate"] = baseline_critical
          m[f"{c}/{ours}_minus_{b}/robust_risk"] = rocp_risk - baseline_risk * scale
          m[f"{c}/{ours}_minus_{b}/robust_risk_se"] = 0.01
          m[f"{c}/{ours}_minus_{b}/critical_rate"] = rocp_critical - baseline_critical
          m[f"{c}/{ours}_minus_{b}/critical_rate_se"] = 0.001
        for x in claims.PAPER_ALPHAS:
          m[f"{c}/{ours}/robust_risk@{x:g}"] = rocp_risk
          for b in others:
            m[f"{c}/{b}/robust_risk@{x:g}"] = baseline_risk * scale
      for y in (1, 2):  # two critical labels per cell
        m[f"{c}/rocp_released/critical_rate@{y}"] = 0.05
        for b in claims.PAPER_CRITICAL_BASELINES:
          m[f"{c}/{b}/critical_rate@{y}"] = 0.05 - label_diff
          m[f"{c}/rocp_released_minus_{b}/critical_rate@{y}"] = label_diff
          m[f"{c}/rocp_released_minus_{b}/critical_rate@{y}_se"] = label_se
  return m


def _verdicts(metrics):
  config = ml_collections.ConfigDict({"report_alpha": 0.05, "num_splits": 20})
  return {c.id: bool(c.holds) for c in claims.claims(config, metrics)}


def _kinds():
  config = ml_collections.ConfigDict({"report_alpha": 0.05, "num_splits": 20})
  return {c.id: c.kind for c in claims.claims(config, _metrics())}


def test_claims_hold_when_rocp_is_ahead_and_fail_otherwise():
  assert _verdicts(_metrics()) == dict.fromkeys(
      ("coverage", "coverage_released", "robust_risk", "robust_risk_authors_eval",
       "critical_mistakes", "critical_mistakes_authors_eval", "larger_gain_when_costly",
       "larger_gain_authors_eval"), True)
  # Each claim counts under both readings, its first rule keeping its first id.
  assert [k for k, v in _kinds().items() if v == "paper"] == [
      "coverage", "robust_risk", "robust_risk_authors_eval", "critical_mistakes",
      "critical_mistakes_authors_eval", "larger_gain_when_costly", "larger_gain_authors_eval"]
  assert not _verdicts(_metrics(z=2.5))["coverage"]  # miscoverage 2.5 s.e. above alpha
  assert not _verdicts(_metrics(z=2.5))["coverage_released"]
  assert _verdicts(_metrics(z=2.0))["coverage"]
  worse = _verdicts(_metrics(rocp_risk=2.5))
  assert not worse["robust_risk"] and not worse["robust_risk_authors_eval"]
  assert not _verdicts(_metrics(rocp_critical=0.03))["critical_mistakes"]
  # Per label: more than two paired s.e. above a baseline fails, within two holds.
  assert not _verdicts(_metrics(label_diff=0.009, label_se=0.004))[
      "critical_mistakes_authors_eval"]
  assert _verdicts(_metrics(label_diff=0.007, label_se=0.004))["critical_mistakes_authors_eval"]
  # The same risks under both losses: no larger relative gain, and no larger gap to RAC.
  same = _verdicts(_metrics(severe_gain=0.0))
  assert not same["larger_gain_when_costly"] and not same["larger_gain_authors_eval"]
  grows = _verdicts(_metrics(severe_gain=0.5))
  assert grows["larger_gain_authors_eval"] and grows["larger_gain_when_costly"]
