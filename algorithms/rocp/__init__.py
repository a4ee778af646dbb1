"""ROCP: risk-optimal conformal prediction sets and minimax decisions (Wang & Dobriban, ICML 2026).

Public API::

    from reprojax.algorithms import rocp
    risk_A = rocp.robust_risk(loss_AxY, in_set_Y, alpha)
    path = rocp.calibrate(probs_cal_NxY, labels_N, loss_AxY)   # alpha-free
    pred = rocp.predict(path, probs_test_MxY, loss_AxY, alpha)  # sets, minimax actions

Baselines: ``lac``, ``aps_mapie``, ``aps_paper``, ``raps``, ``socop`` (each with the
minimax or the max-min action), ``rac`` (the paper's evaluation of RAC) and
``rac_global_level`` (our first reading), ``best_response`` after optional
``decision_calibrate``/``recalibrate``.

References:
  Wang & Dobriban, "Optimal Decision-Making Based on Prediction Sets", ICML 2026.
"""


from reprojax.algorithms.rocp._baselines import aps_mapie
from reprojax.algorithms.rocp._baselines import aps_paper
from reprojax.algorithms.rocp._baselines import best_response
from reprojax.algorithms.rocp._baselines import conformal_quantile
from reprojax.algorithms.rocp._baselines import lac
from reprojax.algorithms.rocp._baselines import maxmin_action
from reprojax.algorithms.rocp._baselines import raps
from reprojax.algorithms.rocp._baselines import socop
from reprojax.algorithms.rocp._decision_calibration import decision_calibrate
from reprojax.algorithms.rocp._decision_calibration import DecisionCalibration
from reprojax.algorithms.rocp._decision_calibration import recalibrate
from reprojax.algorithms.rocp._metrics import critical_rates_by_label
from reprojax.algorithms.rocp._metrics import DecisionMetrics
from reprojax.algorithms.rocp._metrics import decision_metrics
from reprojax.algorithms.rocp._optimal import Candidates
from reprojax.algorithms.rocp._optimal import CoveragePath
from reprojax.algorithms.rocp._optimal import Pieces
from reprojax.algorithms.rocp._rac import rac
from reprojax.algorithms.rocp._rac import rac_global_level
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
    "aps_mapie", "aps_paper", "best_response", "calibrate", "Candidates", "conformal_quantile",
    "CoveragePath", "critical_rates_by_label", "decision_calibrate", "DecisionCalibration",
    "decision_metrics", "DecisionMetrics", "lac", "maxmin_action", "minimax_action",
    "oracle_calibrate", "Pieces", "predict", "Prediction", "rac", "rac_global_level", "raps",
    "recalibrate", "robust_risk", "rocp", "select_level", "socop", "threshold",
    "value_at_levels",
)


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.rocp import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES
