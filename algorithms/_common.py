"""Shared pieces of every paper's algorithms: input validation and the registry examples.

Validation follows ``shared/STYLE.md`` (6): library code raises ``ValueError``
saying what was expected and what came. Shape and dtype checks run always
(also under ``jit``, at trace time); value checks (NaN, ranges, sums) need
concrete arrays and are skipped for tracers, so a jitted caller validates once
outside the jitted region if it wants them.

Every ``algorithms/<slug>/__init__.py`` exposes ``examples()``: a tuple of
:class:`Example` built on call (in ``_examples.py``, so importing a paper does no
JAX work), which ``tests/test_common.py`` checks all alike (jit without a
recompile on the second call, finite outputs, vmapped equals looped, bad input
raises ``ValueError``).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import numpy as np


class Example(NamedTuple):
  """One public function with a way to make valid and invalid inputs."""

  name: str
  fn: Callable[..., Any]  # pure function of array arguments (jit-able as is)
  make_args: Callable[[jax.Array], tuple]  # key -> positional array args; same shapes for any key
  bad_args: tuple | None = None  # positional args for which fn must raise ValueError
  vmappable: bool = True  # vmapping fn over a batch of make_args equals a Python loop
  jittable: bool = True  # False for host-side helpers (numpy, Python control flow on values)


def is_concrete(x: Any) -> bool:
  """True when ``x`` holds values (not a tracer inside jit/vmap/grad)."""
  return not isinstance(x, jax.core.Tracer)


def check_ndim(name: str, x: Any, ndim: int | tuple[int, ...]) -> None:
  allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
  if np.ndim(x) not in allowed:
    raise ValueError(f"{name} must have ndim in {allowed}, got shape {np.shape(x)}")


def check_finite(name: str, x: Any) -> None:
  """Raises if a concrete ``x`` holds NaN or infinity."""
  if is_concrete(x):
    arr = np.asarray(x)
    if np.issubdtype(arr.dtype, np.inexact) and not np.all(np.isfinite(arr)):
      bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
      raise ValueError(f"{name} must be finite, got {bad} non-finite entries of {arr.size}")


def check_in_range(name: str, x: Any, lo: float | None = None, hi: float | None = None, *,
                   lo_open: bool = False, hi_open: bool = False) -> None:
  """Raises if a concrete ``x`` leaves [lo, hi] (or the open side where asked)."""
  if not is_concrete(x):
    return
  arr = np.asarray(x)
  check_finite(name, arr)
  if lo is not None and (np.any(arr <= lo) if lo_open else np.any(arr < lo)):
    raise ValueError(f"{name} must be {'>' if lo_open else '>='} {lo}, got min {arr.min()}")
  if hi is not None and (np.any(arr >= hi) if hi_open else np.any(arr > hi)):
    raise ValueError(f"{name} must be {'<' if hi_open else '<='} {hi}, got max {arr.max()}")
