"""The buffer-free baselines' importances, and the other neuron scores SNV is compared to.

Parameter importances for a quadratic penalty ``lam / 2 * sum omega (theta - theta*)^2``
toward the parameters ``theta*`` after the previous task:

* EWC (Kirkpatrick et al. 2017): omega = the diagonal of the empirical Fisher, the mean
  over examples of the squared per-example gradient of the negative log-likelihood
  (:func:`fisher_diagonal`; the caller may pass labels sampled from the model instead
  of the true ones for the model's Fisher).
* MAS (Aljundi et al. 2018): omega = the mean over examples of |d ||f(x)||_2^2 / d theta|
  (:func:`mas_importance`), unsupervised.
* SI (Zenke et al. 2017): omega = sum over steps of -g * delta / (Delta^2 + xi), with g
  the task loss's gradient, delta a step's change and Delta the task's total change
  (:func:`si_path_step` accumulates, :func:`si_importance` divides).

Neuron scores SNV's Shapley values are ablated against (freeze the same fraction by
another score): :func:`activation_importance` (mean |activation| over validation
examples) and :func:`magnitude_importance` (L1 norm of a neuron's incoming weights, as
PackNet prunes by magnitude); random scores are the caller's ``jax.random.uniform``.
:func:`rank_correlation` is Spearman's rho, for the stability of a ranking.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.snv import _checks


def _check_batched(name: str, tree: Any) -> int:
  leaves = jax.tree.leaves(tree)
  if not leaves or any(np.ndim(x) < 1 for x in leaves):
    raise ValueError(f"{name} must be arrays with a leading example axis, got "
                     f"{[np.shape(x) for x in leaves]}")
  sizes = {np.shape(x)[0] for x in leaves}
  if len(sizes) != 1 or 0 in sizes:
    raise ValueError(f"{name} must share one non-empty leading example axis, got {sorted(sizes)}")
  return sizes.pop()


@functools.partial(jax.jit, static_argnames=("nll_fn",))
def _fisher(nll_fn, params, batch):
  per_example = jax.vmap(jax.grad(nll_fn), in_axes=(None, 0))(params, batch)
  return jax.tree.map(lambda g: jnp.mean(g ** 2, axis=0), per_example)


def fisher_diagonal(nll_fn: Callable[[Any, Any], jax.Array], params: Any, batch: Any) -> Any:
  """EWC's diagonal empirical Fisher: ``mean_b (d nll_fn(params, batch[b]) / d params)^2``.

  Args:
    nll_fn: ``(params, example) -> ()`` one example's negative log-likelihood (the same
      function object on every call: it is part of the compiled program).
    params: the parameters (a pytree).
    batch: a pytree of arrays with a leading example axis B; ``example`` is one row.

  Returns:
    A pytree like ``params``.
  """
  params = _checks.check_tree("params", params, kind="float")
  batch = _checks.check_tree("batch", batch)
  _check_batched("batch", batch)
  _checks.probe_scalar("nll_fn(params, one example of batch)", nll_fn, params,
                       jax.tree.map(lambda x: x[0], batch))
  return _fisher(nll_fn, params, batch)


@functools.partial(jax.jit, static_argnames=("output_fn",))
def _mas(output_fn, params, batch):
  def sq_norm(p, x):
    return jnp.sum(output_fn(p, x) ** 2)
  per_example = jax.vmap(jax.grad(sq_norm), in_axes=(None, 0))(params, batch)
  return jax.tree.map(lambda g: jnp.mean(jnp.abs(g), axis=0), per_example)


def mas_importance(output_fn: Callable[[Any, Any], jax.Array], params: Any, batch: Any) -> Any:
  """MAS: ``mean_b |d ||output_fn(params, batch[b])||^2 / d params|`` (a pytree like params)."""
  params = _checks.check_tree("params", params, kind="float")
  batch = _checks.check_tree("batch", batch)
  _check_batched("batch", batch)
  _checks.probe_scalar("sum of output_fn(params, one example of batch) squared",
                       lambda p, x: jnp.sum(output_fn(p, x) ** 2) if callable(output_fn) else None,
                       params, jax.tree.map(lambda x: x[0], batch))
  return _mas(output_fn, params, batch)


def si_path_step(path: Any, grads: Any, delta: Any) -> Any:
  """SI's running path integral after one step: ``path - grads * delta`` (pytrees alike)."""
  return _si_step(*_checks.check_trees(("path", path), ("grads", grads), ("delta", delta)))


@jax.jit
def _si_step(path, grads, delta):
  return jax.tree.map(lambda w, g, d: w - g * d, path, grads, delta)


def si_importance(path: Any, params_end: Any, params_start: Any, damping: Any = 0.1) -> Any:
  """SI's per-task importance ``path / ((params_end - params_start)^2 + damping)``."""
  params_end, path, params_start = _checks.check_trees(
      ("params_end", params_end), ("path", path), ("params_start", params_start))
  if np.ndim(damping) != 0:
    raise ValueError(f"damping must be a scalar, got shape {np.shape(damping)}")
  damping = _common.check_array("damping", damping, scalars=True)
  _common.check_in_range("damping", damping, 0.0, lo_open=True)
  return _si(path, params_end, params_start, damping)


@jax.jit
def _si(path, params_end, params_start, damping):
  return jax.tree.map(lambda w, a, b: w / ((a - b) ** 2 + damping), path, params_end, params_start)


def quadratic_penalty(params: Any, anchor: Any, importance: Any) -> jax.Array:
  """``sum omega (theta - theta*)^2`` over every parameter (EWC, SI and MAS alike)."""
  return _quadratic(*_checks.check_trees(("params", params), ("anchor", anchor),
                                         ("importance", importance)))


@jax.jit
def _quadratic(params, anchor, importance):
  terms = jax.tree.map(lambda p, a, w: jnp.sum(w * (p - a) ** 2), params, anchor, importance)
  return sum(jax.tree.leaves(terms), jnp.float32(0.0))


def activation_importance(activations_BxN: Any) -> jax.Array:
  """Mean |activation| of each neuron over the examples, ``(N,)``."""
  a = _common.check_arrays({"activations_BxN": activations_BxN})["activations_BxN"]
  return _column_abs(a, mean=True)


def magnitude_importance(kernel_IxO: Any) -> jax.Array:
  """L1 norm of each output neuron's incoming weights, ``(O,)``."""
  k = _common.check_arrays({"kernel_IxO": kernel_IxO})["kernel_IxO"]
  return _column_abs(k, mean=False)


@functools.partial(jax.jit, static_argnames=("mean",))
def _column_abs(x, mean: bool):
  a = jnp.abs(x)
  return jnp.mean(a, axis=0) if mean else jnp.sum(a, axis=0)


def rank_correlation(a_N: Any, b_N: Any) -> jax.Array:
  """Spearman's rho of two score vectors (average ranks for ties)."""
  arrays = _common.check_arrays({"a_N": a_N, "b_N": b_N})
  return _spearman(arrays["a_N"], arrays["b_N"])


def _ranks(x_N):
  # average rank of ties: mean of the ordinal ranks of the equal values
  eq = x_N[:, None] == x_N[None, :]
  less = jnp.sum(x_N[None, :] < x_N[:, None], axis=1)
  return less + (jnp.sum(eq, axis=1) - 1) / 2.0


@jax.jit
def _spearman(a_N, b_N):
  ra, rb = _ranks(a_N), _ranks(b_N)
  ra, rb = ra - ra.mean(), rb - rb.mean()
  return jnp.sum(ra * rb) / jnp.sqrt(jnp.sum(ra ** 2) * jnp.sum(rb ** 2))
