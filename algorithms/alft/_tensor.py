"""Dense multilinear helpers and input validation for masked tensor factorization.

A tensor ``y`` of order N has shape ``(I_0, ..., I_{N-1})``; its observation mask
``mask`` has the same shape (1 = observed, 0 = missing; bool or float). Values at
missing positions are ignored (they may be NaN): every routine reads
``where(mask, y, 0)``.

Ranks are vmappable: a fit allocates ``R_max`` components and takes a 0/1
``rank_mask_R`` that switches components off exactly (their factor columns are
held at zero), so one compiled fit serves every rank ``<= R_max``.
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


def check_tensor_and_mask(y, mask, *, min_ndim: int = 2, name: str = "mask"):
  """ValueError unless ``y`` and ``mask`` agree and the observed values are finite;
  returns both as arrays (lists converted; missing entries of ``y`` may hold anything).

  Shape checks always run; value checks (some entry observed, observed values
  finite, mask in {0, 1}) run when the arrays are concrete.
  """
  y = _common.check_array("y", y, nan_ok=True, empty_ok=True, kind="number")
  mask = _common.check_array(name, mask, kind="number", empty_ok=True)
  if np.ndim(y) < min_ndim:
    raise ValueError(f"y (the tensor) must have ndim >= {min_ndim}, got shape {np.shape(y)}")
  if np.shape(mask) != np.shape(y):
    raise ValueError(f"mask shape {np.shape(mask)} must equal the tensor shape {np.shape(y)}")
  if not jnp.issubdtype(jnp.asarray(y).dtype, jnp.floating):
    raise ValueError(f"y (the tensor) must be floating point, got dtype {jnp.asarray(y).dtype}")
  if _common.is_concrete(mask):
    m = np.asarray(mask)
    if m.dtype != bool and not np.all((m == 0) | (m == 1)):
      raise ValueError("mask must hold only 0 and 1 (or booleans)")
    if not np.any(m):
      raise ValueError("mask observes no entry: all entries are missing, nothing to fit")
    if _common.is_concrete(y):
      obs = np.asarray(y)[m.astype(bool)]
      if not np.all(np.isfinite(obs)):
        bad = int(obs.size - np.count_nonzero(np.isfinite(obs)))
        raise ValueError(f"the observed values of y must be finite, got {bad} non-finite "
                         f"of {obs.size} observed")
  return y, mask


def check_rank(name: str, rank) -> None:
  """ValueError unless the static rank is an int >= 1."""
  if isinstance(rank, (bool, np.bool_)) or not isinstance(rank, (int, np.integer)):
    raise ValueError(f"{name} must be a Python int >= 1, got {rank!r}")
  if rank < 1:
    raise ValueError(f"{name} must be >= 1, got {rank}")


def check_factors(name: str, factors: Sequence, shape: tuple[int, ...] | None = None
                  ) -> tuple[tuple[jax.Array, ...], int]:
  """ValueError unless ``factors[n]`` has shape ``(shape[n], R)`` for one R >= 1 (any
  ``I_n`` when ``shape`` is None) and finite entries; returns ``(factors, R)``, the
  factors as arrays."""
  if not isinstance(factors, (tuple, list)):
    raise ValueError(f"{name} must be a sequence of (I_n, R) factor matrices, got "
                     f"{type(factors).__name__}")
  factors = tuple(_common.check_array(f"{name}[{n}]", f, empty_ok=True)  # (the rank check)
                  for n, f in enumerate(factors))
  if shape is None:
    shape = tuple(np.shape(f)[0] if np.ndim(f) else -1 for f in factors)
  if len(factors) != len(shape):
    raise ValueError(f"{name} needs one factor per mode ({len(shape)}), got {len(factors)}")
  ranks = {np.shape(f)[1] if np.ndim(f) == 2 else -1 for f in factors}
  for n, f in enumerate(factors):
    if np.ndim(f) != 2 or np.shape(f)[0] != shape[n]:
      raise ValueError(f"{name}[{n}] must have shape ({shape[n]}, R), got {np.shape(f)}")
  if len(ranks) != 1:
    raise ValueError(f"{name} must share one rank R, got column counts {sorted(ranks)}")
  r = ranks.pop()
  if r < 1:
    raise ValueError(f"{name} rank must be >= 1, got {r}")
  return factors, r


def check_rank_mask(rank_mask, r_max: int, name: str = "rank_mask") -> None:
  if rank_mask is None:
    return
  if np.shape(rank_mask) != (r_max,):
    raise ValueError(f"{name} must have shape ({r_max},), got {np.shape(rank_mask)}")
  if _common.is_concrete(rank_mask):
    rm = np.asarray(rank_mask)
    if not np.all((rm == 0) | (rm == 1)):
      raise ValueError(f"{name} must hold only 0 and 1")
    if rm.sum() < 1:
      raise ValueError(f"{name} switches every component off: rank must be >= 1")


def rank_mask(ranks, r_max: int) -> jax.Array:
  """0/1 masks ``(..., r_max)`` with the first ``ranks`` components on.

  ``rank_mask(jnp.array([1, 2, 4]), 4)`` gives the masks of ranks 1, 2 and 4,
  ready to be vmapped over.
  """
  r = np.asarray(ranks) if _common.is_concrete(ranks) else None
  if r is not None and np.any(r < 1):
    raise ValueError(f"ranks must be >= 1, got {r.min()}")
  if r is not None and np.any(r > r_max):
    raise ValueError(f"ranks must be <= r_max={r_max}, got {r.max()}")
  return (jnp.arange(r_max) < jnp.asarray(ranks)[..., None]).astype(jnp.float32)


def observed(y, mask):
  """``(y with missing entries zeroed, float mask)`` in y's dtype."""
  m = jnp.asarray(mask).astype(jnp.asarray(y).dtype)
  return jnp.where(m > 0, y, 0.0), m


