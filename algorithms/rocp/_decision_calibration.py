r"""Decision calibration (Zhao et al., NeurIPS 2021) as the ROCP paper recalibrates its best response.

The model's probabilities P (n, Y) are corrected so that no soft partition of the
inputs into the A actions can tell the expected label from the predicted one. One
round: an adversary finds soft action weights :math:`B = \mathrm{softmax}(P W^\top)`
(n, A) that maximise :math:`v = \lVert R \rVert_F^2`, :math:`R = (Y_{1hot} - P)^\top B / n`
(Y, A), by Adam from a small random W; if :math:`v < \epsilon^2 / A` the recalibration
stops; otherwise P moves by the least-squares fit of the residual on B,
:math:`P \leftarrow \Pi_\Delta(P + B U^\top)` with :math:`U = R D^{+}`,
:math:`D = B^\top B / n`, and :math:`\Pi_\Delta` the Euclidean projection onto the
simplex. The rounds (W, U) are stored and replayed on test probabilities; the best
response is then :math:`\arg\min_a \sum_y \hat p(y|x) \ell(a, y)`.

The authors' evaluation runs up to 10 rounds of 50 Adam steps at learning rate 0.1
from W ~ 0.01 N(0, 1), epsilon = 1e-3, fitted once per split on the calibration
points (their W draws are unseeded; ours come from an explicit key).

References:
  Zhao, Kim, Sahoo, Ma & Ermon, "Calibrating Predictions to Decisions: A Novel
  Approach to Multi-Class Calibration" (NeurIPS 2021); Wang & Dobriban (ICML 2026).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from optax import projections

from reprojax.algorithms.rocp import _validate


class DecisionCalibration(NamedTuple):
  """The stored rounds: adversary weights W (R, A, Y), corrections U (R, Y, A), used (R,)."""

  w_RxAxY: jax.Array
  u_RxYxA: jax.Array
  used_R: jax.Array  # bool: rounds before the stop test fired


def _apply_round(probs_NxY, w_AxY, u_YxA, used):
  b = jax.nn.softmax(probs_NxY @ w_AxY.T, axis=-1)
  moved = jax.vmap(projections.projection_simplex)(probs_NxY + b @ u_YxA.T)
  return jnp.where(used, moved, probs_NxY)


def _fit(key, probs_NxY, labels_N, num_actions, rounds, steps, lr, eps):
  n, y = probs_NxY.shape
  onehot = jax.nn.one_hot(labels_N, y, dtype=probs_NxY.dtype)
  opt = optax.adam(lr)

  def residual(w, p):
    b = jax.nn.softmax(p @ w.T, axis=-1)
    return (onehot - p).T @ b / n, b

  def one_round(carry, k):
    p, done = carry
    w0 = 0.01 * jax.random.normal(k, (num_actions, y), p.dtype)
    neg_v = lambda w: -jnp.sum(residual(w, p)[0] ** 2)  # noqa: E731

    def adam_step(state, _):
      w, s = state
      g = jax.grad(neg_v)(w)
      upd, s = opt.update(g, s, w)
      return (optax.apply_updates(w, upd), s), None

    (w, _), _ = jax.lax.scan(adam_step, (w0, opt.init(w0)), None, length=steps)
    r, b = residual(w, p)
    stop = done | (jnp.sum(r ** 2) < eps ** 2 / num_actions)
    u = r @ jnp.linalg.pinv(b.T @ b / n)
    used = ~stop
    return (_apply_round(p, w, u, used), stop), (w, u, used)

  _, (w, u, used) = jax.lax.scan(one_round, (probs_NxY, jnp.zeros((), bool)),
                                 jax.random.split(key, rounds))
  return DecisionCalibration(w, u, used)


_fit_jit = jax.jit(_fit, static_argnames=("num_actions", "rounds", "steps"))


def decision_calibrate(key: jax.Array, probs_NxY: jax.Array, labels_N: jax.Array,
                       num_actions: int, rounds: int = 10, steps: int = 50, lr: float = 0.1,
                       eps: float = 1e-3) -> DecisionCalibration:
  """Fits decision calibration on labelled points (module docstring); replay with :func:`recalibrate`.

  Args:
    key: PRNG key for the adversary's initial weights.
    probs_NxY: calibration probabilities (n, Y).
    labels_N: calibration labels (n,).
    num_actions: A, the number of actions (the soft partition's cells).
    rounds, steps, lr, eps: at most ``rounds`` corrections, ``steps`` Adam steps at ``lr``
      per adversary, stop when the residual's squared norm is below eps^2 / A.
  """
  _validate.check_probs("probs_NxY", probs_NxY)
  if np.ndim(probs_NxY) != 2:
    raise ValueError(f"probs_NxY must have shape (n, Y), got {np.shape(probs_NxY)}")
  _validate.check_nonempty_calibration(np.shape(probs_NxY)[0], "probs_NxY")
  _validate.check_labels("labels_N", labels_N, np.shape(probs_NxY)[1], np.shape(probs_NxY)[0])
  if int(num_actions) < 1 or int(rounds) < 1 or int(steps) < 1 or not lr > 0 or not eps > 0:
    raise ValueError(f"decision calibration needs num_actions, rounds, steps >= 1 and lr, eps > 0;"
                     f" got {num_actions}, {rounds}, {steps}, {lr}, {eps}")
  return _fit_jit(key, jnp.asarray(probs_NxY), jnp.asarray(labels_N), int(num_actions),
                  int(rounds), int(steps), jnp.asarray(lr, jnp.float32),
                  jnp.asarray(eps, jnp.float32))


def _recalibrate(cal: DecisionCalibration, probs_NxY):
  def body(p, rnd):
    return _apply_round(p, *rnd), None
  return jax.lax.scan(body, probs_NxY, tuple(cal))[0]


@jax.jit
def _recalibrate_jit(cal, probs_NxY):
  return _recalibrate(cal, probs_NxY)


def recalibrate(cal: DecisionCalibration, probs_NxY: jax.Array) -> jax.Array:
  """Replays the stored rounds on probabilities (n, Y) -> recalibrated (n, Y), on the simplex."""
  _validate.check_probs("probs_NxY", probs_NxY)
  if np.shape(probs_NxY)[-1] != np.shape(cal.w_RxAxY)[-1]:
    raise ValueError(f"probs_NxY has {np.shape(probs_NxY)[-1]} labels, the calibration "
                     f"{np.shape(cal.w_RxAxY)[-1]}")
  return _recalibrate_jit(cal, jnp.asarray(probs_NxY))
