"""Shapley values of neurons: permutation sampling with truncation, and exact enumeration.

The game: ``value_fn(mask_N, *game_args) -> ()`` is the value v(S) of the coalition S of
players (neurons) whose entries of ``mask_N`` are 1. SNV's game is a network's
validation performance with the neurons outside S mean-ablated (``models.maskable_mlp``).

The Shapley value of player i is its marginal contribution averaged over the orders
in which the players can be arranged,

    phi_i = E_pi [ v(pre_pi(i) + {i}) - v(pre_pi(i)) ],

and :func:`shapley_from_permutations` estimates it on given orders the way the
authors' reported runs do (their ``reverse_tmc`` estimator, Ghorbani & Zou's
direction): start from the grand coalition and remove the players in the order of
the permutation; the player removed at position j gets v(S_{j-1}) - v(S_j), so the
contributions of one permutation telescope to v(N) - v(empty) (the efficiency
axiom, exactly up to rounding). Truncation: once |v(S_j) - v(empty)| <=
tolerance * |v(N) - v(empty)| the players not yet removed get 0 and their values
are not computed (the sum then misses at most that bound). All permutations of a
round advance together, ``chunk`` positions per step of a ``lax.while_loop``, each
step one vmapped evaluation of ``P x chunk`` coalitions; the loop stops when every
permutation is truncated or all positions are done.

:func:`tmc_shapley` draws the permutations and adds early stopping over rounds: it
stops when the largest standard error falls below ``stop_stderr`` times the largest
|phi| (Neuron Shapley's convergence test, on standard errors), or after
``max_rounds``. :func:`exact_shapley` enumerates all 2^N coalitions (N <= 16).

References:
  SNV: Shapley Neuron Valuation for buffer-free continual learning. ICML 2026 (code:
  github.com/Ali-Vahedifar/Shapley-Neuron-Values, ``SNV/snv_core.py``).
  Ghorbani & Zou. Neuron Shapley: Discovering the Responsible Neurons. NeurIPS 2020.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.snv import _checks

ValueFn = Callable[..., jax.Array]  # (mask_N, *game_args) -> () value of the coalition


class ShapleyEstimate(NamedTuple):
  values_N: jax.Array  # (N,) mean marginal contribution of each player
  stderr_N: jax.Array  # (N,) standard error of the mean over permutations
  num_permutations: jax.Array  # () int32, permutations averaged
  num_evaluations: jax.Array  # () int32, coalitions whose value was computed


def _check_tolerance(tolerance):
  if np.ndim(tolerance) != 0:
    raise ValueError(f"tolerance must be a scalar, got shape {np.shape(tolerance)}")
  tolerance = _common.check_array("tolerance", tolerance, scalars=True)
  _common.check_in_range("tolerance", tolerance, 0.0, 1.0)
  return tolerance


def _check_chunk(chunk: int, n: int) -> int:
  if not isinstance(chunk, (int, np.integer)) or isinstance(chunk, bool) or chunk < 1:
    raise ValueError(f"chunk must be a positive int, got {chunk!r}")
  return int(min(chunk, n))


def _values_of(value_fn, masks_xN, args):
  """v of every coalition in ``masks_...xN`` (any leading axes), one vmapped call."""
  lead = masks_xN.shape[:-1]
  flat = masks_xN.reshape((-1, masks_xN.shape[-1]))
  v = jax.vmap(lambda m: value_fn(m, *args))(flat)
  return v.reshape(lead)


def _marginals(value_fn: ValueFn, args: tuple, perms_PxN: jax.Array, tolerance: jax.Array,
               chunk: int):
  """Per-permutation contributions ``(P, N)`` and the number of coalitions evaluated."""
  p, n = perms_PxN.shape
  dtype = jnp.float32
  rank_PxN = jnp.argsort(perms_PxN, axis=1)  # position of each player in its permutation
  v_all = jnp.asarray(value_fn(jnp.ones((n,), dtype), *args), dtype)
  v_empty = jnp.asarray(value_fn(jnp.zeros((n,), dtype), *args), dtype)
  # tolerance 0 turns truncation off (|v - v_empty| <= 0 may hold by accident on a plateau).
  thresh = jnp.where(tolerance > 0, tolerance * jnp.abs(v_all - v_empty), -1.0)
  num_chunks = -(-n // chunk)
  offsets = jnp.arange(1, chunk + 1)

  def cond(state):
    c, _, done_P, _, _ = state
    return (c < num_chunks) & ~jnp.all(done_P)

  def body(state):
    c, prev_P, done_P, marg_PxN, evals = state
    js = c * chunk + offsets  # positions j: S_j lacks the first j players of the order
    valid_K = js <= n
    masks = (rank_PxN[:, None, :] >= js[None, :, None]).astype(dtype)  # (P, K, N)
    v_PxK = _values_of(value_fn, masks, args).astype(dtype)
    before_PxK = jnp.concatenate([prev_P[:, None], v_PxK[:, :-1]], axis=1)
    close_PxK = jnp.abs(before_PxK - v_empty) <= thresh
    stopped_PxK = done_P[:, None] | (jnp.cumsum(close_PxK, axis=1) > 0)
    contrib_PxK = jnp.where(stopped_PxK | ~valid_K[None], 0.0, before_PxK - v_PxK)
    players_PxK = perms_PxN[:, jnp.clip(js - 1, 0, n - 1)]
    marg_PxN = marg_PxN.at[jnp.arange(p)[:, None], players_PxK].add(
        jnp.where(valid_K[None], contrib_PxK, 0.0))
    done_P = stopped_PxK[:, -1] | (jnp.abs(v_PxK[:, -1] - v_empty) <= thresh)
    return c + 1, v_PxK[:, -1], done_P, marg_PxN, evals + p * jnp.sum(valid_K, dtype=jnp.int32)

  state = (jnp.int32(0), jnp.full((p,), v_all), jnp.zeros((p,), bool),
           jnp.zeros((p, n), dtype), jnp.int32(2))
  _, _, _, marg_PxN, evals = jax.lax.while_loop(cond, body, state)
  return marg_PxN, evals


def _check_game(value_fn, game_args, n: int) -> tuple:
  """``game_args`` as a tuple of checked arrays, and ``value_fn(mask_N, *game_args)`` a scalar."""
  if not isinstance(game_args, (tuple, list)):
    raise ValueError(f"game_args must be a tuple of value_fn's arguments, got "
                     f"{type(game_args).__name__}")
  game_args = tuple(_checks.check_tree(f"game_args[{i}]", a) for i, a in enumerate(game_args))
  _checks.probe_scalar("value_fn(mask_N, *game_args)", value_fn,
                       jax.ShapeDtypeStruct((n,), jnp.float32), *game_args)
  return game_args


@functools.partial(jax.jit, static_argnames=("value_fn", "chunk"))
def _from_permutations(value_fn, args, perms_PxN, tolerance, chunk):
  marg_PxN, evals = _marginals(value_fn, args, perms_PxN, tolerance, chunk)
  p = perms_PxN.shape[0]
  values = jnp.mean(marg_PxN, axis=0)
  stderr = jnp.std(marg_PxN, axis=0, ddof=1) / jnp.sqrt(p) if p > 1 else jnp.zeros_like(values)
  return ShapleyEstimate(values, stderr, jnp.int32(p), evals)


def shapley_from_permutations(value_fn: ValueFn, game_args: tuple, perms_PxN: Any,
                              tolerance: Any = 0.0, *, chunk: int = 16) -> ShapleyEstimate:
  """Shapley values estimated on the given orders of the players (see the module docstring).

  Args:
    value_fn: ``(mask_N, *game_args) -> ()`` the game (a jittable function; its identity
      is part of the compiled program, so pass the same function object on every call).
    game_args: a tuple of arrays (or pytrees) passed to ``value_fn`` after the mask.
    perms_PxN: ``P`` permutations of ``range(N)`` (int), the orders of removal. All
      ``N!`` of them give the exact Shapley values.
    tolerance: truncation in [0, 1] relative to |v(N) - v(empty)|; 0 (default): none.
    chunk: positions of every permutation evaluated per loop step.

  Returns:
    A :class:`ShapleyEstimate`.
  """
  perms_PxN = _common.check_arrays({"perms_PxN": perms_PxN}, kinds={"perms_PxN": "int"})[
      "perms_PxN"]
  if _common.is_concrete(perms_PxN):
    sorted_rows = np.sort(np.asarray(perms_PxN), axis=1)
    if np.any(sorted_rows != np.arange(perms_PxN.shape[1])):
      raise ValueError("perms_PxN must hold a permutation of range(N) in every row")
  tolerance = _check_tolerance(tolerance)
  args = _check_game(value_fn, game_args, perms_PxN.shape[1])
  return _from_permutations(value_fn, args, jnp.asarray(perms_PxN, jnp.int32),
                            tolerance, _check_chunk(chunk, perms_PxN.shape[1]))


@functools.partial(jax.jit, static_argnames=("value_fn", "num_players", "num_permutations",
                                             "max_rounds", "chunk"))
def _tmc(value_fn, args, key, tolerance, stop_stderr, num_players, num_permutations,
         max_rounds, chunk):
  n, p = num_players, num_permutations

  def cond(state):
    r, _, s, s2 = state
    count = jnp.maximum(r * p, 1)
    mean = s / count
    se = jnp.sqrt(jnp.maximum(s2 / count - mean ** 2, 0.0) / jnp.maximum(count - 1, 1))
    converged = (r > 0) & (jnp.max(se) <= stop_stderr * jnp.max(jnp.abs(mean)))
    return (r < max_rounds) & ~converged

  def body(state):
    r, evals, s, s2 = state
    keys = jax.random.split(jax.random.fold_in(key, r), p)
    perms = jax.vmap(lambda k: jax.random.permutation(k, n))(keys)
    marg, e = _marginals(value_fn, args, perms, tolerance, chunk)
    return r + 1, evals + e, s + marg.sum(0), s2 + (marg ** 2).sum(0)

  zeros = jnp.zeros((n,), jnp.float32)
  rounds, evals, s, s2 = jax.lax.while_loop(cond, body, (jnp.int32(0), jnp.int32(0), zeros, zeros))
  count = rounds * p
  mean = s / count
  var = jnp.maximum(s2 / count - mean ** 2, 0.0) * count / jnp.maximum(count - 1, 1)
  return ShapleyEstimate(mean, jnp.sqrt(var / count), count, evals)


def tmc_shapley(value_fn: ValueFn, game_args: tuple, key: jax.Array, *, num_players: int,
                num_permutations: int = 32, tolerance: Any = 0.05, max_rounds: int = 1,
                stop_stderr: Any = 0.0, chunk: int = 16) -> ShapleyEstimate:
  """Truncated Monte-Carlo Shapley values of ``num_players`` players, with early stopping.

  Each round draws ``num_permutations`` orders from ``fold_in(key, round)`` and runs
  :func:`shapley_from_permutations`; rounds repeat until the largest standard error
  is at most ``stop_stderr`` times the largest |phi| or ``max_rounds`` are done. The
  defaults are the authors' reported setting: 32 permutations, tolerance 0.05, one
  round (their bandit is off in those runs).

  Args:
    value_fn: ``(mask_N, *game_args) -> ()`` the game (see :func:`shapley_from_permutations`).
    game_args: a tuple of arrays (or pytrees) passed to ``value_fn`` after the mask.
    key: a PRNG key.
    num_players: N.
    num_permutations: permutations per round.
    tolerance: truncation in [0, 1] relative to |v(N) - v(empty)| (0: none).
    max_rounds: the most rounds.
    stop_stderr: early-stopping level (>= 0; 0 runs every round).
    chunk: positions per loop step.

  Returns:
    A :class:`ShapleyEstimate` over all the rounds' permutations.
  """
  key = _common.check_key("key", key)
  for name, v in (("num_players", num_players), ("num_permutations", num_permutations),
                  ("max_rounds", max_rounds)):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}")
  if num_permutations < 2:
    raise ValueError(f"num_permutations must be >= 2 for a standard error, got {num_permutations}")
  tolerance = _check_tolerance(tolerance)
  if np.ndim(stop_stderr) != 0:
    raise ValueError(f"stop_stderr must be a scalar, got shape {np.shape(stop_stderr)}")
  stop_stderr = _common.check_array("stop_stderr", stop_stderr, scalars=True)
  _common.check_in_range("stop_stderr", stop_stderr, 0.0)
  args = _check_game(value_fn, game_args, int(num_players))
  return _tmc(value_fn, args, key, tolerance, stop_stderr, int(num_players),
              int(num_permutations), int(max_rounds), _check_chunk(chunk, int(num_players)))


@functools.partial(jax.jit, static_argnames=("value_fn", "num_players"))
def _exact(value_fn, args, num_players):
  n = num_players
  idx = jnp.arange(2 ** n, dtype=jnp.int32)
  bits_CxN = ((idx[:, None] >> jnp.arange(n)[None]) & 1).astype(jnp.float32)
  v_C = _values_of(value_fn, bits_CxN, args).astype(jnp.float32)
  size_C = bits_CxN.sum(1).astype(jnp.int32)
  # |S|! (N - |S| - 1)! / N! for coalitions S without the player.
  w = np.array([math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n)
                for s in range(n)], np.float32)
  weight_C = jnp.asarray(w)[jnp.clip(size_C, 0, n - 1)]
  has_CxN = bits_CxN > 0
  with_i_CxN = idx[:, None] | (1 << jnp.arange(n))[None]
  gain_CxN = v_C[with_i_CxN] - v_C[:, None]
  return jnp.sum(jnp.where(has_CxN, 0.0, weight_C[:, None] * gain_CxN), axis=0)


def exact_shapley(value_fn: ValueFn, game_args: tuple, *, num_players: int) -> jax.Array:
  """The exact Shapley values ``(N,)`` by enumerating all 2^N coalitions (N <= 16).

  ``phi_i = sum_{S not containing i} |S|! (N - |S| - 1)! / N! (v(S + {i}) - v(S))``.
  """
  if (not isinstance(num_players, (int, np.integer)) or isinstance(num_players, bool)
      or not 1 <= num_players <= 16):
    raise ValueError(f"num_players must be an int in [1, 16] for enumeration, got {num_players!r}")
  args = _check_game(value_fn, game_args, int(num_players))
  return _exact(value_fn, args, int(num_players))