def evaluation_entries(y, eval_mask, observed_y):
  """``(y zeroed off eval_mask, float eval mask)``; no mask -> ``(observed_y, zeros)``.

  The held-out entries a fit tracks its error on; shape-checked against ``y``.
  """
  if eval_mask is None:
    return observed_y, jnp.zeros_like(observed_y)
  if jnp.shape(eval_mask) != jnp.shape(y):
    raise ValueError(f"eval_mask shape {jnp.shape(eval_mask)} must equal tensor shape "
                     f"{jnp.shape(y)}")
  return observed(y, eval_mask)


# ---------------------------------------------------------------- CP algebra

def cp_to_tensor(factors: Sequence[jax.Array], weights_R: jax.Array | None = None) -> jax.Array:
  """``X[i_0..i_{N-1}] = sum_r w_r prod_n A_n[i_n, r]`` for factors ``A_n: (I_n, R)``."""
  factors, r = check_factors("factors", factors)
  if weights_R is not None:
    weights_R = _common.check_array("weights_R", weights_R)
    if np.shape(weights_R) != (r,):
      raise ValueError(f"weights_R must have shape ({r},), got {np.shape(weights_R)}")
  n_modes = len(factors)
  ops = []
  for n, a in enumerate(factors):
    ops += [a, [n, n_modes]]
  if weights_R is not None:
    ops += [weights_R, [n_modes]]
  return jnp.einsum(*ops, list(range(n_modes)))


def mttkrp(x, factors: Sequence[jax.Array], mode: int) -> jax.Array:
  """Matricized tensor times Khatri-Rao product: ``X_(n) (odot_{m != n} A_m)``, shape ``(I_n, R)``."""
  n_modes = x.ndim
  ops = [x, list(range(n_modes))]
  for m, a in enumerate(factors):
    if m != mode:
      ops += [a, [m, n_modes]]
  return jnp.einsum(*ops, [mode, n_modes])


def masked_row_gram(mask, factors: Sequence[jax.Array], mode: int) -> jax.Array:
  """``G[i] = sum_{j: row i of mode n} m_ij k_j k_j^T`` with ``k_j`` the Khatri-Rao row; ``(I_n, R, R)``."""
  n_modes = mask.ndim
  ops = [mask, list(range(n_modes))]
  for m, a in enumerate(factors):
    if m != mode:
      ops += [a, [m, n_modes], a, [m, n_modes + 1]]
  return jnp.einsum(*ops, [mode, n_modes, n_modes + 1])


