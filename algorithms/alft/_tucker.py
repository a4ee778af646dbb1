"""Masked Tucker fits: EM higher-order orthogonal iteration (ALS) and full-batch gradient.

Model: ``X = G ×_0 A_0 ... ×_{N-1} A_{N-1}`` with core ``G: (R_0, ..., R_{N-1})``
and factors ``A_n: (I_n, R_n)``, fitted to the observed entries of ``y``.

* :func:`tucker_als`: EM-HOOI. The missing entries are filled with the current
  reconstruction, ``X <- M * Y + (1 - M) * X_hat``; each sweep sets ``A_n`` to the
  leading ``R_n`` left singular vectors of ``(X ×_{m != n} A_m^T)_(n)`` (the ALS
  solution with orthonormal factors) and then ``G = X ×_n A_n^T``.
* :func:`tucker_grad`: Adam on ``1/|Omega| sum_Omega (y - x)^2 / 2 + l2/2 (||G||^2 + sum ||A_n||^2) / |Omega|``.

Ranks are vmappable through per-mode 0/1 masks ``rank_masks[n]: (R_max_n,)``.

References:
  Tucker (1966); De Lathauwer, De Moor & Vandewalle, "On the best rank-(R1..RN)
  approximation of higher-order tensors", SIAM J. Matrix Anal. Appl. 21 (2000) (HOOI);
  Walczak & Massart (2001) (EM for missing data in multiway models).
"""

from __future__ import annotations

import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import optax

from reprojax.algorithms import _common
from reprojax.algorithms import _linalg
from reprojax.algorithms.alft import _tensor as T
from reprojax.algorithms.alft._cp import FitTrace, _rmse


def init_tucker(key: jax.Array, shape: Sequence[int], ranks: Sequence[int], scale: float = 1.0,
                dtype=jnp.float32) -> tuple[jax.Array, tuple[jax.Array, ...]]:
  """Random orthonormal factors ``A_n: (I_n, R_n)`` and a Gaussian core scaled so entries of the
  reconstruction have std about ``scale`` (core std ``scale * sqrt(prod I_n / prod R_n)``)."""
  shape = tuple(int(s) for s in shape)
  ranks = tuple(ranks)
  if len(ranks) != len(shape):
    raise ValueError(f"ranks needs one entry per mode ({len(shape)}), got {len(ranks)}")
  for n, r in enumerate(ranks):
    T.check_rank(f"ranks[{n}]", r)
    if r > shape[n]:
      raise ValueError(f"ranks[{n}]={r} exceeds the mode size {shape[n]}")
  key = _common.check_key("key", key)
  keys = jax.random.split(key, len(shape) + 1)
  factors = tuple(_linalg.qr_q(jax.random.normal(k, (s, r), dtype))
                  for k, s, r in zip(keys[1:], shape, ranks))
  core = scale * jax.random.normal(keys[0], ranks, dtype) * (jnp.prod(jnp.asarray(shape)) /
                                                             jnp.prod(jnp.asarray(ranks))) ** 0.5
  return core, factors


def _core_mask(rms):
  out = rms[0]
  for r in rms[1:]:
    out = out[..., None] * r
  return out


@functools.partial(jax.jit, static_argnames=("n_iter",))
def _tucker_als(yv, m, core, factors, rms, ev_y, ev_m, *, n_iter):
  factors = tuple(a * r for a, r in zip(factors, rms))
  core = core * _core_mask(rms)
  x = m * yv + (1.0 - m) * T.tucker_to_tensor(core, factors)

  def sweep(carry, _):
    factors, x = carry
    factors = list(factors)
    for n in range(len(factors)):
      z = x
      for k, a in enumerate(factors):
        if k != n:
          z = T.mode_dot(z, a.T, k)
      z = jnp.moveaxis(z, n, 0).reshape(z.shape[n], -1)
      u = _linalg.svd_u(z)
      factors[n] = u[:, :rms[n].shape[0]] * rms[n]
    core = x
    for k, a in enumerate(factors):
      core = T.mode_dot(core, a.T, k)
    rec = T.tucker_to_tensor(core, factors)
    x = m * yv + (1.0 - m) * rec
    return (tuple(factors), x), (core, _rmse(rec, yv, m), _rmse(rec, ev_y, ev_m))

  (factors, _), (cores, tr, ev) = jax.lax.scan(sweep, (factors, x), None, length=n_iter)
  return cores[-1], factors, FitTrace(tr, ev)


