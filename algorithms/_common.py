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

import re
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class Example(NamedTuple):
  """One public function with a way to make valid and invalid inputs."""

  name: str
  fn: Callable[..., Any]  # pure function of array arguments (jit-able as is)
  make_args: Callable[[jax.Array], tuple]  # key -> positional array args; same shapes for any key
  # positional args for which fn must raise ValueError, or a function of no argument that
  # builds them (so that building the examples, at test collection, does no JAX work)
  bad_args: tuple | Callable[[], tuple] | None = None
  vmappable: bool = True  # vmapping fn over a batch of make_args equals a Python loop
  jittable: bool = True  # False for host-side helpers (numpy, Python control flow on values)
  # What tests/test_fuzz.py may assume when it spoils the arguments (issue 34):
  # documented ranges, {flat argument leaf index: (lo, hi)} (None for an open side),
  # probed just outside; and axis sizes that are free (an axis of one of these
  # sizes may grow in one argument alone). By default an axis that grows in one
  # argument while another argument has an axis of its old size must be refused.
  ranges: Mapping[int, tuple[float | None, float | None]] = {}
  free_sizes: tuple[int, ...] = ()
  # True when an output's length is computed from the inputs' sizes (a path over
  # every level, say) rather than copied from one input axis: the fuzzer then
  # checks only the outputs' ranks after a change of size.
  derived_sizes: bool = False
  # True for elementwise functions whose arguments broadcast (one of them given a
  # leading axis of 2 may leave an output that does not depend on it as it was).
  broadcasts: bool = False
  # True where an output may hold +inf by definition (the death of an essential class
  # in a persistence diagram); NaN and -inf still fail the common and fuzz tests.
  inf_outputs: bool = False

  def make_bad_args(self) -> tuple:
    """``bad_args``, built now where it is given as a function."""
    return self.bad_args() if callable(self.bad_args) else self.bad_args


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


# ------------------------------------------------ argument specs from the names

_SUFFIX = re.compile(r"_((?:[A-Z]|\d+)(?:x(?:[A-Z]|\d+))*)$")
_KINDS = {"float": "biuf", "int": "iu", "bool": "b", "index": "biu", "number": "biuf"}
_KIND_WORDS = {"float": "real (float, int or bool)", "int": "integer", "bool": "boolean",
               "index": "integer or boolean", "number": "numeric"}


def axes_of(name: str) -> tuple[str, ...] | None:
  """The axes a parameter's name promises: ``probs_NxY`` -> ``("N", "Y")``,
  ``betas_2`` -> ``("2",)`` (a fixed size); ``None`` for a name without a suffix."""
  m = _SUFFIX.search(name)
  return tuple(m.group(1).split("x")) if m else None


def _as_array(name: str, x: Any) -> Any:
  if isinstance(x, (jax.Array, np.ndarray, np.generic, jax.core.Tracer)):
    return x
  if isinstance(x, (bool, int, float, list, tuple)):
    try:
      return np.asarray(x)
    except ValueError as e:  # a ragged list
      raise ValueError(f"{name} must be an array, got a ragged {type(x).__name__}: {e}") from e
  raise TypeError(f"{name} must be an array, got {type(x).__name__}")


