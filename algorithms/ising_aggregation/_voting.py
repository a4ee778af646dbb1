"""Conditional-independence aggregators: majority vote, weighted vote, Dawid-Skene EM.

Votes are an int array ``votes_NxK`` (N items, K judges) with entries in
{0, 1} and -1 for a missing vote. Every function returns P(Y=1 | votes) per item.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from reprojax.algorithms import _common
from reprojax.algorithms.ising_aggregation import _checks

EPS = 1e-10  # probability floor of the Dawid-Skene M-step (as in crowd-kit)


def _float(x):
  return jnp.asarray(x, dtype=jnp.result_type(float))


def _masks(votes_NxK):
  """(v1, v0): float indicators of an observed 1 and an observed 0."""
  v1 = _float(votes_NxK == 1)
  v0 = _float(votes_NxK == 0)
  return v1, v0


@jax.jit
def _majority_vote(votes_NxK):
  v1, v0 = _masks(votes_NxK)
  n1, n0 = v1.sum(1), v0.sum(1)
  return n1 / jnp.maximum(n1 + n0, 1.0)


def majority_vote(votes_NxK: jax.Array) -> jax.Array:
  """Uniform majority vote: the fraction of observed votes that say 1.

  P_MV(Y=1 | J_i) = sum_k 1[J_ik = 1] / sum_k 1[J_ik != -1]; a tie gives 0.5.

  Args:
    votes_NxK: int votes in {-1 (missing), 0, 1}.

  Returns:
    p1_N: the vote share of label 1 (used as MV's "probability" for log loss / ECE).

  References:
    Dawid & Skene (1979); Zheng et al., "Truth inference in crowdsourcing" (PVLDB 2017).
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  return _majority_vote(votes_NxK)


@jax.jit
def _weighted_vote(votes_NxK, weights_K, bias):
  v1, v0 = _masks(votes_NxK)
  logit = bias + (v1 - v0) @ _float(weights_K)
  return jax.nn.sigmoid(logit)


def weighted_vote(votes_NxK: jax.Array, weights_K: jax.Array, bias: jax.Array | float = 0.0) -> jax.Array:
  """Symmetric weighted vote: P(Y=1 | J) = sigmoid(b + sum_{k observed} w_k (2 J_k - 1)).

  With w_k = log(a_k / (1 - a_k)) for judge accuracies a_k this is the one-coin
  conditional-independence Bayes rule; missing votes contribute nothing.

  Args:
    votes_NxK: int votes in {-1, 0, 1}.
    weights_K: per-judge weights w_k.
    bias: intercept b (the prior log-odds).

  Returns:
    p1_N: P(Y=1 | votes).

  References:
    Nitzan & Paroush (1982), optimal decisive rules; the paper's eq. for the CI rule.
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  k = votes_NxK.shape[1]
  got = _common.check_arrays({"weights_K": weights_K, "bias": bias}, scalars=("bias",))
  weights_K, bias = got.values()
  if jnp.shape(weights_K) != (k,):
    raise ValueError(f"weights_K must have shape ({k},), got {jnp.shape(weights_K)}")
  return _weighted_vote(votes_NxK, weights_K, bias)


@jax.jit
def _ci_posterior(votes_NxK, sensitivity_K, specificity_K, prior):
  v1, v0 = _masks(votes_NxK)
  a, b = _float(sensitivity_K), _float(specificity_K)
  w1 = jnp.log(a) - jnp.log1p(-b)  # vote 1: log P(J=1|Y=1) - log P(J=1|Y=0)
  w0 = jnp.log1p(-a) - jnp.log(b)  # vote 0: log P(J=0|Y=1) - log P(J=0|Y=0)
  logit = jnp.log(prior) - jnp.log1p(-prior) + v1 @ w1 + v0 @ w0
  return jax.nn.sigmoid(logit)


def ci_posterior(votes_NxK: jax.Array, sensitivity_K: jax.Array, specificity_K: jax.Array,
                 prior: jax.Array | float) -> jax.Array:
  """Conditional-independence (two-coin) Bayes posterior, the paper's CI weighted vote.

  With sensitivity a_k = P(J_k=1 | Y=1), specificity b_k = P(J_k=0 | Y=0) and
  pi = P(Y=1), for fully observed votes

    logit P(Y=1 | J) = log(pi / (1 - pi)) + sum_k log((1 - a_k) / b_k)
                       + sum_k J_k log(a_k b_k / ((1 - a_k)(1 - b_k))),

  and a missing vote drops its judge's terms.

  Args:
    votes_NxK: int votes in {-1, 0, 1}.
    sensitivity_K, specificity_K: per-judge rates in (0, 1).
    prior: pi in (0, 1).

  Returns:
    p1_N: P(Y=1 | votes) under conditional independence.

  References:
    Dawid & Skene (1979); the paper's Section 3 (CI baseline weights).
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  k = votes_NxK.shape[1]
  sensitivity_K = _checks.check_prob("sensitivity_K", sensitivity_K, (k,))
  specificity_K = _checks.check_prob("specificity_K", specificity_K, (k,))
  if jnp.shape(sensitivity_K) != (k,) or jnp.shape(specificity_K) != (k,):
    raise ValueError(f"sensitivity_K and specificity_K must have shape ({k},), got "
                     f"{jnp.shape(sensitivity_K)} and {jnp.shape(specificity_K)}")
  prior = _checks.check_prob("prior", prior, votes_NxK.shape[:1])
  return _ci_posterior(votes_NxK, sensitivity_K, specificity_K, prior)


class DawidSkeneState(NamedTuple):
  """EM state of (binary) Dawid-Skene."""

  posterior_N: jax.Array  # P(Y_i = 1 | votes) from the last E-step (MV at init)
  prior: jax.Array  # () pi = P(Y = 1)
  log_err_Kx2x2: jax.Array  # [k, j, c] = log P(J_k = j | Y = c)
  num_iters: jax.Array  # () int, EM iterations done
  elbo: jax.Array  # () evidence lower bound per observed vote after the last iteration


class DawidSkeneResult(NamedTuple):
  """What :func:`dawid_skene` returns."""

  posterior_N: jax.Array  # P(Y_i = 1 | votes)
  prior: jax.Array  # () pi = P(Y = 1)
  sensitivity_K: jax.Array  # P(J_k = 1 | Y = 1)
  specificity_K: jax.Array  # P(J_k = 0 | Y = 0)
  num_iters: jax.Array  # () int
  elbo: jax.Array  # () per observed vote


def _stacked(votes_NxK):
  """[1[J = 0], 1[J = 1]] side by side: (N, 2K) floats, so one matmul serves both vote values."""
  v1, v0 = _masks(votes_NxK)
  return jnp.concatenate([v0, v1], axis=1)


def _m_step(v_Nx2K, q1_N, two_coin: bool):
  """Error rates from soft labels: [k, j, c] = log P(J_k = j | Y = c)."""
  k = v_Nx2K.shape[1] // 2
  q_Nx2 = jnp.stack([1.0 - q1_N, q1_N], axis=1)  # [i, c]
  cnt = v_Nx2K.T @ q_Nx2  # [(j, k), c] soft count of vote j given class c
  cnt0, cnt1 = cnt[:k], cnt[k:]
  if two_coin:
    c1, c0 = jnp.maximum(cnt1, EPS), jnp.maximum(cnt0, EPS)
    tot = c1 + c0
    return jnp.stack([jnp.log(c0) - jnp.log(tot), jnp.log(c1) - jnp.log(tot)], axis=1)
  # One coin: skill s_k = mean posterior of the label the judge gave.
  n_k = jnp.maximum(v_Nx2K[:, :k].sum(0) + v_Nx2K[:, k:].sum(0), 1.0)
  n_right = cnt1[:, 1] + cnt0[:, 0]
  # Both probabilities from counts, each floored at EPS: in float32 1 - 1e-10 rounds to 1,
  # so clipping the skill and taking log1p(-skill) gave -inf for a judge never wrong, and
  # 0 * -inf = NaN posteriors for every item (seen on the real crowd labels).
  right = jnp.log(jnp.clip(n_right / n_k, EPS, 1.0))
  wrong = jnp.log(jnp.clip((n_k - n_right) / n_k, EPS, 1.0))
  return jnp.stack([jnp.stack([right, wrong], 1), jnp.stack([wrong, right], 1)], axis=1)


def _log_lik_Nx2(v_Nx2K, log_err_Kx2x2):
  """[i, c] = sum_k log P(J_ik | Y = c) over the observed votes."""
  return v_Nx2K @ jnp.concatenate([log_err_Kx2x2[:, 0, :], log_err_Kx2x2[:, 1, :]], axis=0)


def _posterior_from_ll(ll_Nx2, prior):
  p = jnp.maximum(prior, EPS)
  logit = jnp.log(p) - jnp.log(jnp.maximum(1.0 - prior, EPS)) + ll_Nx2[:, 1] - ll_Nx2[:, 0]
  return jax.nn.sigmoid(logit)


def _elbo(ll_Nx2, q1_N, prior, n_votes):
  lp1 = jnp.log(jnp.maximum(prior, EPS))
  lp0 = jnp.log(jnp.maximum(1.0 - prior, EPS))
  q1 = q1_N
  joint = q1 * (lp1 + ll_Nx2[:, 1]) + (1.0 - q1) * (lp0 + ll_Nx2[:, 0])
  ent = -(q1 * jnp.log(jnp.maximum(q1, EPS)) + (1 - q1) * jnp.log(jnp.maximum(1 - q1, EPS)))
  return (joint + ent).sum() / jnp.maximum(n_votes, 1.0)


def _init(v_Nx2K, two_coin):
  k = v_Nx2K.shape[1] // 2
  n1, n0 = v_Nx2K[:, k:].sum(1), v_Nx2K[:, :k].sum(1)
  q = n1 / jnp.maximum(n1 + n0, 1.0)  # majority-vote shares
  log_err = _m_step(v_Nx2K, q, two_coin)
  return DawidSkeneState(q, q.mean(), log_err, jnp.zeros((), jnp.int32),
                         jnp.full((), -jnp.inf, q.dtype))


def _step(v_Nx2K, state: DawidSkeneState, ll_Nx2, two_coin: bool):
  """One EM iteration given ll = log-likelihoods under the state's error rates; returns the new ll."""
  q = _posterior_from_ll(ll_Nx2, state.prior)
  prior = q.mean()
  log_err = _m_step(v_Nx2K, q, two_coin)
  ll_new = _log_lik_Nx2(v_Nx2K, log_err)
  elbo = _elbo(ll_new, q, prior, v_Nx2K.sum())
  return DawidSkeneState(q, prior, log_err, state.num_iters + 1, elbo), ll_new


@functools.partial(jax.jit, static_argnames=("two_coin",))
def _ds_init(votes_NxK, two_coin: bool = True):
  return _init(_stacked(votes_NxK), two_coin)


def dawid_skene_init(votes_NxK: jax.Array, two_coin: bool = True) -> DawidSkeneState:
  """Dawid-Skene's EM start: majority-vote soft labels, their prior and error rates."""
  votes_NxK = _checks.check_votes(votes_NxK)
  return _ds_init(votes_NxK, two_coin=two_coin)


@functools.partial(jax.jit, static_argnames=("two_coin",))
def dawid_skene_step(votes_NxK: jax.Array, state: DawidSkeneState,
                     two_coin: bool = True) -> DawidSkeneState:
  """One EM iteration: E-step (posterior), prior = mean posterior, M-step (error rates)."""
  v = _stacked(votes_NxK)
  return _step(v, state, _log_lik_Nx2(v, state.log_err_Kx2x2), two_coin)[0]


@functools.partial(jax.jit, static_argnames=("two_coin",))
def _dawid_skene(votes_NxK, tol, two_coin: bool, max_iters):
  v = _stacked(votes_NxK)
  state = _init(v, two_coin)
  ll = _log_lik_Nx2(v, state.log_err_Kx2x2)

  def cond(carry):
    s, _, done = carry
    return jnp.logical_and(s.num_iters < max_iters, jnp.logical_not(done))

  def body(carry):
    s, ll, _ = carry
    new, ll_new = _step(v, s, ll, two_coin)
    return new, ll_new, (new.elbo - s.elbo) < tol

  state, _, _ = jax.lax.while_loop(cond, body, (state, ll, jnp.zeros((), bool)))
  err1 = jnp.exp(state.log_err_Kx2x2)
  return DawidSkeneResult(state.posterior_N, state.prior, err1[:, 1, 1], err1[:, 0, 0],
                          state.num_iters, state.elbo)


def dawid_skene(votes_NxK: jax.Array, *, two_coin: bool = True, max_iters: int = 100,
                tol: float = 1e-5) -> DawidSkeneResult:
  """Binary Dawid-Skene by EM, one-coin or two-coin, with missing votes.

  Model: Y_i ~ Bernoulli(pi); given Y_i = c the judges vote independently with
  P(J_ik = j | Y_i = c) = e_k[j, c]. Two-coin: e_k free (sensitivity a_k =
  e_k[1, 1], specificity b_k = e_k[0, 0]); one-coin: a_k = b_k = s_k.

  EM (as crowd-kit's ``DawidSkene``/``OneCoinDawidSkene``, so posteriors agree
  step by step): start from the majority-vote shares q_i, pi = mean q, e = M(q);
  then repeat E-step q_i = P(Y_i = 1 | J_i; pi, e), pi = mean(q), M-step
  e_k[j, c] proportional to max(sum_i 1[J_ik = j] q_ic, 1e-10) (one-coin: s_k = mean
  over the judge's votes of the posterior of the label it gave, clipped to
  [1e-10, 1 - 1e-10]). Stops after ``max_iters`` or when the evidence lower bound
  per observed vote rises by less than ``tol`` (``tol=-inf``: exactly ``max_iters``).
  Runs in one ``lax.while_loop``.

  Args:
    votes_NxK: int votes in {-1 (missing), 0, 1}; every item needs a vote.
    two_coin: asymmetric (True) or symmetric one-coin (False) confusion.
    max_iters: the maximum number of EM iterations.
    tol: the ELBO stopping tolerance.

  Returns:
    DawidSkeneResult(posterior_N, prior, sensitivity_K, specificity_K, num_iters, elbo).

  References:
    Dawid & Skene, "Maximum likelihood estimation of observer error-rates using
    the EM algorithm" (1979); Zhang et al., "Spectral methods meet EM" (JMLR 2016).
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  if max_iters < 1:
    raise ValueError(f"max_iters must be >= 1, got {max_iters}")
  return _dawid_skene(votes_NxK, tol, two_coin=bool(two_coin), max_iters=jnp.asarray(max_iters, jnp.int32))
