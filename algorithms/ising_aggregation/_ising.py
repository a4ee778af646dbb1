"""Exact Ising computations over {0,1}^K by enumeration, a Gibbs sampler, and the Ising posterior.

A judge panel's votes J in {0,1}^K follow, given the label Y = y,

  P(J | Y=y) = exp(h^(y) . J + sum_{k<l} W^(y)_kl J_k J_l) / Z(h^(y), W^(y)),

with W symmetric and zero on the diagonal, so sum_{k<l} W_kl J_k J_l = J^T W J / 2.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.ising_aggregation import _checks


@functools.lru_cache(maxsize=None)
def _states_np(k: int) -> np.ndarray:
  idx = np.arange(2 ** k, dtype=np.int64)
  return ((idx[:, None] >> np.arange(k)[None, :]) & 1).astype(np.int8)


def all_states(k: int) -> jax.Array:
  """The 2^K vote vectors, shape (2^K, K), row s = the binary digits of s (judge 0 = lowest bit)."""
  _checks.check_exact_k(k, "all_states")
  return jnp.asarray(_states_np(k))


def _float(x):
  return jnp.asarray(x, dtype=jnp.result_type(float))


def ising_energy(J_NxK, h_K, W_KxK):
  """The unnormalized log-probability h . J + J^T W J / 2 per row (shapes checked)."""
  J_NxK, h_K, W_KxK = _common.check_arrays({"J_NxK": J_NxK, "h_K": h_K, "W_KxK": W_KxK},
                                           kinds={"J_NxK": "number"}).values()
  J = _float(J_NxK)
  return J @ _float(h_K) + 0.5 * jnp.einsum("nk,kl,nl->n", J, _float(W_KxK), J)


class IsingMoments(NamedTuple):
  """Exact moments of an Ising model on {0,1}^K."""

  mean_K: jax.Array  # P(J_k = 1)
  second_KxK: jax.Array  # E[J_k J_l] (diagonal = mean_K)
  log_partition: jax.Array  # () log Z


@jax.jit
def _ising_marginals(h_K, W_KxK):
  s = _float(all_states(h_K.shape[0]))
  logw = ising_energy(s, h_K, W_KxK)
  log_z = jax.nn.logsumexp(logw)
  p = jnp.exp(logw - log_z)
  return IsingMoments(p @ s, s.T @ (p[:, None] * s), log_z)


def ising_marginals(h_K: jax.Array, W_KxK: jax.Array) -> IsingMoments:
  """Exact marginals, pair moments and log-partition by enumerating {0,1}^K (K <= 20).

  Z = sum_J exp(h . J + J^T W J / 2), P(J_k = 1) = E[J_k], E[J_k J_l].

  Args:
    h_K: fields.
    W_KxK: symmetric couplings with zero diagonal.

  Returns:
    IsingMoments(mean_K, second_KxK, log_partition).

  References:
    The paper's Section 3 (Ising model of judges); exact enumeration is feasible for K <= 20.
  """
  h_K, W_KxK = _checks.check_field_couplings(h_K, W_KxK)
  _checks.check_exact_k(np.shape(h_K)[0], "ising_marginals")
  return _ising_marginals(h_K, W_KxK)


def ising_log_partition(h_K: jax.Array, W_KxK: jax.Array) -> jax.Array:
  """log Z(h, W) by enumeration (K <= 20)."""
  return ising_marginals(h_K, W_KxK).log_partition


def _log_prob_observed(votes_NxK, h_K, W_KxK, batch_size, missing=None):
  """log P(J_obs) with the missing votes summed out, exactly, per item.

  ``missing``: None decides at run time (``lax.cond``; under ``vmap`` both
  branches run), False assumes every vote observed, True always enumerates.
  """
  k = h_K.shape[0]
  s = _float(all_states(k))  # [S, K]
  logw_S = ising_energy(s, h_K, W_KxK)
  log_z = jax.nn.logsumexp(logw_S)

  def full(v):
    return ising_energy(v, h_K, W_KxK) - log_z

  def marginal(v):
    m = _float(v >= 0)
    j = _float(jnp.maximum(v, 0)) * m

    def one_chunk(rows):
      mm, jj = rows
      # number of observed judges whose vote disagrees with state s
      mismatch = (jj.sum(1)[:, None] + mm @ s.T - 2.0 * (jj @ s.T))
      masked = jnp.where(mismatch < 0.5, logw_S[None, :], -jnp.inf)
      return jax.nn.logsumexp(masked, axis=1)

    return jax.lax.map(lambda r: one_chunk((r[0][None], r[1][None]))[0], (m, j),
                       batch_size=batch_size) - log_z

  if missing is None:
    return jax.lax.cond(jnp.all(votes_NxK >= 0), full, marginal, votes_NxK)
  return marginal(votes_NxK) if missing else full(votes_NxK)


@jax.jit
def _ising_log_prob(votes_NxK, h_K, W_KxK):
  k = h_K.shape[0]
  batch = max(1, min(votes_NxK.shape[0], (1 << 22) >> k))
  return _log_prob_observed(votes_NxK, h_K, W_KxK, batch)


def ising_log_prob(votes_NxK: jax.Array, h_K: jax.Array, W_KxK: jax.Array) -> jax.Array:
  """log P(J_obs) under the Ising model, missing votes (-1) summed out exactly (K <= 20).

  Args:
    votes_NxK: int votes in {-1, 0, 1}.
    h_K, W_KxK: the model.

  Returns:
    logp_N.
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  h_K, W_KxK = _checks.check_field_couplings(h_K, W_KxK)
  _checks.check_exact_k(np.shape(h_K)[0], "ising_log_prob")
  if votes_NxK.shape[1] != np.shape(h_K)[0]:
    raise ValueError(f"votes_NxK has {votes_NxK.shape[1]} judges but h has {np.shape(h_K)[0]}")
  return _ising_log_prob(votes_NxK, h_K, W_KxK)


