"""The latent-factor (logistic-normal) model of judges and its EM fit.

Judges share a scalar latent factor Z ~ N(0, 1) (a common failure mode): given
Y = y and Z = z they vote independently with

  P(J_k = 1 | Y = y, Z = z) = sigmoid(a^(y)_k + lambda_k z).

Integrating Z out couples the judges; to second order in lambda the model is a
class-independent Ising model with low-rank couplings W_kl ~ lambda_k lambda_l
times the logistic variance (the paper's latent-factor approximation). We
integrate Z by Gauss-Hermite quadrature with G nodes, so the likelihood, the
posterior and EM are exact up to quadrature error, for any K and with missing
votes (a missing vote drops out of the product).
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
from reprojax.algorithms.ising_aggregation import _voting


class LatentFactorParams(NamedTuple):
  """Latent-factor model of K judges (one factor)."""

  prior: jax.Array  # () pi = P(Y = 1)
  a_2xK: jax.Array  # per-class intercepts a^(0), a^(1)
  lam_K: jax.Array  # factor loadings lambda_k


class LatentFactorFit(NamedTuple):
  params: LatentFactorParams
  posterior_N: jax.Array  # P(Y_i = 1 | J_i)
  num_iters: jax.Array  # () int


def _nodes(num_nodes: int, dtype):
  x, w = np.polynomial.hermite.hermgauss(num_nodes)  # int exp(-x^2) f(x) dx
  return jnp.asarray(np.sqrt(2.0) * x, dtype), jnp.asarray(np.log(w / np.sqrt(np.pi)), dtype)


def _log_joint_NxYxG(votes_NxK, params: LatentFactorParams, num_nodes: int):
  """log [pi_y w_g prod_k P(J_ik | y, z_g)], shape (N, 2, G)."""
  dtype = jnp.result_type(float)
  z, logw = _nodes(num_nodes, dtype)
  v1 = jnp.asarray(votes_NxK == 1, dtype)
  v0 = jnp.asarray(votes_NxK == 0, dtype)
  eta = params.a_2xK[:, None, :] + params.lam_K[None, None, :] * z[None, :, None]  # [y, g, k]
  ll = (jnp.einsum("nk,ygk->nyg", v1, jax.nn.log_sigmoid(eta))
        + jnp.einsum("nk,ygk->nyg", v0, jax.nn.log_sigmoid(-eta)))
  pi = jnp.clip(params.prior, 1e-6, 1 - 1e-6)
  logpi = jnp.stack([jnp.log1p(-pi), jnp.log(pi)])
  return ll + logpi[None, :, None] + logw[None, None, :]


def _posterior(votes_NxK, params, num_nodes):
  lj = _log_joint_NxYxG(votes_NxK, params, num_nodes)
  ly = jax.nn.logsumexp(lj, axis=2)
  return jax.nn.sigmoid(ly[:, 1] - ly[:, 0])


@functools.partial(jax.jit, static_argnames=("num_nodes",))
def _lf_posterior(votes_NxK, a0_K, a1_K, lam_K, prior, num_nodes):
  return _posterior(votes_NxK, LatentFactorParams(prior, jnp.stack([a0_K, a1_K]), lam_K), num_nodes)


def latent_factor_posterior(votes_NxK: jax.Array, a0_K: jax.Array, a1_K: jax.Array,
                            lam_K: jax.Array, prior: jax.Array | float,
                            num_nodes: int = 16) -> jax.Array:
  """P(Y=1 | J) under the one-factor logistic-normal model (Gauss-Hermite in z).

  P(J | y) = int N(z; 0, 1) prod_{k observed} sigmoid(s_k (a^(y)_k + lambda_k z)) dz,
  s_k = 2 J_k - 1.

  Args:
    votes_NxK: int votes in {-1, 0, 1}.
    a0_K, a1_K: intercepts of class 0 and class 1.
    lam_K: loadings.
    prior: pi in (0, 1).
    num_nodes: quadrature nodes G.

  Returns:
    p1_N.

  References:
    The paper's latent-factor model (Section 3); Gauss-Hermite quadrature.
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  k = votes_NxK.shape[1]
  got = _common.check_arrays({"a0_K": a0_K, "a1_K": a1_K, "lam_K": lam_K})
  a0_K, a1_K, lam_K = got.values()
  if np.shape(a0_K) != (k,):
    raise ValueError(f"a0_K, a1_K and lam_K must have shape ({k},), got {np.shape(a0_K)}")
  prior = _checks.check_prob("prior", prior, votes_NxK.shape[:1])
  return _lf_posterior(votes_NxK, a0_K, a1_K, lam_K, prior, num_nodes=int(num_nodes))


