r"""Robust risk of an action against a prediction set, and the minimax action.

Labels :math:`y \in \{0..Y-1\}`, actions :math:`a \in \{0..A-1\}`, a loss matrix
:math:`\ell(a, y)`. A set :math:`C \subseteq \mathcal{Y}` is only known to cover
with probability at least :math:`1 - \alpha`. The worst distribution :math:`P`
of :math:`Y` with :math:`P(Y \in C) \ge 1 - \alpha` solves the linear program

.. math::
   R(a, C) = \max_{p \in \Delta_Y} \sum_y p_y \ell(a, y)
   \quad \text{s.t.} \quad \sum_{y \in C} p_y \ge 1 - \alpha,

whose value puts mass :math:`1-\alpha` on the worst label inside :math:`C` and
the remaining :math:`\alpha` on the worst label overall:

.. math::
   R(a, C) = \max_{y \in C} \ell(a,y)
     + \alpha \bigl(\max_{y \notin C} \ell(a,y) - \max_{y \in C} \ell(a,y)\bigr)_+ .

The minimax action is :math:`\hat a(C) = \arg\min_a R(a, C)` (ties to the smallest
index). With :math:`\alpha = 0` this is the max-min rule of risk-averse
calibration (RAC, Kiyani et al., ICML 2025); :math:`C = \mathcal{Y}` gives
:math:`R(a, \mathcal{Y}) = \max_y \ell(a, y)` (the paper's Remark 3.2).

Convention for the empty set (where the program is infeasible for
:math:`\alpha < 1`): :math:`R(a, \emptyset) = \max_y \ell(a, y)`, the risk with
no information, which is what a set of coverage zero certifies.

References:
  Wang & Dobriban, "Optimal Decision-Making Based on Prediction Sets", ICML 2026,
  Section 3 (robust risk, minimax policy for a fixed set).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms.rocp import _validate


def _robust_risk(loss_AxY: jax.Array, in_set_Y: jax.Array, alpha: jax.Array) -> jax.Array:
  """Unchecked core: one set (Y,) -> (A,) risks."""
  neg = jnp.asarray(-jnp.inf, loss_AxY.dtype)
  max_all_A = loss_AxY.max(-1)
  max_in_A = jnp.where(in_set_Y[None, :], loss_AxY, neg).max(-1)
  max_out_A = jnp.where(in_set_Y[None, :], neg, loss_AxY).max(-1)
  any_in = in_set_Y.any()
  any_out = (~in_set_Y).any()
  max_in_A = jnp.where(any_in, max_in_A, max_all_A)  # empty set: no information
  max_out_A = jnp.where(any_out, max_out_A, max_in_A)  # full set: nothing outside
  return max_in_A + alpha * jnp.maximum(max_out_A - max_in_A, 0.0)


def robust_risk(loss_AxY: jax.Array, in_set_Y: jax.Array, alpha: jax.Array | float) -> jax.Array:
  r"""Worst-case expected loss :math:`R(a, C)` of every action given a set of coverage 1 - alpha.

  Args:
    loss_AxY: loss :math:`\ell(a, y)`, shape (A, Y).
    in_set_Y: boolean membership of :math:`C`, shape (..., Y); leading axes are a batch.
    alpha: miscoverage level in (0, 1) (scalar, or broadcastable to the batch axes).
      ``alpha = 0`` is allowed only through the private core (RAC's max-min rule).

  Returns:
    Risks of shape (..., A).

  References:
    Wang & Dobriban (ICML 2026), Section 3.
  """
  _validate.check_loss("loss_AxY", loss_AxY)
  _validate.check_in_set("in_set_Y", in_set_Y, np.shape(loss_AxY)[1])
  _validate.check_alpha(alpha, np.shape(in_set_Y)[:-1])
  return _batched_risk(jnp.asarray(loss_AxY), jnp.asarray(in_set_Y), jnp.asarray(alpha))


@jax.jit
def _batched_risk(loss_AxY, in_set, alpha):
  batch = in_set.shape[:-1]
  flat = in_set.reshape((-1, in_set.shape[-1]))
  alpha_flat = jnp.broadcast_to(jnp.asarray(alpha, loss_AxY.dtype), batch).reshape(-1)
  risk = jax.vmap(_robust_risk, in_axes=(None, 0, 0))(loss_AxY, flat, alpha_flat)
  return risk.reshape(batch + (loss_AxY.shape[0],))


def minimax_action(loss_AxY: jax.Array, in_set_Y: jax.Array,
                   alpha: jax.Array | float) -> jax.Array:
  r"""The minimax action :math:`\arg\min_a R(a, C)` for each set (ties: smallest index).

  Args:
    loss_AxY: loss, shape (A, Y).
    in_set_Y: boolean sets, shape (..., Y).
    alpha: miscoverage in (0, 1).

  Returns:
    int32 actions of shape (...).
  """
  return jnp.argmin(robust_risk(loss_AxY, in_set_Y, alpha), axis=-1).astype(jnp.int32)


def _minimax_action(loss_AxY, in_set, alpha):
  """Unchecked batched core (alpha may be 0 for RAC)."""
  return jnp.argmin(_batched_risk(loss_AxY, in_set, alpha), axis=-1).astype(jnp.int32)