@functools.partial(jax.jit, static_argnames=("missing",))
def _ising_posterior(votes_NxK, h0_K, h1_K, W0_KxK, W1_KxK, prior, missing=None):
  k = h0_K.shape[0]
  batch = max(1, min(votes_NxK.shape[0], (1 << 22) >> k))
  l1 = _log_prob_observed(votes_NxK, h1_K, W1_KxK, batch, missing)
  l0 = _log_prob_observed(votes_NxK, h0_K, W0_KxK, batch, missing)
  prior = _float(prior)
  return jax.nn.sigmoid(jnp.log(prior) - jnp.log1p(-prior) + l1 - l0)


def ising_posterior(votes_NxK: jax.Array, h0_K: jax.Array, h1_K: jax.Array, W0_KxK: jax.Array,
                    W1_KxK: jax.Array, prior: jax.Array | float, *,
                    missing: bool | None = None) -> jax.Array:
  """Exact Bayes posterior P(Y=1 | J) under a class-dependent Ising model (K <= 20).

  logit P(Y=1 | J) = log(pi/(1-pi)) + [h1 - h0] . J + J^T (W1 - W0) J / 2
                     - log Z(h1, W1) + log Z(h0, W0),

  quadratic in J (linear when W1 = W0: the class-independent case). Missing
  votes are summed out exactly by enumeration over the states that agree with
  the observed ones.

  Args:
    votes_NxK: int votes in {-1 (missing), 0, 1}.
    h0_K, h1_K: fields of class 0 and class 1.
    W0_KxK, W1_KxK: symmetric zero-diagonal couplings of each class.
    prior: pi = P(Y=1) in (0, 1).
    missing: whether some votes are missing. None (default) reads it from concrete
      votes; under ``jit`` it is then decided at run time (``lax.cond``; under
      ``vmap`` both branches run), so a traced caller that knows pass it.

  Returns:
    p1_N: P(Y=1 | votes).

  References:
    The paper's Proposition on the quadratic Bayes log-odds (class-dependent Ising)
    and its linear reduction for class-independent couplings.
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  h0_K, W0_KxK = _checks.check_field_couplings(h0_K, W0_KxK, "0")
  h1_K, W1_KxK = _checks.check_field_couplings(h1_K, W1_KxK, "1")
  k = votes_NxK.shape[1]
  if np.shape(h0_K) != (k,) or np.shape(h1_K) != (k,):
    raise ValueError(f"h0_K, h1_K must have shape ({k},) to match votes, got "
                     f"{np.shape(h0_K)}, {np.shape(h1_K)}")
  _checks.check_exact_k(k, "ising_posterior")
  prior = _checks.check_prob("prior", prior, votes_NxK.shape[:1])
  if _common.is_concrete(votes_NxK):
    has = bool(np.any(np.asarray(votes_NxK) < 0))
    if missing is not None and has and not missing:
      raise ValueError("missing=False but votes_NxK has missing votes (-1)")
    missing = has if missing is None else bool(missing)
  return _ising_posterior(votes_NxK, h0_K, h1_K, W0_KxK, W1_KxK, prior, missing=missing)


@functools.partial(jax.jit, static_argnames=("num_samples",))
def _ising_sample(key, h_K, W_KxK, num_samples):
  s = all_states(h_K.shape[0])
  idx = jax.random.categorical(key, ising_energy(s, h_K, W_KxK), shape=(num_samples,))
  return s[idx].astype(jnp.int32)


def ising_sample(key: jax.Array, h_K: jax.Array, W_KxK: jax.Array, num_samples: int) -> jax.Array:
  """Exact i.i.d. samples of J in {0,1}^K (K <= 20), drawn from the enumerated distribution.

  Returns:
    J_MxK int32, M = num_samples.
  """
  h_K, W_KxK = _checks.check_field_couplings(h_K, W_KxK)
  _checks.check_exact_k(np.shape(h_K)[0], "ising_sample")
  key = _common.check_key("key", key)
  return _ising_sample(key, h_K, W_KxK, num_samples=int(num_samples))


@functools.partial(jax.jit, static_argnames=("num_chains", "num_sweeps"))
def _ising_gibbs(key, h_K, W_KxK, num_chains, num_sweeps):
  k = h_K.shape[0]
  h, w = _float(h_K), _float(W_KxK)
  k_init, k_run = jax.random.split(key)
  x0 = _float(jax.random.bernoulli(k_init, 0.5, (num_chains, k)))

  def sweep(x, t):
    u = jax.random.uniform(jax.random.fold_in(k_run, t), (num_chains, k))

    def site(j, x):
      field = h[j] + x @ w[:, j]  # W_jj = 0, so x_j itself does not enter
      return x.at[:, j].set(_float(u[:, j] < jax.nn.sigmoid(field)))

    return jax.lax.fori_loop(0, k, site, x), None

  x, _ = jax.lax.scan(sweep, x0, jnp.arange(num_sweeps))
  return x.astype(jnp.int32)


def ising_gibbs(key: jax.Array, h_K: jax.Array, W_KxK: jax.Array, num_chains: int = 1024,
                num_sweeps: int = 200) -> jax.Array:
  """Gibbs sampler for an Ising model on {0,1}^K (any K), many independent chains.

  Each sweep visits judges k = 0..K-1 in turn and draws
  J_k ~ Bernoulli(sigmoid(h_k + sum_{l != k} W_kl J_l)); chains start uniform at
  random and return their state after ``num_sweeps`` sweeps, one (approximately
  independent) sample per chain.

  Args:
    key: PRNG key.
    h_K, W_KxK: the model (W symmetric, zero diagonal).
    num_chains: independent chains (the batch axis).
    num_sweeps: sweeps per chain (burn-in; only the last state is returned).

  Returns:
    J_CxK int32 samples, C = num_chains.

  References:
    Geman & Geman (1984); the paper uses sampling for K beyond exact enumeration.
  """
  h_K, W_KxK = _checks.check_field_couplings(h_K, W_KxK)
  if num_chains < 1 or num_sweeps < 1:
    raise ValueError(f"num_chains and num_sweeps must be >= 1, got {num_chains}, {num_sweeps}")
  key = _common.check_key("key", key)
  return _ising_gibbs(key, h_K, W_KxK, num_chains=int(num_chains), num_sweeps=int(num_sweeps))
