"""Next-item recommendation data: a synthetic world with environment confounders, and
MovieLens-100K from a manual folder.

The synthetic world (:func:`make_world`, :func:`sample_sessions`; pure JAX, so a
batch of seeds is one ``jax.vmap``):

* ``N`` items, each with a causal feature ``c_j`` (a taste vector, ``D`` wide) and
  a spurious one ``s_j`` (a standardised popularity).
* A user has a stable taste ``u ~ N(0, I_D)``; her history is ``L`` items drawn
  one after another without replacement with probabilities ``softmax(a u.c_j)``
  (a Plackett-Luce draw, by Gumbel-top-L): taste alone.
* A session belongs to an environment ``e`` (drawn with ``env_probs_E``), the
  confounder. Her next item (the target, never a history item) is drawn with
  probabilities ``softmax(a u.c_j + gamma_e s_j)``: the environment sets how
  strongly popularity drives the click. The recommender sees the history and a
  context token (the session's platform, say) that equals ``e`` with probability
  ``context_accuracy`` and is another environment's otherwise; ``e`` itself is
  latent. Optionally (``catalogue_shift > 0``) the environment also shapes the
  history: each environment favours its own items ``b_ej`` in what users saw.
* Out-of-distribution sessions keep the users, items and contexts and change
  ``gamma``: ``target_strengths_E`` set to ``0`` (popularity irrelevant) or
  negative (the effect flips: niche-seeking sessions).
* Preference data: the target is the chosen item; ``K`` negatives are drawn
  uniformly from the items neither in the history nor the target.

MovieLens-100K (:func:`load_movielens_100k`): its ``u.data`` (``user item rating
timestamp``, tab-separated) read from a manual folder, since its licence forbids
redistribution and nothing is fetched at run time. Every user's items in time
order become next-item examples with the previous ``history_len`` items as
history. The claims run on the synthetic world; the loader is for users with
the file.
"""

from __future__ import annotations

import functools
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.data import paths

MOVIELENS = "movielens_100k"
MOVIELENS_HOW_TO_GET = (
    "Download ml-100k.zip from https://grouplens.org/datasets/movielens/100k/ (its licence "
    "forbids redistribution) and put its u.data in that folder.")


class World(NamedTuple):
  """The items of a synthetic world."""

  taste_NxD: jax.Array  # float32, items' causal features c_j (rows of norm about 1)
  popularity_N: jax.Array  # float32, items' spurious feature s_j ~ N(0, 1)
  catalogue_ExN: jax.Array  # float32, b_ej ~ N(0, 1): environment e's own taste for item j


class Sessions(NamedTuple):
  """Next-item sessions of a synthetic world (``U`` sessions)."""

  history_UxL: jax.Array  # int32, items in the order drawn (distinct)
  context_U: jax.Array  # int32, the observed context token in [0, E)
  target_U: jax.Array  # int32, the next item (the chosen one), not in the history
  negatives_UxK: jax.Array  # int32, distinct items neither in the history nor the target
  env_U: jax.Array  # int32, the latent environment in [0, E)
  taste_UxD: jax.Array  # float32, the users' tastes u


def make_world(key: jax.Array, *, num_items: int, taste_dim: int, num_envs: int = 2) -> World:
  """Items with ``c_j ~ N(0, I_D / D)``, ``s_j ~ N(0, 1)`` and, per environment,
  ``b_ej ~ N(0, 1)`` (used only when sessions ask for a catalogue shift)."""
  for name, v in (("num_items", num_items), ("taste_dim", taste_dim), ("num_envs", num_envs)):
    if not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
  k1, k2 = jax.random.split(key)
  return World(jax.random.normal(k1, (num_items, taste_dim)) / np.sqrt(taste_dim),
               jax.random.normal(k2, (num_items,)),
               jax.random.normal(jax.random.fold_in(key, 2), (num_envs, num_items)))


@functools.partial(jax.jit, static_argnames=("num_users", "history_len", "num_negatives"))
def _sessions(key, world, env_probs_E, target_strengths_E, context_accuracy, taste_scale,
              catalogue_shift, num_users, history_len, num_negatives):
  n, d = world.taste_NxD.shape
  e = env_probs_E.shape[0]
  k_env, k_ctx, k_alt, k_taste, k_hist, k_next, k_neg = jax.random.split(key, 7)
  env = jax.random.categorical(k_env, jnp.log(env_probs_E), shape=(num_users,))
  other = (env + jax.random.randint(k_alt, (num_users,), 1, max(e, 2))) % e
  context = jnp.where(jax.random.bernoulli(k_ctx, context_accuracy, (num_users,)), env, other)
  taste = jax.random.normal(k_taste, (num_users, d))
  affinity = taste_scale * taste @ world.taste_NxD.T
  shift = catalogue_shift * world.catalogue_ExN[env]  # the environment's own catalogue
  _, history = jax.lax.top_k(affinity + shift + jax.random.gumbel(k_hist, affinity.shape),
                             history_len)
  rows = jnp.arange(num_users)[:, None]
  seen = jnp.zeros((num_users, n), bool).at[rows, history].set(True)
  click = affinity + target_strengths_E[env][:, None] * world.popularity_N[None, :]
  target = jnp.argmax(jnp.where(seen, -jnp.inf, click + jax.random.gumbel(k_next, click.shape)),
                      axis=1)
  taken = seen.at[jnp.arange(num_users), target].set(True)
  _, negatives = jax.lax.top_k(jnp.where(taken, -1.0, jax.random.uniform(k_neg, (num_users, n))),
                               num_negatives)
  i32 = lambda x: x.astype(jnp.int32)  # noqa: E731
  return Sessions(i32(history), i32(context), i32(target), i32(negatives), i32(env), taste)


