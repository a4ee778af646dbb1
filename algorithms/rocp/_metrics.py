"""Decision metrics of a set-valued predictor with actions: coverage, size, risks, critical mistakes."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from algorithms.rocp import _risk
from algorithms.rocp import _validate


class DecisionMetrics(NamedTuple):
  coverage: jax.Array  # mean 1[y in C(x)]
  set_size: jax.Array  # mean |C(x)|
  robust_risk: jax.Array  # mean R(a(x), C(x)) at alpha (worst case given coverage 1 - alpha)
  realized_loss: jax.Array  # mean l(a(x), y)
  critical_rate: jax.Array  # mean 1[critical(a(x), y)]


def _decision_metrics(sets_NxY, actions_N, labels_N, loss_AxY, critical_AxY, alpha):
  loss = loss_AxY.astype(jnp.float32)
  covered = jnp.take_along_axis(sets_NxY, labels_N[:, None], axis=1)[:, 0]
  risk_NxA = _risk._batched_risk(loss, sets_NxY, alpha)
  risk = jnp.take_along_axis(risk_NxA, actions_N[:, None], axis=1)[:, 0]
  realized = loss[actions_N, labels_N]
  critical = critical_AxY[actions_N, labels_N]
  return DecisionMetrics(covered.mean(), sets_NxY.sum(-1).mean(), risk.mean(), realized.mean(),
                         critical.astype(jnp.float32).mean())


def decision_metrics(sets_NxY, actions_N, labels_N, loss_AxY, critical_AxY, alpha) -> DecisionMetrics:
  r"""Means over N test points of coverage, set size, robust risk :math:`R(a, C)`, loss, critical rate.

  Args:
    sets_NxY: bool sets (N, Y); a method without a set (best response) passes all-True,
      so its robust risk is :math:`\max_y \ell(a, y)`.
    actions_N: int actions (N,).
    labels_N: true labels (N,).
    loss_AxY: loss (A, Y).
    critical_AxY: bool, which (action, label) pairs are critical mistakes.
    alpha: level of the robust risk, in (0, 1).
  """
  _validate.check_loss("loss_AxY", loss_AxY)
  y = np.shape(loss_AxY)[1]
  _validate.check_in_set("sets_NxY", sets_NxY, y)
  _validate.check_labels("labels_N", labels_N, y, np.shape(sets_NxY)[0])
  _validate.check_labels("actions_N", actions_N, np.shape(loss_AxY)[0], np.shape(sets_NxY)[0])
  if np.shape(critical_AxY) != np.shape(loss_AxY):
    raise ValueError(f"critical_AxY must have the loss's shape {np.shape(loss_AxY)}, got "
                     f"{np.shape(critical_AxY)}")
  _validate.check_alpha(alpha)
  return jax.jit(_decision_metrics)(*map(jnp.asarray, (sets_NxY, actions_N, labels_N, loss_AxY,
                                                       critical_AxY, alpha)))
