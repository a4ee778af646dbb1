"""Input validation shared by the aggregators (``shared/STYLE.md`` 6).

Shape and dtype checks run always (at trace time under ``jit``); value checks
(votes in {-1, 0, 1}, every item voted on, symmetric couplings) need concrete
arrays and are skipped for tracers.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common

MAX_EXACT_K = 20  # exact enumeration of {0,1}^K: 2^20 states is the limit


def check_votes(votes_NxK, name: str = "votes_NxK"):
  """Votes: an int array (N, K) with entries in {-1 (missing), 0, 1}; each item has a vote.

  Returns the votes as an array (a list becomes one)."""
  votes_NxK = _common.check_arrays({name: votes_NxK}, kinds={name: "number"},
                                   shapeless=(name,), empty_ok=(name,))[name]
  _common.check_ndim(name, votes_NxK, 2)
  dtype = jnp.asarray(votes_NxK).dtype if not hasattr(votes_NxK, "dtype") else votes_NxK.dtype
  if not (jnp.issubdtype(dtype, jnp.integer) or jnp.issubdtype(dtype, jnp.bool_)):
    raise ValueError(f"{name} must be an integer array with -1 for a missing vote, got dtype {dtype}")
  n, k = np.shape(votes_NxK)
  if n < 1 or k < 1:
    raise ValueError(f"{name} must have at least one item and one judge, got shape {(n, k)}")
  if _common.is_concrete(votes_NxK):
    arr = np.asarray(votes_NxK)
    bad = ~np.isin(arr, (-1, 0, 1))
    if bad.any():
      raise ValueError(f"{name} entries must be in {{-1 (missing), 0, 1}}, got "
                       f"{sorted(set(np.unique(arr[bad]).tolist()))[:5]}")
    empty = np.flatnonzero((arr >= 0).sum(axis=1) == 0)
    if empty.size:
      raise ValueError(f"{name}: {empty.size} item(s) have no vote (all -1), first at row "
                       f"{int(empty[0])}; drop them before aggregating")
  return votes_NxK


def check_exact_k(k: int, what: str) -> None:
  if k > MAX_EXACT_K:
    raise ValueError(f"{what} enumerates 2^K states and supports K <= {MAX_EXACT_K}, got K={k}; "
                     "use the Gibbs sampler or the pseudo-likelihood E-step for larger K")


def check_field_couplings(h_K, W_KxK, name: str = ""):
  """A field (K,) and a symmetric, zero-diagonal coupling matrix (K, K); returns both
  as float arrays."""
  got = _common.check_arrays({f"h{name}": h_K, f"W{name}": W_KxK},
                             shapeless=(f"h{name}", f"W{name}"))
  h_K, W_KxK = got.values()
  _common.check_ndim(f"h{name}", h_K, 1)
  _common.check_ndim(f"W{name}", W_KxK, 2)
  k = np.shape(h_K)[0]
  if np.shape(W_KxK) != (k, k):
    raise ValueError(f"W{name} must have shape ({k}, {k}) to match h{name}, got {np.shape(W_KxK)}")
  _common.check_finite(f"h{name}", h_K)
  _common.check_finite(f"W{name}", W_KxK)
  if _common.is_concrete(W_KxK):
    w = np.asarray(W_KxK, dtype=np.float64)
    asym = np.max(np.abs(w - w.T)) if w.size else 0.0
    if asym > 1e-5 * max(1.0, np.max(np.abs(w))):
      raise ValueError(f"W{name} must be symmetric, got max |W - W^T| = {asym:.3g}")
    if np.any(np.diag(w) != 0):
      raise ValueError(f"W{name} must have a zero diagonal (for J in {{0,1}} a diagonal term is a "
                       f"field: add it to h), got max |diag| = {np.max(np.abs(np.diag(w))):.3g}")
  return h_K, W_KxK


def check_prob(name: str, p, batch_shape: tuple[int, ...] = ()):
  """A probability in (0, 1): a scalar or an array that broadcasts to ``batch_shape``."""
  p = _common.check_arrays({name: p}, shapeless=(name,))[name]
  try:
    ok = np.broadcast_shapes(np.shape(p), batch_shape) == tuple(batch_shape)
  except ValueError:
    ok = False
  if not ok:
    raise ValueError(f"{name} must be a scalar or broadcast to {tuple(batch_shape)}, got shape "
                     f"{np.shape(p)}")
  _common.check_in_range(name, p, 0.0, 1.0, lo_open=True, hi_open=True)
  return p