def _m_step(votes_NxK, r_NxYxG, params, num_nodes, steps, l2):
  """Per-judge Newton on the expected complete log-likelihood; data enter as (y, g, k) counts."""
  dtype = jnp.result_type(float)
  z, _ = _nodes(num_nodes, dtype)
  v1 = jnp.asarray(votes_NxK == 1, dtype)
  m = jnp.asarray(votes_NxK >= 0, dtype)
  n1 = jnp.einsum("nyg,nk->ygk", r_NxYxG, v1)  # soft count of vote 1 at (y, g)
  nn = jnp.einsum("nyg,nk->ygk", r_NxYxG, m)  # soft count of votes at (y, g)
  scale = 1.0 / votes_NxK.shape[0]
  # features per (y, g): [1[y=0], 1[y=1], z_g]
  phi = jnp.stack([
      jnp.broadcast_to(jnp.array([1.0, 0.0], dtype)[:, None], (2, num_nodes)),
      jnp.broadcast_to(jnp.array([0.0, 1.0], dtype)[:, None], (2, num_nodes)),
      jnp.broadcast_to(z[None, :], (2, num_nodes))], axis=-1)  # [y, g, 3]
  theta = jnp.concatenate([params.a_2xK.T, params.lam_K[:, None]], axis=1)  # [k, 3]

  def step(theta, _):
    eta = jnp.einsum("ygp,kp->ygk", phi, theta)
    p = jax.nn.sigmoid(eta)
    g = jnp.einsum("ygk,ygp->kp", (n1 - nn * p) * scale, phi) - l2 * theta
    hw = nn * p * (1 - p) * scale
    hess = jnp.einsum("ygk,ygp,ygq->kpq", hw, phi, phi) + (l2 + 1e-8) * jnp.eye(3, dtype=dtype)
    d = _linalg.solve(hess, g)
    d = d * jnp.minimum(1.0, 5.0 / (jnp.max(jnp.abs(d), axis=1, keepdims=True) + 1e-12))
    return theta + d, None

  theta, _ = jax.lax.scan(step, theta, None, length=steps)
  prior = r_NxYxG[:, 1].sum() / votes_NxK.shape[0]
  return LatentFactorParams(prior, theta[:, :2].T, theta[:, 2])


@functools.partial(jax.jit, static_argnames=("num_nodes", "max_iters", "newton_steps"))
def _fit_lf(votes_NxK, lam_init, l2, tol, num_nodes, max_iters, newton_steps):
  ds = _voting._dawid_skene(votes_NxK, 1e-5, two_coin=True, max_iters=50)
  a = jnp.clip(ds.sensitivity_K, 1e-3, 1 - 1e-3)
  b = jnp.clip(ds.specificity_K, 1e-3, 1 - 1e-3)
  a_2xK = jnp.stack([jnp.log1p(-b) - jnp.log(b), jnp.log(a) - jnp.log1p(-a)])
  params = LatentFactorParams(ds.prior, a_2xK, jnp.full_like(a, lam_init))
  q0 = ds.posterior_N

  def cond(c):
    _, _, it, delta = c
    return jnp.logical_and(it < max_iters, delta >= tol)

  def body(c):
    p, q, it, _ = c
    lj = _log_joint_NxYxG(votes_NxK, p, num_nodes)
    r = jnp.exp(lj - jax.nn.logsumexp(lj, axis=(1, 2), keepdims=True))
    q_new = r[:, 1].sum(1)
    return _m_step(votes_NxK, r, p, num_nodes, newton_steps, l2), q_new, it + 1, jnp.max(
        jnp.abs(q_new - q))

  params, _, it, _ = jax.lax.while_loop(
      cond, body, (params, q0, jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, q0.dtype)))
  return LatentFactorFit(params, _posterior(votes_NxK, params, num_nodes), it)


def fit_latent_factor_em(votes_NxK: jax.Array, *, num_nodes: int = 16, lam_init: float = 0.5,
                         l2: float = 1e-3, max_iters: int = 200, tol: float = 1e-4,
                         newton_steps: int = 2) -> LatentFactorFit:
  """EM fit of the one-factor latent-factor model, the latent pair (Y, Z) on a quadrature grid.

  E-step: responsibilities r_iyg propto pi_y w_g prod_k P(J_ik | y, z_g);
  M-step: pi = mean_i sum_g r_i1g, and per judge a ridge logistic regression
  of J_k on (1[y=0], 1[y=1], z_g) with weights r_iyg (``newton_steps`` Newton
  steps, warm-started; the data enter only through (y, g, k) soft counts, so a
  step costs O(N K G)). Started from two-coin Dawid-Skene. One ``lax.while_loop``.

  Args:
    votes_NxK: int votes in {-1, 0, 1}.
    num_nodes: Gauss-Hermite nodes G.
    lam_init: initial loading of every judge (nonzero breaks the z -> -z symmetry).
    l2: ridge on (a, lambda), per item.
    max_iters, tol: stop when max_i |q_i^new - q_i| < tol.
    newton_steps: Newton steps per M-step.

  Returns:
    LatentFactorFit(params=LatentFactorParams(prior, a_2xK, lam_K), posterior_N, num_iters).

  References:
    The paper's latent-factor model; Bock & Aitkin (1981), EM with quadrature for item-factor models.
  """
  votes_NxK = _checks.check_votes(votes_NxK)
  if num_nodes < 1 or max_iters < 0 or newton_steps < 1:
    raise ValueError("need num_nodes >= 1, max_iters >= 0, newton_steps >= 1")
  _common.check_in_range("l2", l2, 0.0)
  return _fit_lf(votes_NxK, lam_init, l2, tol, num_nodes=int(num_nodes), max_iters=int(max_iters),
                 newton_steps=int(newton_steps))
