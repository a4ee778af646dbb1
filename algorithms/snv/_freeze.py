"""From neuron values to frozen parameters, and an optimizer that cannot move them.

SNV freezes, after each task, the neurons with the largest values (a global top
fraction over all valued neurons), cumulatively across tasks; a frozen neuron's
incoming weights and bias get no update from then on, its outgoing weights stay
plastic. :func:`top_fraction` picks the neurons, :func:`dense_trainable` turns a
layer's frozen neurons into 0/1 masks of its kernel and bias, and :func:`freeze`
wraps any optax optimizer so that masked entries get exactly zero update: the
gradient is masked before the inner optimizer (a frozen entry adds nothing to
Adam's moments) and the update after it (AdamW's weight decay, momentum built before
the freeze), so a frozen parameter stays bit-identical.

References:
  SNV, ICML 2026 (``create_gradient_mask``, ``update_cumulative_mask`` and
  ``_topk_with_layer_floor`` of the authors' ``SNV/snv_core.py``: global top-k with
  c = 0.1 of the neurons per task, already frozen neurons eligible).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import _common
from reprojax.algorithms.snv import _checks


def top_fraction(values_N: Any, fraction: Any, frozen_N: Any = None) -> jax.Array:
  """The ``floor(fraction * N)`` players of largest value, joined to ``frozen_N``.

  Ties go to the lower index. ``fraction`` may be traced (vmapped over a sweep).

  Args:
    values_N: ``(N,)`` the neurons' values.
    fraction: in [0, 1], the share of all N neurons picked now.
    frozen_N: ``(N,)`` bool, neurons frozen before (default none).

  Returns:
    ``(N,)`` bool: frozen after this task.
  """
  arrays = _common.check_arrays({"values_N": values_N, "frozen_N": frozen_N},
                                kinds={"frozen_N": "bool"})
  values_N, frozen_N = arrays["values_N"], arrays["frozen_N"]
  if np.ndim(fraction) != 0:
    raise ValueError(f"fraction must be a scalar, got shape {np.shape(fraction)}")
  fraction = _common.check_array("fraction", fraction, scalars=True)
  _common.check_in_range("fraction", fraction, 0.0, 1.0)
  return _top_fraction(values_N, fraction, frozen_N)


@jax.jit
def _top_fraction(values_N, fraction, frozen_N):
  n = values_N.shape[0]
  k = jnp.floor(fraction * n + 1e-6).astype(jnp.int32)
  order = jnp.argsort(-values_N, stable=True)
  rank = jnp.zeros((n,), jnp.int32).at[order].set(jnp.arange(n, dtype=jnp.int32))
  picked = rank < k
  return picked if frozen_N is None else picked | frozen_N


def dense_trainable(frozen_O: Any, num_inputs: int) -> tuple[jax.Array, jax.Array]:
  """0/1 masks ``(kernel (I, O), bias (O,))`` of a Dense layer whose neurons ``frozen_O`` freeze.

  Column o of the kernel (neuron o's incoming weights) and bias entry o are 0 when
  neuron o is frozen, 1 otherwise (float32, to multiply gradients by).
  """
  frozen_O = _common.check_arrays({"frozen_O": frozen_O}, kinds={"frozen_O": "bool"})["frozen_O"]
  if not isinstance(num_inputs, (int, np.integer)) or isinstance(num_inputs, bool) or num_inputs < 1:
    raise ValueError(f"num_inputs must be a positive int, got {num_inputs!r}")
  keep_O = 1.0 - jnp.asarray(frozen_O, jnp.float32)
  return jnp.broadcast_to(keep_O[None], (int(num_inputs), keep_O.shape[0])), keep_O


class FreezeState(NamedTuple):
  inner: Any  # the wrapped optimizer's state


def freeze(inner: optax.GradientTransformation) -> optax.GradientTransformationExtraArgs:
  """``inner`` with a per-entry mask: ``update(grads, state, params, trainable=mask)``.

  ``trainable`` is a pytree like the parameters of 0/1 (or bool) arrays; entries
  with 0 get exactly zero update (see the module docstring). Without ``trainable``
  every entry trains.
  """

  def init_fn(params):
    return FreezeState(inner.init(params))

  def update_fn(updates, state, params=None, *, trainable=None, **extra_args):
    del extra_args
    updates = _checks.check_tree("updates", updates, kind="float")
    if params is not None:
      _checks.check_like("params", params, updates, "updates")
    if trainable is None:
      new, inner_state = inner.update(updates, state.inner, params)
      return new, FreezeState(inner_state)
    trainable = _checks.check_tree("trainable", trainable)
    if jax.tree.structure(trainable) != jax.tree.structure(updates):
      raise ValueError("trainable must have the parameters' tree structure, got "
                       f"{jax.tree.structure(trainable)} for {jax.tree.structure(updates)}")
    for m, u in zip(jax.tree.leaves(trainable), jax.tree.leaves(updates)):
      if np.shape(m) != np.shape(u):
        raise ValueError(f"trainable masks must have their parameters' shapes, got "
                         f"{np.shape(m)} for a parameter of shape {np.shape(u)}")
    mask = lambda tree: jax.tree.map(  # noqa: E731
        lambda x, m: jnp.where(jnp.asarray(m) > 0, x, jnp.zeros_like(x)), tree, trainable)
    new, inner_state = inner.update(mask(updates), state.inner, params)
    return mask(new), FreezeState(inner_state)

  return optax.GradientTransformationExtraArgs(init_fn, update_fn)
