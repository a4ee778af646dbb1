r"""The comparison oracle, exact or noisy, with its query count carried in a state.

The oracle is the only party that evaluates :math:`f`. Given batches of points
:math:`x_b, y_b \in \mathbb R^n` it answers, for each pair,

.. math:: O_f(x, y) = \mathbb 1[f(x) > f(y)],

(ties may be answered either way, as in the papers). The *noisy* oracle flips
each answer independently with probability

.. math:: p(x, y) = p_0 \exp(-|f(x) - f(y)| / \tau)\quad(\tau > 0),\qquad p = p_0\quad(\tau = 0),

with :math:`0 \le p_0 < 1/2`, so near-ties are the hardest to resolve. With
``votes = m`` (odd) every logical comparison is asked :math:`m` times and the
majority answer is used; by Hoeffding's inequality a majority of :math:`m`
answers is wrong with probability at most :math:`\exp(-2m(1/2-p_0)^2)`, so
:math:`m = \lceil \ln(T/\eta) / (2(1/2-p_0)^2) \rceil` makes all :math:`T`
comparisons of a run right with probability :math:`1-\eta` (:func:`votes_for`).

Every answer is charged: the count lives in :class:`OracleState` (an array), so
it is carried through ``jit``, ``scan``, ``while_loop`` and ``vmap``. Algorithms
receive a :class:`ComparisonOracle` (a hashable static value), never ``f``.

References:
  Zhang & Li, "Comparisons Are All You Need for Optimizing Smooth Functions" (2024), Eq. (1);
  Tao, Zhang, Wang, Zhang & Li, "Gradient Testing and Estimation by Comparisons" (2024/2026).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


class OracleState(NamedTuple):
  """What the oracle carries between calls."""

  count: jax.Array  # () int32: comparisons charged so far (each vote counts once)
  key: jax.Array  # PRNG key for the noisy oracle's coin flips


class ComparisonOracle(NamedTuple):
  """A comparison oracle for ``f``; hashable, so it is a static argument of ``jit``.

  Build it with :func:`make_oracle` (which validates).
  """

  f: Callable[[jax.Array], jax.Array]  # R^n -> R; only the oracle calls it
  n: int  # dimension
  flip_prob: float = 0.0  # p0 in [0, 1/2)
  flip_scale: float = 0.0  # tau >= 0; tau > 0: p = p0 exp(-|f(x)-f(y)|/tau)
  votes: int = 1  # odd: repeats per logical comparison, majority vote

  @property
  def exact(self) -> bool:
    return self.flip_prob == 0.0


def make_oracle(f: Callable, n: int, *, flip_prob: float = 0.0, flip_scale: float = 0.0,
                votes: int = 1) -> ComparisonOracle:
  r"""Validates and builds a :class:`ComparisonOracle`.

  Args:
    f: objective ``R^n -> R``; must return a scalar for an ``(n,)`` input.
    n: dimension.
    flip_prob: :math:`p_0 \in [0, 1/2)`, the probability of a wrong answer.
    flip_scale: :math:`\tau \ge 0`; when positive the flip probability decays with the gap.
    votes: odd number of repeats per comparison (majority vote).

  Raises:
    ValueError: on a non-callable or non-scalar ``f``, or parameters out of range.
  """
  if not callable(f):
    raise ValueError(f"f must be callable, got {type(f).__name__}")
  if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
    raise ValueError(f"n must be a positive int, got {n!r}")
  flip_prob = float(flip_prob)
  if not (math.isfinite(flip_prob) and 0.0 <= flip_prob < 0.5):
    raise ValueError(f"flip_prob must be in [0, 1/2), got {flip_prob}")
  flip_scale = float(flip_scale)
  if not (math.isfinite(flip_scale) and flip_scale >= 0.0):
    raise ValueError(f"flip_scale must be finite and >= 0, got {flip_scale}")
  if not isinstance(votes, (int, np.integer)) or votes < 1 or votes % 2 == 0:
    raise ValueError(f"votes must be a positive odd int, got {votes!r}")
  spec = jax.ShapeDtypeStruct((int(n),), jnp.float32)
  try:
    out = jax.eval_shape(lambda x: f(x) > f(x), spec)
  except Exception as e:  # noqa: BLE001  (any failure to trace f is a bad f)
    raise ValueError(f"f could not be evaluated on a vector of shape ({n},): {e}") from e
  if getattr(out, "shape", None) != ():
    raise ValueError(f"f must return a scalar for an input of shape ({n},), got an output "
                     f"of shape {getattr(out, 'shape', type(out).__name__)}")
  return ComparisonOracle(f=f, n=int(n), flip_prob=flip_prob, flip_scale=flip_scale,
                          votes=int(votes))


def init_state(key: jax.Array) -> OracleState:
  """A fresh oracle state: zero comparisons charged."""
  return OracleState(count=jnp.zeros((), jnp.int32), key=_common.check_key("key", key))


def votes_for(flip_prob: float, num_comparisons: float, failure: float = 0.05) -> int:
  """Smallest odd ``m`` with ``num_comparisons * exp(-2 m (1/2 - p)^2) <= failure`` (host-side).

  By Hoeffding and a union bound, majorities of ``m`` answers are then all right, over
  ``num_comparisons`` logical comparisons, with probability at least ``1 - failure``.
  """
  for name, v in (("flip_prob", flip_prob), ("num_comparisons", num_comparisons),
                  ("failure", failure)):
    if np.ndim(v) != 0:
      raise ValueError(f"{name} must be a scalar, got shape {np.shape(v)}")
  if not 0.0 <= flip_prob < 0.5:
    raise ValueError(f"flip_prob must be in [0, 1/2), got {flip_prob}")
  if not (math.isfinite(num_comparisons) and num_comparisons >= 0):
    raise ValueError(f"num_comparisons must be finite and >= 0, got {num_comparisons}")
  if not 0.0 < failure < 1.0:
    raise ValueError(f"failure must be in (0, 1), got {failure}")
  if flip_prob == 0.0:
    return 1
  m = math.ceil(math.log(max(num_comparisons, 1.0) / failure) / (2 * (0.5 - flip_prob) ** 2))
  return m if m % 2 == 1 else m + 1


def compare(oracle: ComparisonOracle, state: OracleState, x_BxN: jax.Array, y_BxN: jax.Array,
            mask_B: jax.Array | None = None) -> tuple[jax.Array, OracleState]:
  """Answers ``f(x_b) > f(y_b)`` for every row; charges ``votes`` per unmasked row.

  Args:
    oracle: the oracle (static).
    state: its state.
    x_BxN, y_BxN: the points to compare.
    mask_B: which rows are real queries (others are padding and are not charged).

  Returns:
    ``(bits_B, state)``: booleans and the state with the count (and key) advanced.
  """
  x_BxN = validate_point("x_BxN", x_BxN, oracle.n, batch=True)
  y_BxN = validate_point("y_BxN", y_BxN, oracle.n, batch=True)
  if np.shape(x_BxN) != np.shape(y_BxN):
    raise ValueError(f"x_BxN and y_BxN must have one shape, got {np.shape(x_BxN)} and "
                     f"{np.shape(y_BxN)}")
  f = oracle.f
  bits_B = jax.vmap(lambda x, y: f(x) > f(y))(x_BxN, y_BxN)
  B = bits_B.shape[0]
  charged = B if mask_B is None else jnp.sum(mask_B, dtype=jnp.int32)
  count = state.count + jnp.asarray(charged, jnp.int32) * oracle.votes
  key = state.key
  if not oracle.exact:
    key, sub = jax.random.split(key)
    if oracle.flip_scale > 0.0:
      gap_B = jax.vmap(lambda x, y: jnp.abs(f(x) - f(y)))(x_BxN, y_BxN)
      p_B = oracle.flip_prob * jnp.exp(-gap_B / oracle.flip_scale)
    else:
      p_B = jnp.full((B,), oracle.flip_prob)
    flips_MxB = jax.random.uniform(sub, (oracle.votes, B)) < p_B[None, :]
    answers_MxB = jnp.logical_xor(bits_B[None, :], flips_MxB)
    bits_B = 2 * jnp.sum(answers_MxB.astype(jnp.int32), axis=0) > oracle.votes
  return bits_B, OracleState(count=count, key=key)


def validate_point(name: str, x, n: int | None = None, *, batch: bool = False):
  """``x`` as a float array of shape ``(n,)`` (``(B, n)`` with ``batch``), non-empty and
  finite (for concrete values; integers become float32, a list an array)."""
  x = _common.check_arrays({name: x}, shapeless=(name,))[name]
  if np.ndim(x) != 1 + batch or (n is not None and np.shape(x)[-1] != n):
    want = ("B, " if batch else "") + (str(n) if n is not None else "n")
    raise ValueError(f"{name} must have shape ({want},), got {np.shape(x)}")
  return x


def validate_positive(name: str, v) -> None:
  if _common.is_concrete(v):
    arr = np.asarray(v)
    if arr.shape != ():
      raise ValueError(f"{name} must be a scalar, got shape {arr.shape}")
    if not (np.isfinite(arr) and arr > 0):
      raise ValueError(f"{name} must be finite and > 0, got {arr}")
