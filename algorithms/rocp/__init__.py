"""ROCP: risk-optimal conformal prediction sets and minimax decisions (Wang & Dobriban, ICML 2026).

Public API::

    from reprojax.algorithms import rocp
    risk_A = rocp.robust_risk(loss_AxY, in_set_Y, alpha)
    path = rocp.calibrate(probs_cal_NxY, labels_N, loss_AxY)   # alpha-free
    pred = rocp.predict(path, probs_test_MxY, loss_AxY, alpha)  # sets, minimax actions

References:
  Wang & Dobriban, "Optimal Decision-Making Based on Prediction Sets", ICML 2026.
"""


from reprojax.algorithms.rocp._baselines import aps
from reprojax.algorithms.rocp._baselines import best_response
from reprojax.algorithms.rocp._baselines import conformal_quantile
from reprojax.algorithms.rocp._baselines import lac
from reprojax.algorithms.rocp._baselines import rac
from reprojax.algorithms.rocp._baselines import raps
from reprojax.algorithms.rocp._metrics import DecisionMetrics
from reprojax.algorithms.rocp._metrics import decision_metrics
from reprojax.algorithms.rocp._optimal import Candidates
from reprojax.algorithms.rocp._optimal import CoveragePath
from reprojax.algorithms.rocp._optimal import Pieces
from reprojax.algorithms.rocp._risk import minimax_action
from reprojax.algorithms.rocp._risk import robust_risk
from reprojax.algorithms.rocp._rocp import calibrate
from reprojax.algorithms.rocp._rocp import oracle_calibrate
from reprojax.algorithms.rocp._rocp import predict
from reprojax.algorithms.rocp._rocp import Prediction
from reprojax.algorithms.rocp._rocp import rocp
from reprojax.algorithms.rocp._rocp import select_level
from reprojax.algorithms.rocp._rocp import threshold
from reprojax.algorithms.rocp._rocp import value_at_levels

__all__ = (
    "aps", "best_response", "calibrate", "Candidates", "conformal_quantile", "CoveragePath",
    "decision_metrics", "DecisionMetrics", "lac", "minimax_action", "oracle_calibrate", "Pieces",
    "predict", "Prediction", "rac", "raps", "robust_risk", "rocp", "select_level", "threshold",
    "value_at_levels",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.rocp import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES
