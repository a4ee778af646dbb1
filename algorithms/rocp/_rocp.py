r"""Public ROCP API: candidate sets, selector, calibration (full and global), oracle, predict.

See :mod:`reprojax.algorithms.rocp._optimal` for the derivation. All functions take
model probabilities :math:`p(y|x)` as ``probs_NxY`` and a loss ``loss_AxY``; the
calibration path is alpha-free, so one calibration serves a ``vmap`` over alpha
levels, and everything ``vmap``s over seeds (splits).

References:
  Wang & Dobriban, "Optimal Decision-Making Based on Prediction Sets", ICML 2026.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.rocp import _optimal
from reprojax.algorithms.rocp import _risk
from reprojax.algorithms.rocp import _validate

VARIANTS = ("full", "global", "released")


class Prediction(NamedTuple):
  """Sets and actions for a batch of test inputs."""

  sets_NxY: jax.Array  # bool (N, Y)
  actions_N: jax.Array  # int32 (N,): minimax action on each set at the calibration's alpha
  beta: jax.Array  # float (): ROCP's global beta-hat (inf: no beta reaches the target);
  # the score threshold q-hat for LAC/APS/RAPS, the level t for RAC


def _check_probs_loss(probs, loss_AxY, name="probs_NxY", ndim=2):
  _validate.check_probs(name, probs)
  if np.ndim(probs) != ndim:
    raise ValueError(f"{name} must have ndim {ndim}, got shape {np.shape(probs)}")
  _validate.check_loss("loss_AxY", loss_AxY, np.shape(probs)[-1])


def _pieces_batch(probs_NxY, loss_AxY):
  cand = jax.vmap(_optimal.candidates, in_axes=(0, None))(probs_NxY, loss_AxY)
  return jax.vmap(_optimal.pieces)(cand)


def select_level(probs_Y: jax.Array, loss_AxY: jax.Array, beta: jax.Array):
  r"""The selector :math:`t(x;\beta) = \arg\min_t V(x,t) - \beta t` for one input.

  Args:
    probs_Y: model probabilities p(y|x), shape (Y,).
    loss_AxY: loss, shape (A, Y).
    beta: multiplier, scalar >= 0 (+inf gives the whole label space).

  Returns:
    ``(t, set_Y, action)``: the selected level, its set C(x, t) and the action
    attaining V(x, t).
  """
  _check_probs_loss(probs_Y, loss_AxY, "probs_Y", ndim=1)
  beta = _common.check_arrays({"beta": beta}, scalars=("beta",), inf_ok=("beta",))["beta"]
  if _common.is_concrete(beta) and np.asarray(beta) < 0:
    raise ValueError(f"beta must be >= 0 (or +inf), got {beta}")
  return _select_level(jnp.asarray(probs_Y), jnp.asarray(loss_AxY), jnp.asarray(beta))


@jax.jit
def _select_level(probs_Y, loss_AxY, beta):
  pcs = _optimal.pieces(_optimal.candidates(probs_Y, loss_AxY))
  finite = jnp.isfinite(beta)
  k = _optimal.piece_at(pcs, jnp.where(finite, beta, 0.0))
  t = jnp.where(finite, pcs.t_M[k], 1.0)
  minimax_all = jnp.argmin(loss_AxY.max(-1)).astype(jnp.int32)  # the action of C = Y
  return t, pcs.sets_MxY[k] | ~finite, jnp.where(finite, pcs.action_M[k], minimax_all)


def value_at_levels(probs_Y: jax.Array, loss_AxY: jax.Array) -> _optimal.Candidates:
  r"""The M = 1 + A*Y candidate levels of one input with :math:`V(x,t)`, sets and actions.

  :math:`V(x, t) = \min_a [t\,\theta_a(t) + (1 - t) \max_y \ell(a, y)]` at the levels
  :math:`\{0\} \cup \{F_a(\ell(a, y))\}`, the only ones the selector can pick
  (see :mod:`reprojax.algorithms.rocp._optimal`).

  Args:
    probs_Y: model probabilities p(y|x), shape (Y,).
    loss_AxY: loss, shape (A, Y).

  Returns:
    :class:`Candidates`: levels ``t_M`` (``t_M[0] = 0``), values, sets (M, Y), actions.
  """
  _check_probs_loss(probs_Y, loss_AxY, "probs_Y", ndim=1)
  return jax.jit(_optimal.candidates)(jnp.asarray(probs_Y), jnp.asarray(loss_AxY))


def calibrate(probs_NxY: jax.Array, labels_N: jax.Array,
              loss_AxY: jax.Array) -> _optimal.CoveragePath:
  r"""Empirical coverage of the calibration sample as a step function of beta (alpha-free).

  :math:`N(\beta) = \sum_i 1[y_i \in C(x_i, t(x_i; \beta))]` on :math:`\beta \ge 0`.
  Use with :func:`threshold` and :func:`predict`; vmap over alpha after this.

  Args:
    probs_NxY: calibration probabilities, shape (n, Y), n >= 1.
    labels_N: calibration labels, int (n,).
    loss_AxY: loss, shape (A, Y).

  Returns:
    :class:`CoveragePath` with E = n * (1 + A*Y) + 1 grid points.
  """
  _check_probs_loss(probs_NxY, loss_AxY)
  _validate.check_nonempty_calibration(np.shape(probs_NxY)[0], "probs_NxY")
  _validate.check_labels("labels_N", labels_N, np.shape(probs_NxY)[1], np.shape(probs_NxY)[0])
  return _calibrate(jnp.asarray(probs_NxY), jnp.asarray(labels_N), jnp.asarray(loss_AxY))


@jax.jit
def _calibrate(probs_NxY, labels_N, loss_AxY):
  pcs = _pieces_batch(probs_NxY, loss_AxY)
  covered_NxM = jnp.take_along_axis(pcs.sets_MxY, labels_N[:, None, None], axis=-1)[..., 0]
  return _optimal.coverage_path(pcs, covered_NxM)


def oracle_calibrate(probs_NxY: jax.Array, loss_AxY: jax.Array) -> _optimal.CoveragePath:
  r"""Oracle (plug-in) path: expected coverage :math:`\sum_i P_p(Y \in C(x_i,\beta) | x_i)`.

  When ``probs_NxY`` is the true :math:`p(y|x)` this is the population constraint
  of the risk-optimal sets, estimated on unlabelled inputs: the smallest
  :math:`\beta \ge 0` with mean coverage :math:`\ge 1 - \alpha` gives the oracle
  risk-optimal sets (no labels, no finite-sample guarantee).
  """
  _check_probs_loss(probs_NxY, loss_AxY)
  _validate.check_nonempty_calibration(np.shape(probs_NxY)[0], "probs_NxY")
  return _oracle_calibrate(jnp.asarray(probs_NxY), jnp.asarray(loss_AxY))


@jax.jit
def _oracle_calibrate(probs_NxY, loss_AxY):
  pcs = _pieces_batch(probs_NxY, loss_AxY)
  mass_NxM = jnp.einsum("nmy,ny->nm", pcs.sets_MxY.astype(probs_NxY.dtype), probs_NxY)
  return _optimal.coverage_path(pcs, mass_NxM)


def _check_path(path):
  """A CoveragePath as :func:`calibrate` makes it: 1-D float beta_E and count_E of one
  length E >= 1 (beta_E may hold +inf padding, nothing else non-finite) and a scalar n."""
  if not isinstance(path, _optimal.CoveragePath):
    raise ValueError(f"path must be a CoveragePath from calibrate(), got {type(path).__name__}")
  got = _common.check_arrays({"beta_E": path.beta_E, "count_E": path.count_E, "n": path.n},
                             scalars=("n",), inf_ok=("beta_E",), shapeless=("beta_E",))
  _common.check_ndim("beta_E", got["beta_E"], 1)
  if np.shape(got["beta_E"]) != np.shape(got["count_E"]):
    raise ValueError(f"path.beta_E and path.count_E must share one length E, got shapes "
                     f"{np.shape(got['beta_E'])} and {np.shape(got['count_E'])}")
  return _optimal.CoveragePath(*got.values())


def threshold(path: _optimal.CoveragePath, alpha: jax.Array | float,
              oracle: bool = False) -> jax.Array:
  r"""The global :math:`\hat\beta`: smallest :math:`\beta \ge 0` with :math:`N(\beta) \ge k`.

  :math:`k = \lceil (1-\alpha)(n+1) \rceil` for a labelled path; :math:`(1-\alpha) n`
  for an oracle path (``oracle=True``). Returns +inf when no beta reaches k.
  """
  path = _check_path(path)
  _validate.check_alpha(alpha)
  return _threshold(path, jnp.asarray(alpha), oracle)


@functools.partial(jax.jit, static_argnames="oracle")
def _threshold(path, alpha, oracle=False):
  target = (1.0 - alpha) * path.n if oracle else _optimal.conformal_rank(path.n, alpha)
  return _optimal.smallest_beta(path, target)


def predict(path: _optimal.CoveragePath, probs_NxY: jax.Array, loss_AxY: jax.Array,
            alpha: jax.Array | float, variant: str = "full") -> Prediction:
  r"""ROCP sets and minimax actions for test inputs.

  Args:
    path: from :func:`calibrate` (or :func:`oracle_calibrate` with ``variant="oracle"``).
    probs_NxY: test probabilities, shape (N, Y).
    loss_AxY: the loss used for calibration, shape (A, Y).
    alpha: miscoverage level in (0, 1).
    variant: ``"full"`` (the paper's Algorithm 1, finite-sample valid; the experiments
      use it), ``"global"`` (one beta from the calibration data alone, reaching
      :math:`\lceil (1-\alpha)(n+1) \rceil` covered points), ``"released"`` (one beta
      whose calibration coverage reaches :math:`1 - \alpha` on the n points, no +1: the
      target of the authors' released bisection; we take the exact smallest such beta
      where their code bisects, assuming a monotone coverage) or ``"oracle"`` (a path
      from :func:`oracle_calibrate`).

  Returns:
    :class:`Prediction`; actions are :math:`\arg\min_a R(a, C)` at ``alpha``.
  """
  path = _check_path(path)
  _check_probs_loss(probs_NxY, loss_AxY)
  _validate.check_alpha(alpha)
  if variant not in VARIANTS + ("oracle",):
    raise ValueError(f"variant must be one of {VARIANTS + ('oracle',)}, got {variant!r}")
  return _predict(path, jnp.asarray(probs_NxY), jnp.asarray(loss_AxY), jnp.asarray(alpha),
                  variant)


@functools.partial(jax.jit, static_argnames="variant")
def _predict(path, probs_NxY, loss_AxY, alpha, variant="full"):
  pcs = _pieces_batch(probs_NxY, loss_AxY)
  if variant == "oracle":
    beta = _optimal.smallest_beta(path, (1.0 - alpha) * path.n)
  elif variant == "released":  # ceil((1 - alpha) n) covered points, float32 slack as k's
    x = (1.0 - alpha) * path.n
    beta = _optimal.smallest_beta(path, jnp.ceil(x - 1e-6 * jnp.maximum(x, 1.0)))
  else:
    beta = _optimal.smallest_beta(path, _optimal.conformal_rank(path.n, alpha))
  if variant == "full":
    target = _optimal.conformal_rank(path.n, alpha)
    sets = jax.vmap(_optimal.full_conformal_set, in_axes=(0, None, None, None))(
        pcs, path, beta, target)
  else:
    sets = jax.vmap(_optimal.global_sets, in_axes=(0, None))(pcs, beta)[0]
  actions = _risk._minimax_action(loss_AxY.astype(probs_NxY.dtype), sets, alpha)
  return Prediction(sets, actions, beta)


def rocp(probs_cal_NxY: jax.Array, labels_cal_N: jax.Array, probs_test_MxY: jax.Array,
         loss_AxY: jax.Array, alpha: jax.Array | float, variant: str = "full") -> Prediction:
  """Calibrate on (probs_cal, labels_cal) and predict on probs_test in one call."""
  path = calibrate(probs_cal_NxY, labels_cal_N, loss_AxY)
  return predict(path, probs_test_MxY, loss_AxY, alpha, variant)


def _rocp(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha, variant="full"):
  """Unchecked, jit/vmap-friendly :func:`rocp` (used by the experiments)."""
  path = _calibrate(probs_cal_NxY, labels_cal_N, loss_AxY)
  return _predict(path, probs_test_MxY, loss_AxY, alpha, variant)
