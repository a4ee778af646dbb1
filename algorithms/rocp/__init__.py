"""ROCP: risk-optimal conformal prediction sets and minimax decisions (Wang & Dobriban, ICML 2026).

Public API::

    from algorithms import rocp
    risk_A = rocp.robust_risk(loss_AxY, in_set_Y, alpha)
    path = rocp.calibrate(probs_cal_NxY, labels_N, loss_AxY)   # alpha-free
    pred = rocp.predict(path, probs_test_MxY, loss_AxY, alpha)  # sets, minimax actions

References:
  Wang & Dobriban, "Optimal Decision-Making Based on Prediction Sets", ICML 2026.
"""

import jax
import jax.numpy as jnp
import numpy as np

from algorithms._common import Example
from algorithms.rocp._baselines import aps
from algorithms.rocp._baselines import best_response
from algorithms.rocp._baselines import conformal_quantile
from algorithms.rocp._baselines import lac
from algorithms.rocp._baselines import rac
from algorithms.rocp._baselines import raps
from algorithms.rocp._metrics import DecisionMetrics
from algorithms.rocp._metrics import decision_metrics
from algorithms.rocp._optimal import Candidates
from algorithms.rocp._optimal import CoveragePath
from algorithms.rocp._optimal import Pieces
from algorithms.rocp._risk import minimax_action
from algorithms.rocp._risk import robust_risk
from algorithms.rocp._rocp import calibrate
from algorithms.rocp._rocp import oracle_calibrate
from algorithms.rocp._rocp import predict
from algorithms.rocp._rocp import Prediction
from algorithms.rocp._rocp import rocp
from algorithms.rocp._rocp import select_level
from algorithms.rocp._rocp import threshold
from algorithms.rocp._rocp import value_at_levels

__all__ = (
    "aps", "best_response", "calibrate", "Candidates", "conformal_quantile", "CoveragePath",
    "decision_metrics", "DecisionMetrics", "lac", "minimax_action", "oracle_calibrate", "Pieces",
    "predict", "Prediction", "rac", "raps", "robust_risk", "rocp", "select_level", "threshold",
    "value_at_levels",
)

_A, _Y, _N, _M = 3, 4, 12, 5


def _probs(key, n):
  return jax.nn.softmax(2.0 * jax.random.normal(key, (n, _Y)), axis=-1)


def _loss(key):
  return jax.random.uniform(key, (_A, _Y)) * 10.0


def _split_args(key):
  k1, k2, k3, k4 = jax.random.split(key, 4)
  return (_probs(k1, _N), jax.random.randint(k2, (_N,), 0, _Y), _probs(k3, _M), _loss(k4),
          jnp.asarray(0.2))


_BAD_PROBS = np.full((_N, _Y), 0.3, np.float32)  # rows sum to 1.2
_BAD_SPLIT = (_BAD_PROBS, np.zeros((_N,), np.int32), np.full((_M, _Y), 0.25, np.float32),
              np.ones((_A, _Y), np.float32), 0.2)

EXAMPLES = (
    Example("robust_risk", robust_risk,
            lambda k: (_loss(k), jax.random.bernoulli(jax.random.fold_in(k, 1), 0.5, (_N, _Y)),
                       jnp.asarray(0.1)),
            bad_args=(np.ones((_A, _Y)), np.ones((_N, _Y + 1), bool), 0.1)),
    Example("minimax_action", minimax_action,
            lambda k: (_loss(k), jax.random.bernoulli(jax.random.fold_in(k, 1), 0.5, (_N, _Y)),
                       jnp.asarray(0.1)),
            bad_args=(np.ones((_A, _Y)), np.ones((_N, _Y), bool), 1.5)),
    Example("rocp_full", rocp, _split_args, bad_args=_BAD_SPLIT),
    Example("lac", lac, _split_args,
            bad_args=(_BAD_SPLIT[0] * np.nan,) + _BAD_SPLIT[1:]),
    Example("aps", aps, _split_args, bad_args=_BAD_SPLIT),
    Example("best_response", best_response,
            lambda k: (_probs(k, _N), _loss(jax.random.fold_in(k, 1))),
            bad_args=(_BAD_PROBS, np.ones((_A, _Y), np.float32))),
)