def sample_sessions(key: jax.Array, world: World, env_probs_E, target_strengths_E, *,
                    num_users: int, history_len: int, num_negatives: int,
                    context_accuracy: float = 0.85, taste_scale: float = 2.0,
                    catalogue_shift: float = 0.0) -> Sessions:
  """``num_users`` sessions of the world (see the module docstring).

  Args:
    key: PRNG key.
    world: the items (:func:`make_world`).
    env_probs_E: the environments' frequencies (sum to 1).
    target_strengths_E: ``gamma_e``, popularity's weight in environment e's click.
    num_users, history_len, num_negatives: sizes; ``history_len + 1 + num_negatives``
      must not exceed the number of items.
    context_accuracy: probability that the context token names the environment.
    taste_scale: ``a``, the weight of taste in every draw.
    catalogue_shift: ``sigma``: the history is drawn from ``softmax(a u.c_j + sigma b_ej)``,
      so the environment also shapes what a user has seen (its own catalogue) and a
      representation of the history can tell environments apart; 0 (the default): the
      history is taste alone. The target's draw never uses ``b``.
  """
  n = int(np.shape(world.taste_NxD)[0])
  for name, v in (("num_users", num_users), ("history_len", history_len),
                  ("num_negatives", num_negatives)):
    if not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
  if history_len + 1 + num_negatives > n:
    raise ValueError(f"history_len + 1 + num_negatives = {history_len + 1 + num_negatives} "
                     f"exceeds the {n} items")
  probs = np.asarray(env_probs_E, np.float64)
  strengths = np.asarray(target_strengths_E, np.float64)
  if probs.ndim != 1 or strengths.shape != probs.shape:
    raise ValueError(f"env_probs_E and target_strengths_E must be vectors of one length, got "
                     f"shapes {probs.shape} and {strengths.shape}")
  if np.any(probs < 0) or abs(probs.sum() - 1) > 1e-6 or not np.all(np.isfinite(strengths)):
    raise ValueError(f"env_probs_E must be non-negative and sum to 1 and target_strengths_E "
                     f"finite, got {probs} and {strengths}")
  if not 0.0 <= context_accuracy <= 1.0:
    raise ValueError(f"context_accuracy must lie in [0, 1], got {context_accuracy}")
  if np.shape(world.catalogue_ExN)[0] != len(probs):
    raise ValueError(f"the world has catalogues for {np.shape(world.catalogue_ExN)[0]} "
                     f"environments, env_probs_E names {len(probs)}")
  if not np.isfinite(catalogue_shift):
    raise ValueError(f"catalogue_shift must be finite, got {catalogue_shift}")
  return _sessions(key, world, jnp.asarray(probs, jnp.float32), jnp.asarray(strengths, jnp.float32),
                   jnp.float32(context_accuracy), jnp.float32(taste_scale),
                   jnp.float32(catalogue_shift), int(num_users),
                   int(history_len), int(num_negatives))


class Interactions(NamedTuple):
  """Next-item examples from a real log (``M`` examples)."""

  history_MxL: np.ndarray  # int32, the previous items, oldest first, ids in [0, num_items)
  target_M: np.ndarray  # int32, the next item
  user_M: np.ndarray  # int32, the user (ids in [0, num_users))
  num_items: int
  num_users: int


def load_movielens_100k(manual_dir: str | None = None, *, history_len: int = 10,
                        min_rating: int = 0) -> Interactions:
  """MovieLens-100K's ``u.data`` as next-item examples.

  Ratings below ``min_rating`` are dropped; each user's remaining items, sorted
  by time (ties by item id), give one example per position with at least
  ``history_len`` items before it. Users and items are re-indexed from 0 in
  increasing order of their ids in the file.

  Raises:
    FileNotFoundError: ``u.data`` is missing, with where to get it.
    ValueError: a malformed line, or ``history_len < 1``.
  """
  if not isinstance(history_len, (int, np.integer)) or history_len < 1:
    raise ValueError(f"history_len must be an integer >= 1, got {history_len!r}")
  folder = paths.manual_dir(MOVIELENS, manual_dir, required=("u.data",),
                            how_to_get=MOVIELENS_HOW_TO_GET)
  path = os.path.join(folder, "u.data")
  try:
    raw = np.loadtxt(path, dtype=np.int64, ndmin=2)
  except ValueError as e:
    raise ValueError(f"{path}: expected tab-separated integer rows 'user item rating "
                     f"timestamp': {e}") from e
  if raw.shape[1] != 4:
    raise ValueError(f"{path}: expected 4 columns (user item rating timestamp), got "
                     f"{raw.shape[1]}")
  raw = raw[raw[:, 2] >= min_rating]
  _, users = np.unique(raw[:, 0], return_inverse=True)
  _, items = np.unique(raw[:, 1], return_inverse=True)
  order = np.lexsort((items, raw[:, 3], users))  # by user, then time, then item
  users, items = users[order], items[order]
  hist, target, user = [], [], []
  starts = np.flatnonzero(np.diff(users)) + 1  # sorted by user: one slice per user
  for u, seq in zip(users[np.r_[0, starts]] if len(users) else [], np.split(items, starts)):
    for t in range(history_len, len(seq)):
      hist.append(seq[t - history_len:t])
      target.append(seq[t])
      user.append(u)
  as32 = lambda x, shape: np.asarray(x, np.int32).reshape(shape)  # noqa: E731
  return Interactions(as32(hist, (-1, history_len)), as32(target, (-1,)), as32(user, (-1,)),
                      int(items.max()) + 1 if len(items) else 0,
                      int(users.max()) + 1 if len(users) else 0)
