"""Input checks shared by the ROCP functions (shape checks always, value checks on concrete arrays)."""

from __future__ import annotations

from typing import Any

import numpy as np

from reprojax.algorithms import _common

PROB_ATOL = 1e-3  # tolerance on sum_y p(y|x) = 1 (float32 softmax outputs drift by ~1e-6)


def check_probs(name: str, probs: Any) -> None:
  """``probs`` has shape (..., Y), Y >= 2, entries >= 0 that sum to one over the last axis."""
  if np.ndim(probs) < 1 or np.shape(probs)[-1] < 2:
    raise ValueError(f"{name} must have shape (..., Y) with Y >= 2 labels, got shape {np.shape(probs)}")
  if not np.issubdtype(np.asarray(probs).dtype if _common.is_concrete(probs) else probs.dtype,
                       np.floating):
    raise ValueError(f"{name} must be floating point, got dtype {getattr(probs, 'dtype', None)}")
  if _common.is_concrete(probs):
    arr = np.asarray(probs)
    _common.check_finite(name, arr)
    if arr.size and arr.min() < 0:
      raise ValueError(f"{name} must be non-negative probabilities, got min {arr.min()}")
    sums = arr.sum(-1)
    if sums.size and np.max(np.abs(sums - 1)) > PROB_ATOL:
      raise ValueError(f"{name} must sum to one over its last axis (labels), got sums in "
                       f"[{sums.min()}, {sums.max()}]")


def check_loss(name: str, loss_AxY: Any, num_labels: int | None = None) -> None:
  """``loss_AxY`` is a finite (A, Y) matrix with A >= 1 and Y matching ``num_labels``."""
  _common.check_ndim(name, loss_AxY, 2)
  dtype = np.asarray(loss_AxY).dtype if _common.is_concrete(loss_AxY) else loss_AxY.dtype
  if not np.issubdtype(dtype, np.floating):
    raise ValueError(f"{name} must be floating point, got dtype {dtype}")
  if np.shape(loss_AxY)[0] < 1:
    raise ValueError(f"{name} must have at least one action (row), got shape {np.shape(loss_AxY)}")
  if num_labels is not None and np.shape(loss_AxY)[1] != num_labels:
    raise ValueError(f"{name} must have one column per label: expected shape (A, {num_labels}), "
                     f"got {np.shape(loss_AxY)}")
  _common.check_finite(name, loss_AxY)


def check_alpha(alpha: Any, batch_shape: tuple[int, ...] = ()) -> None:
  """alpha is strictly inside (0, 1), a scalar or broadcastable to ``batch_shape``."""
  shape = np.shape(alpha)
  try:
    ok = np.broadcast_shapes(shape, batch_shape) == tuple(batch_shape)
  except ValueError:
    ok = False
  if not ok:
    raise ValueError(f"alpha must be a scalar{' or broadcast to ' + str(tuple(batch_shape)) if batch_shape else ''}, "
                     f"got shape {shape}")
  _common.check_in_range("alpha", alpha, 0.0, 1.0, lo_open=True, hi_open=True)


def check_labels(name: str, labels_N: Any, num_labels: int, n: int | None = None) -> None:
  _common.check_ndim(name, labels_N, 1)
  dtype = np.asarray(labels_N).dtype if _common.is_concrete(labels_N) else labels_N.dtype
  if not np.issubdtype(dtype, np.integer):
    raise ValueError(f"{name} must be integer class indices, got dtype {dtype}")
  if n is not None and np.shape(labels_N)[0] != n:
    raise ValueError(f"{name} must have {n} entries (one per calibration point), got "
                     f"{np.shape(labels_N)[0]}")
  if _common.is_concrete(labels_N):
    arr = np.asarray(labels_N)
    if arr.size and (arr.min() < 0 or arr.max() >= num_labels):
      raise ValueError(f"{name} must lie in [0, {num_labels}), got range [{arr.min()}, {arr.max()}]")


def check_nonempty_calibration(n: int, name: str = "probs_cal_NxY") -> None:
  if n < 1:
    raise ValueError(f"{name} is empty: conformal calibration needs at least one "
                     "labelled point")


def check_in_set(name: str, in_set: Any, num_labels: int) -> None:
  if np.ndim(in_set) < 1 or np.shape(in_set)[-1] != num_labels:
    raise ValueError(f"{name} must have shape (..., {num_labels}) (one flag per label), got "
                     f"{np.shape(in_set)}")
  dtype = np.asarray(in_set).dtype if _common.is_concrete(in_set) else in_set.dtype
  if dtype != np.bool_:
    raise ValueError(f"{name} must be boolean set membership, got dtype {dtype}")