def hadamard_gram(factors: Sequence[jax.Array], mode: int) -> jax.Array:
  """``V = *_{m != n} A_m^T A_m`` (elementwise product of Grams), shape ``(R, R)``."""
  r = factors[0].shape[1]
  v = jnp.ones((r, r), factors[0].dtype)
  for m, a in enumerate(factors):
    if m != mode:
      v = v * (a.T @ a)
  return v


def apply_rank_mask_system(gram, rhs, rm):
  """Restricts normal equations ``gram x = rhs`` to the active components of ``rm``.

  Inactive components get the equation ``x_r = 0`` exactly, so the same solve
  serves every rank. ``gram``: (..., R, R); ``rhs``: (..., R); ``rm``: (R,).
  """
  rm = rm.astype(gram.dtype)
  outer = rm[:, None] * rm[None, :]
  gram = gram * outer + jnp.diag(1.0 - rm)
  return gram, rhs * rm


def second_difference(n: int, dtype=jnp.float32) -> jax.Array:
  """``D: (n-2, n)`` with ``(D a)_i = a_i - 2 a_{i+1} + a_{i+2}``; empty rows when n < 3."""
  d = np.zeros((max(n - 2, 0), n))
  for i in range(max(n - 2, 0)):
    d[i, i:i + 3] = (1.0, -2.0, 1.0)
  return jnp.asarray(d, dtype)


# ------------------------------------------------------------- Tucker algebra

def mode_dot(x, mat, mode: int) -> jax.Array:
  """``x ×_n mat``: contracts mode ``n`` of ``x`` (size J) with ``mat: (I, J)``; mode n becomes I."""
  x = jnp.moveaxis(x, mode, 0)
  out = jnp.tensordot(mat, x, axes=(1, 0))
  return jnp.moveaxis(out, 0, mode)


def tucker_to_tensor(core, factors: Sequence[jax.Array]) -> jax.Array:
  """``X = G ×_0 A_0 ×_1 A_1 ... ×_{N-1} A_{N-1}`` for core ``G: (R_0..R_{N-1})``, ``A_n: (I_n, R_n)``."""
  core = _common.check_array("core", core)
  if not isinstance(factors, (tuple, list)) or len(factors) != np.ndim(core):
    raise ValueError(f"factors must hold one (I_n, R_n) matrix per mode of core, whose shape "
                     f"is {np.shape(core)}")
  factors = [_common.check_array(f"factors[{n}]", a) for n, a in enumerate(factors)]
  for n, a in enumerate(factors):
    if np.ndim(a) != 2 or np.shape(a)[1] != np.shape(core)[n]:
      raise ValueError(f"factors[{n}] must have shape (I_{n}, {np.shape(core)[n]}), got "
                       f"{np.shape(a)}")
  x = core
  for n, a in enumerate(factors):
    x = mode_dot(x, a, n)
  return x


# ------------------------------------------------------------------ metrics

def heldout_errors(pred, y, test_mask) -> tuple[jax.Array, jax.Array]:
  """RMSE and MAE of ``pred`` against ``y`` over the entries where ``test_mask`` is 1.

  ``rmse = sqrt(sum_T (y - yhat)^2 / |T|)``, ``mae = sum_T |y - yhat| / |T|``.
  """
  pred = _common.check_array("pred", pred)
  y, test_mask = check_tensor_and_mask(y, test_mask, min_ndim=1, name="test_mask")
  if np.shape(pred) != np.shape(y):
    raise ValueError(f"pred must have the tensor's shape {np.shape(y)}, got {np.shape(pred)}")
  yv, m = observed(y, test_mask)
  err = (pred - yv) * m
  n = jnp.maximum(m.sum(), 1.0)
  return jnp.sqrt(jnp.sum(err ** 2) / n), jnp.sum(jnp.abs(err)) / n
