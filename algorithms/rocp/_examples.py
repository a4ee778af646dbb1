"""The registered examples of ``reprojax.algorithms.rocp`` for ``tests/test_common.py``.

Built only when :func:`reprojax.algorithms.rocp.examples` is called, so importing the
package does no JAX work (it must not start a backend before ``jax.distributed``).
"""

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms._common import Example
from reprojax.algorithms.rocp import aps_mapie
from reprojax.algorithms.rocp import aps_paper
from reprojax.algorithms.rocp import critical_rates_by_label
from reprojax.algorithms.rocp import decision_calibrate
from reprojax.algorithms.rocp import maxmin_action
from reprojax.algorithms.rocp import rac_global_level
from reprojax.algorithms.rocp import recalibrate
from reprojax.algorithms.rocp import socop
from reprojax.algorithms.rocp import best_response
from reprojax.algorithms.rocp import calibrate
from reprojax.algorithms.rocp import conformal_quantile
from reprojax.algorithms.rocp import CoveragePath
from reprojax.algorithms.rocp import decision_metrics
from reprojax.algorithms.rocp import lac
from reprojax.algorithms.rocp import minimax_action
from reprojax.algorithms.rocp import oracle_calibrate
from reprojax.algorithms.rocp import predict
from reprojax.algorithms.rocp import rac
from reprojax.algorithms.rocp import raps
from reprojax.algorithms.rocp import robust_risk
from reprojax.algorithms.rocp import rocp
from reprojax.algorithms.rocp import select_level
from reprojax.algorithms.rocp import threshold
from reprojax.algorithms.rocp import value_at_levels


_A, _Y, _N, _M = 3, 4, 12, 5


def _probs(key, n):
  return jax.nn.softmax(2.0 * jax.random.normal(key, (n, _Y)), axis=-1)


def _loss(key):
  return jax.random.uniform(key, (_A, _Y)) * 10.0


def _split_args(key):
  k1, k2, k3, k4 = jax.random.split(key, 4)
  return (_probs(k1, _N), jax.random.randint(k2, (_N,), 0, _Y), _probs(k3, _M), _loss(k4),
          jnp.asarray(0.2))


def _calibration_args(key):
  k1, k2, k3 = jax.random.split(key, 3)
  return _probs(k1, _N), jax.random.randint(k2, (_N,), 0, _Y), _loss(k3)


def _alpha(key):
  """A level with k = ceil((1 - alpha)(N + 1)) <= N, so thresholds are finite."""
  return jax.random.uniform(key, (), minval=0.1, maxval=0.5)


def _padding_marked(path_fn):
  """``path_fn`` with the path's +inf padding of ``beta_E`` shown as -1 (finite outputs)."""
  def fn(*args):
    path = path_fn(*args)
    return path._replace(beta_E=jnp.where(jnp.isinf(path.beta_E), -1.0, path.beta_E))
  return fn


def _path_args(key):
  """A labelled calibration path (from :func:`calibrate`) and a level."""
  return calibrate(*_calibration_args(key)), _alpha(jax.random.fold_in(key, 1))


def _predict_args(key):
  """(path, test probabilities, loss, alpha), the path calibrated with the same loss."""
  probs, labels, loss = _calibration_args(key)
  path = calibrate(probs, labels, loss)
  return path, _probs(jax.random.fold_in(key, 1), _M), loss, jnp.asarray(0.2)


def _one_input_args(key):
  k1, k2 = jax.random.split(key)
  return jax.nn.softmax(2.0 * jax.random.normal(k1, (_Y,))), _loss(k2)


def _metrics_args(key):
  k1, k2, k3, k4 = jax.random.split(key, 4)
  sets = jax.random.bernoulli(k1, 0.6, (_M, _Y))
  critical = np.zeros((_A, _Y), bool)
  critical[0, 1:] = True
  return (sets, jax.random.randint(k2, (_M,), 0, _A), jax.random.randint(k3, (_M,), 0, _Y),
          _loss(k4), jnp.asarray(critical), jnp.asarray(0.1))


# Decision calibration inverts B^T B / n (B: the adversary's soft decisions); with 12 rows
# and 5 Adam steps its condition number reached 5e5 in float32 over 20 draws, where one
# ulp of input moved U by 0.1, so vmapped-equals-looped held only while both programs
# rounded alike. With 64 rows it stays below 1.3e3.
_N_DC = 64


def _dc_args(key):
  k1, k2 = jax.random.split(key)
  return _probs(k1, _N_DC), jax.random.randint(k2, (_N_DC,), 0, _Y)


def _decision_calibrate(probs, labels):
  """Two short rounds from a fixed key (the key is not an array argument the fuzzer spoils)."""
  return decision_calibrate(jax.random.key(0), probs, labels, _A, rounds=2, steps=5)


def _recalibrate(probs, labels, probs_test):
  return recalibrate(_decision_calibrate(probs, labels), probs_test)


