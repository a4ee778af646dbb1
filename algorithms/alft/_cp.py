"""Masked CP (PARAFAC) fits: EM alternating least squares and full-batch gradient.

Model: ``X = [[A_0, ..., A_{N-1}]]``, ``X[i] = sum_r prod_n A_n[i_n, r]`` with
``A_n: (I_n, R)``, fitted to the observed entries ``Omega`` (``mask == 1``) of ``y``.

* :func:`cp_als` is expectation-maximization ALS, the algorithm of tensorly's
  ``parafac(..., mask=...)``: the missing entries are filled with the current
  reconstruction, ``X <- M * Y + (1 - M) * [[A]]``, and one ALS sweep solves
  ``A_n <- X_(n) (odot_{m != n} A_m) V^{-1}``, ``V = *_{m != n} A_m^T A_m (+ l2 I)``,
  for each mode in turn; the filled tensor is refreshed after each sweep. From
  the same initial factors and with the missing entries of tensorly's input set
  to ``[[A^{(0)}]]`` it produces tensorly's iterates (tests check 1e-6).
* :func:`cp_grad` minimizes ``1/|Omega| * sum_Omega (y - x)^2 / 2 + l2/2 * sum_n ||A_n||^2 / |Omega|``
  with Adam (optax) in a ``lax.scan``.

Both are jitted, vmappable over initial factors (seeds), masks (densities,
splits) and ``rank_mask_R`` (ranks up to ``R_max``).

References:
  Harshman (1970); Tomasi & Bro, "PARAFAC and missing values", Chemom. Intell.
  Lab. Syst. 75 (2005) (EM-ALS for missing data); Kossaifi et al., TensorLy, JMLR 20 (2019).
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import optax

from reprojax.algorithms import _common
from reprojax.algorithms import _linalg
from reprojax.algorithms.alft import _tensor as T


class FitTrace(NamedTuple):
  """Per-iteration errors of a fit; ``eval_rmse_T`` is 0 where no eval mask was given."""

  train_rmse_T: jax.Array  # (n_iter,) RMSE over the observed (training) entries after each iteration
  eval_rmse_T: jax.Array  # (n_iter,) RMSE over eval_mask entries after each iteration


def init_cp(key: jax.Array, shape: Sequence[int], rank: int, scale: float = 1.0,
            dtype=jnp.float32) -> tuple[jax.Array, ...]:
  """Random factors ``A_n ~ c * U[0, 1)`` with ``c = (2**N scale / R)**(1/N)``, so ``E [[A]] = scale``.

  Uniform non-negative factors as tensorly's ``init='random'``; ``scale`` should
  be of the order of the observed values' root mean square.
  """
  T.check_rank("rank", rank)
  shape = tuple(int(s) for s in shape)
  if len(shape) < 2 or min(shape) < 1:
    raise ValueError(f"shape must have >= 2 positive sizes, got {shape}")
  c = (2.0 ** len(shape) * scale / rank) ** (1.0 / len(shape))
  key = _common.check_key("key", key)
  keys = jax.random.split(key, len(shape))
  return tuple(c * jax.random.uniform(k, (s, rank), dtype) for k, s in zip(keys, shape))


def _rm_or_ones(rank_mask_R, r, dtype):
  return jnp.ones((r,), dtype) if rank_mask_R is None else jnp.asarray(rank_mask_R, dtype)


def _rmse(pred, yv, m):
  return jnp.sqrt(jnp.sum(((pred - yv) * m) ** 2) / jnp.maximum(m.sum(), 1.0))


@functools.partial(jax.jit, static_argnames=("n_iter",))
def _cp_als(yv, m, factors, rm, ev_y, ev_m, l2, *, n_iter):
  factors = tuple(a * rm for a in factors)
  x = m * yv + (1.0 - m) * T.cp_to_tensor(factors)

  def sweep(carry, _):
    factors, x = carry
    factors = list(factors)
    for n in range(len(factors)):
      v = T.hadamard_gram(factors, n) + l2 * jnp.eye(rm.shape[0], dtype=yv.dtype)
      b = T.mttkrp(x, factors, n)
      v, b = T.apply_rank_mask_system(v, b, rm)
      factors[n] = _linalg.solve(v.T, b.T).T
    rec = T.cp_to_tensor(factors)
    x = m * yv + (1.0 - m) * rec
    return (tuple(factors), x), (_rmse(rec, yv, m), _rmse(rec, ev_y, ev_m))

  (factors, _), (tr, ev) = jax.lax.scan(sweep, (factors, x), None, length=n_iter)
  return factors, FitTrace(tr, ev)


def _prep(y, mask, factors0, rank_mask_R, eval_mask, name):
  y, mask = T.check_tensor_and_mask(y, mask)
  factors0, r = T.check_factors(name, factors0, tuple(jnp.shape(y)))
  T.check_rank_mask(rank_mask_R, r)
  yv, m = T.observed(y, mask)
  ev_y, ev_m = T.evaluation_entries(y, eval_mask, yv)
  factors = tuple(jnp.asarray(a, yv.dtype) for a in factors0)
  return yv, m, factors, _rm_or_ones(rank_mask_R, r, yv.dtype), ev_y, ev_m


def cp_als(y: jax.Array, mask: jax.Array, factors0: Sequence[jax.Array],
           rank_mask_R: jax.Array | None = None, *, n_iter: int = 100, l2: float = 0.0,
           eval_mask: jax.Array | None = None) -> tuple[tuple[jax.Array, ...], FitTrace]:
  """Masked CP by EM-ALS (tensorly's ``parafac`` with ``mask``, no line search).

  Args:
    y: tensor ``(I_0, ..., I_{N-1})``; values at missing entries are ignored.
    mask: 1 where ``y`` is observed (same shape).
    factors0: initial factors ``A_n: (I_n, R_max)``.
    rank_mask_R: optional 0/1 ``(R_max,)``; components with 0 are held at zero.
    n_iter: number of ALS sweeps (static).
    l2: ridge added to each normal matrix (tensorly's ``l2_reg``).
    eval_mask: optional held-out entries of ``y`` whose RMSE is traced.

  Returns:
    ``(factors, FitTrace)``; ``FitTrace.train_rmse_T[t]`` is the observed-entry RMSE after sweep t.
  """
  T.check_rank("n_iter", n_iter)
  args = _prep(y, mask, factors0, rank_mask_R, eval_mask, "factors0")
  return _cp_als(*args, jnp.asarray(l2, args[0].dtype), n_iter=n_iter)


@functools.partial(jax.jit, static_argnames=("n_iter",))
def _cp_grad(yv, m, factors, rm, ev_y, ev_m, l2, lr, *, n_iter):
  n_obs = jnp.maximum(m.sum(), 1.0)
  opt = optax.adam(lr)

  def loss_fn(fs):
    rec = T.cp_to_tensor(tuple(a * rm for a in fs))
    return (0.5 * jnp.sum(((rec - yv) * m) ** 2) + 0.5 * l2 * sum(jnp.sum(a ** 2) for a in fs)) / n_obs

  def step(carry, _):
    fs, st = carry
    g = jax.grad(loss_fn)(fs)
    upd, st = opt.update(g, st, fs)
    fs = optax.apply_updates(fs, upd)
    rec = T.cp_to_tensor(tuple(a * rm for a in fs))
    return (fs, st), (_rmse(rec, yv, m), _rmse(rec, ev_y, ev_m))

  (factors, _), (tr, ev) = jax.lax.scan(step, (factors, opt.init(factors)), None, length=n_iter)
  return tuple(a * rm for a in factors), FitTrace(tr, ev)


def cp_grad(y: jax.Array, mask: jax.Array, factors0: Sequence[jax.Array],
            rank_mask_R: jax.Array | None = None, *, n_iter: int = 500, lr: float = 0.02,
            l2: float = 0.0, eval_mask: jax.Array | None = None
            ) -> tuple[tuple[jax.Array, ...], FitTrace]:
  """Masked CP by full-batch Adam on the observed-entry squared loss (see module docstring).

  Same arguments and returns as :func:`cp_als`, with ``n_iter`` Adam steps of rate ``lr``.
  """
  T.check_rank("n_iter", n_iter)
  args = _prep(y, mask, factors0, rank_mask_R, eval_mask, "factors0")
  dt = args[0].dtype
  return _cp_grad(*args, jnp.asarray(l2, dt), jnp.asarray(lr, dt), n_iter=n_iter)
