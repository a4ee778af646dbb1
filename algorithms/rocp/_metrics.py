"""Decision metrics of a set-valued predictor with actions: coverage, size, risks, critical mistakes."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms.rocp import _risk
from reprojax.algorithms.rocp import _validate


class DecisionMetrics(NamedTuple):
  coverage: jax.Array  # mean 1[y in C(x)]
  set_size: jax.Array  # mean |C(x)|
  robust_risk: jax.Array  # mean R(a(x), C(x)) at alpha (worst case given coverage 1 - alpha)
  realized_loss: jax.Array  # mean l(a(x), y)
  critical_rate: jax.Array  # mean 1[critical(a(x), y)]
  marginal_robust_risk: jax.Array  # worst case over P(Y|X) with marginal coverage >= 1 - alpha


def _decision_metrics(sets_NxY, actions_N, labels_N, loss_AxY, critical_AxY, alpha):
  loss = loss_AxY.astype(jnp.float32)
  covered = jnp.take_along_axis(sets_NxY, labels_N[:, None], axis=1)[:, 0]
  risk_NxA = _risk._batched_risk(loss, sets_NxY, alpha)
  risk = jnp.take_along_axis(risk_NxA, actions_N[:, None], axis=1)[:, 0]
  realized = loss[actions_N, labels_N]
  critical = critical_AxY[actions_N, labels_N]
  # Marginal worst case: the adversary spends the miscoverage budget alpha * N on
  # the inputs with the largest gap between the worst loss outside and inside
  # the set (a fractional knapsack over the test inputs).
  in_set_max = jnp.where(sets_NxY, loss[actions_N], -jnp.inf).max(-1)
  all_max = loss[actions_N].max(-1)
  in_set_max = jnp.where(sets_NxY.any(-1), in_set_max, all_max)
  gap = jnp.sort(all_max - in_set_max)[::-1]
  n = gap.shape[0]
  budget = jnp.maximum(alpha * n - (~sets_NxY.any(-1)).sum(), 0.0)  # empty sets use it up
  take = jnp.clip(budget - jnp.arange(n), 0.0, 1.0)
  marginal = (in_set_max.sum() + (take * gap).sum()) / n
  return DecisionMetrics(covered.mean(), sets_NxY.sum(-1).mean(), risk.mean(), realized.mean(),
                         critical.astype(jnp.float32).mean(), marginal)


def decision_metrics(sets_NxY, actions_N, labels_N, loss_AxY, critical_AxY, alpha) -> DecisionMetrics:
  r"""Means over N test points of coverage, set size, robust risk :math:`R(a, C)`, loss, critical rate.

  ``robust_risk`` averages the per-set :math:`R(a(x), C(x))` (each set certified at
  level 1 - alpha); ``marginal_robust_risk`` is the worst case over conditional laws
  of Y given the N test inputs whose marginal coverage is at least 1 - alpha:
  :math:`\frac1N[\sum_i m_i + \max_{c \in [0,1]^N, \sum c \le \alpha N} \sum_i c_i g_i]`,
  with :math:`m_i` the worst in-set loss and :math:`g_i` the gap to the worst loss.

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


def _critical_rates_by_label(actions_N, labels_N, critical_AxY):
  hit = critical_AxY[actions_N, labels_N]
  onehot = labels_N[:, None] == jnp.arange(critical_AxY.shape[1])[None]
  count = onehot.sum(0)
  rate = (onehot & hit[:, None]).sum(0) / jnp.maximum(count, 1)
  return jnp.where(count > 0, rate, 0.0).astype(jnp.float32)


def critical_rates_by_label(actions_N, labels_N, critical_AxY) -> jax.Array:
  r"""Per label c, the share of points of label c whose action is critical for c: float32 (Y,).

  The ROCP paper's critical-mistake metric: for a critical label c,
  :math:`\#\{i : y_i = c, \text{critical}(a_i, c)\} / \#\{i : y_i = c\}` (0 where no point has
  label c; labels with no critical action score 0). With ``critical_AxY`` the label's
  worst action it is the COVID metric, with ``loss >= 60`` the driving one.
  """
  if np.ndim(critical_AxY) != 2:
    raise ValueError(f"critical_AxY must have shape (A, Y), got {np.shape(critical_AxY)}")
  a, y = np.shape(critical_AxY)
  _validate.check_labels("labels_N", labels_N, y)
  _validate.check_labels("actions_N", actions_N, a, np.shape(labels_N)[0])
  return jax.jit(_critical_rates_by_label)(*map(jnp.asarray, (actions_N, labels_N, critical_AxY)))