_BAD_PROBS = np.full((_N, _Y), 0.3, np.float32)  # rows sum to 1.2
_BAD_SPLIT = (_BAD_PROBS, np.zeros((_N,), np.int32), np.full((_M, _Y), 0.25, np.float32),
              np.ones((_A, _Y), np.float32), 0.2)
# A valid two-point path built without JAX work (N(beta) = 0 everywhere), for bad alphas.
_NP_PATH = CoveragePath(np.array([0.0, np.inf], np.float32), np.zeros(2, np.float32),
                        np.asarray(1.0, np.float32))

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
            bad_args=(_BAD_SPLIT[0] * np.nan,) + _BAD_SPLIT[1:], ranges={4: (0.0, 1.0)}),
    Example("aps_mapie", aps_mapie, _split_args, bad_args=_BAD_SPLIT),
    Example("aps_paper", aps_paper, _split_args, bad_args=_BAD_SPLIT),
    Example("raps", raps, _split_args, bad_args=_BAD_SPLIT),
    Example("socop", socop, _split_args, bad_args=_BAD_SPLIT),
    Example("rac", rac, _split_args, bad_args=_BAD_SPLIT[:3] + (None, 0.2)),
    Example("rac_global_level", rac_global_level, _split_args,
            bad_args=_BAD_SPLIT[:3] + (None, 0.2)),
    Example("maxmin_action", maxmin_action,
            lambda k: (_loss(k), jax.random.bernoulli(jax.random.fold_in(k, 1), 0.5, (_N, _Y))),
            bad_args=(np.ones((_A, _Y)), np.ones((_N, _Y + 1), bool))),
    Example("decision_calibrate", _decision_calibrate, _dc_args,
            bad_args=(_BAD_PROBS, np.zeros((_N,), np.int32))),
    Example("recalibrate", _recalibrate, lambda k: _dc_args(k) + (_probs(jax.random.fold_in(k, 2),
                                                                        _M),),
            bad_args=(np.full((_N, _Y), 0.25, np.float32), np.zeros((_N,), np.int32),
                      np.full((_M, _Y + 1), 1 / (_Y + 1), np.float32))),
    Example("critical_rates_by_label", critical_rates_by_label,
            lambda k: (jax.random.randint(k, (_M,), 0, _A),
                       jax.random.randint(jax.random.fold_in(k, 1), (_M,), 0, _Y),
                       jnp.asarray(np.eye(_A, _Y, dtype=bool))),
            bad_args=(np.zeros((_M,), np.int32), np.zeros((_M,), np.int32),
                      np.ones((_A,), bool))),
    Example("best_response", best_response,
            lambda k: (_probs(k, _N), _loss(jax.random.fold_in(k, 1))),
            bad_args=(_BAD_PROBS, np.ones((_A, _Y), np.float32))),
    Example("calibrate", _padding_marked(calibrate), _calibration_args,
            bad_args=(_BAD_PROBS, np.zeros((_N,), np.int32), np.ones((_A, _Y), np.float32)),
            derived_sizes=True),  # E = n (1 + A Y) + 1 levels
    Example("oracle_calibrate", _padding_marked(oracle_calibrate),
            lambda k: (_probs(k, _N), _loss(jax.random.fold_in(k, 1))),
            bad_args=(_BAD_PROBS, np.ones((_A, _Y), np.float32)), derived_sizes=True),
    Example("threshold", threshold, _path_args, bad_args=(_NP_PATH, 1.5),
            ranges={3: (0.0, 1.0)}),  # leaves: beta_E, count_E, n, alpha
    Example("predict_full", predict, _predict_args,
            bad_args=(_NP_PATH, np.full((_M, _Y), 0.3, np.float32), np.ones((_A, _Y), np.float32),
                      0.2)),
    Example("select_level", select_level,
            lambda k: _one_input_args(k) + (jax.random.uniform(jax.random.fold_in(k, 2), (),
                                                               maxval=5.0),),
            bad_args=(np.full((_Y,), 0.25, np.float32), np.ones((_A, _Y), np.float32), -1.0)),
    Example("value_at_levels", value_at_levels, _one_input_args,
            bad_args=(np.full((_Y,), 0.3, np.float32), np.ones((_A, _Y), np.float32)),
            derived_sizes=True),  # 1 + A Y candidate levels
    Example("conformal_quantile", conformal_quantile,
            lambda k: (jax.random.uniform(k, (_N,)), _alpha(jax.random.fold_in(k, 1))),
            bad_args=(np.full((_N,), np.nan, np.float32), 0.1), ranges={1: (0.0, 1.0)}),
    Example("decision_metrics", decision_metrics, _metrics_args,
            bad_args=(np.ones((_M, _Y), bool), np.zeros((_M,), np.int32),
                      np.zeros((_M,), np.int32), np.ones((_A, _Y), np.float32),
                      np.zeros((_A, _Y + 1), bool), 0.1)),
)