def _prep(y, mask, core0, factors0, rank_masks, eval_mask):
  y, mask = T.check_tensor_and_mask(y, mask)
  shape = tuple(jnp.shape(y))
  core0 = _common.check_array("core0", core0)
  if not isinstance(factors0, (tuple, list)):
    raise ValueError(f"factors0 must be a sequence of factor matrices, got {type(factors0).__name__}")
  factors0 = [_common.check_array(f"factors0[{n}]", a, empty_ok=True) for n, a in enumerate(factors0)]
  if len(factors0) != len(shape):
    raise ValueError(f"factors0 needs one factor per mode ({len(shape)}), got {len(factors0)}")
  ranks = []
  for n, a in enumerate(factors0):
    if jnp.ndim(a) != 2 or jnp.shape(a)[0] != shape[n] or jnp.shape(a)[1] < 1:
      raise ValueError(f"factors0[{n}] must have shape ({shape[n]}, R_{n} >= 1), got {jnp.shape(a)}")
    if jnp.shape(a)[1] > shape[n]:
      raise ValueError(f"factors0[{n}] rank {jnp.shape(a)[1]} exceeds the mode size {shape[n]}")
    ranks.append(jnp.shape(a)[1])
  if tuple(jnp.shape(core0)) != tuple(ranks):
    raise ValueError(f"core0 must have shape {tuple(ranks)}, got {jnp.shape(core0)}")
  yv, m = T.observed(y, mask)
  dt = yv.dtype
  if rank_masks is None:
    rms = tuple(jnp.ones((r,), dt) for r in ranks)
  else:
    if len(rank_masks) != len(shape):
      raise ValueError(f"rank_masks needs one mask per mode, got {len(rank_masks)}")
    for n, (rm, r) in enumerate(zip(rank_masks, ranks)):
      T.check_rank_mask(rm, r, f"rank_masks[{n}]")
    rms = tuple(jnp.asarray(rm, dt) for rm in rank_masks)
  ev_y, ev_m = T.evaluation_entries(y, eval_mask, yv)
  return (yv, m, jnp.asarray(core0, dt), tuple(jnp.asarray(a, dt) for a in factors0), rms,
          ev_y, ev_m)


def tucker_als(y: jax.Array, mask: jax.Array, core0: jax.Array, factors0: Sequence[jax.Array],
               rank_masks: Sequence[jax.Array] | None = None, *, n_iter: int = 50,
               eval_mask: jax.Array | None = None):
  """Masked Tucker by EM-HOOI (module docstring).

  Args:
    y, mask: tensor ``(I_0..I_{N-1})`` and its 0/1 observation mask.
    core0: initial core ``(R_0..R_{N-1})``; factors0: ``A_n: (I_n, R_n)`` (the first
      imputation uses their reconstruction).
    rank_masks: optional per-mode 0/1 ``(R_n,)`` masks (vmappable ranks).
    n_iter: sweeps (static). eval_mask: optional held-out entries to trace.

  Returns:
    ``(core, factors, FitTrace)``.
  """
  T.check_rank("n_iter", n_iter)
  return _tucker_als(*_prep(y, mask, core0, factors0, rank_masks, eval_mask), n_iter=n_iter)


@functools.partial(jax.jit, static_argnames=("n_iter",))
def _tucker_grad(yv, m, core, factors, rms, ev_y, ev_m, l2, lr, *, n_iter):
  n_obs = jnp.maximum(m.sum(), 1.0)
  cm = _core_mask(rms)
  opt = optax.adam(lr)

  def recon(p):
    g, fs = p
    return T.tucker_to_tensor(g * cm, tuple(a * r for a, r in zip(fs, rms)))

  def loss_fn(p):
    reg = sum(jnp.sum(v ** 2) for v in jax.tree.leaves(p))
    return (0.5 * jnp.sum(((recon(p) - yv) * m) ** 2) + 0.5 * l2 * reg) / n_obs

  def step(carry, _):
    p, st = carry
    upd, st = opt.update(jax.grad(loss_fn)(p), st, p)
    p = optax.apply_updates(p, upd)
    rec = recon(p)
    return (p, st), (_rmse(rec, yv, m), _rmse(rec, ev_y, ev_m))

  p0 = (core, factors)
  ((g, fs), _), (tr, ev) = jax.lax.scan(step, (p0, opt.init(p0)), None, length=n_iter)
  return g * cm, tuple(a * r for a, r in zip(fs, rms)), FitTrace(tr, ev)


def tucker_grad(y: jax.Array, mask: jax.Array, core0: jax.Array, factors0: Sequence[jax.Array],
                rank_masks: Sequence[jax.Array] | None = None, *, n_iter: int = 500,
                lr: float = 0.02, l2: float = 0.0, eval_mask: jax.Array | None = None):
  """Masked Tucker by full-batch Adam (module docstring); returns ``(core, factors, FitTrace)``."""
  T.check_rank("n_iter", n_iter)
  args = _prep(y, mask, core0, factors0, rank_masks, eval_mask)
  dt = args[0].dtype
  return _tucker_grad(*args, jnp.asarray(l2, dt), jnp.asarray(lr, dt), n_iter=n_iter)
