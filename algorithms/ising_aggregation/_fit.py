"""Fitting class-dependent and class-independent Ising models of judges: EM and supervised.

Generalized EM over the latent label Y (the paper's Section 4): the E-step
computes q_i = P(Y_i = 1 | J_i) from the prior's logit plus the difference of
the two classes' log-likelihoods (the pseudo-log-likelihood by default, or the
exact one by enumeration for K <= 20); the M-step maximizes the
posterior-weighted pseudo-likelihood (Besag 1975; Hoefling & Tibshirani 2009),
i.e. for each class and judge k a weighted logistic regression of J_k on the
other judges' votes:

  P(J_k = 1 | J_{-k}, Y = y) = sigmoid(h^(y)_k + sum_{l != k} W^(y)_kl J_l),

solved by a few Newton steps per EM iteration (warm-started), with an L2
penalty ``l2`` on the couplings (``l2_field`` on the fields). The per-judge
regressions give a non-symmetric coupling estimate, symmetrized as
(W + W^T)/2 (the Meinshausen-Buehlmann / Ravikumar et al. neighbourhood
variant of pseudo-likelihood; Hoefling-Tibshirani optimize the joint symmetric
objective). Class-independent couplings share one W across classes: each
judge's regression then has features (1[y=0], 1[y=1], J_{-k}) over the items
duplicated per class with weights 1 - q_i and q_i.

Missing votes: item i enters judge k's regression only when J_ik is observed,
and a missing neighbour J_il contributes 0 (its coupling term is dropped); the
exact E-step instead sums missing votes out.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms import _linalg
from reprojax.algorithms.ising_aggregation import _checks
from reprojax.algorithms.ising_aggregation import _ising
from reprojax.algorithms.ising_aggregation import _voting


class IsingParams(NamedTuple):
  """A class-dependent Ising model of K judges (class-independent: W_2xKxK[0] == W_2xKxK[1])."""

  prior: jax.Array  # () pi = P(Y = 1)
  h_2xK: jax.Array  # fields h^(0), h^(1)
  W_2xKxK: jax.Array  # couplings W^(0), W^(1): symmetric, zero diagonal


class IsingFit(NamedTuple):
  """What :func:`fit_ising_em` returns."""

  params: IsingParams
  posterior_N: jax.Array  # P(Y_i = 1 | J_i) under the fitted model (the E-step in use)
  num_iters: jax.Array  # () int EM iterations run
  log_lik: jax.Array  # () mean observed-data log-likelihood per item, exact (nan for e_step="pseudo")


def _f(x):
  return jnp.asarray(x, dtype=jnp.result_type(float))


def _sym(w_KxK):
  w = 0.5 * (w_KxK + w_KxK.T)
  return w * (1.0 - jnp.eye(w.shape[0], dtype=w.dtype))


def _newton(theta_P, X_MxP, t_M, w_M, l2_P, steps):
  """A few Newton steps of ridge-penalized weighted logistic regression (ascent)."""

  def step(_, theta):
    eta = X_MxP @ theta
    p = jax.nn.sigmoid(eta)
    g = X_MxP.T @ (w_M * (t_M - p)) - l2_P * theta
    hess = (X_MxP * (w_M * p * (1 - p))[:, None]).T @ X_MxP + jnp.diag(l2_P + 1e-8)
    d = _linalg.solve(hess, g)
    d = d * jnp.minimum(1.0, 5.0 / (jnp.max(jnp.abs(d)) + 1e-12))  # trust region
    return theta + d

  return jax.lax.fori_loop(0, steps, step, theta_P)  # steps may be traced (one compiled loop)


def _vote_arrays(votes_NxK):
  m = _f(votes_NxK >= 0)
  j = _f(jnp.maximum(votes_NxK, 0)) * m  # missing -> 0
  return m, j


def _m_step(votes_NxK, w0_N, w1_N, params: IsingParams, class_dependent: bool, l2, l2_field,
            steps: int) -> IsingParams:
  """Posterior-weighted pseudo-likelihood M-step (warm-started Newton), both classes."""
  m, j = _vote_arrays(votes_NxK)
  n, k = j.shape
  scale = 1.0 / jnp.maximum(w0_N.sum() + w1_N.sum(), 1.0)
  eye = jnp.eye(k, dtype=j.dtype)
  prior = w1_N.sum() * scale

  if class_dependent:
    l2_P = jnp.full((k,), l2, j.dtype)

    def judge(kk, theta_K, wy_N):
      sel = eye[kk]
      X = j * (1.0 - sel) + sel  # own slot = 1: the field
      l2v = l2_P * (1.0 - sel) + l2_field * sel
      return _newton(theta_K, X, j[:, kk], wy_N * m[:, kk] * scale, l2v, steps)

    def one_class(h_K, W_KxK, wy_N):
      theta = W_KxK + jnp.diag(h_K)
      theta = jax.vmap(judge, in_axes=(0, 0, None))(jnp.arange(k), theta, wy_N)
      return jnp.diag(theta), _sym(theta)

    h0, W0 = one_class(params.h_2xK[0], params.W_2xKxK[0], w0_N)
    h1, W1 = one_class(params.h_2xK[1], params.W_2xKxK[1], w1_N)
    return IsingParams(prior, jnp.stack([h0, h1]), jnp.stack([W0, W1]))

  # Class-independent: per judge theta = (h0_k, h1_k, W_k.), rows (i, y) stacked.
  y_col = jnp.concatenate([jnp.zeros((n,), j.dtype), jnp.ones((n,), j.dtype)])
  jj = jnp.concatenate([j, j], axis=0)
  mm = jnp.concatenate([m, m], axis=0)
  ww = jnp.concatenate([w0_N, w1_N]) * scale

  def judge(kk, theta_P):
    sel = eye[kk]
    X = jnp.concatenate([(1.0 - y_col)[:, None], y_col[:, None], jj * (1.0 - sel)], axis=1)
    l2v = jnp.concatenate([jnp.full((2,), l2_field, j.dtype), jnp.full((k,), l2, j.dtype)])
    return _newton(theta_P, X, jj[:, kk], ww * mm[:, kk], l2v, steps)

  theta = jnp.concatenate([params.h_2xK.T, params.W_2xKxK[0]], axis=1)  # [k, 2 + K]
  theta = jax.vmap(judge)(jnp.arange(k), theta)
  W = _sym(theta[:, 2:])
  return IsingParams(prior, theta[:, :2].T, jnp.stack([W, W]))


def _pair_index(k):
  return np.triu_indices(k, 1)


def _phi(J_MxK, iu):
  """Sufficient statistics (J_k, J_k J_l for k < l): [M, K + K(K-1)/2]."""
  return jnp.concatenate([J_MxK, J_MxK[:, iu[0]] * J_MxK[:, iu[1]]], axis=1)


def _expected_phi_N(votes_NxK, h_K, W_KxK, iu, missing):
  """E[phi(J) | J_obs,i, Y=y] per item: phi of the votes, or the enumerated average over the
  states that agree with the observed votes when some are missing (the E-step of missing votes)."""
  m, j = _vote_arrays(votes_NxK)
  if not missing:
    return _phi(j, iu)
  s = _f(_ising.all_states(h_K.shape[0]))
  logw_S = _ising.ising_energy(s, h_K, W_KxK)
  phi_S = _phi(s, iu)
  batch = max(1, min(votes_NxK.shape[0], (1 << 22) >> h_K.shape[0]))

  def one(r):
    mm, jj = r
    mismatch = jj.sum() + s @ mm - 2.0 * (s @ jj)
    return jax.nn.softmax(jnp.where(mismatch < 0.5, logw_S, -jnp.inf)) @ phi_S

  return jax.lax.map(one, (m, j), batch_size=batch)


def _exact_m_step(votes_NxK, w0_N, w1_N, params: IsingParams, tied, l2, l2_field, steps,
                  missing) -> IsingParams:
  """Posterior-weighted maximum likelihood M-step by enumeration (K small): true EM.

  Maximizes sum_y sum_i w_iy E[log P(J_i | Y=y; h^(y), W^(y)) | J_obs,i] - ridge, a
  concave problem in theta_y = (h^(y), W^(y)_{k<l}) whose gradient is data moments minus
  model moments and whose Hessian is the model covariance of (J_k, J_k J_l): Newton steps,
  warm-started, with a trust region. The unknowns are x = (theta_0, theta_1) and class y
  sees theta_y = A_y x; ``tied`` (a bool, may be traced) makes class 1 read its couplings
  from class 0's slots (the class-independent model, one shared W), so both models are one
  compiled function.
  """
  k = votes_NxK.shape[1]
  iu = _pair_index(k)
  scale = 1.0 / jnp.maximum(w0_N.sum() + w1_N.sum(), 1.0)
  mass_2 = jnp.stack([w0_N.sum(), w1_N.sum()]) * scale
  s = _f(_ising.all_states(k))
  phi_S = _phi(s, iu)
  d = phi_S.shape[1]
  pen_D = jnp.concatenate([jnp.full((k,), l2_field), jnp.full((d - k,), l2)]).astype(s.dtype)
  pen_P = jnp.concatenate([pen_D, pen_D])
  stats_2xD = jnp.stack([wy @ _expected_phi_N(votes_NxK, params.h_2xK[c], params.W_2xKxK[c], iu,
                                              missing) * scale
                         for c, wy in enumerate((w0_N, w1_N))])
  eye = np.eye(d, dtype=np.float32)
  a0 = np.concatenate([eye, 0 * eye], axis=1)  # [D, 2D]
  a1_free = np.concatenate([0 * eye, eye], axis=1)
  a1_tied = a1_free.copy()
  a1_tied[k:] = a0[k:]  # couplings from class 0's slots
  a_2xDxP = jnp.stack([jnp.asarray(a0), jnp.where(tied, a1_tied, a1_free)]).astype(s.dtype)

  def moments(theta_D):
    p = jax.nn.softmax(phi_S @ theta_D)
    mean = p @ phi_S
    return mean, (phi_S * p[:, None]).T @ phi_S - jnp.outer(mean, mean)

  def step(_, x_P):
    mean_2xD, cov_2xDxD = jax.vmap(moments)(a_2xDxP @ x_P)
    g = jnp.einsum("cdp,cd->p", a_2xDxP, stats_2xD - mass_2[:, None] * mean_2xD) - pen_P * x_P
    hess = jnp.einsum("cdp,c,cde,ceq->pq", a_2xDxP, mass_2, cov_2xDxD, a_2xDxP)
    delta = _linalg.solve(hess + jnp.diag(pen_P + 1e-8), g)
    return x_P + delta * jnp.minimum(1.0, 3.0 / (jnp.max(jnp.abs(delta)) + 1e-12))

  x0 = jnp.concatenate([jnp.concatenate([params.h_2xK[c], params.W_2xKxK[c][iu]]) for c in (0, 1)])
  theta_2xD = a_2xDxP @ jax.lax.fori_loop(0, steps, step, x0)

  def unpack(theta):
    w = jnp.zeros((k, k), theta.dtype).at[iu].set(theta[k:])
    return theta[:k], w + w.T

  (h0, W0), (h1, W1) = unpack(theta_2xD[0]), unpack(theta_2xD[1])
  return IsingParams(mass_2[1], jnp.stack([h0, h1]), jnp.stack([W0, W1]))


def _pseudo_log_lik_N(votes_NxK, h_K, W_KxK):
  """sum over observed k of log P(J_k | J_{-k}) (missing neighbours dropped)."""
  m, j = _vote_arrays(votes_NxK)
  eta = h_K[None, :] + j @ W_KxK
  return (m * jax.nn.log_sigmoid((2.0 * j - 1.0) * eta)).sum(1)


def _e_step(votes_NxK, params: IsingParams, e_step: str, missing=None):
  pi = jnp.clip(params.prior, 1e-6, 1 - 1e-6)
  if e_step == "pseudo":
    l1 = _pseudo_log_lik_N(votes_NxK, params.h_2xK[1], params.W_2xKxK[1])
    l0 = _pseudo_log_lik_N(votes_NxK, params.h_2xK[0], params.W_2xKxK[0])
    return jax.nn.sigmoid(jnp.log(pi) - jnp.log1p(-pi) + l1 - l0)
  return _ising._ising_posterior(votes_NxK, params.h_2xK[0], params.h_2xK[1],
                                 params.W_2xKxK[0], params.W_2xKxK[1], pi, missing=missing)


def _mixture_log_lik(votes_NxK, params: IsingParams, missing=None):
  """Mean over items of log P(J_obs,i) = log sum_y P(Y=y) P(J_obs,i | Y=y), exact (K <= 20)."""
  n, k = votes_NxK.shape
  batch = max(1, min(n, (1 << 22) >> k))
  pi = jnp.clip(params.prior, 1e-6, 1 - 1e-6)
  l1 = _ising._log_prob_observed(votes_NxK, params.h_2xK[1], params.W_2xKxK[1], batch, missing)
  l0 = _ising._log_prob_observed(votes_NxK, params.h_2xK[0], params.W_2xKxK[0], batch, missing)
  return jnp.mean(jnp.logaddexp(jnp.log(pi) + l1, jnp.log1p(-pi) + l0))


def _zeros_params(k, dtype):
  return IsingParams(jnp.asarray(0.5, dtype), jnp.zeros((2, k), dtype), jnp.zeros((2, k, k), dtype))


def _fit_em_impl(votes_NxK, labels_N, l2, l2_field, tol, class_dependent, e_step, max_iters,
                 newton_steps, missing=None, init_N=None, m_step="pseudo"):
  """EM (see fit_ising_em); with m_step="exact", ``class_dependent`` may be a traced bool."""
  n, k = votes_NxK.shape
  dtype = jnp.result_type(float)
  known = labels_N >= 0
  lab = _f(jnp.maximum(labels_N, 0))

  def clamp(q):
    return jnp.where(known, lab, q)

  if init_N is None:
    init_N = _voting._dawid_skene(votes_NxK, 1e-5, two_coin=True, max_iters=50).posterior_N
  q = clamp(_f(init_N))

  def m_step_fn(w0, w1, p, steps):
    if m_step == "exact":
      return _exact_m_step(votes_NxK, w0, w1, p, jnp.logical_not(class_dependent), l2, l2_field,
                           steps, missing is not False)
    return _m_step(votes_NxK, w0, w1, p, class_dependent, l2, l2_field, steps)

  # The first M-step starts from zero: the exact one needs more Newton steps (each is capped at 3 per
  # coordinate) to reach strong couplings, or the first E-step runs off (regime B: W ~ 2).
  init_steps = max(3 * newton_steps, 25) if m_step == "exact" else 3 * newton_steps

  # One loop of (M-step, E-step); the first M-step (from zero, init_steps Newton steps) is its
  # first pass, so each step is compiled once. it counts M-steps: EM iterations = it - 1.
  def cond(c):
    _, _, it, delta = c
    return jnp.logical_and(it <= max_iters, delta >= tol)

  def body(c):
    p, q, it, _ = c
    p_new = m_step_fn(1 - q, q, p, jnp.where(it == 0, init_steps, newton_steps))
    q_new = clamp(_e_step(votes_NxK, p_new, e_step, missing))
    return p_new, q_new, it + 1, jnp.max(jnp.abs(q_new - q))

  params, q, it, _ = jax.lax.while_loop(
      cond, body, (_zeros_params(k, dtype), q, jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, dtype)))
  log_lik = (_mixture_log_lik(votes_NxK, params, missing) if k <= _checks.MAX_EXACT_K
             else jnp.asarray(jnp.nan, dtype))
  return IsingFit(params, q, it - 1, log_lik)


_fit_em = jax.jit(_fit_em_impl, static_argnames=("class_dependent", "e_step", "max_iters",
                                                 "newton_steps", "missing", "m_step"))


@functools.partial(jax.jit, static_argnames=("e_step", "max_iters", "newton_steps", "missing"))
def _fit_em_exact(votes_NxK, labels_N, l2, l2_field, tol, class_dependent, e_step, max_iters,
                  newton_steps, missing=None, init_N=None):
  """The exact-M-step EM with ``class_dependent`` traced: one compilation serves both models."""
  return _fit_em_impl(votes_NxK, labels_N, l2, l2_field, tol, class_dependent, e_step, max_iters,
                      newton_steps, missing, init_N, "exact")


def _fit_em_runs(votes_NxK, labels_RxN, init_RxN, class_dependent_R, l2, l2_field, tol, e_step,
                 max_iters, newton_steps, missing=None):
  """R exact-M-step EM runs on one panel, vmapped: one compiled EM serves every start, label set
  and model (class-dependent or not, a traced flag per run)."""
  def one(labels_N, init_N, cd):
    return _fit_em_impl(votes_NxK, labels_N, l2, l2_field, tol, cd, e_step, max_iters,
                        newton_steps, missing, init_N, "exact")

  return jax.vmap(one)(labels_RxN, init_RxN, class_dependent_R)


def _best_run(fits_S: IsingFit, votes_NxK, labels_N) -> IsingFit:
  """The run with the highest exact observed-data log-likelihood, classes oriented when unlabelled."""
  best = jnp.argmax(jnp.where(jnp.isfinite(fits_S.log_lik), fits_S.log_lik, -jnp.inf))
  fit = jax.tree.map(lambda x: x[best], fits_S)
  unlabelled = jnp.all(labels_N < 0)  # known labels already fix the orientation
  oriented = _orient(fit, votes_NxK)
  return jax.tree.map(lambda a, b: jnp.where(unlabelled, a, b), oriented, fit)


def _starts(key, votes_NxK, num_starts, ds_posterior_N=None):
  """Label-free initial posteriors [S, N]: two-coin DS, uniform MV, random positive weighted votes."""
  m, j = _vote_arrays(votes_NxK)
  if ds_posterior_N is None:
    ds_posterior_N = _voting._dawid_skene(votes_NxK, 1e-5, two_coin=True, max_iters=50).posterior_N
  first = [_f(ds_posterior_N), _voting._majority_vote(votes_NxK)][:num_starts]
  r = num_starts - len(first)
  if r == 0:
    return jnp.stack(first)
  w_RxK = jax.random.uniform(key, (r, votes_NxK.shape[1]), minval=0.0, maxval=2.0)
  rand = jax.nn.sigmoid(((2.0 * j - 1.0) * m) @ w_RxK.T).T
  return jnp.concatenate([jnp.stack(first), rand], axis=0)


def _orient(fit: IsingFit, votes_NxK) -> IsingFit:
  """Swap the classes if the posterior anticorrelates with majority vote (the mixture's label switch)."""
  mv = _voting._majority_vote(votes_NxK)
  q = fit.posterior_N
  flip = jnp.mean((q - q.mean()) * (mv - mv.mean())) < 0
  p = fit.params
  swapped = IsingParams(1 - p.prior, p.h_2xK[::-1], p.W_2xKxK[::-1])
  params = jax.tree.map(lambda a, b: jnp.where(flip, a, b), swapped, p)
  return IsingFit(params, jnp.where(flip, 1 - q, q), fit.num_iters, fit.log_lik)


@functools.partial(jax.jit, static_argnames=("class_dependent", "e_step", "max_iters",
                                             "newton_steps", "missing", "num_starts", "m_step"))
def _fit_em_multistart(votes_NxK, labels_N, key, l2, l2_field, tol, class_dependent, e_step,
                       max_iters, newton_steps, missing=None, num_starts=4, m_step="exact",
                       ds_posterior_N=None):
  starts_SxN = _starts(key, votes_NxK, num_starts, ds_posterior_N)
  if m_step == "exact":
    fits = _fit_em_runs(votes_NxK, jnp.broadcast_to(labels_N, starts_SxN.shape), starts_SxN,
                        jnp.full((num_starts,), class_dependent), l2, l2_field, tol, e_step,
                        max_iters, newton_steps, missing)
  else:
    fits = jax.vmap(lambda q0: _fit_em_impl(votes_NxK, labels_N, l2, l2_field, tol,
                                            class_dependent, e_step, max_iters, newton_steps,
                                            missing, q0, m_step))(starts_SxN)
  return _best_run(fits, votes_NxK, labels_N)


def _check_labels(labels_N, n):
  if labels_N is None:
    return -np.ones((n,), np.int32)
  _common.check_ndim("labels_N", labels_N, 1)
  if np.shape(labels_N)[0] != n:
    raise ValueError(f"labels_N must have shape ({n},), got {np.shape(labels_N)}")
  if _common.is_concrete(labels_N) and not np.all(np.isin(np.asarray(labels_N), (-1, 0, 1))):
    raise ValueError("labels_N entries must be in {-1 (unknown), 0, 1}")
  return labels_N


MAX_EXACT_MSTEP_K = 12  # default exact M-step up to here (Newton on K + K(K-1)/2 parameters, 2^K states)


def _check_options(e_step, k, l2, l2_field, m_step="pseudo"):
  for name, v in (("e_step", e_step), ("m_step", m_step)):
    if v not in ("pseudo", "exact"):
      raise ValueError(f"{name} must be 'pseudo' or 'exact', got {v!r}")
    if v == "exact":
      _checks.check_exact_k(k, f"fit_ising_em({name}='exact')")
  for name, v in (("l2", l2), ("l2_field", l2_field)):
    _common.check_in_range(name, v, 0.0)


def _check_missing(votes_NxK, missing):
  """``missing`` as the EM's static flag: from concrete votes when None (None under ``jit``)."""
  if not _common.is_concrete(votes_NxK):
    return missing
  has = bool(np.any(np.asarray(votes_NxK) < 0))
  if missing is None:
    return has
  if has and not missing:
    raise ValueError("missing=False but votes_NxK has missing votes (-1); pass missing=True or None")
  return bool(missing)


def _check_posteriors(name, q, shape):
  """Soft labels of the given shape, finite, in [0, 1]; returned as an array."""
  q = _common.check_arrays({name: q}, shapeless=(name,))[name]
  if np.shape(q) != tuple(shape):
    raise ValueError(f"{name} must have shape {tuple(shape)}, got {np.shape(q)}")
  _common.check_in_range(name, q, 0.0, 1.0)
  return q


def fit_ising_em(votes_NxK: jax.Array, labels_N: jax.Array | None = None, *,
                 class_dependent: bool = True, e_step: str | None = None, l2: float = 1e-3,
                 l2_field: float = 1e-4, max_iters: int = 100, tol: float = 1e-4,
                 newton_steps: int = 2, m_step: str | None = None, num_starts: int = 1,
                 key: jax.Array | None = None, init_N: jax.Array | None = None) -> IsingFit:
  """Unsupervised (or semi-supervised) EM fit of a class-dependent or class-independent Ising model.

  Model: Y ~ Bernoulli(pi), P(J | Y=y) propto exp(h^(y) . J + J^T W^(y) J / 2);
  class-independent: W^(0) = W^(1) = W, so the Bayes log-odds are linear in J.

  EM: start from two-coin Dawid-Skene's posterior and an M-step; then repeat
  E-step (q_i from the pseudo- or exact log-likelihood ratio, known labels
  clamped) and M-step (posterior-weighted exact likelihood or pseudo-likelihood,
  ``newton_steps`` Newton steps, warm-started) until the posteriors move by
  less than ``tol`` or ``max_iters``, in one ``lax.while_loop``.

  Several starts (``num_starts`` > 1): EM from two-coin DS, from uniform MV,
  and from ``num_starts - 2`` random weighted votes sigmoid(sum_k w_k (2J_k - 1)),
  w_k ~ U(0, 2), vmapped; the run with the highest exact observed-data
  log-likelihood sum_i log sum_y P(y) P(J_i | y) is kept (no labels used), and,
  when no label is known, its classes are oriented so that the posterior
  correlates positively with majority vote (the mixture is symmetric under
  swapping the classes). Why: from the DS start alone EM stops in a local
  optimum of the class-dependent model next to DS's labelling, whose
  likelihood is below the optimum that the MV or random starts reach (see the
  experiment README, "Why unsupervised EM stayed at DS").

  Args:
    votes_NxK: int votes in {-1 (missing), 0, 1}.
    labels_N: optional int labels in {-1 (unknown), 0, 1}; known ones are clamped.
    class_dependent: W^(0), W^(1) (True) or one shared W (False).
    e_step: "exact" (log-likelihood ratio by enumeration, K <= 20; the default there)
      or "pseudo" (the paper's pseudo-likelihood score, any K; the default above 20).
      Departure: inside EM the pseudo score drifts (exp of a pseudo-log-likelihood
      is not a normalized density, so the mixture objective rewards stronger
      couplings; on simulated class-dependent models with K = 6 accuracy fell
      from 0.92 to 0.54), so we default to the exact E-step where it is feasible.
    l2: ridge on the couplings, per item (the objective is an average over items).
    l2_field: ridge on the fields.
    max_iters: EM iterations at most.
    tol: stop when max_i |q_i^new - q_i| < tol.
    newton_steps: Newton steps per M-step.
    m_step: "exact" (posterior-weighted maximum likelihood by enumeration, so EM
      increases the observed-data likelihood; the default for K <= 12) or "pseudo"
      (the paper's pseudo-likelihood; the default above 12). Departure: with the
      pseudo M-step the iteration is not EM for the likelihood, and on simulated
      class-dependent panels (K = 8, 3,000 items) it drifts from the Bayes labelling
      (started there) back to a DS-like one whose likelihood is lower; the exact
      M-step keeps the better optimum (experiment README).
    num_starts: EM runs (1: from DS only); more than 1 needs K <= 20 (exact likelihood).
    key: PRNG key of the random starts (needed when ``num_starts`` > 2).
    init_N: the first start's posterior q_i in [0, 1] (default: two-coin Dawid-Skene's);
      with several starts it replaces DS as the first of them.

  Returns:
    IsingFit(params=IsingParams(prior, h_2xK, W_2xKxK), posterior_N, num_iters, log_lik).

  References:
    The paper, Section 4 (generalized EM, pseudo-likelihood M-step); Besag (1975);
    Hoefling & Tibshirani, "Estimation of sparse binary pairwise Markov networks
    using pseudo-likelihoods" (JMLR 2009); Ravikumar, Wainwright & Lafferty (2010).
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  n, k = votes_NxK.shape
  labels_N = _check_labels(labels_N, n)
  if e_step is None:
    e_step = "exact" if k <= _checks.MAX_EXACT_K else "pseudo"
  if m_step is None:
    m_step = "exact" if k <= MAX_EXACT_MSTEP_K else "pseudo"
  _check_options(e_step, k, l2, l2_field, m_step)
  if max_iters < 0 or newton_steps < 1:
    raise ValueError(f"need max_iters >= 0 and newton_steps >= 1, got {max_iters}, {newton_steps}")
  missing = _check_missing(votes_NxK, None)
  if num_starts < 1:
    raise ValueError(f"num_starts must be >= 1, got {num_starts}")
  if init_N is not None:
    init_N = _check_posteriors("init_N", init_N, (n,))
  if num_starts == 1 and m_step == "exact":
    return _fit_em_exact(votes_NxK, jnp.asarray(labels_N), l2, l2_field, tol,
                         jnp.asarray(bool(class_dependent)), e_step=e_step,
                         max_iters=int(max_iters), newton_steps=int(newton_steps), missing=missing,
                         init_N=init_N)
  if num_starts == 1:
    return _fit_em(votes_NxK, jnp.asarray(labels_N), l2, l2_field, tol,
                   class_dependent=bool(class_dependent), e_step=e_step, max_iters=int(max_iters),
                   newton_steps=int(newton_steps), missing=missing, init_N=init_N, m_step=m_step)
  _checks.check_exact_k(k, "fit_ising_em(num_starts > 1) (starts are ranked by exact likelihood)")
  if num_starts > 2 and key is None:
    raise ValueError(f"num_starts={num_starts} > 2 draws random starts: pass key=jax.random.key(...)")
  key = jax.random.key(0) if key is None else key
  return _fit_em_multistart(votes_NxK, jnp.asarray(labels_N), key, l2, l2_field, tol,
                            class_dependent=bool(class_dependent), e_step=e_step,
                            max_iters=int(max_iters), newton_steps=int(newton_steps),
                            missing=missing, num_starts=int(num_starts), m_step=m_step,
                            ds_posterior_N=init_N)


_starts_jit = jax.jit(_starts, static_argnames=("num_starts",))
_fit_em_runs_jit = jax.jit(_fit_em_runs, static_argnames=("e_step", "max_iters", "newton_steps",
                                                          "missing"))
_best_run_jit = jax.jit(_best_run)
_mixture_log_lik_jit = jax.jit(_mixture_log_lik, static_argnames=("missing",))


def ising_em_starts(key: jax.Array, votes_NxK: jax.Array, num_starts: int,
                    first_N: jax.Array | None = None) -> jax.Array:
  """The label-free starting posteriors of multi-start EM, ``starts_SxN`` (S = ``num_starts``).

  Row 0 is ``first_N`` (default: two-coin Dawid-Skene's posterior, at most 50
  iterations, tol 1e-5); row 1 the uniform majority vote (the share of observed
  votes that say 1); rows 2..S-1 random positive weighted votes
  q_i = sigmoid(sum_{k observed} w_k (2 J_ik - 1)), w_k ~ U(0, 2) drawn from ``key``.
  These are the starts of ``fit_ising_em(num_starts=S)``; feed them to
  :func:`fit_ising_em_runs` and pick with :func:`best_ising_fit`.

  Args:
    key: PRNG key of the random starts (unused when ``num_starts`` <= 2).
    votes_NxK: int votes in {-1 (missing), 0, 1}.
    num_starts: S >= 1 (1: ``first_N`` only; 2: and majority vote).
    first_N: optional posterior in [0, 1] of the first start, e.g. a DS posterior
      computed already.

  Returns:
    starts_SxN, each row a posterior P(Y_i = 1) in [0, 1].
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  if num_starts < 1:
    raise ValueError(f"num_starts must be >= 1, got {num_starts}")
  if first_N is not None:
    first_N = _check_posteriors("first_N", first_N, (votes_NxK.shape[0],))
  key = _common.check_key("key", key)
  return _starts_jit(key, votes_NxK, num_starts=int(num_starts), ds_posterior_N=first_N)


def _check_labels_2d(labels_RxN, r, n):
  if np.shape(labels_RxN) != (r, n):
    raise ValueError(f"labels_RxN must have shape ({r}, {n}) (runs x items), got "
                     f"{np.shape(labels_RxN)}")
  if not jnp.issubdtype(jnp.asarray(labels_RxN).dtype, jnp.integer):
    raise ValueError(f"labels_RxN must be an integer array, got dtype "
                     f"{jnp.asarray(labels_RxN).dtype}")
  if _common.is_concrete(labels_RxN) and not np.all(np.isin(np.asarray(labels_RxN), (-1, 0, 1))):
    raise ValueError("labels_RxN entries must be in {-1 (unknown), 0, 1}")


def fit_ising_em_runs(votes_NxK: jax.Array, labels_RxN: jax.Array, init_RxN: jax.Array,
                      class_dependent_R: jax.Array, *, l2: float = 1e-3, l2_field: float = 1e-4,
                      tol: float = 1e-4, e_step: str = "exact", max_iters: int = 100,
                      newton_steps: int = 2, missing: bool | None = None) -> IsingFit:
  """R EM fits of Ising models on one panel in one vmapped call (exact M-step).

  Run r is the EM of :func:`fit_ising_em` with the exact M-step: known labels
  ``labels_RxN[r]`` (-1 = unknown) clamped, started from the posterior
  ``init_RxN[r]``, with class-dependent couplings W^(0), W^(1) where
  ``class_dependent_R[r]`` is true and one shared W elsewhere (the flag is an
  array, so one compiled EM serves both models and every start and label set).
  Each run stops on its own (max_i |q_i^new - q_i| < ``tol`` or ``max_iters``).

  Multi-start EM with selection by likelihood, the fit of the experiment::

    starts_SxN = ising_em_starts(key, votes_NxK, S)
    runs = fit_ising_em_runs(votes_NxK, -jnp.ones((S, N), jnp.int32), starts_SxN,
                             jnp.ones((S,), bool))
    fit = best_ising_fit(runs, votes_NxK)  # highest exact log-likelihood, classes oriented

  is ``fit_ising_em(votes_NxK, num_starts=S, key=key)``; the experiment stacks the
  runs of several models (class-independent and class-dependent starts, and a
  semi-supervised run) into one call and selects within each group.

  Args:
    votes_NxK: int votes in {-1 (missing), 0, 1}, K <= 20 (the M-step enumerates 2^K states).
    labels_RxN: int labels per run in {-1 (unknown), 0, 1}.
    init_RxN: starting posteriors P(Y_i = 1) in [0, 1] per run.
    class_dependent_R: bool per run: W^(0), W^(1) (True) or one shared W (False).
    l2, l2_field, tol, max_iters, newton_steps: as in :func:`fit_ising_em`.
    e_step: "exact" or "pseudo", as in :func:`fit_ising_em`.
    missing: whether some votes are missing (summed out in both steps); None reads it
      from concrete votes (under ``jit`` it then assumes they may be).

  Returns:
    IsingFit with a leading axis R on every field (``log_lik``: mean exact
    observed-data log-likelihood per item of each run).

  References:
    The paper, Section 4 (EM for the Ising models); Dempster, Laird & Rubin (1977).
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  n, k = votes_NxK.shape
  _check_options(e_step, k, l2, l2_field, "exact")
  r = np.shape(class_dependent_R)[0] if np.ndim(class_dependent_R) == 1 else -1
  if r < 1:
    raise ValueError(f"class_dependent_R must be a non-empty 1-D array, got shape "
                     f"{np.shape(class_dependent_R)}")
  _check_labels_2d(labels_RxN, r, n)
  init_RxN = _check_posteriors("init_RxN", init_RxN, (r, n))
  if max_iters < 0 or newton_steps < 1:
    raise ValueError(f"need max_iters >= 0 and newton_steps >= 1, got {max_iters}, {newton_steps}")
  missing = _check_missing(votes_NxK, missing)
  return _fit_em_runs_jit(votes_NxK, labels_RxN, init_RxN, jnp.asarray(class_dependent_R, bool),
                          l2, l2_field, tol, e_step=e_step, max_iters=int(max_iters),
                          newton_steps=int(newton_steps), missing=missing)


def best_ising_fit(fits_R: IsingFit, votes_NxK: jax.Array,
                   labels_N: jax.Array | None = None) -> IsingFit:
  """The run of ``fits_R`` with the highest exact observed-data log-likelihood, classes oriented.

  Picks r* = argmax_r ``fits_R.log_lik[r]`` (non-finite values never win), the
  mean over items of log sum_y P(Y=y) P(J_i | Y=y): a label-free criterion.
  When no label is known (``labels_N`` None or all -1) the mixture is symmetric
  under swapping the classes, so the pick is oriented to make its posterior
  correlate positively with majority vote (prior, fields, couplings and
  posterior swapped when it anticorrelates); known labels fix the orientation.

  Args:
    fits_R: IsingFit with a leading run axis R, e.g. from :func:`fit_ising_em_runs`.
    votes_NxK: the votes the runs were fitted on.
    labels_N: the known labels of the runs, in {-1, 0, 1}; default all unknown.

  Returns:
    IsingFit of one run (no run axis).
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  n = votes_NxK.shape[0]
  if not isinstance(fits_R, IsingFit):
    raise ValueError(f"fits_R must be an IsingFit, got {type(fits_R).__name__}")
  k = votes_NxK.shape[1]
  got = _common.check_arrays(
      {"votes_NxK": votes_NxK, "prior_R": fits_R.params.prior, "h_Rx2xK": fits_R.params.h_2xK,
       "W_Rx2xKxK": fits_R.params.W_2xKxK, "posterior_RxN": fits_R.posterior_N,
       "num_iters_R": fits_R.num_iters, "log_lik_R": fits_R.log_lik},
      kinds={"votes_NxK": "number", "num_iters_R": "number"},
      nan_ok=("log_lik_R",))  # non-finite: a failed or pseudo-likelihood run (it never wins)
  if np.shape(got["h_Rx2xK"])[1:] != (2, k):
    raise ValueError(f"fits_R.params.h_2xK must have shape (R, 2, {k}), got "
                     f"{np.shape(got['h_Rx2xK'])}")
  _, prior, h, w, q, iters, ll = got.values()
  fits_R = IsingFit(IsingParams(prior, h, w), q, iters, ll)
  labels_N = _check_labels(labels_N, n)
  return _best_run_jit(fits_R, votes_NxK, jnp.asarray(labels_N))


def _check_params(params, k):
  """``params`` for K judges, its arrays converted (a list becomes an array)."""
  if not isinstance(params, IsingParams):
    raise ValueError(f"params must be an IsingParams, got {type(params).__name__}")
  params = IsingParams(*_common.check_arrays(
      {"prior": params.prior, "h_2xK": params.h_2xK, "W_2xKxK": params.W_2xKxK},
      shapeless=("prior", "h_2xK", "W_2xKxK")).values())
  if np.shape(params.h_2xK) != (2, k) or np.shape(params.W_2xKxK) != (2, k, k):
    raise ValueError(f"params must hold h_2xK (2, {k}) and W_2xKxK (2, {k}, {k}) to match the "
                     f"votes, got {np.shape(params.h_2xK)}, {np.shape(params.W_2xKxK)}")
  for c in (0, 1):
    _checks.check_field_couplings(params.h_2xK[c], params.W_2xKxK[c], str(c))
  _common.check_in_range("params.prior", params.prior, 0.0, 1.0)  # clipped to (1e-6, 1 - 1e-6)
  return params


def ising_mixture_log_lik(votes_NxK: jax.Array, params: IsingParams,
                          missing: bool | None = None) -> jax.Array:
  """Mean observed-data log-likelihood per item, (1/N) sum_i log sum_y P(Y=y) P(J_obs,i | Y=y).

  Exact by enumeration (K <= 20), missing votes summed out; the criterion by
  which :func:`best_ising_fit` ranks EM runs (``IsingFit.log_lik``).

  Args:
    votes_NxK: int votes in {-1 (missing), 0, 1}.
    params: IsingParams(prior, h_2xK, W_2xKxK).
    missing: whether some votes are missing; None reads it from concrete votes.

  Returns:
    A scalar.
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  k = votes_NxK.shape[1]
  _checks.check_exact_k(k, "ising_mixture_log_lik")
  params = _check_params(params, k)
  return _mixture_log_lik_jit(votes_NxK, params, missing=_check_missing(votes_NxK, missing))


@functools.partial(jax.jit, static_argnames=("class_dependent", "newton_steps"))
def _fit_supervised(votes_NxK, labels_N, l2, l2_field, class_dependent, newton_steps):
  k = votes_NxK.shape[1]
  known = _f(labels_N >= 0)
  w1 = known * _f(labels_N == 1)
  w0 = known * _f(labels_N == 0)
  return _m_step(votes_NxK, w0, w1, _zeros_params(k, jnp.result_type(float)), class_dependent,
                 l2, l2_field, newton_steps)


def fit_ising_supervised(votes_NxK: jax.Array, labels_N: jax.Array, *,
                         class_dependent: bool = True, l2: float = 1e-3, l2_field: float = 1e-4,
                         newton_steps: int = 25) -> IsingParams:
  """Supervised pseudo-likelihood fit when the labels are known (rows with label -1 are skipped).

  Maximizes sum_i sum_k log P(J_ik | J_i,-k, Y_i) - penalty, with the prior pi
  the share of label 1: the M-step of :func:`fit_ising_em` with hard labels,
  run to convergence (``newton_steps`` Newton steps from zero).

  Args:
    votes_NxK: int votes in {-1, 0, 1}.
    labels_N: int labels in {-1 (unknown), 0, 1}.
    class_dependent, l2, l2_field, newton_steps: as in :func:`fit_ising_em`.

  Returns:
    IsingParams(prior, h_2xK, W_2xKxK).

  References:
    Besag (1975); Hoefling & Tibshirani (2009); the paper's supervised variant.
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  n, k = votes_NxK.shape
  if labels_N is None:
    raise ValueError("labels_N is required for the supervised fit")
  labels_N = _check_labels(labels_N, n)
  _check_options("pseudo", k, l2, l2_field)
  return _fit_supervised(votes_NxK, jnp.asarray(labels_N), l2, l2_field,
                         class_dependent=bool(class_dependent), newton_steps=int(newton_steps))


_e_step_jit = jax.jit(_e_step, static_argnames=("e_step", "missing"))


def ising_fit_posterior(votes_NxK: jax.Array, params: IsingParams, e_step: str = "exact",
                        missing: bool | None = None) -> jax.Array:
  """P(Y=1 | J) under fitted parameters: the E-step of :func:`fit_ising_em`.

  ``e_step="exact"``: the exact Bayes posterior (:func:`ising_posterior`, K <= 20,
  missing votes summed out); ``"pseudo"``: sigmoid of the prior's logit plus the
  difference of the two classes' pseudo-log-likelihoods (any K). ``missing`` as in
  :func:`ising_mixture_log_lik`. Returns p1_N.
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  _check_options(e_step, votes_NxK.shape[1], 0.0, 0.0)
  params = _check_params(params, votes_NxK.shape[1])
  return _e_step_jit(votes_NxK, params, e_step=e_step, missing=_check_missing(votes_NxK, missing))