def check_arrays(named: Mapping[str, Any], *, kinds: Mapping[str, str] | None = None,
                 batch: tuple[str, ...] = (), empty_ok: tuple[str, ...] = (),
                 scalars: tuple[str, ...] = (), shapeless: tuple[str, ...] = (),
                 inf_ok: tuple[str, ...] = (), nan_ok: tuple[str, ...] = ()
                 ) -> dict[str, Any]:
  """Validates array arguments by what their names promise; returns them as arrays.

  A name's shape suffix (``x_BxN``, ``W_KxK``, ``mask_N``, ``betas_2``) fixes its
  ndim (names in ``batch`` may carry extra leading axes) and its axis sizes: one
  letter is one size across all the named arrays, a number is that size. Names in
  ``scalars`` must be 0-d; names in ``shapeless`` get no shape check (the caller
  checks their ndim); names in ``inf_ok`` may hold infinities (not NaN), names in
  ``nan_ok`` any value. Every axis must be non-empty (unless the name is in
  ``empty_ok``). ``kinds`` maps a name to ``"float"`` (the default: ints and bools
  are converted to float32), ``"int"``, ``"bool"``, ``"index"`` (int or bool) or
  ``"number"`` (any, unconverted); concrete float arrays must be finite. Lists and
  Python numbers come back as numpy arrays; JAX arrays and tracers are kept.
  Raises ``ValueError`` naming the argument (``TypeError`` for a non-array).
  """
  kinds = dict(kinds or {})
  out, sizes, shapes = {}, {}, {}
  for name, x in named.items():
    if x is None:
      out[name] = x
      continue
    x = _as_array(name, x)
    kind = kinds.get(name, "float")
    dtype = np.dtype(x.dtype) if not jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else None
    if dtype is None or dtype.kind not in _KINDS[kind]:
      raise ValueError(f"{name} must hold {_KIND_WORDS[kind]} values, got dtype {x.dtype}")
    if kind == "float" and dtype.kind in "biu":
      x = x.astype(np.float32) if isinstance(x, (np.ndarray, np.generic)) else (
          x.astype(jnp.float32))
    axes = () if name in scalars else None if name in shapeless else axes_of(name)
    shape = shapes[name] = tuple(np.shape(x))
    if axes is not None:
      extra = len(shape) - len(axes)
      if extra < 0 or (extra > 0 and name not in batch):
        want = f"{len(axes)}" + (" or more" if name in batch else "")
        raise ValueError(f"{name} must have {want} axes ({'x'.join(axes) or 'a scalar'}), "
                         f"got shape {shape}")
      for ax, n in zip(axes, shape[extra:]):
        if ax.isdigit() and n != int(ax):
          raise ValueError(f"{name} must have an axis of size {ax}, got shape {shape}")
        if ax in sizes and sizes[ax][1] != n:
          other, m = sizes[ax]
          if other == name:
            raise ValueError(f"{name} must be square (its {ax} axes of one size), got shape "
                             f"{shape}")
          raise ValueError(f"{name} and {other} must share the length of axis {ax}, got {n} "
                           f"and {m} (shapes {shape} and {shapes[other]})")
        sizes.setdefault(ax, (name, n))
    if 0 in shape and name not in empty_ok:
      raise ValueError(f"{name} must not be empty, got shape {shape}")
    if name in nan_ok:
      pass
    elif name in inf_ok:
      if is_concrete(x) and np.isnan(np.asarray(x, np.float64)).any():
        raise ValueError(f"{name} must not hold NaN")
    else:
      check_finite(name, x)  # (acts on float arrays only)
    out[name] = x
  return out



def check_array(name: str, x: Any, **kwargs) -> Any:
  """:func:`check_arrays` for one array without a shape promise (the caller checks its
  shape); ``kwargs`` as there, given as booleans: ``nan_ok=True``, ``kind="int"``, ..."""
  flags = {k: (name,) for k in ("empty_ok", "inf_ok", "nan_ok", "scalars") if kwargs.pop(k, False)}
  kind = kwargs.pop("kind", "float")
  if kwargs:
    raise TypeError(f"unknown options {sorted(kwargs)}")
  return check_arrays({name: x}, kinds={name: kind}, shapeless=(name,), **flags)[name]


def check_key(name: str, key: Any) -> Any:
  """A single PRNG key (``jax.random.key``, or a legacy raw ``uint32[2]`` key), not a batch."""
  dtype = getattr(key, "dtype", None)
  if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
    if np.shape(key) != ():
      raise ValueError(f"{name} must be one PRNG key, got a batch of shape {np.shape(key)} "
                       "(vmap over the keys instead)")
    return key
  if dtype is not None and np.dtype(dtype) == np.uint32 and np.shape(key) == (2,):
    return key
  raise ValueError(f"{name} must be a PRNG key from jax.random.key, got "
                   f"{type(key).__name__} of shape {np.shape(key)}")


def check_int(name: str, value: Any, lo: int = 0) -> int:
  """A Python or numpy integer (not a bool) of at least ``lo``, as an ``int``."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
    raise ValueError(f"{name} must be an int >= {lo}, got {value!r}")
  return int(value)


def check_choice(name: str, value: Any, options) -> None:
  """A string among ``options``."""
  if not isinstance(value, str) or value not in options:
    raise ValueError(f"{name} must be one of {tuple(options)}, got {value!r}")
